//! Records tcpdump and tshark read with a decision: IP length fields of 0 (TSO, BIG TCP),
//! out-of-range sub-second timestamps, file versions, undecodable pcapng interfaces.

use super::*;

/// A pcap file header with the given version (little endian, microseconds).
fn pcap_versioned(major: u16, minor: u16, recs: &[Rec<'_>]) -> Vec<u8> {
    let mut v = pcap(false, false, 65535, 1, recs);
    v[4..6].copy_from_slice(&major.to_le_bytes());
    v[6..8].copy_from_slice(&minor.to_le_bytes());
    v
}

/// IPv4 + TCP with `payload` bytes, total length field 0 as a TSO capture shows it.
fn tso_frame(payload: usize) -> Vec<u8> {
    let mut ip = ipv4(6, &tcp(40000, 5201, 1, 2, 0x18, &[], &vec![7; payload]));
    ip[2..4].copy_from_slice(&[0, 0]);
    eth(0x0800, &ip)
}

#[test]
fn ipv4_total_length_0_is_the_frame_length() {
    let frame = tso_frame(3000);
    // captured at snaplen 128: the length on the wire is what counts
    let snap = 128;
    let recs = [Rec {
        sec: 1,
        frac: 0,
        wire: frame.len() as u32,
        data: &frame[..snap],
    }];
    let c = read(&pcap(false, false, snap as u32, 1, &recs));
    assert_eq!(c.columns.ip_len, vec![20 + 20 + 3000]);
    assert_eq!(c.columns.tcp_payload_len, vec![3000]);
    assert_eq!(c.quirks.len_from_frame, 1);
    assert_eq!(c.quirks.jumbograms, 0);
    // an ordinary packet is untouched
    let c = read(&pcap(false, false, 65535, 1, &[rec(1, 0, &udp_frame())]));
    assert_eq!(c.quirks, Quirks::default());
}

/// IPv6 + TCP jumbogram: payload length 0, hop-by-hop Jumbo Payload option.
fn jumbo_frame(payload: usize, with_option: bool) -> (Vec<u8>, u32) {
    let seg = tcp(40000, 5201, 1, 2, 0x18, &[], &vec![7; payload]);
    let (next, hbh) = if with_option {
        let jumbo = (8 + seg.len()) as u32;
        // next header TCP, length 0 (8 bytes), PadN(0), then the option C2 04 <len>
        let mut h = vec![6, 0, 0xc2, 4];
        h.extend_from_slice(&jumbo.to_be_bytes());
        (0, h)
    } else {
        (6, Vec::new())
    };
    let mut ip = ipv6_with(next, &hbh, 0, 64, &seg);
    ip[4..6].copy_from_slice(&[0, 0]);
    let ip_len = ip.len() as u32;
    (eth(0x86dd, &ip), ip_len)
}

#[test]
fn ipv6_jumbograms_take_the_jumbo_payload_length() {
    let (frame, ip_len) = jumbo_frame(70_000, true);
    let recs = [Rec {
        sec: 1,
        frac: 0,
        wire: frame.len() as u32,
        data: &frame[..200],
    }];
    let c = read(&pcap(false, false, 200, 1, &recs));
    assert_eq!(c.columns.ip_len, vec![ip_len]);
    assert!(ip_len > 65_535 + 40);
    assert_eq!(per_packet(&c).proto, vec![6]);
    assert_eq!(c.columns.tcp_payload_len, vec![70_000]);
    assert_eq!((c.quirks.jumbograms, c.quirks.len_from_frame), (1, 0));

    // BIG TCP without the option: payload length 0, the frame says how long
    let (frame, ip_len) = jumbo_frame(5000, false);
    let c = read(&pcap(false, false, 65535, 1, &[rec(1, 0, &frame)]));
    assert_eq!(c.columns.ip_len, vec![ip_len]);
    assert_eq!((c.quirks.jumbograms, c.quirks.len_from_frame), (0, 1));
}

#[test]
fn out_of_range_sub_second_fields_are_kept_without_a_time() {
    let f = udp_frame();
    for (nano, bad) in [(false, 1_000_000u32), (true, 1_000_000_000u32)] {
        let recs = [
            rec(5, 10, &f),
            rec(6, bad, &f),
            rec(7, u32::MAX, &f),
            rec(8, 0, &f),
        ];
        let data = pcap(false, nano, 65535, 1, &recs);
        let c = read(&data);
        let unit = if nano { 1 } else { 1000 };
        assert_eq!(
            c.columns.t_ns,
            vec![
                5_000_000_000 + 10 * unit,
                NO_TIMESTAMP,
                NO_TIMESTAMP,
                8_000_000_000
            ]
        );
        assert_eq!(
            per_packet(&c).ip_version,
            vec![4; 4],
            "the packets are kept"
        );
        assert_eq!(c.quirks.bad_timestamps, 2);
        let second = 24 + 16 + f.len();
        assert_eq!(c.quirks.first_bad_timestamp_at, Some(second as u64));
    }
    // the largest valid fields are fine
    let c = read(&pcap(false, false, 65535, 1, &[rec(1, 999_999, &f)]));
    assert_eq!(
        (c.columns.t_ns[0], c.quirks.bad_timestamps),
        (1_999_999_000, 0)
    );
}

#[test]
fn pcap_versions() {
    let f = udp_frame();
    for (major, minor) in [(1, 0), (3, 0), (2, 5), (543, 0)] {
        let (message, offset) = read_err(&pcap_versioned(major, minor, &[rec(1, 0, &f)]));
        assert_eq!(offset, 4);
        assert!(
            message.starts_with(&format!("unsupported pcap version {major}.{minor} ")),
            "{message}"
        );
    }
    // 2.0-2.2 wrote the captured length second: swapped back
    let snap = 60;
    let truncated = Rec {
        sec: 1,
        frac: 0,
        wire: f.len() as u32,
        data: &f[..snap],
    };
    let mut old = pcap_versioned(2, 2, &[truncated]);
    let (caplen, wire) = (old[32..36].to_vec(), old[36..40].to_vec());
    old[32..36].copy_from_slice(&wire);
    old[36..40].copy_from_slice(&caplen);
    let c = read(&old);
    assert_eq!(captured_lengths(&old), vec![snap as u32]);
    assert_eq!(c.columns.wire_len, vec![f.len() as u32]);
    // 2.3 files come both ways: the smaller field is the captured length
    old[6..8].copy_from_slice(&3u16.to_le_bytes());
    let c = read(&old);
    assert_eq!(captured_lengths(&old), vec![snap as u32]);
    assert_eq!(c.columns.wire_len, vec![f.len() as u32]);
    let recs = [Rec {
        sec: 1,
        frac: 0,
        wire: f.len() as u32,
        data: &f[..snap],
    }];
    let v23 = pcap_versioned(2, 3, &recs);
    let c = read(&v23);
    assert_eq!(captured_lengths(&v23), vec![snap as u32]);
    assert_eq!(c.columns.wire_len, vec![f.len() as u32]);
}

#[test]
fn pcapng_versions() {
    let mut ng = Ng::new(false);
    ng.idb(1, 0, &[]);
    ng.epb(0, 0, &udp_frame(), udp_frame().len() as u32);
    for (minor, ok) in [(0u16, true), (1, false), (2, true), (3, false)] {
        let mut data = ng.out.clone();
        data[14..16].copy_from_slice(&minor.to_le_bytes());
        if ok {
            assert_eq!(read(&data).columns.len(), 1);
        } else {
            let (message, offset) = read_err(&data);
            assert_eq!(offset, 12);
            assert!(message.starts_with(&format!("unsupported pcapng version 1.{minor} ")));
        }
    }
    let mut data = ng.out.clone();
    data[12..14].copy_from_slice(&2u16.to_le_bytes());
    assert!(read_err(&data)
        .0
        .starts_with("unsupported pcapng version 2.0 "));
}

#[test]
fn pcapng_undecodable_interface_is_skipped() {
    let mut ng = Ng::new(false);
    ng.idb(1, 0, &[]);
    ng.idb(147, 0, &[]); // LINKTYPE_USER0
    let f = udp_frame();
    ng.epb(0, 1_000, &f, f.len() as u32);
    ng.epb(1, 2_000, &[1, 2, 3, 4], 4);
    ng.epb(1, 3_000, &[1, 2, 3, 4], 4);
    ng.epb(0, 4_000, &f, f.len() as u32);
    let c = read(&ng.out);
    assert_eq!(c.columns.interface_ids(), vec![0, 0]);
    assert_eq!(c.columns.t_ns, vec![1_000_000, 4_000_000]);
    assert_eq!(c.quirks.skipped_packets, 2);
    assert_eq!(c.interfaces.len(), 2);
    assert_eq!(c.interfaces[1].link_type, 147);
}
