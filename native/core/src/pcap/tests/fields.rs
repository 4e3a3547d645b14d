//! What each packet's columns hold: UDP, RTP and TCP fields, flows and the hashes that
//! match a packet across capture points.

use super::*;

#[test]
fn udp_rtp_fields_and_flow() {
    let payload = rtp(true, 96, 7, 90_000, 0xdead_beef, &[1; 20]);
    let frame = eth(0x0800, &ipv4(17, &udp(5004, 6000, &payload)));
    let c = read(&pcap(
        false,
        false,
        65535,
        1,
        &[rec(1, 0, &frame), rec(2, 0, &frame)],
    ));
    let k = &c.columns;
    assert_eq!(per_packet(&c).ip_version, vec![4, 4]);
    assert_eq!(per_packet(&c).proto, vec![17, 17]);
    assert_eq!(
        (
            per_packet(&c).sport[0],
            per_packet(&c).dport[0],
            k.has_ports[0]
        ),
        (5004, 6000, true)
    );
    assert_eq!((k.ip_id[0], k.has_ip_id[0]), (0x1234, true));
    assert_eq!(k.ip_len[0], 20 + 8 + 32);
    assert_eq!((k.dscp[0], k.ecn[0], k.ttl[0]), (0xb9 >> 2, 1, 64));
    assert!(!k.has_tcp[0]);
    assert!(k.has_rtp[0]);
    assert_eq!(
        (
            k.rtp_ssrc(0),
            k.rtp_seq(0),
            k.rtp_ts(0),
            k.rtp_marker[0],
            k.rtp_pt[0]
        ),
        (0xdead_beef, 7, 90_000, true, 96)
    );
    assert_eq!(k.l4_hash[0], fold32(hash_bytes(&payload[..16])));
    assert!(!k.truncated[0]);
    assert_eq!(k.flow_idx, vec![0, 0]);
    assert_eq!(per_packet(&c).flow_hash[0], per_packet(&c).flow_hash[1]);
    assert_eq!(
        per_packet(&c).flow_hash[0],
        hash_bytes(&[4, 10, 0, 0, 1, 10, 0, 0, 2, 17, 0x13, 0x8c, 0x17, 0x70])
    );
    let f = &c.flows.keys[0];
    assert_eq!(c.flows.len(), 1);
    assert_eq!(
        (f.src_string(), f.dst_string()),
        ("10.0.0.1".into(), "10.0.0.2".into())
    );
    assert_eq!(
        (f.ip_version(), f.proto(), f.sport(), f.dport()),
        (4, 17, 5004, 6000)
    );
}

#[test]
fn rtp_candidates_need_version_2_and_12_bytes() {
    let short = eth(0x0800, &ipv4(17, &udp(1, 2, &[0x80; 11])));
    let not_v2 = eth(0x0800, &ipv4(17, &udp(1, 2, &[0x40; 12])));
    // 12 bytes on the wire but only 11 captured: no candidate, and flagged truncated
    let full = eth(0x0800, &ipv4(17, &udp(1, 2, &[0x80; 12])));
    let cut = Rec {
        sec: 0,
        frac: 0,
        wire: full.len() as u32,
        data: &full[..full.len() - 1],
    };
    let c = read(&pcap(
        false,
        false,
        65535,
        1,
        &[rec(0, 0, &short), rec(0, 0, &not_v2), cut, rec(0, 0, &full)],
    ));
    assert_eq!(c.columns.has_rtp, vec![false, false, false, true]);
    assert_eq!(c.columns.truncated, vec![false, false, true, false]);
}

#[test]
fn ethernet_padding_is_not_payload() {
    // 2 bytes of UDP payload, padded to the 60-byte Ethernet minimum with junk
    let ip = ipv4(17, &udp(1, 2, &[0x80, 0x00]));
    let mut a = eth(0x0800, &ip);
    let mut b = a.clone();
    a.resize(60, 0x00);
    b.resize(60, 0xff);
    let c = read(&pcap(
        false,
        false,
        65535,
        1,
        &[rec(0, 0, &a), rec(0, 0, &b)],
    ));
    assert_eq!(c.columns.l4_hash[0], fold32(hash_bytes(&[0x80, 0x00])));
    assert_eq!(c.columns.l4_hash[0], c.columns.l4_hash[1]);
    assert_eq!(c.columns.ip_len[0], 30);
    assert!(!c.columns.has_rtp[0]);
    assert!(!c.columns.truncated[0]);
}

#[test]
fn hashes_ignore_what_routers_change() {
    let payload = [7u8; 40];
    let a = eth(
        0x0800,
        &ipv4_with(
            17,
            [1, 2, 3, 4],
            [5, 6, 7, 8],
            &[],
            0,
            0x00,
            64,
            9,
            &udp(1, 2, &payload),
        ),
    );
    let b = sll2(
        0x0800,
        &ipv4_with(
            17,
            [1, 2, 3, 4],
            [5, 6, 7, 8],
            &[],
            0,
            0xbb,
            63,
            9,
            &udp(1, 2, &payload),
        ),
    );
    let ca = read(&pcap(false, false, 65535, 1, &[rec(0, 0, &a)]));
    let cb = read(&pcap(true, true, 65535, 276, &[rec(0, 0, &b)]));
    assert_eq!(per_packet(&ca).flow_hash, per_packet(&cb).flow_hash);
    assert_eq!(ca.columns.l4_hash, cb.columns.l4_hash);
    assert_ne!(ca.columns.ecn, cb.columns.ecn);
    assert_ne!(ca.columns.ttl, cb.columns.ttl);
}

#[test]
fn tcp_fields_and_hash() {
    let opts = [1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]; // NOP NOP timestamps
    let payload: Vec<u8> = (0..100).collect();
    // NS + CWR + ECE + ACK + PSH
    let seg = tcp(443, 50000, 1000, 2000, 0x100 | 0xc0 | 0x18, &opts, &payload);
    let frame = eth(0x0800, &ipv4(6, &seg));
    let c = read(&pcap(false, false, 65535, 1, &[rec(0, 0, &frame)]));
    let k = &c.columns;
    assert!(k.has_tcp[0] && k.has_ports[0] && !k.has_rtp[0] && !k.truncated[0]);
    assert_eq!(
        (per_packet(&c).sport[0], per_packet(&c).dport[0]),
        (443, 50000)
    );
    assert_eq!(
        (k.tcp_seq(0), k.tcp_ack(0), k.tcp_flags(0)),
        (1000, 2000, 0x1d8)
    );
    assert_eq!(k.tcp_payload_len[0], 100);
    let expected = mix64(
        mix64(hash_bytes(&opts), 0x0100_0000),
        hash_bytes(&payload[..16]),
    );
    assert_eq!(k.l4_hash[0], fold32(expected));

    // a bare ACK: window + urgent only
    let ack = eth(0x0800, &ipv4(6, &tcp(1, 2, 3, 4, 0x10, &[], &[])));
    let c = read(&pcap(false, false, 65535, 1, &[rec(0, 0, &ack)]));
    let expected = mix64(mix64(hash_bytes(&[]), 0x0100_0000), hash_bytes(&[]));
    assert_eq!(c.columns.l4_hash[0], fold32(expected));
    assert_eq!(c.columns.tcp_payload_len[0], 0);
}
