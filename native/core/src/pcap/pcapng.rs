//! The pcapng half of the reader: sections, interface descriptions (link type,
//! `if_tsresol`, `if_tsoffset`), enhanced/simple/obsolete packet blocks and interface
//! statistics blocks. Shares the column builder and errors with the pcap half (`super`).

use super::*;

/// Byte order of the section header block at `off` (which must have 12 bytes).
fn shb_byte_order(data: &[u8], off: usize) -> Result<bool, ReadError> {
    match u32::from_le_bytes([data[off + 8], data[off + 9], data[off + 10], data[off + 11]]) {
        0x1a2b_3c4d => Ok(false),
        0x4d3c_2b1a => Ok(true),
        m => Err(invalid(
            format!("bad pcapng byte-order magic 0x{m:08x}"),
            off + 8,
        )),
    }
}

/// Calls `f(code, value)` for each option; false if the options run past their block.
fn for_each_option(opts: &[u8], be: bool, mut f: impl FnMut(u16, &[u8])) -> bool {
    let mut o = 0usize;
    while o + 4 <= opts.len() {
        let code = rd16(opts, o, be);
        let len = usize::from(rd16(opts, o + 2, be));
        if code == 0 {
            return true;
        }
        let start = o + 4;
        if opts.len() - start < len {
            return false;
        }
        f(code, &opts[start..start + len]);
        o = start + ((len + 3) & !3);
    }
    true
}

/// Reader state of the pcapng decoding pass.
struct Pcapng {
    interfaces: Vec<Interface>,
    stats: Vec<Option<InterfaceStats>>,
    /// Index in `interfaces` of the current section's interface 0.
    section_base: usize,
    be: bool,
    malformed_options: Vec<usize>,
    warnings: Vec<String>,
    /// Timestamp of the last packet with one (to check ISB timestamps against).
    last_packet_ns: Option<i64>,
    /// Interfaces whose ISB timestamps were found to be in microseconds.
    isb_in_microseconds: Vec<u32>,
    /// The first interface with a link type we cannot decode: (link type, IDB offset).
    first_unsupported: Option<(u32, usize)>,
}

impl Pcapng {
    /// The file-wide index of the section's interface `id`.
    fn interface(&self, id: u32, off: usize) -> Result<usize, ReadError> {
        let described = self.interfaces.len() - self.section_base;
        if (id as usize) < described {
            Ok(self.section_base + id as usize)
        } else {
            Err(invalid(
                format!(
                    "packet block refers to interface {id} but only {described} interfaces were described"
                ),
                off,
            ))
        }
    }

    fn idb(&mut self, body: &[u8], off: usize) -> Result<(), ReadError> {
        let be = self.be;
        if body.len() < 8 {
            return Err(invalid(
                "corrupt interface description block (too short)",
                off,
            ));
        }
        let link_type = u32::from(rd16(body, 0, be));
        // One interface we cannot decode (a Bluetooth or USB monitor next to the network
        // interfaces, say) does not spoil the file: its packets are skipped and counted.
        let link = Link::from_linktype(link_type);
        if link.is_none() && self.first_unsupported.is_none() {
            self.first_unsupported = Some((link_type, off + 8));
        }
        let snaplen = rd32(body, 4, be);
        let mut name = None;
        let mut tsresol = 6u8;
        let mut ts_offset_s = 0i64;
        let ok = for_each_option(&body[8..], be, |code, v| match code {
            2 => {
                let end = v.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
                name = Some(String::from_utf8_lossy(&v[..end]).into_owned());
            }
            9 if !v.is_empty() => tsresol = v[0],
            14 if v.len() == 8 => ts_offset_s = rd64(v, 0, be) as i64,
            _ => {}
        });
        if !ok {
            self.malformed_options.push(off);
        }
        let ts_resolution = TsResolution::from_option(tsresol);
        if let TsResolution::Decimal(e) = ts_resolution {
            if e > 38 {
                return Err(invalid(
                    format!("unsupported timestamp resolution 10^-{e} (if_tsresol)"),
                    off,
                ));
            }
        }
        self.interfaces.push(Interface {
            link_type,
            name,
            snaplen,
            ts_resolution,
            ts_offset_s,
            link,
        });
        self.stats.push(None);
        Ok(())
    }

    fn isb(&mut self, body: &[u8], off: usize) -> Result<(), ReadError> {
        let be = self.be;
        if body.len() < 12 {
            return Err(invalid(
                "corrupt interface statistics block (too short)",
                off,
            ));
        }
        let id = rd32(body, 0, be);
        let Ok(g) = self.interface(id, off) else {
            self.warnings.push(format!(
                "interface statistics block at byte offset {off} refers to undescribed interface {id}; ignored"
            ));
            return Ok(());
        };
        let iface = &self.interfaces[g];
        // dumpcap (at least up to Wireshark 4.0) writes ISB times in microseconds even when
        // the interface says nanoseconds. Caught by the block's own timestamp, which is
        // written after the packets: whichever reading lands nearer the last packet wins.
        let block_ts = (u64::from(rd32(body, 4, be)) << 32) | u64::from(rd32(body, 8, be));
        let microseconds = Interface {
            ts_resolution: TsResolution::Decimal(6),
            ..iface.clone()
        };
        let finer_than_us = iface.ts_resolution.to_ns(1) < 1000;
        let in_us = match self.last_packet_ns {
            Some(last) if finer_than_us && block_ts != 0 => {
                let as_given = iface.ts_ns(block_ts).abs_diff(last);
                let as_us = microseconds.ts_ns(block_ts).abs_diff(last);
                as_us < as_given && as_us < 86_400_000_000_000
            }
            _ => false,
        };
        if in_us && !self.isb_in_microseconds.contains(&(g as u32)) {
            self.isb_in_microseconds.push(g as u32);
        }
        let iface = if in_us { &microseconds } else { iface };
        let mut s = InterfaceStats {
            interface_id: g as u32,
            ..InterfaceStats::default()
        };
        let ok = for_each_option(&body[12..], be, |code, v| {
            if v.len() != 8 {
                return;
            }
            let u = rd64(v, 0, be);
            let ts = || iface.ts_ns((u64::from(rd32(v, 0, be)) << 32) | u64::from(rd32(v, 4, be)));
            match code {
                2 => s.start_ns = Some(ts()),
                3 => s.end_ns = Some(ts()),
                4 => s.ifrecv = Some(u),
                5 => s.ifdrop = Some(u),
                6 => s.filteraccept = Some(u),
                7 => s.osdrop = Some(u),
                8 => s.usrdeliv = Some(u),
                _ => {}
            }
        });
        if !ok {
            self.malformed_options.push(off);
        }
        self.stats[g] = Some(s);
        Ok(())
    }
}

/// Where a pcapng reader is in its file.
pub(crate) struct NgCursor {
    st: Pcapng,
    first_be: bool,
    off: usize,
    next_release: usize,
    truncated_at: Option<usize>,
    pub(crate) done: bool,
}

impl NgCursor {
    /// Checks the first section header's length and byte order.
    pub(crate) fn open(data: &[u8]) -> Result<NgCursor, ReadError> {
        if data.len() < 28 {
            return Err(invalid(
                format!(
                    "truncated pcapng section header block ({} bytes)",
                    data.len()
                ),
                0,
            ));
        }
        let first_be = shb_byte_order(data, 0)?;
        Ok(NgCursor {
            st: Pcapng {
                interfaces: Vec::new(),
                stats: Vec::new(),
                section_base: 0,
                be: first_be,
                malformed_options: Vec::new(),
                warnings: Vec::new(),
                last_packet_ns: None,
                isb_in_microseconds: Vec::new(),
                first_unsupported: None,
            },
            first_be,
            off: 0,
            next_release: RELEASE_CHUNK,
            truncated_at: None,
            done: false,
        })
    }

    /// The number of packets the first blocks predict for the whole file.
    /// Where the next block starts (bytes from the file's start).
    pub(crate) fn offset(&self) -> usize {
        self.off
    }

    pub(crate) fn estimate(&self, data: &[u8]) -> usize {
        let be = self.first_be;
        estimate_packets(data, 0, |off| {
            if data.len() - off < 12 || (off > 0 && rd32(data, off, false) == SHB) {
                return None;
            }
            let btype = rd32(data, off, be);
            let blen = rd32(data, off + 4, be) as usize;
            Some((blen, matches!(btype, EPB | SPB | PB)))
        })
    }

    /// Decodes blocks until the builder holds `limit` packets or the file ends.
    pub(crate) fn advance(
        &mut self,
        data: &[u8],
        b: &mut Builder,
        quirks: &mut Quirks,
        release: &mut dyn FnMut(usize),
        limit: usize,
    ) -> Result<(), ReadError> {
        let st = &mut self.st;
        let mut off = self.off;
        while !self.done {
            if off >= data.len() {
                self.done = true;
                break;
            }
            if b.len() >= limit {
                break;
            }
            if off >= self.next_release {
                release(off);
                self.next_release = off + RELEASE_CHUNK;
            }
            if data.len() - off < 12 {
                self.truncated_at = Some(off);
                self.done = true;
                break;
            }
            if rd32(data, off, false) == SHB {
                st.be = shb_byte_order(data, off)?;
            }
            let be = st.be;
            let btype = rd32(data, off, be);
            let blen = rd32(data, off + 4, be);
            if blen < 12 || blen % 4 != 0 || blen > PCAPNG_MAX_BLOCK || (btype == SHB && blen < 28)
            {
                return Err(invalid(format!("corrupt block length {blen}"), off));
            }
            let blen = blen as usize;
            if data.len() - off < blen {
                self.truncated_at = Some(off);
                self.done = true;
                break;
            }
            let trailer = rd32(data, off + blen - 4, be);
            if trailer as usize != blen {
                return Err(invalid(
                    format!("corrupt block length {blen} (trailing copy {trailer})"),
                    off,
                ));
            }
            let body = &data[off + 8..off + blen - 4];
            match btype {
                EPB | PB => {
                    if body.len() < 20 {
                        return Err(invalid("corrupt packet block (too short)", off));
                    }
                    // The obsolete packet block has a 16-bit interface id (then drop counts).
                    let id = if btype == EPB {
                        rd32(body, 0, be)
                    } else {
                        u32::from(rd16(body, 0, be))
                    };
                    let g = st.interface(id, off)?;
                    let ts = (u64::from(rd32(body, 4, be)) << 32) | u64::from(rd32(body, 8, be));
                    let caplen = rd32(body, 12, be);
                    let wire = rd32(body, 16, be);
                    if caplen as usize > body.len() - 20 {
                        return Err(invalid(
                            format!(
                                "corrupt packet block: captured length {caplen} exceeds the block"
                            ),
                            off,
                        ));
                    }
                    let iface = &st.interfaces[g];
                    let t_ns = iface.ts_ns(ts);
                    if let Some(link) = iface.link {
                        b.packet(t_ns, g as u32, wire, link, &body[20..20 + caplen as usize]);
                    } else {
                        quirks.skipped_packets += 1;
                    }
                    st.last_packet_ns = Some(t_ns);
                }
                SPB => {
                    if body.len() < 4 {
                        return Err(invalid("corrupt simple packet block (too short)", off));
                    }
                    let g = st.interface(0, off)?;
                    let iface = &st.interfaces[g];
                    let wire = rd32(body, 0, be);
                    let snap = if iface.snaplen == 0 {
                        usize::MAX
                    } else {
                        iface.snaplen as usize
                    };
                    let caplen = (wire as usize).min(snap).min(body.len() - 4);
                    if let Some(link) = iface.link {
                        b.packet(NO_TIMESTAMP, g as u32, wire, link, &body[4..4 + caplen]);
                    } else {
                        quirks.skipped_packets += 1;
                    }
                }
                SHB => {
                    // Versions 1.0 and 1.2 (written by some tools, read as 1.0) are what
                    // libpcap and Wireshark read; 1.1 and anything else are refused.
                    let (major, minor) = (rd16(body, 4, be), rd16(body, 6, be));
                    if major != 1 || !(minor == 0 || minor == 2) {
                        return Err(invalid(
                            format!(
                                "unsupported pcapng version {major}.{minor} (readers know 1.0 and 1.2)"
                            ),
                            off + 12,
                        ));
                    }
                    st.section_base = st.interfaces.len();
                }
                IDB => st.idb(body, off)?,
                ISB => st.isb(body, off)?,
                _ => {}
            }
            off += blen;
        }
        self.off = off;
        Ok(())
    }

    /// The capture, once `advance` reached the end (`columns`: those not yet taken).
    /// `packets`: how many were read in all (chunks already taken included).
    pub(crate) fn finish(
        self,
        columns: Columns,
        flows: FlowTable,
        quirks: Quirks,
        packets: usize,
    ) -> Result<Capture, ReadError> {
        let st = self.st;
        if self.off == 0 {
            return Err(invalid("truncated pcapng section header block", 0));
        }
        let mut warnings = st.warnings;
        if !st.isb_in_microseconds.is_empty() {
            warnings.push(format!(
                "interface statistics of interface(s) {:?} have microsecond timestamps although \
                 the interface resolution is finer (a dumpcap bug); read as microseconds",
                st.isb_in_microseconds
            ));
        }
        if let Some(&first) = st.malformed_options.first() {
            warnings.push(format!(
                "malformed options ignored in {} block(s), the first at byte offset {first}",
                st.malformed_options.len()
            ));
        }
        if let Some((link_type, at)) = st.first_unsupported {
            if st.interfaces.iter().all(|i| i.link.is_none()) {
                // nothing in the file can be decoded: as a pcap file with that link type
                return Err(unsupported_link(link_type, at));
            }
        }
        if let Some(at) = self.truncated_at {
            warnings.push(truncation_warning(at, packets));
        }
        Ok(Capture {
            format: Format::Pcapng,
            big_endian: self.first_be,
            nanosecond: None,
            snaplen: st.interfaces.iter().map(|i| i.snaplen).max().unwrap_or(0),
            columns,
            flows,
            stats: st.stats.into_iter().flatten().collect(),
            interfaces: st.interfaces,
            warnings,
            quirks,
        })
    }
}
