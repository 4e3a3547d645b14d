//! Frames and the header fields the disciplines look at (ECN, DSCP, 5-tuple), parsed once
//! when the frame arrives; CE marking in place; checksum completion for frames whose
//! transport checksum the sending kernel left to (absent) hardware.

pub type Nanos = u64;

/// Parsed view of a frame's headers. Non-IP frames (ARP, ...) have `l3_off == 0`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Meta {
    pub l3_off: u16,
    pub ip_version: u8,
    pub ecn: u8,
    pub dscp: u8,
    pub proto: u8,
    pub src: [u8; 16],
    pub dst: [u8; 16],
    pub sport: u16,
    pub dport: u16,
    pub ip_id: u32,
    pub tcp_seq: Option<u32>,
    /// Hash of the 5-tuple (or of the Ethernet header for non-IP frames).
    pub flow_hash: u64,
}

#[derive(Debug)]
pub struct Packet {
    /// The whole Ethernet frame as received (no FCS).
    pub data: Vec<u8>,
    /// Serial number per direction, for the event log.
    pub id: u64,
    /// When the frame arrived at the emulator (monotonic ns).
    pub t_arrival: Nanos,
    /// When the discipline that holds it enqueued it (its sojourn starts here).
    pub t_enqueue: Nanos,
    pub meta: Meta,
    /// Scratch space for the discipline that holds the packet (classification, flags).
    pub tag: u32,
}

pub const ECN_NOT_ECT: u8 = 0;
pub const ECN_ECT1: u8 = 1;
pub const ECN_ECT0: u8 = 2;
pub const ECN_CE: u8 = 3;

const ETH_P_IP: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86dd;
const ETH_P_8021Q: u16 = 0x8100;
const ETH_P_8021AD: u16 = 0x88a8;

fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}

fn be32(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

impl Packet {
    pub fn new(data: Vec<u8>, id: u64, t_arrival: Nanos) -> Self {
        let meta = parse(&data);
        Packet {
            data,
            id,
            t_arrival,
            t_enqueue: t_arrival,
            meta,
            tag: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Bytes from the network header on (what mahimahi counts against a trace).
    pub fn l3_len(&self) -> usize {
        if self.meta.l3_off > 0 {
            self.data.len() - self.meta.l3_off as usize
        } else {
            self.data.len().saturating_sub(14)
        }
    }

    pub fn is_ect(&self) -> bool {
        self.meta.l3_off > 0 && self.meta.ecn != ECN_NOT_ECT
    }

    /// Sets CE like the kernel's INET_ECN_set_ce: true if the packet now carries CE (it was
    /// ECT or already CE), false for Not-ECT and non-IP packets (the caller then drops).
    pub fn set_ce(&mut self) -> bool {
        if self.meta.l3_off == 0 || self.meta.ecn == ECN_NOT_ECT {
            return false;
        }
        if self.meta.ecn == ECN_CE {
            return true;
        }
        let o = self.meta.l3_off as usize;
        if self.meta.ip_version == 4 {
            let old = be16(&self.data, o);
            self.data[o + 1] |= ECN_CE;
            let new = be16(&self.data, o);
            // RFC 1624 incremental update of the header checksum.
            let ck = !be16(&self.data, o + 10);
            let mut sum = ck as u32 + (!old) as u32 + new as u32;
            sum = (sum & 0xffff) + (sum >> 16);
            sum = (sum & 0xffff) + (sum >> 16);
            let out = (!(sum as u16)).to_be_bytes();
            self.data[o + 10] = out[0];
            self.data[o + 11] = out[1];
        } else {
            // Traffic class straddles bytes 0 and 1; ECN is its low 2 bits (byte 1, bits 4-5).
            self.data[o + 1] |= ECN_CE << 4;
        }
        self.meta.ecn = ECN_CE;
        true
    }
}

/// 64-bit mix of a few words (splitmix64 finaliser): good enough for hashing flows.
pub fn mix64(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn hash_bytes(seed: u64, b: &[u8]) -> u64 {
    let mut h = seed ^ 0x9e37_79b9_7f4a_7c15;
    for chunk in b.chunks(8) {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        h = mix64(h ^ u64::from_le_bytes(w));
    }
    h
}

impl Meta {
    /// The flow hash perturbed by `seed` (SFQ's perturbation, per-qdisc salts).
    pub fn salted_hash(&self, seed: u64) -> u64 {
        if seed == 0 {
            self.flow_hash
        } else {
            mix64(self.flow_hash ^ seed)
        }
    }
}

/// Parses Ethernet (with up to two VLAN tags), IPv4/IPv6 and TCP/UDP/SCTP ports.
pub fn parse(b: &[u8]) -> Meta {
    let mut m = Meta::default();
    if b.len() < 14 {
        m.flow_hash = hash_bytes(1, b);
        return m;
    }
    let mut off = 12;
    let mut et = be16(b, off);
    let mut tags = 0;
    while (et == ETH_P_8021Q || et == ETH_P_8021AD) && tags < 2 && b.len() >= off + 6 {
        off += 4;
        et = be16(b, off);
        tags += 1;
    }
    let l3 = off + 2;
    let (l4, proto) = match et {
        ETH_P_IP if b.len() >= l3 + 20 && b[l3] >> 4 == 4 => {
            let ihl = ((b[l3] & 0x0f) as usize) * 4;
            m.ip_version = 4;
            m.dscp = b[l3 + 1] >> 2;
            m.ecn = b[l3 + 1] & 3;
            m.ip_id = be16(b, l3 + 4) as u32;
            m.src[..4].copy_from_slice(&b[l3 + 12..l3 + 16]);
            m.dst[..4].copy_from_slice(&b[l3 + 16..l3 + 20]);
            let frag_off = be16(b, l3 + 6) & 0x1fff;
            // Only the first fragment carries ports.
            let l4 = if frag_off == 0 && ihl >= 20 {
                Some(l3 + ihl)
            } else {
                None
            };
            (l4, b[l3 + 9])
        }
        ETH_P_IPV6 if b.len() >= l3 + 40 && b[l3] >> 4 == 6 => {
            let tc = ((be16(b, l3) >> 4) & 0xff) as u8;
            m.ip_version = 6;
            m.dscp = tc >> 2;
            m.ecn = tc & 3;
            m.ip_id = be32(b, l3) & 0x000f_ffff; // flow label
            m.src.copy_from_slice(&b[l3 + 8..l3 + 24]);
            m.dst.copy_from_slice(&b[l3 + 24..l3 + 40]);
            (Some(l3 + 40), b[l3 + 6])
        }
        _ => {
            m.flow_hash = hash_bytes(2, &b[..l3.min(b.len())]);
            return m;
        }
    };
    m.l3_off = l3 as u16;
    m.proto = proto;
    if let Some(l4) = l4 {
        if matches!(proto, 6 | 17 | 132 | 136) && b.len() >= l4 + 4 {
            m.sport = be16(b, l4);
            m.dport = be16(b, l4 + 2);
            if proto == 6 && b.len() >= l4 + 8 {
                m.tcp_seq = Some(be32(b, l4 + 4));
            }
        }
    }
    let mut key = [0u8; 37];
    key[..16].copy_from_slice(&m.src);
    key[16..32].copy_from_slice(&m.dst);
    key[32] = proto;
    key[33..35].copy_from_slice(&m.sport.to_be_bytes());
    key[35..37].copy_from_slice(&m.dport.to_be_bytes());
    m.flow_hash = hash_bytes(3, &key);
    m
}

fn csum_add(mut sum: u32, b: &[u8]) -> u32 {
    let mut chunks = b.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u32;
        if sum > 0xffff_0000 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u32) << 8;
    }
    sum
}

fn csum_fold(mut sum: u32) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Writes a complete TCP/UDP checksum into a frame whose sender left only the pseudo-header
/// sum there (CHECKSUM_PARTIAL on a veth with tx offload on). Returns false if the frame is
/// not one it knows how to fix.
pub fn complete_l4_checksum(b: &mut [u8]) -> bool {
    let m = parse(b);
    if m.l3_off == 0 {
        return false;
    }
    let l3 = m.l3_off as usize;
    let (l4, l4_len, pseudo) = if m.ip_version == 4 {
        let ihl = ((b[l3] & 0x0f) as usize) * 4;
        let total = be16(b, l3 + 2) as usize;
        if total < ihl || l3 + total > b.len() || be16(b, l3 + 6) & 0x3fff != 0 {
            return false;
        }
        let l4_len = total - ihl;
        let mut s = csum_add(0, &b[l3 + 12..l3 + 20]);
        s += m.proto as u32 + l4_len as u32;
        (l3 + ihl, l4_len, s)
    } else {
        let l4_len = be16(b, l3 + 4) as usize;
        if l3 + 40 + l4_len > b.len() || !matches!(m.proto, 6 | 17) {
            return false;
        }
        let mut s = csum_add(0, &b[l3 + 8..l3 + 40]);
        s += m.proto as u32 + l4_len as u32;
        (l3 + 40, l4_len, s)
    };
    let ck_off = match m.proto {
        6 if l4_len >= 20 => l4 + 16,
        17 if l4_len >= 8 => l4 + 6,
        _ => return false,
    };
    b[ck_off] = 0;
    b[ck_off + 1] = 0;
    let mut ck = csum_fold(csum_add(pseudo, &b[l4..l4 + l4_len]));
    if m.proto == 17 && ck == 0 {
        ck = 0xffff;
    }
    b[ck_off..ck_off + 2].copy_from_slice(&ck.to_be_bytes());
    true
}

#[cfg(test)]
pub mod testutil {
    //! Synthetic frames for the unit tests.
    use super::*;

    /// An Ethernet + IPv4 + UDP frame of `size` bytes in total.
    pub fn udp4(size: usize, sport: u16, dport: u16, ecn: u8) -> Vec<u8> {
        let size = size.max(42);
        let mut b = vec![0u8; size];
        b[12..14].copy_from_slice(&ETH_P_IP.to_be_bytes());
        let ip = 14;
        b[ip] = 0x45;
        b[ip + 1] = ecn & 3;
        b[ip + 2..ip + 4].copy_from_slice(&((size - 14) as u16).to_be_bytes());
        b[ip + 8] = 64;
        b[ip + 9] = 17;
        b[ip + 12..ip + 16].copy_from_slice(&[10, 0, 0, 1]);
        b[ip + 16..ip + 20].copy_from_slice(&[10, 0, 0, 2]);
        let ck = csum_fold(csum_add(0, &b[ip..ip + 20]));
        b[ip + 10..ip + 12].copy_from_slice(&ck.to_be_bytes());
        b[34..36].copy_from_slice(&sport.to_be_bytes());
        b[36..38].copy_from_slice(&dport.to_be_bytes());
        b[38..40].copy_from_slice(&((size - 34) as u16).to_be_bytes());
        b
    }

    pub fn pkt(size: usize, sport: u16, ecn: u8, id: u64, t: Nanos) -> Packet {
        Packet::new(udp4(size, sport, 5000, ecn), id, t)
    }

    pub fn ipv4_header_ok(b: &[u8]) -> bool {
        csum_fold(csum_add(0, &b[14..34])) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;

    #[test]
    fn parses_udp4() {
        let p = pkt(1000, 1234, ECN_ECT1, 0, 0);
        assert_eq!(p.meta.ip_version, 4);
        assert_eq!((p.meta.sport, p.meta.dport, p.meta.proto), (1234, 5000, 17));
        assert_eq!(p.meta.ecn, ECN_ECT1);
        assert_eq!(p.l3_len(), 986);
        assert_ne!(
            p.meta.flow_hash,
            pkt(1000, 1235, ECN_ECT1, 0, 0).meta.flow_hash
        );
        assert_eq!(
            p.meta.flow_hash,
            pkt(500, 1234, ECN_ECT0, 0, 0).meta.flow_hash
        );
    }

    #[test]
    fn ce_marking_keeps_the_ipv4_checksum_valid() {
        for ecn in [ECN_ECT0, ECN_ECT1] {
            let mut p = pkt(100, 1, ecn, 0, 0);
            assert!(ipv4_header_ok(&p.data));
            assert!(p.set_ce());
            assert_eq!(p.data[15] & 3, ECN_CE);
            assert_eq!(parse(&p.data).ecn, ECN_CE);
            assert!(ipv4_header_ok(&p.data));
        }
        let mut p = pkt(100, 1, ECN_NOT_ECT, 0, 0);
        assert!(!p.set_ce());
        assert_eq!(p.data[15] & 3, 0);
    }

    #[test]
    fn completes_udp_checksum() {
        let mut b = udp4(200, 7, 9, 0);
        assert!(complete_l4_checksum(&mut b));
        // Verifying: the sum over pseudo header and UDP datagram folds to zero.
        let mut s = csum_add(0, &b[26..34]);
        s += 17 + 166; // protocol and UDP length
        assert_eq!(csum_fold(csum_add(s, &b[34..])), 0);
    }
}
