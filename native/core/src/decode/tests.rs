use std::net::Ipv6Addr;

use super::*;
use crate::keys::hash_bytes;

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
    assert_eq!(t.intern(&mk(1)), 0);
    assert_eq!(t.intern(&mk(1)), 0);
    assert_eq!(t.intern(&mk(2)), 1);
    assert_eq!(t.intern(&mk(1)), 0);
    assert_eq!(t.intern(&mk(3)), 2);
    assert_eq!(t.len(), 3);
    let i = t.intern(&mk(2));
    assert_eq!((i, t.hash_of(i)), (1, t.keys[1].flow_hash()));
    assert_eq!(t.hash_of(u32::MAX), 0, "a packet that is not IP");
}

#[test]
fn many_interleaved_flows_are_numbered_in_order_of_first_appearance() {
    // More flows than the table's cache has slots, IPv4 and IPv6, asked for in a scattered
    // order several times: each gets the number a plain map of first appearances gives.
    let mk = |f: u64| Packet {
        ip_version: if f % 3 == 0 { 6 } else { 4 },
        proto: if f % 2 == 0 { 6 } else { 17 },
        src: [0x0a00_0000 + f % 97, if f % 3 == 0 { f } else { 0 }],
        dst: [0x0a01_0000 + f / 97, 0],
        ports: ((f as u32 % 50_000) << 16) | 443,
        ..Packet::default()
    };
    let flows = 10_000u64;
    let mut t = FlowTable::default();
    let mut first: std::collections::HashMap<u64, u32> = std::collections::HashMap::new();
    for i in 0..5 * flows {
        let f = i.wrapping_mul(7_919) % flows;
        let next = first.len() as u32;
        let want = *first.entry(f).or_insert(next);
        assert_eq!(t.intern(&mk(f)), want, "flow {f}");
    }
    assert_eq!(t.len(), flows as usize);
}

#[test]
fn linktype_names() {
    assert_eq!(linktype_name(147), Some("USER0"));
    assert_eq!(linktype_name(162), Some("USER15"));
    assert_eq!(linktype_name(127), Some("IEEE802_11_RADIOTAP"));
    assert_eq!(linktype_name(65000), None);
}
