//! What decoding one frame yields: the [`Packet`] fields and where its IP length came from.

/// Where [`Packet::ip_len`] comes from.
pub mod len_source {
    /// The IP header's length field (IPv4 total length, IPv6 payload length + 40).
    pub const HEADER: u8 = 0;
    /// The length field was 0 and the frame is longer than the IP header: a segment the
    /// capture saw before TCP segmentation offload split it (IPv4 "TSO"; IPv6 BIG TCP
    /// without a jumbo option). The length on the wire after the link header is used, as
    /// tshark does (`ip.tso_support`).
    pub const FRAME: u8 = 1;
    /// IPv6 payload length 0 with a hop-by-hop Jumbo Payload option (RFC 2675, BIG TCP):
    /// the option's 32-bit length + 40.
    pub const JUMBO: u8 = 2;
}

/// The decoded fields of one frame. Fields a frame does not have are 0 / false.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Packet {
    /// 4 or 6; 0 when the frame is not IP or its IP header is unreadable.
    pub ip_version: u8,
    /// IPv4 protocol / IPv6 upper-layer next header (after extension headers).
    pub proto: u8,
    /// Source port << 16 | destination port (one field, written and read whole).
    pub ports: u32,
    pub has_ports: bool,
    /// IPv4 identification, or the 32-bit identification of an IPv6 fragment header.
    pub ip_id: u32,
    pub has_ip_id: bool,
    /// IPv4 total length; IPv6 payload length + 40 (as on the wire, not as captured);
    /// see [`len_source`] for length fields of 0.
    pub ip_len: u32,
    /// One of the [`len_source`] values.
    pub len_source: u8,
    pub dscp: u8,
    pub ecn: u8,
    /// TTL / hop limit.
    pub ttl: u8,
    pub tcp_seq: u32,
    pub tcp_ack: u32,
    /// The 9 TCP flag bits (NS, CWR, ECE, URG, ACK, PSH, RST, SYN, FIN).
    pub tcp_flags: u16,
    pub tcp_payload_len: u32,
    pub has_tcp: bool,
    pub has_rtp: bool,
    pub rtp_ssrc: u32,
    pub rtp_seq: u16,
    pub rtp_ts: u32,
    pub rtp_marker: bool,
    pub rtp_pt: u8,
    /// Hash of bytes a router never changes (each part through `keys::hash_bytes`, which
    /// includes the number of bytes):
    /// - UDP: the first min(16, UDP payload on the wire, captured) payload bytes;
    /// - TCP: `mix64(mix64(hash_bytes(options), window << 16 | urgent pointer),
    ///   hash_bytes(first min(16, payload on the wire, captured) payload bytes))`;
    /// - other protocols and later fragments: the first min(16, on the wire, captured)
    ///   bytes after the IP header(s).
    ///
    /// "On the wire" is bounded by the IP (and UDP) length fields, so Ethernet padding is
    /// never hashed. 0 when not IP or the L4 header is out of reach.
    pub l4_hash: u64,
    /// Some header or `l4_hash` byte that exists on the wire was not captured.
    pub truncated: bool,
    /// Source address: its 16 bytes (IPv4: 4 bytes, then zeros) in memory order, as two
    /// native-endian words (written whole, so reading them back as words is cheap).
    pub src: [u64; 2],
    pub dst: [u64; 2],
}

impl Packet {
    pub fn sport(&self) -> u16 {
        (self.ports >> 16) as u16
    }
    pub fn dport(&self) -> u16 {
        self.ports as u16
    }
}
