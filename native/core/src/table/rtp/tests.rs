//! The RTP rule's tests: streams of small forward steps across a wrap, captures out of
//! time order, what is not RTP (random payloads, short streams, RTCP on the RTP port), and
//! stream numbers found through slots equal to the map's.

use super::*;

/// One IPv4 UDP flow of RTP-shaped packets with sequence numbers `seqs`, one per
/// nanosecond.
fn udp_rtp(seqs: &[u16], ssrc: u32) -> Capture {
    let n = seqs.len();
    let columns = Columns {
        t_ns: (0..n as i64).collect(),
        flow_idx: vec![0; n],
        has_rtp: vec![true; n],
        tcp_seq_rtp_ssrc: vec![ssrc; n],
        tcp_flags_rtp_seq: seqs.to_vec(),
        rtp_marker: vec![false; n],
        rtp_pt: vec![96; n],
        ..Default::default()
    };
    let mut flows = crate::decode::FlowTable::default();
    flows.intern(&crate::decode::Packet {
        ip_version: 4,
        proto: UDP,
        ports: (5004 << 16) | 5004,
        ..Default::default()
    });
    Capture::of(columns, flows)
}

fn flow(c: &Capture) -> u64 {
    c.flow_hash(0)
}

#[test]
fn a_stream_of_small_forward_steps_is_rtp_across_a_wrap() {
    let seqs: Vec<u16> = (0..20).map(|i| 65530u16.wrapping_add(i)).collect();
    let c = udp_rtp(&seqs, 7);
    let streams = classify(&c);
    assert!(streams.contains_key(&stream_key(flow(&c), Some(7))));
    assert!(mark(&c, &streams).iter().all(|&b| b));
}

#[test]
fn captures_out_of_time_order_are_classified_in_time_order() {
    // In time order the steps are +1; in file order they jump about.
    let seqs: Vec<u16> = (0..40).collect();
    let mut c = udp_rtp(&seqs, 7);
    let file_order: Vec<usize> = (0..40).map(|i| (i * 17) % 40).collect();
    c.columns.t_ns = file_order.iter().map(|&i| i as i64).collect();
    c.columns.tcp_flags_rtp_seq = file_order.iter().map(|&i| seqs[i]).collect();
    assert!(classify(&c).contains_key(&stream_key(flow(&c), Some(7))));
    // and a stream that is in order in the file but not in time is not RTP
    let mut c = udp_rtp(&seqs, 7);
    c.columns.t_ns = file_order.iter().map(|&i| i as i64).collect();
    assert!(classify(&c).is_empty());
}

#[test]
fn halves_each_in_order_but_not_one_after_the_other_are_sorted_first() {
    // The halves interleave in time: in time order the sequence numbers step by 40
    // (in order), in file order by 80 (out of order).
    let mut c = udp_rtp(&[0; 10], 7);
    c.columns.t_ns = vec![0, 2, 4, 6, 8, 1, 3, 5, 7, 9];
    c.columns.tcp_flags_rtp_seq = c.columns.t_ns.iter().map(|&t| t as u16 * 40).collect();
    assert!(classify(&c).contains_key(&stream_key(flow(&c), Some(7))));
    // one stream split between the halves is joined into one run
    let seqs: Vec<u16> = (0..9).collect();
    let mut c = udp_rtp(&seqs, 7);
    c.columns.tcp_flags_rtp_seq[5] = 900; // 2 of 8 steps out of order: 75 % < 80 %
    assert!(classify(&c).is_empty());
}

#[test]
fn random_payloads_and_short_streams_are_not() {
    let scattered: Vec<u16> = (0..20u32).map(|i| (i * 7919 % 65536) as u16).collect();
    assert!(classify(&udp_rtp(&scattered, 7)).is_empty());
    assert!(classify(&udp_rtp(&[1, 2, 3, 4, 5, 6, 7], 7)).is_empty());
}

#[test]
fn rtcp_on_the_rtp_port_is_left_out() {
    let seqs: Vec<u16> = (0..20).collect();
    let mut c = udp_rtp(&seqs, 7);
    c.columns.rtp_marker[3] = true;
    c.columns.rtp_pt[3] = 72;
    let marked = mark(&c, &classify(&c));
    assert!(!marked[3] && marked[4]);
}

#[test]
fn stream_numbers_remembered_per_slot_are_the_maps_answers() {
    // 64 flows x 40 SSRCs (more pairs than slots, so slots are shared and overwritten),
    // half of the pairs streams (20 packets in order), half not (a packet each); then
    // every packet asked again in another order, and RTCP, TCP and non-IP rows among
    // them.
    let mut flows = crate::decode::FlowTable::default();
    let mut cols = Columns::default();
    let mut t = 0i64;
    for f in 0..64u32 {
        flows.intern(&crate::decode::Packet {
            ip_version: 4,
            proto: UDP,
            ports: 5000 + f,
            ..Default::default()
        });
        for ssrc in 0..40u32 {
            let packets = if (f + ssrc) % 2 == 0 { 20 } else { 1 };
            for seq in 0..packets {
                cols.t_ns.push(t);
                t += 1;
                cols.flow_idx
                    .push(if seq == 7 && ssrc == 3 { u32::MAX } else { f });
                cols.has_rtp.push(seq != 5 || f % 3 != 0);
                // scattered SSRCs (an arithmetic series spreads evenly over the slots)
                cols.tcp_seq_rtp_ssrc
                    .push(ssrc.wrapping_mul(2_654_435_761).rotate_left(f));
                cols.tcp_flags_rtp_seq.push(seq as u16);
                cols.rtp_marker.push(seq == 4);
                cols.rtp_pt
                    .push(if seq == 4 && ssrc % 4 == 0 { 72 } else { 96 });
            }
        }
    }
    let n = cols.t_ns.len();
    cols.has_tcp = vec![false; n];
    let cap = Capture::of(cols, flows);
    let streams = classify(&cap);
    assert!(streams.len() > 1000, "{} streams", streams.len());
    let mut numbers = StreamNumbers::new(&streams);
    let order = (0..n).chain((0..n).map(|i| i * 7919 % n));
    let (mut some, mut none) = (0, 0);
    for i in order {
        let want = stream_number(&cap, i, &streams);
        assert_eq!(numbers.of(&cap, i), want, "row {i}");
        if want.is_some() {
            some += 1
        } else {
            none += 1
        }
    }
    assert!(some > 0 && none > 0);
}
