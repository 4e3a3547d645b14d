//! Link and network layers: non-IP frames, VLAN and QinQ, Linux cooked captures, raw IP,
//! IPv4 options and fragments, IPv6 extension headers, snap length.

use super::*;

#[test]
fn non_ip_frames_are_rows() {
    let arp = eth(0x0806, &[0u8; 28]);
    let c = read(&pcap(
        false,
        false,
        65535,
        1,
        &[rec(0, 0, &arp), rec(0, 1, &udp_frame())],
    ));
    let k = &c.columns;
    assert_eq!(per_packet(&c).ip_version, vec![0, 4]);
    assert_eq!(k.flow_idx, vec![NO_FLOW, 0]);
    assert_eq!(per_packet(&c).flow_hash[0], 0);
    assert_eq!(k.l4_hash[0], 0);
    assert!(!k.truncated[0]);
    assert_eq!(c.flows.len(), 1);
}

#[test]
fn vlan_and_qinq() {
    let ip = ipv4(17, &udp(1, 2, &[0; 16]));
    let one = eth_tagged(&[(0x8100, 10)], 0x0800, &ip);
    let two = eth_tagged(&[(0x88a8, 100), (0x8100, 10)], 0x0800, &ip);
    let three = eth_tagged(
        &[(0x9100, 1), (0x88a8, 100), (0x8100, 10)],
        0x86dd,
        &ipv6_with(17, &[], 0, 64, &udp(3, 4, &[])),
    );
    let cut = &two[..16]; // the second tag is cut
    let c = read(&pcap(
        false,
        false,
        65535,
        1,
        &[
            rec(0, 0, &one),
            rec(0, 0, &two),
            rec(0, 0, &three),
            rec(0, 0, cut),
        ],
    ));
    let k = &c.columns;
    assert_eq!(per_packet(&c).ip_version, vec![4, 4, 6, 0]);
    assert_eq!(per_packet(&c).sport, vec![1, 1, 3, 0]);
    assert_eq!(k.truncated, vec![false, false, false, true]);
    assert_eq!(k.flow_idx, vec![0, 0, 1, NO_FLOW]);
}

#[test]
fn linux_cooked_v1_and_v2() {
    let ip = ipv4(6, &tcp(1, 2, 3, 4, 0x02, &[], &[]));
    let c1 = read(&pcap(
        false,
        false,
        65535,
        113,
        &[
            rec(0, 0, &sll(0x0800, &ip)),
            rec(0, 0, &sll(0x0806, &[0; 28])),
        ],
    ));
    let c2 = read(&pcap(
        false,
        false,
        65535,
        276,
        &[
            rec(0, 0, &sll2(0x0800, &ip)),
            rec(0, 0, &sll2(0x0800, &ip[..10])),
        ],
    ));
    assert_eq!(per_packet(&c1).ip_version, vec![4, 0]);
    assert_eq!(per_packet(&c2).ip_version, vec![4, 0]);
    assert_eq!(c2.columns.truncated, vec![false, true]);
    assert_eq!(c1.columns.tcp_seq(0), 3);
    assert_eq!(c2.columns.tcp_seq(0), 3);
    assert_eq!(c1.columns.tcp_flags(0), 2);
    assert_eq!(per_packet(&c1).flow_hash[0], per_packet(&c2).flow_hash[0]);
    assert_eq!(c1.columns.l4_hash[0], c2.columns.l4_hash[0]);
}

#[test]
fn raw_ip_link_types() {
    let v4 = ipv4(17, &udp(1, 2, &[5; 4]));
    let v6 = ipv6_with(17, &[], 0, 64, &udp(1, 2, &[5; 4]));
    for lt in [12, 14, 101] {
        let c = read(&pcap(
            false,
            false,
            65535,
            lt,
            &[rec(0, 0, &v4), rec(0, 0, &v6), rec(0, 0, &[0x10, 0, 0])],
        ));
        assert_eq!(per_packet(&c).ip_version, vec![4, 6, 0]);
        assert_eq!(c.columns.l4_hash[0], c.columns.l4_hash[1]);
    }
    let c = read(&pcap(
        false,
        false,
        65535,
        228,
        &[rec(0, 0, &v4), rec(0, 0, &v6)],
    ));
    assert_eq!(per_packet(&c).ip_version, vec![4, 0]);
    let c = read(&pcap(
        false,
        false,
        65535,
        229,
        &[rec(0, 0, &v6), rec(0, 0, &v4)],
    ));
    assert_eq!(per_packet(&c).ip_version, vec![6, 0]);
    let f = &c.flows.keys[0];
    assert_eq!(
        (f.src_string(), f.dst_string()),
        ("2001:db8::1".into(), "2001:db8::2".into())
    );
    assert_eq!(c.columns.ip_len[0], 40 + 12);
    assert!(!c.columns.has_ip_id[0]);
}

#[test]
fn ipv4_options_and_fragments() {
    let options = [0x94, 0x04, 0x00, 0x00]; // router alert
    let seg = udp(7, 8, &[9; 24]);
    let with_opts = ipv4_with(17, [1, 1, 1, 1], [2, 2, 2, 2], &options, 0, 0, 1, 5, &seg);
    // a first fragment (MF, offset 0) still has ports; a later fragment does not
    let first = ipv4_with(
        17,
        [1, 1, 1, 1],
        [2, 2, 2, 2],
        &[],
        0x2000,
        0,
        1,
        6,
        &seg[..16],
    );
    let later_payload = [0x42u8; 24];
    let later = ipv4_with(
        17,
        [1, 1, 1, 1],
        [2, 2, 2, 2],
        &[],
        2,
        0,
        1,
        6,
        &later_payload,
    );
    let icmp_payload: Vec<u8> = (0..30).collect();
    let icmp = ipv4_with(
        1,
        [1, 1, 1, 1],
        [2, 2, 2, 2],
        &[],
        0,
        0,
        1,
        7,
        &icmp_payload,
    );
    let c = read(&pcap(
        false,
        false,
        65535,
        101,
        &[
            rec(0, 0, &with_opts),
            rec(0, 0, &first),
            rec(0, 0, &later),
            rec(0, 0, &icmp),
        ],
    ));
    let k = &c.columns;
    assert_eq!(k.has_ports, vec![true, true, false, false]);
    assert_eq!(per_packet(&c).sport, vec![7, 7, 0, 0]);
    assert_eq!(per_packet(&c).proto, vec![17, 17, 17, 1]);
    assert_eq!(k.ip_len, vec![24 + 32, 20 + 16, 20 + 24, 20 + 30]);
    assert_eq!(k.ip_id, vec![5, 6, 6, 7]);
    assert_eq!(k.l4_hash[0], fold32(hash_bytes(&[9; 16])));
    // first fragment: UDP says 24 payload bytes, 8 are in this fragment
    assert_eq!(k.l4_hash[1], fold32(hash_bytes(&[9; 8])));
    assert_eq!(k.l4_hash[2], fold32(hash_bytes(&later_payload[..16])));
    assert_eq!(k.l4_hash[3], fold32(hash_bytes(&icmp_payload[..16])));
    assert_eq!(k.truncated, vec![false; 4]);
    // fragments with and without ports are different flows
    assert_eq!(k.flow_idx, vec![0, 0, 1, 2]);
}

#[test]
fn ipv6_extension_headers_and_fragment() {
    let seg = tcp(80, 1234, 11, 22, 0x10, &[], &[1, 2, 3]);
    // hop-by-hop (8 bytes) -> destination options (16 bytes) -> routing (8) -> TCP
    let mut ext = vec![60, 0, 1, 4, 0, 0, 0, 0];
    ext.extend_from_slice(&[43, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    ext.extend_from_slice(&[51, 0, 0, 0, 0, 0, 0, 0]);
    // AH: payload length 1 -> (1 + 2) * 4 = 12 bytes
    ext.extend_from_slice(&[6, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2]);
    let p1 = ipv6_with(0, &ext, 0x2e, 33, &seg);
    // fragment header: first fragment (offset 0, M) and a later one (offset 8)
    let frag_first = [17, 0, 0x00, 0x01, 0xca, 0xfe, 0xba, 0xbe];
    let frag_later = [17, 0, 0x00, 0x40, 0xca, 0xfe, 0xba, 0xbe];
    let u = udp(5, 6, &[0x80; 30]);
    let p2 = ipv6_with(44, &frag_first, 0, 64, &u);
    let p3 = ipv6_with(44, &frag_later, 0, 64, &[0x33; 20]);
    let c = read(&pcap(
        false,
        false,
        65535,
        229,
        &[rec(0, 0, &p1), rec(0, 0, &p2), rec(0, 0, &p3)],
    ));
    let k = &c.columns;
    assert_eq!(per_packet(&c).ip_version, vec![6, 6, 6]);
    assert_eq!(per_packet(&c).proto, vec![6, 17, 17]);
    assert_eq!((k.dscp[0], k.ecn[0], k.ttl[0]), (0x2e >> 2, 2, 33));
    assert!(k.has_tcp[0]);
    assert_eq!(
        (per_packet(&c).sport[0], k.tcp_seq(0), k.tcp_ack(0)),
        (80, 11, 22)
    );
    assert_eq!(k.tcp_payload_len[0], 3);
    assert_eq!(k.ip_len[0], 40 + 44 + 23);
    assert!(!k.has_ip_id[0]);
    assert_eq!((k.has_ip_id[1], k.ip_id[1]), (true, 0xcafe_babe));
    assert_eq!((k.has_ports[1], per_packet(&c).sport[1]), (true, 5));
    assert!(k.has_rtp[1]);
    assert_eq!(
        (k.has_ip_id[2], k.ip_id[2], k.has_ports[2]),
        (true, 0xcafe_babe, false)
    );
    assert_eq!(k.l4_hash[2], fold32(hash_bytes(&[0x33; 16])));
    assert_eq!(k.truncated, vec![false; 3]);
    // extension header cut by the snaplen
    let cut = Rec {
        sec: 0,
        frac: 0,
        wire: p1.len() as u32,
        data: &p1[..41],
    };
    let c = read(&pcap(false, false, 65535, 229, &[cut]));
    assert_eq!(
        (per_packet(&c).ip_version[0], c.columns.truncated[0]),
        (6, true)
    );
    assert!(!c.columns.has_ports[0]);
}

#[test]
fn snaplen_truncation() {
    let payload: Vec<u8> = (0..64).collect();
    let frame = eth(
        0x0800,
        &ipv4(6, &tcp(1, 2, 3, 4, 0x18, &[1, 1, 1, 1], &payload)),
    );
    let cut = |n: usize| Rec {
        sec: 0,
        frac: 0,
        wire: frame.len() as u32,
        data: &frame[..n],
    };
    // 10: Ethernet cut; 30: IP cut; 38: ports only; 56: options cut; 62: 4 payload bytes;
    // 74: 16 payload bytes (complete for the hash); 122: all
    let recs = [
        cut(10),
        cut(30),
        cut(38),
        cut(56),
        cut(62),
        cut(74),
        cut(frame.len()),
    ];
    let data = pcap(false, false, 78, 1, &recs);
    let c = read(&data);
    let k = &c.columns;
    assert_eq!(per_packet(&c).ip_version, vec![0, 0, 4, 4, 4, 4, 4]);
    assert_eq!(
        k.has_ports,
        vec![false, false, true, true, true, true, true]
    );
    assert_eq!(k.has_tcp, vec![false, false, false, true, true, true, true]);
    assert_eq!(
        k.truncated,
        vec![true, true, true, true, true, false, false]
    );
    assert_eq!(k.ip_len[2], 20 + 24 + 64);
    assert_eq!(k.tcp_payload_len[3], 64);
    assert_eq!(k.l4_hash[5], k.l4_hash[6]);
    assert_ne!(k.l4_hash[4], k.l4_hash[5]);
    assert_eq!(
        captured_lengths(&data),
        vec![10, 30, 38, 56, 62, 74, frame.len() as u32]
    );
    assert_eq!(k.wire_len[0], frame.len() as u32);
}
