//! Frame builders: Ethernet, Linux cooked, VLAN tags, IPv4/IPv6, UDP, TCP and RTP, as
//! bytes.

#[allow(clippy::too_many_arguments)]
pub(super) fn ipv4_with(
    proto: u8,
    src: [u8; 4],
    dst: [u8; 4],
    options: &[u8],
    frag: u16,
    tos: u8,
    ttl: u8,
    id: u16,
    payload: &[u8],
) -> Vec<u8> {
    assert_eq!(options.len() % 4, 0);
    let hl = 20 + options.len();
    let total = (hl + payload.len()) as u16;
    let mut v = vec![0x40 | (hl / 4) as u8, tos];
    v.extend_from_slice(&total.to_be_bytes());
    v.extend_from_slice(&id.to_be_bytes());
    v.extend_from_slice(&frag.to_be_bytes());
    v.extend_from_slice(&[ttl, proto, 0xab, 0xcd]);
    v.extend_from_slice(&src);
    v.extend_from_slice(&dst);
    v.extend_from_slice(options);
    v.extend_from_slice(payload);
    v
}

pub(super) fn ipv4(proto: u8, payload: &[u8]) -> Vec<u8> {
    ipv4_with(
        proto,
        [10, 0, 0, 1],
        [10, 0, 0, 2],
        &[],
        0x4000,
        0xb9,
        64,
        0x1234,
        payload,
    )
}

pub(super) fn v6(s: &str) -> [u8; 16] {
    s.parse::<std::net::Ipv6Addr>().unwrap().octets()
}

/// IPv6 with raw extension-header bytes (`next` is the first next header).
pub(super) fn ipv6_with(next: u8, ext: &[u8], tclass: u8, hlim: u8, payload: &[u8]) -> Vec<u8> {
    let plen = (ext.len() + payload.len()) as u16;
    let first = 0x6000_0000u32 | (u32::from(tclass) << 20) | 0x12345;
    let mut v = first.to_be_bytes().to_vec();
    v.extend_from_slice(&plen.to_be_bytes());
    v.extend_from_slice(&[next, hlim]);
    v.extend_from_slice(&v6("2001:db8::1"));
    v.extend_from_slice(&v6("2001:db8::2"));
    v.extend_from_slice(ext);
    v.extend_from_slice(payload);
    v
}

pub(super) fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = sport.to_be_bytes().to_vec();
    v.extend_from_slice(&dport.to_be_bytes());
    v.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    v.extend_from_slice(&[0xee, 0xee]);
    v.extend_from_slice(payload);
    v
}

pub(super) fn tcp(
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u16,
    options: &[u8],
    payload: &[u8],
) -> Vec<u8> {
    assert_eq!(options.len() % 4, 0);
    let doff = ((20 + options.len()) / 4) as u8;
    let mut v = sport.to_be_bytes().to_vec();
    v.extend_from_slice(&dport.to_be_bytes());
    v.extend_from_slice(&seq.to_be_bytes());
    v.extend_from_slice(&ack.to_be_bytes());
    v.push((doff << 4) | (flags >> 8) as u8);
    v.push(flags as u8);
    v.extend_from_slice(&[0x01, 0x00]); // window
    v.extend_from_slice(&[0xcc, 0xcc]); // checksum
    v.extend_from_slice(&[0x00, 0x00]); // urgent pointer
    v.extend_from_slice(options);
    v.extend_from_slice(payload);
    v
}

pub(super) fn rtp(marker: bool, pt: u8, seq: u16, ts: u32, ssrc: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![0x80, (u8::from(marker) << 7) | pt];
    v.extend_from_slice(&seq.to_be_bytes());
    v.extend_from_slice(&ts.to_be_bytes());
    v.extend_from_slice(&ssrc.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

/// Ethernet with VLAN tags given as (TPID, TCI).
pub(super) fn eth_tagged(tags: &[(u16, u16)], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    for &(tpid, tci) in tags {
        v.extend_from_slice(&tpid.to_be_bytes());
        v.extend_from_slice(&tci.to_be_bytes());
    }
    v.extend_from_slice(&ethertype.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

pub(super) fn eth(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    eth_tagged(&[], ethertype, payload)
}

pub(super) fn sll(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0];
    v.extend_from_slice(&ethertype.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

pub(super) fn sll2(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = ethertype.to_be_bytes().to_vec();
    v.extend_from_slice(&[0, 0, 0, 0, 0, 2, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0]);
    v.extend_from_slice(payload);
    v
}
