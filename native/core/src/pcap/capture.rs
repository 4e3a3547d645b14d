//! What a read yields: the capture's format, interfaces and statistics, the packet columns
//! and the counts of records that needed a decision.

use super::*;

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
    pub(super) fn from_option(v: u8) -> TsResolution {
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
    pub(super) fn to_ns(self, ts: u64) -> i128 {
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
    pub(super) link: Option<Link>,
}

impl Interface {
    /// A timestamp of this interface in nanoseconds since the epoch (saturating).
    #[inline]
    pub(super) fn ts_ns(&self, ts: u64) -> i64 {
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
/// What a packet's flow determines (IP version, protocol, ports, flow hash) is not
/// repeated per packet: it is in the flow table, through `flow_idx` (`Capture::flow`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Columns {
    pub t_ns: Vec<i64>,
    /// Empty when every packet's interface is 0 (all pcap files, and pcapng files of one
    /// interface): read it through [`Columns::interface_id`].
    pub interface_id: Vec<u32>,
    pub wire_len: Vec<u32>,
    pub flow_idx: Vec<u32>,
    pub has_ports: Vec<bool>,
    pub ip_id: Vec<u32>,
    pub has_ip_id: Vec<bool>,
    pub ip_len: Vec<u32>,
    pub dscp: Vec<u8>,
    pub ecn: Vec<u8>,
    pub ttl: Vec<u8>,
    /// A TCP segment's sequence number, or an RTP-shaped UDP payload's SSRC: a packet is
    /// one or the other (`has_tcp`, `has_rtp`), so the two share a column (0 for neither;
    /// read them through [`Columns::tcp_seq`] and [`Columns::rtp_ssrc`]).
    pub tcp_seq_rtp_ssrc: Vec<u32>,
    /// The acknowledgement number, or the RTP timestamp.
    pub tcp_ack_rtp_ts: Vec<u32>,
    /// The TCP flags, or the RTP sequence number.
    pub tcp_flags_rtp_seq: Vec<u16>,
    pub tcp_payload_len: Vec<u32>,
    pub has_tcp: Vec<bool>,
    pub has_rtp: Vec<bool>,
    pub rtp_marker: Vec<bool>,
    pub rtp_pt: Vec<u8>,
    /// `decode::Packet::l4_hash` folded to 32 bits (`keys::fold32`).
    pub l4_hash: Vec<u32>,
    pub truncated: Vec<bool>,
}

/// Applies `$m` to every per-packet column of `Columns` but `interface_id` (which may be
/// empty: see `Columns::interface_id`).
macro_rules! each_column {
    ($m:ident) => {
        $m!(
            t_ns,
            wire_len,
            flow_idx,
            has_ports,
            ip_id,
            has_ip_id,
            ip_len,
            dscp,
            ecn,
            ttl,
            tcp_seq_rtp_ssrc,
            tcp_ack_rtp_ts,
            tcp_flags_rtp_seq,
            tcp_payload_len,
            has_tcp,
            has_rtp,
            rtp_marker,
            rtp_pt,
            l4_hash,
            truncated
        )
    };
}

pub(crate) use each_column;

impl Columns {
    pub(super) fn with_capacity(n: usize) -> Columns {
        Columns {
            t_ns: column(n),
            interface_id: Vec::new(),
            wire_len: column(n),
            flow_idx: column(n),
            has_ports: column(n),
            ip_id: column(n),
            has_ip_id: column(n),
            ip_len: column(n),
            dscp: column(n),
            ecn: column(n),
            ttl: column(n),
            tcp_seq_rtp_ssrc: column(n),
            tcp_ack_rtp_ts: column(n),
            tcp_flags_rtp_seq: column(n),
            tcp_payload_len: column(n),
            has_tcp: column(n),
            has_rtp: column(n),
            rtp_marker: column(n),
            rtp_pt: column(n),
            l4_hash: column(n),
            truncated: column(n),
        }
    }

    pub fn len(&self) -> usize {
        self.t_ns.len()
    }

    /// Empties every column, keeping its memory (for the next chunk of a chunked read).
    pub(super) fn clear(&mut self) {
        macro_rules! clear {
            ($($f:ident),*) => { $(self.$f.clear();)* };
        }
        each_column!(clear);
        self.interface_id.clear();
    }

    /// The interface of packet `i` (a pcapng interface id; 0 in a pcap file).
    #[inline]
    pub fn interface_id(&self, i: usize) -> u32 {
        self.interface_id.get(i).copied().unwrap_or(0)
    }

    /// Packet `i`'s TCP sequence number (0 when not TCP).
    #[inline]
    pub fn tcp_seq(&self, i: usize) -> u32 {
        when(self.has_tcp[i], self.tcp_seq_rtp_ssrc[i])
    }

    #[inline]
    pub fn tcp_ack(&self, i: usize) -> u32 {
        when(self.has_tcp[i], self.tcp_ack_rtp_ts[i])
    }

    #[inline]
    pub fn tcp_flags(&self, i: usize) -> u16 {
        when(self.has_tcp[i], self.tcp_flags_rtp_seq[i])
    }

    /// Packet `i`'s RTP SSRC (0 when its UDP payload is not RTP-shaped).
    #[inline]
    pub fn rtp_ssrc(&self, i: usize) -> u32 {
        when(self.has_rtp[i], self.tcp_seq_rtp_ssrc[i])
    }

    #[inline]
    pub fn rtp_seq(&self, i: usize) -> u16 {
        when(self.has_rtp[i], self.tcp_flags_rtp_seq[i])
    }

    #[inline]
    pub fn rtp_ts(&self, i: usize) -> u32 {
        when(self.has_rtp[i], self.tcp_ack_rtp_ts[i])
    }

    /// Every packet's interface (see [`Columns::interface_id`]).
    pub fn interface_ids(&self) -> Vec<u32> {
        let mut ids = self.interface_id.clone();
        ids.resize(self.len(), 0);
        ids
    }

    pub fn is_empty(&self) -> bool {
        self.t_ns.is_empty()
    }
}

/// A shared column's value where its field applies (`applies`), else 0.
#[inline(always)]
fn when<T: Default>(applies: bool, value: T) -> T {
    if applies {
        value
    } else {
        T::default()
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

impl Capture {
    /// A pcap capture of these columns and flows (for tests of what reads captures).
    #[cfg(test)]
    pub(crate) fn of(columns: Columns, flows: FlowTable) -> Capture {
        Capture {
            format: Format::Pcap,
            big_endian: false,
            nanosecond: Some(true),
            snaplen: 65535,
            columns,
            flows,
            interfaces: Vec::new(),
            stats: Vec::new(),
            warnings: Vec::new(),
            quirks: Quirks::default(),
        }
    }

    /// The flow of packet `i`; None when it is not IP.
    #[inline]
    pub fn flow(&self, i: usize) -> Option<&FlowKey> {
        self.flows.keys.get(self.columns.flow_idx[i] as usize)
    }

    /// The directional hash of packet `i`'s flow (`FlowKey::flow_hash`); 0 when not IP.
    #[inline]
    pub fn flow_hash(&self, i: usize) -> u64 {
        self.flows.hash_of(self.columns.flow_idx[i])
    }
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
