//! The file formats: every classic pcap magic, and pcapng's blocks, interfaces,
//! resolutions, statistics and sections.

use super::*;

#[test]
fn pcap_all_magics() {
    let frame = udp_frame();
    for be in [false, true] {
        for nano in [false, true] {
            let frac = if nano { 123_456_789 } else { 123_456 };
            let data = pcap(be, nano, 128, 1, &[rec(1_700_000_000, frac, &frame)]);
            let c = read(&data);
            assert_eq!(c.format, Format::Pcap);
            assert_eq!(c.big_endian, be);
            assert_eq!(c.nanosecond, Some(nano));
            assert_eq!(c.snaplen, 128);
            let want = 1_700_000_000_000_000_000 + if nano { 123_456_789 } else { 123_456_000 };
            assert_eq!(c.columns.t_ns, vec![want]);
            assert_eq!(c.columns.interface_ids(), vec![0]);
            assert_eq!(c.columns.wire_len, vec![frame.len() as u32]);
            assert_eq!(captured_lengths(&data), vec![frame.len() as u32]);
            assert_eq!(c.interfaces.len(), 1);
            assert_eq!(c.interfaces[0].link_type, 1);
            assert_eq!(
                c.interfaces[0].ts_resolution.label(),
                if nano { "1e-9" } else { "1e-6" }
            );
            assert!(c.stats.is_empty());
            assert!(c.warnings.is_empty());
        }
    }
}

#[test]
fn interface_ids_are_kept_only_once_one_is_not_0() {
    let mut ng = Ng::new(false);
    ng.idb(1, 65535, &[]);
    ng.idb(1, 65535, &[]);
    // More packets on interface 0 than the reader decodes in a batch, then one on 1.
    for i in 0..600 {
        ng.epb(0, i, &udp_frame(), 60);
    }
    let c = read(&ng.out);
    assert!(c.columns.interface_id.is_empty(), "all 0: no column");
    assert_eq!(c.columns.interface_ids(), vec![0; 600]);
    ng.epb(1, 600, &udp_frame(), 60);
    let c = read(&ng.out);
    let mut want = vec![0; 600];
    want.push(1);
    assert_eq!(c.columns.interface_id, want);
    assert_eq!(
        (c.columns.interface_id(0), c.columns.interface_id(600)),
        (0, 1)
    );
}

#[test]
fn pcapng_two_interfaces() {
    for be in [false, true] {
        let mut ng = Ng::new(be);
        let name = ng.opt(2, b"eth0");
        let res9 = ng.opt(9, &[9]);
        ng.idb(1, 262_144, &[name, res9]);
        let res2 = ng.opt(9, &[0x80 | 20]);
        let offset = ng.opt(14, &ng.u64(10));
        ng.idb(228, 96, &[res2, offset]);
        ng.epb(0, 1_700_000_000_123_456_789, &udp_frame(), 999);
        let ip = ipv4(17, &udp(1, 2, &[]));
        // 3.5 s + one tick in 2^-20 s units
        ng.epb(1, (3 << 20) + (1 << 19) + 1, &ip, ip.len() as u32);
        let c = read(&ng.out);
        assert_eq!(c.format, Format::Pcapng);
        assert_eq!((c.big_endian, c.nanosecond, c.snaplen), (be, None, 262_144));
        assert_eq!(
            c.columns.t_ns,
            vec![1_700_000_000_123_456_789, 13_500_000_000 + 953]
        );
        assert_eq!(c.columns.interface_ids(), vec![0, 1]);
        assert_eq!(c.columns.wire_len[0], 999);
        assert_eq!(per_packet(&c).ip_version, vec![4, 4]);
        assert_eq!(c.interfaces.len(), 2);
        assert_eq!(c.interfaces[0].name.as_deref(), Some("eth0"));
        assert_eq!(c.interfaces[0].ts_resolution.label(), "1e-9");
        assert_eq!(c.interfaces[1].ts_resolution.label(), "2^-20");
        assert_eq!(
            (c.interfaces[1].link_type, c.interfaces[1].snaplen),
            (228, 96)
        );
        assert_eq!(c.interfaces[1].name, None);
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }
}

#[test]
fn pcapng_default_resolution_and_obsolete_packet_block() {
    let mut ng = Ng::new(false);
    ng.idb(1, 0, &[]);
    ng.pb(0, 5_000_001, &udp_frame());
    let c = read(&ng.out);
    assert_eq!(c.columns.t_ns, vec![5_000_001_000]);
    assert_eq!(c.interfaces[0].ts_resolution.label(), "1e-6");
    assert!(c.columns.has_rtp[0]);
}

#[test]
fn pcapng_simple_packet_block() {
    let frame = udp_frame();
    let mut ng = Ng::new(false);
    ng.idb(1, 50, &[]);
    // the block holds the snaplen-cut frame; the wire length is the full one
    ng.spb(&frame[..50], frame.len() as u32);
    ng.idb(1, 0, &[]);
    let c = read(&ng.out);
    assert_eq!(captured_lengths(&ng.out), vec![50]);
    assert_eq!(c.columns.t_ns, vec![NO_TIMESTAMP]);
    assert_eq!(c.columns.interface_ids(), vec![0]);
    assert_eq!(c.columns.wire_len, vec![frame.len() as u32]);
    assert_eq!(per_packet(&c).sport, vec![5004]);
    // the padding of a short frame is not captured data
    let mut ng = Ng::new(false);
    ng.idb(1, 0, &[]);
    ng.spb(&frame[..61], 61);
    assert_eq!(captured_lengths(&ng.out), vec![61]);
}

#[test]
fn pcapng_interface_statistics() {
    let mut ng = Ng::new(false);
    let res = ng.opt(9, &[3]);
    ng.idb(1, 65535, &[res]);
    ng.idb(1, 65535, &[]);
    let (a, b, c1) = (
        ng.ts_opt(2, 1000),
        ng.ts_opt(3, 2000),
        ng.opt(4, &ng.u64(10)),
    );
    ng.isb(0, &[a, b, c1]);
    let opts: Vec<Vec<u8>> = (4..=8)
        .map(|code| ng.opt(code, &ng.u64(u64::from(code) * 100)))
        .collect();
    ng.isb(1, &opts);
    let end = ng.ts_opt(3, 5000);
    ng.isb(0, &[end]); // the last one of interface 0 wins
    let c = read(&ng.out);
    assert_eq!(
        c.stats,
        vec![
            InterfaceStats {
                interface_id: 0,
                end_ns: Some(5_000_000_000),
                ..Default::default()
            },
            InterfaceStats {
                interface_id: 1,
                start_ns: None,
                end_ns: None,
                ifrecv: Some(400),
                ifdrop: Some(500),
                filteraccept: Some(600),
                osdrop: Some(700),
                usrdeliv: Some(800),
            },
        ]
    );
    let mut ng = Ng::new(true);
    ng.idb(1, 65535, &[]);
    let (a, b) = (ng.ts_opt(2, 1_000_001), ng.opt(5, &ng.u64(3)));
    ng.isb(0, &[a, b]);
    let c = read(&ng.out);
    assert_eq!(c.stats[0].start_ns, Some(1_000_001_000));
    assert_eq!(c.stats[0].ifdrop, Some(3));
    assert_eq!(c.stats[0].ifrecv, None);
}

#[test]
fn pcapng_dumpcap_microsecond_statistics() {
    // dumpcap 4.0: ns interface, but the ISB timestamps in microseconds
    let t0: u64 = 1_795_337_274_234_871_177;
    let mut ng = Ng::new(false);
    let res = ng.opt(9, &[9]);
    ng.idb(1, 128, std::slice::from_ref(&res));
    ng.epb(0, t0, &udp_frame(), 0);
    let (a, b) = (
        ng.ts_opt(2, t0 / 1000 - 2_000_000),
        ng.ts_opt(3, t0 / 1000 + 500_000),
    );
    ng.isb_at(0, t0 / 1000 + 500_000, &[a, b]);
    let c = read(&ng.out);
    assert_eq!(
        c.stats[0].start_ns,
        Some((t0 / 1000 - 2_000_000) as i64 * 1000)
    );
    assert_eq!(c.stats[0].end_ns, Some((t0 / 1000 + 500_000) as i64 * 1000));
    assert_eq!(c.warnings.len(), 1);
    assert!(c.warnings[0].contains("microsecond"), "{:?}", c.warnings);
    // a correct writer: left alone
    let mut ng = Ng::new(false);
    ng.idb(1, 128, &[res]);
    ng.epb(0, t0, &udp_frame(), 0);
    let a = ng.ts_opt(2, t0 - 5);
    ng.isb_at(0, t0 + 7, &[a]);
    let c = read(&ng.out);
    assert_eq!(c.stats[0].start_ns, Some(t0 as i64 - 5));
    assert!(c.warnings.is_empty());
}

#[test]
fn pcapng_sections_reset_interfaces() {
    let mut ng = Ng::new(false);
    ng.idb(1, 100, &[]);
    ng.epb(0, 1, &udp_frame(), 0);
    ng.section(true);
    ng.idb(101, 200, &[]);
    ng.idb(1, 300, &[]);
    ng.epb(1, 2, &udp_frame(), 0);
    ng.epb(0, 3, &ipv4(17, &udp(1, 2, &[])), 0);
    // an unknown block type is skipped
    ng.block(0x0bad, &[1, 2, 3, 4]);
    let c = read(&ng.out);
    assert!(!c.big_endian);
    assert_eq!(c.interfaces.len(), 3);
    assert_eq!(c.snaplen, 300);
    assert_eq!(c.columns.interface_ids(), vec![0, 2, 1]);
    assert_eq!(c.columns.t_ns, vec![1000, 2000, 3000]);
    assert_eq!(per_packet(&c).ip_version, vec![4, 4, 4]);
}

#[test]
fn pcapng_bad_interface_reference() {
    let mut ng = Ng::new(false);
    ng.idb(1, 0, &[]);
    ng.epb(0, 1, &udp_frame(), 0);
    ng.section(false);
    ng.idb(1, 0, &[]);
    let off = ng.epb(3, 1, &udp_frame(), 0);
    assert_eq!(
        read_err(&ng.out),
        (
            "packet block refers to interface 3 but only 1 interfaces were described".into(),
            off as u64
        )
    );
    let mut ng = Ng::new(false);
    let off = ng.spb(&udp_frame(), 60);
    assert_eq!(read_err(&ng.out).1, off as u64);
}
