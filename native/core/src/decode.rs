//! Decoding of one captured frame: link layer, IPv4/IPv6, UDP/TCP, RTP candidate fields and
//! the per-packet hashes. No allocation: a frame becomes a [`Packet`] on the stack.
//!
//! Truncation: a frame is parsed as far as its captured bytes go. `truncated` is set when
//! bytes that a field needs and that exist on the wire were not captured: a link, IP,
//! extension or L4 header cut short, or fewer bytes for `l4_hash` than the packet carries
//! (up to 16), which would make the hash depend on the snaplen.

use crate::keys::{finalize, hash_bytes, mix64};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::net::{Ipv4Addr, Ipv6Addr};

/// How many payload bytes at most go into `l4_hash`.
pub const L4_HASH_PAYLOAD: usize = 16;

/// The link layers we can decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// LINKTYPE_ETHERNET (1), with any stack of 802.1Q / 802.1ad / 0x9100 tags.
    Ethernet,
    /// LINKTYPE_LINUX_SLL (113): 16-byte header, protocol at offset 14.
    LinuxSll,
    /// LINKTYPE_LINUX_SLL2 (276): 20-byte header, protocol at offset 0.
    LinuxSll2,
    /// LINKTYPE_RAW (101, and the historical DLT values 12 and 14): version nibble decides.
    RawIp,
    /// LINKTYPE_IPV4 (228).
    Ipv4,
    /// LINKTYPE_IPV6 (229).
    Ipv6,
}

impl Link {
    /// The decoder of a pcap/pcapng link type (low 16 bits), if supported.
    pub fn from_linktype(link_type: u32) -> Option<Link> {
        match link_type {
            1 => Some(Link::Ethernet),
            113 => Some(Link::LinuxSll),
            276 => Some(Link::LinuxSll2),
            12 | 14 | 101 => Some(Link::RawIp),
            228 => Some(Link::Ipv4),
            229 => Some(Link::Ipv6),
            _ => None,
        }
    }
}

/// The LINKTYPE_ name of some common link types (for error messages).
pub fn linktype_name(link_type: u32) -> Option<&'static str> {
    const USER: [&str; 16] = [
        "USER0", "USER1", "USER2", "USER3", "USER4", "USER5", "USER6", "USER7", "USER8", "USER9",
        "USER10", "USER11", "USER12", "USER13", "USER14", "USER15",
    ];
    Some(match link_type {
        0 => "NULL",
        1 => "ETHERNET",
        3 => "AX25",
        6 => "IEEE802_5",
        7 => "ARCNET_BSD",
        8 => "SLIP",
        9 => "PPP",
        10 => "FDDI",
        12 | 14 | 101 => "RAW",
        50 => "PPP_HDLC",
        51 => "PPP_ETHER",
        100 => "ATM_RFC1483",
        104 => "C_HDLC",
        105 => "IEEE802_11",
        107 => "FRELAY",
        108 => "LOOP",
        113 => "LINUX_SLL",
        114 => "LTALK",
        119 => "IEEE802_11_PRISM",
        122 => "IP_OVER_FC",
        123 => "SUNATM",
        127 => "IEEE802_11_RADIOTAP",
        129 => "ARCNET_LINUX",
        138 => "APPLE_IP_OVER_IEEE1394",
        139 => "MTP2_WITH_PHDR",
        140 => "MTP2",
        141 => "MTP3",
        142 => "SCCP",
        143 => "DOCSIS",
        144 => "LINUX_IRDA",
        147..=162 => USER[(link_type - 147) as usize],
        163 => "IEEE802_11_AVS",
        165 => "BACNET_MS_TP",
        166 => "PPP_PPPD",
        169 => "GPRS_LLC",
        177 => "LINUX_LAPD",
        187 => "BLUETOOTH_HCI_H4",
        189 => "USB_LINUX",
        192 => "PPI",
        195 => "IEEE802_15_4_WITHFCS",
        196 => "SITA",
        197 => "ERF",
        201 => "BLUETOOTH_HCI_H4_WITH_PHDR",
        202 => "AX25_KISS",
        204 => "PPP_WITH_DIR",
        209 => "IPMB_LINUX",
        215 => "IEEE802_15_4_NONASK_PHY",
        220 => "USB_LINUX_MMAPPED",
        224 => "FC_2",
        225 => "FC_2_WITH_FRAME_DELIMS",
        226 => "IPNET",
        227 => "CAN_SOCKETCAN",
        228 => "IPV4",
        229 => "IPV6",
        230 => "IEEE802_15_4_NOFCS",
        231 => "DBUS",
        235 => "DVB_CI",
        236 => "MUX27010",
        237 => "STANAG_5066_D_PDU",
        239 => "NFLOG",
        240 => "NETANALYZER",
        241 => "NETANALYZER_TRANSPARENT",
        242 => "IPOIB",
        243 => "MPEG_2_TS",
        244 => "NG40",
        245 => "NFC_LLCP",
        247 => "INFINIBAND",
        248 => "SCTP",
        249 => "USBPCAP",
        250 => "RTAC_SERIAL",
        251 => "BLUETOOTH_LE_LL",
        253 => "NETLINK",
        254 => "BLUETOOTH_LINUX_MONITOR",
        255 => "BLUETOOTH_BREDR_BB",
        256 => "BLUETOOTH_LE_LL_WITH_PHDR",
        257 => "PROFIBUS_DL",
        258 => "PKTAP",
        259 => "EPON",
        260 => "IPMI_HPM_2",
        261 => "ZWAVE_R1_R2",
        262 => "ZWAVE_R3",
        263 => "WATTSTOPPER_DLM",
        264 => "ISO_14443",
        265 => "RDS",
        266 => "USB_DARWIN",
        268 => "SDLC",
        270 => "LORATAP",
        271 => "VSOCK",
        272 => "NORDIC_BLE",
        273 => "DOCSIS31_XRA31",
        274 => "ETHERNET_MPACKET",
        275 => "DISPLAYPORT_AUX",
        276 => "LINUX_SLL2",
        _ => return None,
    })
}

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

#[inline(always)]
fn be16(b: &[u8], off: usize) -> u16 {
    u16::from_be_bytes([b[off], b[off + 1]])
}

#[inline(always)]
fn be32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

/// 4 bytes in memory order as a native-endian word.
#[inline(always)]
fn ne32(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

#[inline(always)]
fn ne64(b: &[u8], off: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[off..off + 8]);
    u64::from_ne_bytes(w)
}

/// Exactly `keys::hash_bytes` (a test checks it), but the last partial word is read
/// straight from the slice: `hash_bytes` copies it into a stack buffer first, and loading
/// that buffer as a word right after the byte copy stalls store-to-load forwarding, which
/// costs ~10% of the whole read when done for every packet.
#[inline]
pub fn hash_frame_bytes(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    let mut h = finalize(n as u64 ^ 0x6a09_e667_f3bc_c909);
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        h = mix64(
            h,
            u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
        );
    }
    let r = n % 8;
    if r != 0 {
        let tail = if n >= 8 {
            // the last 8 bytes, shifted down to the r that were not hashed yet
            let b = &bytes[n - 8..];
            u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) >> (8 * (8 - r))
        } else if n >= 4 {
            // two overlapping 4-byte reads; the overlap ORs equal bytes
            let lo = u64::from(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]));
            let b = &bytes[n - 4..];
            let hi = u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            lo | (hi << (8 * (n - 4)))
        } else {
            u64::from(bytes[0])
                | (u64::from(bytes[n / 2]) << (8 * (n / 2)))
                | (u64::from(bytes[n - 1]) << (8 * (n - 1)))
        };
        h = mix64(h, tail);
    }
    h
}

/// Packs a 16-byte address into the two words of [`Packet::src`].
pub fn addr_words(a: [u8; 16]) -> [u64; 2] {
    [ne64(&a, 0), ne64(&a, 8)]
}

#[inline(always)]
fn is_vlan_tpid(ethertype: u16) -> bool {
    matches!(ethertype, 0x8100 | 0x88a8 | 0x9100)
}

/// Decodes one captured frame of the given link type (`wire_len`: the frame's length on
/// the wire, which may exceed the captured bytes).
pub fn decode(link: Link, frame: &[u8], wire_len: u32) -> Packet {
    let mut p = Packet::default();
    decode_into(link, frame, wire_len, &mut p);
    p
}

/// Decodes one captured frame into `p`, which must be all zeros (`Packet::default()`).
///
/// In place rather than returned: a returned `Packet` is copied with wide loads right after
/// its fields were written byte by byte, which stalls store-to-load forwarding.
#[inline(always)]
pub fn decode_into(link: Link, frame: &[u8], wire_len: u32, p: &mut Packet) {
    // what the IP layer's length fields are checked against when they say 0
    let wire = wire_len.max(frame.len() as u32);
    match link {
        Link::Ethernet => ethertype_payload(frame, wire, 12, 14, p),
        Link::LinuxSll => ethertype_payload(frame, wire, 14, 16, p),
        Link::LinuxSll2 => ethertype_payload(frame, wire, 0, 20, p),
        Link::RawIp => match frame.first() {
            None => p.truncated = true,
            Some(b) if b >> 4 == 4 => ipv4(frame, wire, p),
            Some(b) if b >> 4 == 6 => ipv6(frame, wire, p),
            Some(_) => {}
        },
        Link::Ipv4 => ipv4(frame, wire, p),
        Link::Ipv6 => ipv6(frame, wire, p),
    }
}

/// A link header of `header_len` bytes whose protocol (an EtherType) sits at `type_off`,
/// followed by any number of VLAN tags (4 bytes each: TCI, inner EtherType).
#[inline(always)]
fn ethertype_payload(frame: &[u8], wire: u32, type_off: usize, header_len: usize, p: &mut Packet) {
    if frame.len() < header_len {
        p.truncated = true;
        return;
    }
    let mut ethertype = be16(frame, type_off);
    let mut off = header_len;
    while is_vlan_tpid(ethertype) {
        if frame.len() < off + 4 {
            p.truncated = true;
            return;
        }
        ethertype = be16(frame, off + 2);
        off += 4;
    }
    let ip_wire = wire.saturating_sub(off as u32);
    match ethertype {
        0x0800 => ipv4(&frame[off..], ip_wire, p),
        0x86dd => ipv6(&frame[off..], ip_wire, p),
        _ => {}
    }
}

/// `b`: the captured bytes from the IP header on; `wire`: how many there were on the wire.
fn ipv4(b: &[u8], wire: u32, p: &mut Packet) {
    if b.len() < 20 {
        p.truncated = true;
        return;
    }
    let ihl = usize::from(b[0] & 0x0f) * 4;
    if b[0] >> 4 != 4 || ihl < 20 {
        return; // not a readable IPv4 header
    }
    p.ip_version = 4;
    p.dscp = b[1] >> 2;
    p.ecn = b[1] & 3;
    p.ip_len = u32::from(be16(b, 2));
    if p.ip_len == 0 && wire > ihl as u32 {
        p.ip_len = wire;
        p.len_source = len_source::FRAME;
    }
    p.ip_id = u32::from(be16(b, 4));
    p.has_ip_id = true;
    let first_fragment = be16(b, 6) & 0x1fff == 0;
    p.ttl = b[8];
    p.proto = b[9];
    p.src = [u64::from(ne32(b, 12)), 0];
    p.dst = [u64::from(ne32(b, 16)), 0];
    if b.len() < ihl {
        p.truncated = true; // options cut: the L4 header is out of reach
        return;
    }
    let wire = p.ip_len.saturating_sub(ihl as u32);
    transport(&b[ihl..], wire, first_fragment, p);
}

/// The Jumbo Payload length (RFC 2675) in the hop-by-hop options `opts`, if any.
fn jumbo_payload_len(opts: &[u8]) -> Option<u32> {
    let mut o = 0usize;
    while o < opts.len() {
        match opts[o] {
            0 => o += 1, // Pad1
            0xc2 if o + 6 <= opts.len() && opts[o + 1] == 4 => return Some(be32(opts, o + 2)),
            _ if o + 2 <= opts.len() => o += 2 + usize::from(opts[o + 1]),
            _ => break,
        }
    }
    None
}

/// `b`: the captured bytes from the IP header on; `wire`: how many there were on the wire.
fn ipv6(b: &[u8], wire: u32, p: &mut Packet) {
    if b.len() < 40 {
        p.truncated = true;
        return;
    }
    if b[0] >> 4 != 6 {
        return;
    }
    p.ip_version = 6;
    let tclass = (be16(b, 0) >> 4) as u8;
    p.dscp = tclass >> 2;
    p.ecn = tclass & 3;
    p.ip_len = u32::from(be16(b, 4)) + 40;
    p.ttl = b[7];
    p.src = [ne64(b, 8), ne64(b, 16)];
    p.dst = [ne64(b, 24), ne64(b, 32)];
    let mut next = b[6];
    if p.ip_len == 40 {
        // payload length 0: a jumbogram, or a BIG TCP segment without the jumbo option
        let hbh_len = if next == 0 && b.len() >= 42 {
            (usize::from(b[41]) + 1) * 8
        } else {
            0
        };
        if let Some(jumbo) = (hbh_len > 0)
            .then(|| jumbo_payload_len(&b[42..(40 + hbh_len).min(b.len())]))
            .flatten()
        {
            p.ip_len = jumbo.saturating_add(40);
            p.len_source = len_source::JUMBO;
        } else if wire > 40 {
            p.ip_len = wire;
            p.len_source = len_source::FRAME;
        }
    }
    let mut off = 40usize;
    let mut first_fragment = true;
    loop {
        match next {
            // hop-by-hop, routing, destination options: length in 8-octet units, minus one
            0 | 43 | 60 => {
                if b.len() < off + 2 {
                    p.proto = next;
                    p.truncated = true;
                    return;
                }
                next = b[off];
                off += (usize::from(b[off + 1]) + 1) * 8;
            }
            // authentication header: length in 4-octet units, minus two
            51 => {
                if b.len() < off + 2 {
                    p.proto = next;
                    p.truncated = true;
                    return;
                }
                next = b[off];
                off += (usize::from(b[off + 1]) + 2) * 4;
            }
            44 => {
                if b.len() < off + 8 {
                    p.proto = next;
                    p.truncated = true;
                    return;
                }
                p.ip_id = be32(b, off + 4);
                p.has_ip_id = true;
                next = b[off];
                off += 8;
                if be16(b, off - 6) >> 3 != 0 {
                    // a later fragment: what follows is raw payload, not headers
                    first_fragment = false;
                    break;
                }
            }
            _ => break,
        }
    }
    p.proto = next;
    if b.len() < off {
        p.truncated = true;
        return;
    }
    let wire = p.ip_len.saturating_sub(off as u32);
    transport(&b[off..], wire, first_fragment, p);
}

/// `b`: the captured bytes after the IP header(s); `wire`: how many bytes follow the IP
/// header(s) on the wire (by the IP length fields), which excludes link-layer padding.
#[inline(always)]
fn transport(b: &[u8], wire: u32, first_fragment: bool, p: &mut Packet) {
    if first_fragment {
        match p.proto {
            17 => return udp(b, wire, p),
            6 => return tcp(b, wire, p),
            _ => {}
        }
    }
    let want = L4_HASH_PAYLOAD.min(wire as usize);
    let k = want.min(b.len());
    p.truncated |= k < want;
    p.l4_hash = hash_frame_bytes(&b[..k]);
}

fn udp(b: &[u8], wire: u32, p: &mut Packet) {
    if b.len() < 4 {
        p.truncated = true;
        return;
    }
    p.ports = be32(b, 0);
    p.has_ports = true;
    if b.len() < 8 {
        p.truncated = true;
        return;
    }
    let udp_len = match u32::from(be16(b, 4)) {
        0 => wire, // a UDP jumbogram's length field is 0 (RFC 2675)
        n => n,
    };
    let payload_wire = udp_len.saturating_sub(8).min(wire.saturating_sub(8)) as usize;
    let payload = &b[8..];
    let want = L4_HASH_PAYLOAD.min(payload_wire);
    let k = want.min(payload.len());
    p.truncated |= k < want;
    p.l4_hash = hash_frame_bytes(&payload[..k]);
    if payload.len().min(payload_wire) >= 12 && payload[0] >> 6 == 2 {
        p.has_rtp = true;
        p.rtp_marker = payload[1] & 0x80 != 0;
        p.rtp_pt = payload[1] & 0x7f;
        p.rtp_seq = be16(payload, 2);
        p.rtp_ts = be32(payload, 4);
        p.rtp_ssrc = be32(payload, 8);
    }
}

fn tcp(b: &[u8], wire: u32, p: &mut Packet) {
    if b.len() < 4 {
        p.truncated = true;
        return;
    }
    p.ports = be32(b, 0);
    p.has_ports = true;
    if b.len() < 20 {
        p.truncated = true;
        return;
    }
    let header_len = usize::from(b[12] >> 4) * 4;
    if header_len < 20 {
        return; // malformed data offset: only the ports are trusted
    }
    p.has_tcp = true;
    p.tcp_seq = be32(b, 4);
    p.tcp_ack = be32(b, 8);
    p.tcp_flags = (u16::from(b[12] & 1) << 8) | u16::from(b[13]);
    p.tcp_payload_len = wire.saturating_sub(header_len as u32);

    // window + urgent pointer (not the checksum), the options, the first payload bytes;
    // hashed straight from the frame (a copy into one buffer stalls store forwarding)
    let window_urgent = (u64::from(be16(b, 14)) << 16) | u64::from(be16(b, 18));
    let options_end = header_len.min(b.len());
    let options = hash_frame_bytes(&b[20..options_end]);
    let want = L4_HASH_PAYLOAD.min(p.tcp_payload_len as usize);
    let payload = if options_end < header_len {
        p.truncated = true;
        &[][..]
    } else {
        let k = want.min(b.len() - header_len);
        p.truncated |= k < want;
        &b[header_len..header_len + k]
    };
    p.l4_hash = mix64(mix64(options, window_urgent), hash_frame_bytes(payload));
}

/// A flow: (ip_version, src, dst, proto, sport, dport), packed into 5 words for fast
/// comparison and hashing.
#[derive(Clone, Copy, Debug)]
pub struct FlowKey([u64; 5]);

impl PartialEq for FlowKey {
    #[inline(always)]
    fn eq(&self, o: &FlowKey) -> bool {
        // word by word: the derived comparison of the array calls memcmp
        let (a, b) = (&self.0, &o.0);
        ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3]) | (a[4] ^ b[4])) == 0
    }
}

impl Eq for FlowKey {}

impl FlowKey {
    #[inline(always)]
    pub fn of(p: &Packet) -> FlowKey {
        FlowKey([
            p.src[0],
            p.src[1],
            p.dst[0],
            p.dst[1],
            (u64::from(p.ip_version) << 40) | (u64::from(p.proto) << 32) | u64::from(p.ports),
        ])
    }

    pub fn ip_version(&self) -> u8 {
        (self.0[4] >> 40) as u8
    }
    pub fn proto(&self) -> u8 {
        (self.0[4] >> 32) as u8
    }
    pub fn sport(&self) -> u16 {
        (self.0[4] >> 16) as u16
    }
    pub fn dport(&self) -> u16 {
        self.0[4] as u16
    }
    fn addr_bytes(&self, first_word: usize) -> [u8; 16] {
        let mut a = [0u8; 16];
        a[..8].copy_from_slice(&self.0[first_word].to_ne_bytes());
        a[8..].copy_from_slice(&self.0[first_word + 1].to_ne_bytes());
        a
    }
    fn addr_len(&self) -> usize {
        if self.ip_version() == 6 {
            16
        } else {
            4
        }
    }
    fn format_addr(&self, first_word: usize) -> String {
        let a = self.addr_bytes(first_word);
        if self.ip_version() == 6 {
            Ipv6Addr::from(a).to_string()
        } else {
            Ipv4Addr::new(a[0], a[1], a[2], a[3]).to_string()
        }
    }
    /// The source address as `std::net` displays it.
    pub fn src_string(&self) -> String {
        self.format_addr(0)
    }
    pub fn dst_string(&self) -> String {
        self.format_addr(2)
    }

    /// The directional flow hash: `hash_bytes` of ip_version (1 byte), source and
    /// destination address (4 or 16 bytes each), proto (1 byte), sport and dport (2 bytes
    /// each, big endian).
    pub fn flow_hash(&self) -> u64 {
        let n = self.addr_len();
        let (src, dst) = (self.addr_bytes(0), self.addr_bytes(2));
        let mut buf = [0u8; 1 + 16 + 16 + 1 + 2 + 2];
        buf[0] = self.ip_version();
        buf[1..1 + n].copy_from_slice(&src[..n]);
        buf[1 + n..1 + 2 * n].copy_from_slice(&dst[..n]);
        let o = 1 + 2 * n;
        buf[o] = self.proto();
        buf[o + 1..o + 3].copy_from_slice(&self.sport().to_be_bytes());
        buf[o + 3..o + 5].copy_from_slice(&self.dport().to_be_bytes());
        hash_bytes(&buf[..o + 5])
    }
}

impl Hash for FlowKey {
    #[inline(always)]
    fn hash<H: Hasher>(&self, state: &mut H) {
        // FxHash-style word mixing; the final multiply spreads entropy into the top bits
        // that the hash table uses for its control bytes.
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut h = 0u64;
        for w in self.0 {
            h = (h.rotate_left(5) ^ w).wrapping_mul(K);
        }
        state.write_u64(h ^ (h >> 29));
    }
}

/// A hasher that takes the one word [`FlowKey`] hands it.
#[derive(Default)]
struct WordHasher(u64);

impl Hasher for WordHasher {
    #[inline(always)]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline(always)]
    fn write_u64(&mut self, w: u64) {
        self.0 = w;
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }
}

/// Flows interned in order of first appearance.
#[derive(Default)]
pub struct FlowTable {
    pub keys: Vec<FlowKey>,
    pub hashes: Vec<u64>,
    index: HashMap<FlowKey, u32, BuildHasherDefault<WordHasher>>,
    /// The flow of the previous packet (compared with `keys[last]`, so nothing is copied).
    last: usize,
}

impl FlowTable {
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The index and directional hash of the packet's flow (which must be IP).
    #[inline]
    pub fn intern(&mut self, p: &Packet) -> (u32, u64) {
        let key = FlowKey::of(p);
        if let Some(last) = self.keys.get(self.last) {
            if *last == key {
                return (self.last as u32, self.hashes[self.last]);
            }
        }
        let idx = match self.index.get(&key) {
            Some(&idx) => idx,
            None => {
                let idx = u32::try_from(self.keys.len())
                    .ok()
                    .filter(|&i| i != u32::MAX)
                    .expect("more than 2^32 - 1 flows");
                self.keys.push(key);
                self.hashes.push(key.flow_hash());
                self.index.insert(key, idx);
                idx
            }
        };
        self.last = idx as usize;
        (idx, self.hashes[idx as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_frame_bytes_is_hash_bytes() {
        let data: Vec<u8> = (0..100u32).map(|i| (i * 37 + 11) as u8).collect();
        for start in 0..9 {
            for len in 0..80 {
                let s = &data[start..start + len];
                assert_eq!(hash_frame_bytes(s), hash_bytes(s), "len {len}");
            }
        }
    }

    #[test]
    fn flow_key_round_trips() {
        let mut p = Packet {
            ip_version: 6,
            proto: 17,
            ports: (5004 << 16) | 40000,
            ..Packet::default()
        };
        p.src = addr_words("2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        p.dst = addr_words("fe80::abcd:1".parse::<Ipv6Addr>().unwrap().octets());
        let k = FlowKey::of(&p);
        assert_eq!(k.ip_version(), 6);
        assert_eq!(k.proto(), 17);
        assert_eq!(k.sport(), 5004);
        assert_eq!(k.dport(), 40000);
        assert_eq!(k.src_string(), "2001:db8::1");
        assert_eq!(k.dst_string(), "fe80::abcd:1");
    }

    #[test]
    fn flow_hash_is_directional_and_documented() {
        let mut p = Packet {
            ip_version: 4,
            proto: 6,
            ports: (1 << 16) | 2,
            ..Packet::default()
        };
        p.src = addr_words([10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        p.dst = addr_words([10, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let k = FlowKey::of(&p);
        let expected = hash_bytes(&[4, 10, 0, 0, 1, 10, 0, 0, 2, 6, 0, 1, 0, 2]);
        assert_eq!(k.flow_hash(), expected);
        std::mem::swap(&mut p.src, &mut p.dst);
        p.ports = p.ports.rotate_left(16);
        assert_ne!(FlowKey::of(&p).flow_hash(), expected);
    }

    #[test]
    fn flow_table_interns_in_order() {
        let mut t = FlowTable::default();
        let mk = |sport: u32| Packet {
            ip_version: 4,
            proto: 17,
            ports: (sport << 16) | 9,
            ..Packet::default()
        };
        assert_eq!(t.intern(&mk(1)).0, 0);
        assert_eq!(t.intern(&mk(1)).0, 0);
        assert_eq!(t.intern(&mk(2)).0, 1);
        assert_eq!(t.intern(&mk(1)).0, 0);
        assert_eq!(t.intern(&mk(3)).0, 2);
        assert_eq!(t.len(), 3);
        assert_eq!(t.intern(&mk(2)), (1, t.hashes[1]));
    }

    #[test]
    fn linktype_names() {
        assert_eq!(linktype_name(147), Some("USER0"));
        assert_eq!(linktype_name(162), Some("USER15"));
        assert_eq!(linktype_name(127), Some("IEEE802_11_RADIOTAP"));
        assert_eq!(linktype_name(65000), None);
    }
}
