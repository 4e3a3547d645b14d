//! The pcap half of the reader (libpcap's format, versions 2.0 to 2.4): the file header,
//! then records until the builder holds enough packets or the file ends.

use super::*;

/// Where a pcap reader is in its file.
pub(crate) struct PcapCursor {
    records: Records,
    big_endian: bool,
    nanosecond: bool,
    snaplen: u32,
    link_type: u32,
    /// Where the next record starts, in the bytes given to `advance` (from `base`).
    off: usize,
    /// The file offset of those bytes' first (0 but for a file read through a buffer).
    base: usize,
    next_release: usize,
    /// Where an incomplete last record starts, once the end is reached.
    truncated_at: Option<usize>,
    pub(crate) done: bool,
}

impl PcapCursor {
    /// Checks the file header.
    pub(crate) fn open(
        data: &[u8],
        big_endian: bool,
        nanosecond: bool,
    ) -> Result<PcapCursor, ReadError> {
        if data.len() < 24 {
            return Err(invalid(
                format!("truncated pcap file header ({} of 24 bytes)", data.len()),
                0,
            ));
        }
        let be = big_endian;
        let lengths = pcap_version(rd16(data, 4, be), rd16(data, 6, be))?;
        let snaplen = rd32(data, 16, be);
        let link_type = rd32(data, 20, be) & 0xffff;
        let link = Link::from_linktype(link_type).ok_or_else(|| unsupported_link(link_type, 20))?;
        Ok(PcapCursor {
            records: Records {
                link,
                frac_ns: if nanosecond { 1 } else { 1000 },
                max_caplen: snaplen.max(PCAP_MAX_CAPLEN) as usize,
                lengths,
            },
            big_endian,
            nanosecond,
            snaplen,
            link_type,
            off: 24,
            base: 0,
            next_release: RELEASE_CHUNK,
            truncated_at: None,
            done: false,
        })
    }

    /// Where the next record starts (bytes from the file's start).
    pub(crate) fn offset(&self) -> usize {
        self.base + self.off
    }

    /// The number of packets the first records predict for the whole file.
    pub(crate) fn estimate(&self, data: &[u8]) -> usize {
        self.estimate_in(data, data.len())
    }

    /// [`PcapCursor::estimate`] from `data`, the first bytes of a file of `total` bytes.
    pub(crate) fn estimate_in(&self, data: &[u8], total: usize) -> usize {
        let be = self.big_endian;
        let caplen_at = if self.records.lengths == Lengths::Swapped {
            12
        } else {
            8
        };
        estimate_packets(data, total, 24, |off| {
            (data.len() - off >= 16).then(|| (16 + rd32(data, off + caplen_at, be) as usize, true))
        })
    }

    /// Decodes records until the builder holds `limit` packets or the file ends.
    pub(crate) fn advance(
        &mut self,
        data: &[u8],
        b: &mut Builder,
        quirks: &mut Quirks,
        release: &mut dyn FnMut(usize),
        limit: usize,
    ) -> Result<(), ReadError> {
        if self.done {
            return Ok(());
        }
        let end = self.records_of(data, b, quirks, release, limit)?;
        if let Some(truncated_at) = end {
            self.truncated_at = truncated_at;
            self.done = true;
        }
        Ok(())
    }

    /// Decodes records from `data` (see `pcap_records`), in the file's byte order.
    fn records_of(
        &mut self,
        data: &[u8],
        b: &mut Builder,
        quirks: &mut Quirks,
        release: &mut dyn FnMut(usize),
        limit: usize,
    ) -> Result<Option<Option<usize>>, ReadError> {
        if self.big_endian {
            pcap_records::<true>(data, self, b, quirks, release, limit)
        } else {
            pcap_records::<false>(data, self, b, quirks, release, limit)
        }
    }

    /// Decodes records from `w`'s buffer, refilling it with `more` (which gives 0 bytes at
    /// the end of the file), until `b` holds `limit` packets or the file ends. The buffer
    /// holds the file's bytes from this cursor's `base` on (at first, the header the cursor
    /// was opened on and the records after it).
    pub(crate) fn advance_buffered(
        &mut self,
        w: &mut Window,
        more: &mut dyn FnMut(&mut [u8]) -> std::io::Result<usize>,
        b: &mut Builder,
        quirks: &mut Quirks,
        limit: usize,
    ) -> Result<(), ReadError> {
        self.next_release = usize::MAX; // nothing mapped to give back
        while !self.done {
            let data = &w.buf[..w.filled];
            let Some(end) = self.records_of(data, b, quirks, &mut |_| {}, limit)? else {
                return Ok(()); // `limit` packets: the buffer keeps the rest
            };
            // The records before `kept` are read; the bytes from it start the next one.
            let kept = end.unwrap_or(w.filled);
            w.buf.copy_within(kept..w.filled, 0);
            (self.base, self.off, w.filled) = (self.base + kept, 0, w.filled - kept);
            if w.filled == w.buf.len() {
                // one record longer than the buffer: room for it (its length is checked)
                w.buf.resize(2 * w.buf.len(), 0);
            }
            let got = more(&mut w.buf[w.filled..])?;
            if got == 0 {
                self.truncated_at = (w.filled > 0).then_some(self.base);
                self.done = true;
            }
            w.filled += got;
        }
        Ok(())
    }

    /// The capture, once `advance` reached the end (`columns`: those not yet taken).
    /// `packets`: how many were read in all (chunks already taken included).
    pub(crate) fn finish(
        &self,
        columns: Columns,
        flows: FlowTable,
        quirks: Quirks,
        packets: usize,
    ) -> Capture {
        let mut warnings = Vec::new();
        if let Some(at) = self.truncated_at {
            warnings.push(truncation_warning(at, packets));
        }
        Capture {
            format: Format::Pcap,
            big_endian: self.big_endian,
            nanosecond: Some(self.nanosecond),
            snaplen: self.snaplen,
            columns,
            flows,
            interfaces: vec![Interface {
                link_type: self.link_type,
                name: None,
                snaplen: self.snaplen,
                ts_resolution: TsResolution::Decimal(if self.nanosecond { 9 } else { 6 }),
                ts_offset_s: 0,
                link: Some(self.records.link),
            }],
            stats: Vec::new(),
            warnings,
            quirks,
        }
    }
}

/// Which of a pcap record's two length fields is the captured length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lengths {
    /// Version 2.4: captured length, then length on the wire.
    Normal,
    /// Versions 2.0-2.2 wrote them the other way round.
    Swapped,
    /// Version 2.3 files come both ways: the smaller one is the captured length.
    Either,
}

/// The record layout of a pcap file version; libpcap (and so tcpdump) reads 2.0 to 2.4.
fn pcap_version(major: u16, minor: u16) -> Result<Lengths, ReadError> {
    match (major, minor) {
        (2, 4) => Ok(Lengths::Normal),
        (2, 3) => Ok(Lengths::Either),
        (2, 0..=2) => Ok(Lengths::Swapped),
        _ => Err(invalid(
            format!("unsupported pcap version {major}.{minor} (pcap files are version 2.0 to 2.4)"),
            4,
        )),
    }
}

/// A buffer a pcap file is read through: `buf[..filled]` holds the file's bytes from the
/// cursor's `base` on.
pub(crate) struct Window {
    pub(crate) buf: Vec<u8>,
    pub(crate) filled: usize,
}

/// How the records of one pcap file are laid out.
struct Records {
    link: Link,
    frac_ns: i64,
    max_caplen: usize,
    lengths: Lengths,
}

/// Decodes records from `c.off` until the builder holds `limit` packets (`None`: more to
/// come) or `data` ends (`Some`, with where an incomplete last record starts, if any).
/// `data` starts at the file's byte `c.base`: offsets reported (errors, quirks) are the
/// file's; `c.off` and the offset returned are `data`'s.
fn pcap_records<const BE: bool>(
    data: &[u8],
    c: &mut PcapCursor,
    b: &mut Builder,
    quirks: &mut Quirks,
    release: &mut dyn FnMut(usize),
    limit: usize,
) -> Result<Option<Option<usize>>, ReadError> {
    let r = &c.records;
    let base = c.base;
    // a sub-second field at or above one second is out of range (tshark flags it)
    let frac_limit = (1_000_000_000 / r.frac_ns) as u32;
    let mut off = c.off;
    let result = loop {
        if off >= data.len() {
            break Some(None);
        }
        if b.len() >= limit {
            break None;
        }
        if off >= c.next_release {
            release(off);
            c.next_release = off + RELEASE_CHUNK;
        }
        if data.len() - off < 16 {
            break Some(Some(off));
        }
        let (mut caplen, mut wire) = (rd32(data, off + 8, BE), rd32(data, off + 12, BE));
        if r.lengths == Lengths::Swapped || (r.lengths == Lengths::Either && caplen > wire) {
            (caplen, wire) = (wire, caplen);
        }
        let caplen = caplen as usize;
        if caplen > r.max_caplen {
            return Err(invalid(
                format!("corrupt record length {caplen}"),
                base + off,
            ));
        }
        let start = off + 16;
        if data.len() - start < caplen {
            break Some(Some(off));
        }
        let sec = rd32(data, off, BE);
        let frac = rd32(data, off + 4, BE);
        let t_ns = if frac < frac_limit {
            i64::from(sec) * 1_000_000_000 + i64::from(frac) * r.frac_ns
        } else {
            quirks.bad_timestamps += 1;
            quirks
                .first_bad_timestamp_at
                .get_or_insert((base + off) as u64);
            NO_TIMESTAMP
        };
        b.packet(t_ns, 0, wire, r.link, &data[start..start + caplen]);
        off = start + caplen;
    };
    c.off = off;
    Ok(result)
}
