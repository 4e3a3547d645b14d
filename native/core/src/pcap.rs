//! Reading a whole pcap or pcapng capture into columns (one row per packet record).
//!
//! One sequential pass over the (memory-mapped) bytes. The columns are allocated up front
//! for the number of packets the first few thousand records predict (a separate counting
//! pass costs a cache miss per record), grow in the rare case that was too few, and are
//! trimmed at the end. Nothing is allocated per packet.
//!
//! Interfaces: `interface_id` in the columns, the interface list and the statistics is the
//! index of the interface in the whole file. With a single pcapng section (the usual case)
//! it equals the pcapng interface ID; every further section's interfaces follow on.

use crate::decode::{decode_into, len_source, linktype_name, FlowTable, Link, Packet};
use memmap2::MmapOptions;
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// `t_ns` of a packet whose block carries no timestamp (pcapng simple packet block).
pub const NO_TIMESTAMP: i64 = i64::MIN;
/// `flow_idx` of a packet that is not IP.
pub const NO_FLOW: u32 = u32::MAX;

/// A pcap record longer than max(snaplen, this) is taken as corruption.
const PCAP_MAX_CAPLEN: u32 = 262_144;
/// A pcapng block longer than this is taken as corruption (far larger than real blocks;
/// Wireshark itself refuses blocks over 16 MiB).
const PCAPNG_MAX_BLOCK: u32 = 64 << 20;

const SHB: u32 = 0x0a0d_0d0a;
const IDB: u32 = 1;
const PB: u32 = 2;
const SPB: u32 = 3;
const ISB: u32 = 5;
const EPB: u32 = 6;

/// What went wrong reading a capture.
#[derive(Debug)]
pub enum ReadError {
    /// The file could not be opened or read.
    Io(std::io::Error),
    /// The bytes are not a (readable) capture; `offset` is where the problem is.
    Invalid { message: String, offset: u64 },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => e.fmt(f),
            ReadError::Invalid { message, offset } => {
                write!(f, "{message} (at byte offset {offset})")
            }
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Io(e) => Some(e),
            ReadError::Invalid { .. } => None,
        }
    }
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        ReadError::Io(e)
    }
}

fn invalid(message: impl Into<String>, offset: usize) -> ReadError {
    ReadError::Invalid {
        message: message.into(),
        offset: offset as u64,
    }
}

fn unsupported_link(link_type: u32, offset: usize) -> ReadError {
    let message = match linktype_name(link_type) {
        Some(name) => format!("unsupported link type {link_type} ({name})"),
        None => format!("unsupported link type {link_type}"),
    };
    invalid(message, offset)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Pcap,
    Pcapng,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Pcap => "pcap",
            Format::Pcapng => "pcapng",
        }
    }
}

/// Timestamp unit of an interface: 10^-e or 2^-e seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TsResolution {
    Decimal(u8),
    Binary(u8),
}

impl TsResolution {
    /// From the `if_tsresol` byte (high bit set: power of two).
    fn from_option(v: u8) -> TsResolution {
        if v & 0x80 != 0 {
            TsResolution::Binary(v & 0x7f)
        } else {
            TsResolution::Decimal(v)
        }
    }

    /// "1e-6", "1e-9", "2^-20", ...
    pub fn label(self) -> String {
        match self {
            TsResolution::Decimal(e) => format!("1e-{e}"),
            TsResolution::Binary(e) => format!("2^-{e}"),
        }
    }

    /// Nanoseconds in `ts` units (rounded down below one nanosecond).
    #[inline]
    fn to_ns(self, ts: u64) -> i128 {
        match self {
            TsResolution::Decimal(e) if e <= 9 => {
                i128::from(ts) * i128::from(10u64.pow(u32::from(9 - e)))
            }
            TsResolution::Decimal(e) => (u128::from(ts) / 10u128.pow(u32::from(e - 9))) as i128,
            TsResolution::Binary(e) => ((u128::from(ts) * 1_000_000_000) >> e) as i128,
        }
    }
}

/// One capture interface (pcap: the file header).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    pub link_type: u32,
    pub name: Option<String>,
    pub snaplen: u32,
    pub ts_resolution: TsResolution,
    /// `if_tsoffset`: seconds added to every timestamp of the interface.
    pub ts_offset_s: i64,
    /// None: a link type the decoder does not know; its packets are skipped and counted.
    link: Option<Link>,
}

impl Interface {
    /// A timestamp of this interface in nanoseconds since the epoch (saturating).
    #[inline]
    fn ts_ns(&self, ts: u64) -> i64 {
        // the common cases (µs or ns, no offset) in plain 64-bit arithmetic
        if self.ts_offset_s == 0 && ts <= i64::MAX as u64 {
            match self.ts_resolution {
                TsResolution::Decimal(9) => return ts as i64,
                TsResolution::Decimal(6) if ts <= (i64::MAX / 1000) as u64 => {
                    return ts as i64 * 1000
                }
                _ => {}
            }
        }
        let ns = self.ts_resolution.to_ns(ts) + i128::from(self.ts_offset_s) * 1_000_000_000;
        ns.clamp(i128::from(i64::MIN + 1), i128::from(i64::MAX)) as i64
    }
}

/// The last interface statistics block of an interface; `None`: option absent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InterfaceStats {
    pub interface_id: u32,
    pub start_ns: Option<i64>,
    pub end_ns: Option<i64>,
    pub ifrecv: Option<u64>,
    pub ifdrop: Option<u64>,
    pub filteraccept: Option<u64>,
    pub osdrop: Option<u64>,
    pub usrdeliv: Option<u64>,
}

/// An empty column with room for `n` values. Big ones ask for transparent huge pages:
/// faulting in ~90 bytes per packet 4 KiB at a time costs as much kernel time as decoding.
fn column<T>(n: usize) -> Vec<T> {
    let v = Vec::with_capacity(n);
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let bytes = v.capacity() * std::mem::size_of::<T>();
        if bytes >= 2 * HUGE {
            let start = v.as_ptr() as usize;
            let aligned = (start + 4095) & !4095;
            let end = (start + bytes) & !4095;
            // SAFETY: advisory only, on pages that belong to this fresh allocation.
            unsafe {
                libc::madvise(
                    aligned as *mut libc::c_void,
                    end - aligned,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
    v
}

/// One value per packet record, in file order (see `decode::Packet` for the fields).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Columns {
    pub t_ns: Vec<i64>,
    pub interface_id: Vec<u32>,
    pub wire_len: Vec<u32>,
    pub cap_len: Vec<u32>,
    pub ip_version: Vec<u8>,
    pub flow_idx: Vec<u32>,
    pub flow_hash: Vec<u64>,
    pub proto: Vec<u8>,
    pub sport: Vec<u16>,
    pub dport: Vec<u16>,
    pub has_ports: Vec<bool>,
    pub ip_id: Vec<u32>,
    pub has_ip_id: Vec<bool>,
    pub ip_len: Vec<u32>,
    pub dscp: Vec<u8>,
    pub ecn: Vec<u8>,
    pub ttl: Vec<u8>,
    pub tcp_seq: Vec<u32>,
    pub tcp_ack: Vec<u32>,
    pub tcp_flags: Vec<u16>,
    pub tcp_payload_len: Vec<u32>,
    pub has_tcp: Vec<bool>,
    pub has_rtp: Vec<bool>,
    pub rtp_ssrc: Vec<u32>,
    pub rtp_seq: Vec<u16>,
    pub rtp_ts: Vec<u32>,
    pub rtp_marker: Vec<bool>,
    pub rtp_pt: Vec<u8>,
    pub l4_hash: Vec<u64>,
    pub truncated: Vec<bool>,
}

impl Columns {
    fn with_capacity(n: usize) -> Columns {
        Columns {
            t_ns: column(n),
            interface_id: column(n),
            wire_len: column(n),
            cap_len: column(n),
            ip_version: column(n),
            flow_idx: column(n),
            flow_hash: column(n),
            proto: column(n),
            sport: column(n),
            dport: column(n),
            has_ports: column(n),
            ip_id: column(n),
            has_ip_id: column(n),
            ip_len: column(n),
            dscp: column(n),
            ecn: column(n),
            ttl: column(n),
            tcp_seq: column(n),
            tcp_ack: column(n),
            tcp_flags: column(n),
            tcp_payload_len: column(n),
            has_tcp: column(n),
            has_rtp: column(n),
            rtp_ssrc: column(n),
            rtp_seq: column(n),
            rtp_ts: column(n),
            rtp_marker: column(n),
            rtp_pt: column(n),
            l4_hash: column(n),
            truncated: column(n),
        }
    }

    pub fn len(&self) -> usize {
        self.t_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_ns.is_empty()
    }
}

/// A capture read into columns.
pub struct Capture {
    pub format: Format,
    /// Byte order of the file (pcapng: of its first section).
    pub big_endian: bool,
    /// pcap: nanosecond timestamps (magic a1b23c4d); pcapng: `None`.
    pub nanosecond: Option<bool>,
    /// pcap: the header's snaplen; pcapng: the largest interface snaplen.
    pub snaplen: u32,
    pub columns: Columns,
    /// The flows of the IP packets, indexed by `columns.flow_idx`.
    pub flows: FlowTable,
    pub interfaces: Vec<Interface>,
    /// One entry per interface that had a statistics block, by interface id.
    pub stats: Vec<InterfaceStats>,
    pub warnings: Vec<String>,
    /// Records that needed a decision the file does not make plain (counts).
    pub quirks: Quirks,
}

/// Counts of records that needed a decision tcpdump and tshark also make.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Quirks {
    /// IP length field 0, length taken from the frame (TSO, BIG TCP without jumbo option).
    pub len_from_frame: u64,
    /// IPv6 jumbograms: length from the hop-by-hop Jumbo Payload option.
    pub jumbograms: u64,
    /// pcap records whose sub-second field is out of range (>= 10^6 µs or 10^9 ns): kept,
    /// their time left unknown (`NO_TIMESTAMP`) rather than seconds off.
    pub bad_timestamps: u64,
    /// Byte offset of the first such record.
    pub first_bad_timestamp_at: Option<u64>,
    /// Packets of pcapng interfaces whose link type cannot be decoded: skipped, no row.
    pub skipped_packets: u64,
}

/// How many decoded rows are buffered before they are spread over the columns.
const BATCH: usize = 256;

/// One decoded packet record, before it goes into the columns.
#[derive(Clone, Copy, Default)]
struct Row {
    p: Packet,
    t_ns: i64,
    interface_id: u32,
    wire_len: u32,
    cap_len: u32,
    flow_idx: u32,
    flow_hash: u64,
}

/// Decodes packets into columns and interns their flows.
///
/// Packets are decoded in place into a small buffer of rows that is then copied column by
/// column: 30 `Vec::push` per packet cost more than decoding (each reloads and stores its
/// length and checks its capacity), while a column-wise `extend` of a batch is a tight loop.
pub(crate) struct Builder {
    cols: Columns,
    flows: FlowTable,
    rows: Box<[Row]>,
    n_rows: usize,
    /// Packets per `len_source` value.
    len_sources: [u64; 3],
}

impl Builder {
    fn with_capacity(n: usize) -> Builder {
        Builder {
            cols: Columns::with_capacity(n),
            flows: FlowTable::default(),
            rows: vec![Row::default(); BATCH].into_boxed_slice(),
            n_rows: 0,
            len_sources: [0; 3],
        }
    }

    #[inline(always)]
    fn packet(&mut self, t_ns: i64, interface_id: u32, wire_len: u32, link: Link, frame: &[u8]) {
        if self.n_rows == BATCH {
            self.flush();
        }
        let r = &mut self.rows[self.n_rows];
        self.n_rows += 1;
        r.p = Packet::default();
        decode_into(link, frame, wire_len, &mut r.p);
        self.len_sources[usize::from(r.p.len_source)] += 1;
        (r.flow_idx, r.flow_hash) = if r.p.ip_version != 0 {
            self.flows.intern(&r.p)
        } else {
            (NO_FLOW, 0)
        };
        r.t_ns = t_ns;
        r.interface_id = interface_id;
        r.wire_len = wire_len;
        r.cap_len = frame.len() as u32;
    }

    #[inline(never)]
    fn flush(&mut self) {
        let rows = &self.rows[..self.n_rows];
        let c = &mut self.cols;
        c.t_ns.extend(rows.iter().map(|r| r.t_ns));
        c.interface_id.extend(rows.iter().map(|r| r.interface_id));
        c.wire_len.extend(rows.iter().map(|r| r.wire_len));
        c.cap_len.extend(rows.iter().map(|r| r.cap_len));
        c.ip_version.extend(rows.iter().map(|r| r.p.ip_version));
        c.flow_idx.extend(rows.iter().map(|r| r.flow_idx));
        c.flow_hash.extend(rows.iter().map(|r| r.flow_hash));
        c.proto.extend(rows.iter().map(|r| r.p.proto));
        c.sport.extend(rows.iter().map(|r| r.p.sport()));
        c.dport.extend(rows.iter().map(|r| r.p.dport()));
        c.has_ports.extend(rows.iter().map(|r| r.p.has_ports));
        c.ip_id.extend(rows.iter().map(|r| r.p.ip_id));
        c.has_ip_id.extend(rows.iter().map(|r| r.p.has_ip_id));
        c.ip_len.extend(rows.iter().map(|r| r.p.ip_len));
        c.dscp.extend(rows.iter().map(|r| r.p.dscp));
        c.ecn.extend(rows.iter().map(|r| r.p.ecn));
        c.ttl.extend(rows.iter().map(|r| r.p.ttl));
        c.tcp_seq.extend(rows.iter().map(|r| r.p.tcp_seq));
        c.tcp_ack.extend(rows.iter().map(|r| r.p.tcp_ack));
        c.tcp_flags.extend(rows.iter().map(|r| r.p.tcp_flags));
        c.tcp_payload_len
            .extend(rows.iter().map(|r| r.p.tcp_payload_len));
        c.has_tcp.extend(rows.iter().map(|r| r.p.has_tcp));
        c.has_rtp.extend(rows.iter().map(|r| r.p.has_rtp));
        c.rtp_ssrc.extend(rows.iter().map(|r| r.p.rtp_ssrc));
        c.rtp_seq.extend(rows.iter().map(|r| r.p.rtp_seq));
        c.rtp_ts.extend(rows.iter().map(|r| r.p.rtp_ts));
        c.rtp_marker.extend(rows.iter().map(|r| r.p.rtp_marker));
        c.rtp_pt.extend(rows.iter().map(|r| r.p.rtp_pt));
        c.l4_hash.extend(rows.iter().map(|r| r.p.l4_hash));
        c.truncated.extend(rows.iter().map(|r| r.p.truncated));
        self.n_rows = 0;
    }

    /// Packets decoded so far (in the columns and the batch).
    fn len(&self) -> usize {
        self.cols.len() + self.n_rows
    }

    /// The columns decoded so far, replaced by empty ones with room for `capacity`
    /// packets; the flows stay (a chunked read keeps numbering them).
    fn take_columns(&mut self, capacity: usize) -> Columns {
        self.flush();
        std::mem::replace(&mut self.cols, Columns::with_capacity(capacity))
    }

    fn count_quirks(&self, quirks: &mut Quirks) {
        quirks.len_from_frame = self.len_sources[usize::from(len_source::FRAME)];
        quirks.jumbograms = self.len_sources[usize::from(len_source::JUMBO)];
    }

    /// The columns and flows; capacity beyond the packets read is given back (for big
    /// columns a remap, not a copy).
    fn finish(mut self, quirks: &mut Quirks) -> (Columns, FlowTable) {
        self.flush();
        self.count_quirks(quirks);
        let mut c = self.cols;
        if c.t_ns.capacity() - c.t_ns.len() >= 1024 {
            c.t_ns.shrink_to_fit();
            c.interface_id.shrink_to_fit();
            c.wire_len.shrink_to_fit();
            c.cap_len.shrink_to_fit();
            c.ip_version.shrink_to_fit();
            c.flow_idx.shrink_to_fit();
            c.flow_hash.shrink_to_fit();
            c.proto.shrink_to_fit();
            c.sport.shrink_to_fit();
            c.dport.shrink_to_fit();
            c.has_ports.shrink_to_fit();
            c.ip_id.shrink_to_fit();
            c.has_ip_id.shrink_to_fit();
            c.ip_len.shrink_to_fit();
            c.dscp.shrink_to_fit();
            c.ecn.shrink_to_fit();
            c.ttl.shrink_to_fit();
            c.tcp_seq.shrink_to_fit();
            c.tcp_ack.shrink_to_fit();
            c.tcp_flags.shrink_to_fit();
            c.tcp_payload_len.shrink_to_fit();
            c.has_tcp.shrink_to_fit();
            c.has_rtp.shrink_to_fit();
            c.rtp_ssrc.shrink_to_fit();
            c.rtp_seq.shrink_to_fit();
            c.rtp_ts.shrink_to_fit();
            c.rtp_marker.shrink_to_fit();
            c.rtp_pt.shrink_to_fit();
            c.l4_hash.shrink_to_fit();
            c.truncated.shrink_to_fit();
        }
        (c, self.flows)
    }
}

#[inline(always)]
fn rd16(d: &[u8], off: usize, be: bool) -> u16 {
    let b = [d[off], d[off + 1]];
    if be {
        u16::from_be_bytes(b)
    } else {
        u16::from_le_bytes(b)
    }
}

#[inline(always)]
fn rd32(d: &[u8], off: usize, be: bool) -> u32 {
    let b = [d[off], d[off + 1], d[off + 2], d[off + 3]];
    if be {
        u32::from_be_bytes(b)
    } else {
        u32::from_le_bytes(b)
    }
}

#[inline(always)]
fn rd64(d: &[u8], off: usize, be: bool) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[off..off + 8]);
    if be {
        u64::from_be_bytes(b)
    } else {
        u64::from_le_bytes(b)
    }
}

fn truncation_warning(offset: usize, kept: usize) -> String {
    format!("truncated last record at byte offset {offset}: kept {kept} complete records")
}

/// Reads a capture file: memory-mapped when it is a regular file, read otherwise (pipes,
/// file systems that cannot map).
pub fn read_file(path: &Path) -> Result<Capture, ReadError> {
    let file = File::open(path)?;
    let meta = file.metadata()?;
    if meta.is_file() {
        if meta.len() == 0 {
            return Err(invalid("empty file", 0));
        }
        // Not pre-faulted: the pages read are given back as the reader moves on (below),
        // so that the mapped file never adds its whole size to the process's memory.
        let options = MmapOptions::new();
        // SAFETY: the map is only read, and only while this function runs. Another process
        // truncating the file meanwhile could fault the reads; captures are not rewritten in
        // place, and that risk is the price of a zero-copy read.
        if let Ok(map) = unsafe { options.map(&file) } {
            #[cfg(unix)]
            {
                let _ = map.advise(memmap2::Advice::Sequential);
            }
            let mut released = 0usize;
            let mut release = |upto: usize| chunks::release_pages(&map, &mut released, upto);
            return read_bytes_releasing(&map, &mut release);
        }
        // a file system without mmap: read it instead
    }
    let mut data = Vec::new();
    (&file).read_to_end(&mut data)?;
    read_bytes(&data)
}

/// The reader gives back mapped pages in steps of this many bytes (a power of two; small
/// in tests, so that small files take the same path).
const RELEASE_CHUNK: usize = if cfg!(test) { 64 << 10 } else { 32 << 20 };

/// Reads a capture held in memory.
pub fn read_bytes(data: &[u8]) -> Result<Capture, ReadError> {
    read_bytes_releasing(data, &mut |_| {})
}

/// Reads a capture, calling `release(offset)` now and then: the bytes before `offset`
/// will not be read again.
fn read_bytes_releasing(data: &[u8], release: &mut dyn FnMut(usize)) -> Result<Capture, ReadError> {
    let mut cursor = chunks::Cursor::open(data)?;
    let mut b = Builder::with_capacity(cursor.estimate(data));
    let mut quirks = Quirks::default();
    cursor.advance(data, &mut b, &mut quirks, release, usize::MAX)?;
    let (columns, flows) = b.finish(&mut quirks);
    let packets = columns.len();
    cursor.finish(columns, flows, quirks, packets)
}

/// Where a pcap reader is in its file.
pub(crate) struct PcapCursor {
    records: Records,
    big_endian: bool,
    nanosecond: bool,
    snaplen: u32,
    link_type: u32,
    off: usize,
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
            next_release: RELEASE_CHUNK,
            truncated_at: None,
            done: false,
        })
    }

    /// The number of packets the first records predict for the whole file.
    pub(crate) fn estimate(&self, data: &[u8]) -> usize {
        let be = self.big_endian;
        let caplen_at = if self.records.lengths == Lengths::Swapped {
            12
        } else {
            8
        };
        estimate_packets(data, 24, |off| {
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
        let end = if self.big_endian {
            pcap_records::<true>(data, self, b, quirks, release, limit)?
        } else {
            pcap_records::<false>(data, self, b, quirks, release, limit)?
        };
        if let Some(truncated_at) = end {
            self.truncated_at = truncated_at;
            self.done = true;
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

/// How the records of one pcap file are laid out.
struct Records {
    link: Link,
    frac_ns: i64,
    max_caplen: usize,
    lengths: Lengths,
}

/// Decodes records from `c.off` until the builder holds `limit` packets (`None`: more to
/// come) or the file ends (`Some`, with where an incomplete last record starts, if any).
fn pcap_records<const BE: bool>(
    data: &[u8],
    c: &mut PcapCursor,
    b: &mut Builder,
    quirks: &mut Quirks,
    release: &mut dyn FnMut(usize),
    limit: usize,
) -> Result<Option<Option<usize>>, ReadError> {
    let r = &c.records;
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
            return Err(invalid(format!("corrupt record length {caplen}"), off));
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
            quirks.first_bad_timestamp_at.get_or_insert(off as u64);
            NO_TIMESTAMP
        };
        b.packet(t_ns, 0, wire, r.link, &data[start..start + caplen]);
        off = start + caplen;
    };
    c.off = off;
    Ok(result)
}

/// How many packets to allocate columns for: the packets per byte of the first records
/// (`record(off)` gives a record's length and whether it is a packet), extrapolated to the
/// file with some margin. Columns grow if that was too few and are trimmed at the end.
fn estimate_packets(
    data: &[u8],
    start: usize,
    record: impl Fn(usize) -> Option<(usize, bool)>,
) -> usize {
    let (mut off, mut packets) = (start, 0usize);
    for _ in 0..4096 {
        match record(off) {
            Some((len, is_packet)) if len > 0 && len <= data.len() - off => {
                off += len;
                packets += usize::from(is_packet);
            }
            _ => break,
        }
    }
    let sampled = off - start;
    if sampled == 0 || off >= data.len() {
        return packets;
    }
    let rest = (data.len() - start) as f64 * packets as f64 / sampled as f64;
    (rest * 1.1) as usize + 64
}

mod chunks;
mod pcapng;

pub use chunks::ChunkReader;

#[cfg(test)]
mod tests;
