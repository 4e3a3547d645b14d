//! The receiver without sockets: when it reports, how reports overlap across gaps, and
//! what a restarted sender or garbage does.

use super::*;
use crate::rtp::Packetizer;

const MS: i64 = 1_000_000;

fn packets(n: usize) -> Vec<Vec<u8>> {
    let mut p = Packetizer::new(42, 96, 1200, 65_530, 0);
    let mut out = Vec::new();
    let mut frame = 0;
    while out.len() < n {
        for q in p.packetize(frame, 3000, 0, 0, 0) {
            out.push(q.bytes);
        }
        frame += 1;
    }
    out.truncate(n);
    out
}

#[test]
fn a_lost_report_is_repeated_across_a_discarded_stretch() {
    // Reports are sent at every frame's end (every third packet). The sender then
    // discards 100 packets (never sent): the next report must still cover the last
    // packets of the previous report, in case that one was lost on the way.
    let cfg = ReceiverConfig {
        report_span: 8,
        ..ReceiverConfig::default()
    };
    let mut r = Receiver::new(cfg, Clock::identity());
    let pk = packets(120);
    let mut after_gap = Vec::new();
    for (i, p) in pk.iter().enumerate().filter(|(i, _)| *i < 12 || *i >= 112) {
        let out = r.on_datagram(p, 1, i as i64 * MS, i as i64 * MS);
        if i >= 112 {
            after_gap.extend(out.datagrams);
        }
    }
    let first = Feedback::decode(&after_gap[0], NumReports::Count).unwrap();
    let st = &first.streams[0];
    let covered = |seq: u16| seq.wrapping_sub(st.begin_seq) < st.blocks.len() as u16;
    // Packet 11 closed the report before the gap; packet 113 closes this one.
    assert!(
        covered(65_530u16.wrapping_add(11)),
        "begin {}",
        st.begin_seq
    );
    assert!(
        covered(65_530u16.wrapping_add(4)),
        "the previous report's last 8"
    );
}

#[test]
fn feedback_after_marker_and_sixteen_packets() {
    let mut r = Receiver::new(ReceiverConfig::default(), Clock::identity());
    let pk = packets(40);
    let mut sent = 0;
    for (i, p) in pk.iter().enumerate() {
        let o = r.on_datagram(p, 1, i as i64 * MS, i as i64 * MS);
        sent += o.datagrams.len();
        // 3000-byte frames are 3 packets: the marker is on every third.
        assert_eq!(o.datagrams.len(), usize::from(i % 3 == 2), "packet {i}");
    }
    assert_eq!(sent, 13);
    let fb = Feedback::decode(&r.on_tick(1000 * MS).datagrams.concat(), NumReports::Count);
    assert!(fb.is_ok(), "40 ms timer sends the pending packet's report");
}

#[test]
fn a_sparse_feedback_sender_gets_a_report_every_32_packets_and_at_frame_ends() {
    // One frame of n (49..64) packets: reports after packets 16, 32, 48 and at the
    // marker by default; after 32 and at the marker when the sender asks for sparse
    // feedback (Ericsson's receiver), so the newest packet of each report sits at the
    // end of the frame.
    for sparse in [false, true] {
        let mut r = Receiver::new(ReceiverConfig::default(), Clock::identity());
        let mut p = Packetizer::new(42, 96, 1200, 100, 0);
        let frame_flags = if sparse { flags::SPARSE_FEEDBACK } else { 0 };
        let frame = p.packetize(0, 60_000, 0, frame_flags, 0);
        let n = frame.len();
        assert!((49..64).contains(&n), "{n} packets");
        let mut at = Vec::new();
        for (i, q) in frame.iter().enumerate() {
            let o = r.on_datagram(&q.bytes, 1, i as i64 * MS, i as i64 * MS);
            if !o.datagrams.is_empty() {
                at.push(i + 1);
            }
        }
        let expect = if sparse {
            vec![32, n]
        } else {
            vec![16, 32, 48, n]
        };
        assert_eq!(at, expect, "sparse {sparse}");
    }
}

#[test]
fn reports_overlap_and_mark_gaps() {
    let cfg = ReceiverConfig {
        report_span: 8,
        ..ReceiverConfig::default()
    };
    let mut r = Receiver::new(cfg, Clock::identity());
    let pk = packets(12);
    for (i, p) in pk.iter().enumerate() {
        if i == 4 {
            continue; // lost
        }
        r.on_datagram(p, if i == 6 { 3 } else { 1 }, i as i64 * MS, i as i64 * MS);
    }
    let fb = r.make_feedback(20 * MS).unwrap();
    let st = &fb.streams[0];
    assert_eq!(st.blocks.len(), 8);
    assert_eq!(st.begin_seq, 65_530u16.wrapping_add(4));
    assert!(!st.blocks[0].received);
    assert_eq!(st.blocks[2].ecn, 3);
    // Packet 11 arrived at 11 ms, report at 20 ms: ATO ~ 9/1000 s = ~9.2/1024.
    let ato = st.blocks[7].ato;
    assert!((9..=10).contains(&ato), "{ato}");
}

#[test]
fn restart_and_garbage() {
    let mut r = Receiver::new(ReceiverConfig::default(), Clock::identity());
    for p in packets(5) {
        r.on_datagram(&p, 0, 0, 0);
    }
    assert_eq!(r.on_datagram(&[1, 2, 3], 0, 0, 0).datagrams.len(), 0);
    assert_eq!(r.counters.not_rtp, 1);
    let mut other = Packetizer::new(43, 96, 1200, 100, 0);
    for q in other.packetize(0, 100, 0, 0, 0) {
        r.on_datagram(&q.bytes, 0, 0, 0);
    }
    assert_eq!(r.counters.sender_restarts, 1);
    let fb = r.make_feedback(MS).unwrap();
    assert_eq!(fb.streams[0].ssrc, 43);
    assert_eq!(fb.streams[0].blocks.len(), 1);
}

#[test]
fn a_sender_asking_for_the_5_ms_timer_gets_a_report_5_ms_after_the_last() {
    // Packets 2 ms apart in one long frame: without the flag the 16-packet rule reports
    // first (at packet 16, 30 ms in); with it (aca6556's receiver) a report comes 5 ms
    // after the last whenever no count or marker came first.
    for timer in [false, true] {
        let mut r = Receiver::new(ReceiverConfig::default(), Clock::identity());
        let mut p = Packetizer::new(42, 96, 1200, 100, 0);
        let frame_flags = if timer { flags::FEEDBACK_TIMER_5MS } else { 0 };
        let frame = p.packetize(0, 60_000, 0, frame_flags, 0);
        let mut at = Vec::new();
        for (i, q) in frame.iter().take(20).enumerate() {
            let t = i as i64 * 2 * MS;
            let mut o = r.on_tick(t);
            o.datagrams
                .extend(r.on_datagram(&q.bytes, 1, t, t).datagrams);
            if !o.datagrams.is_empty() {
                at.push(i);
            }
            let wait = if timer { 5 * MS } else { 40 * MS };
            assert!(r.next_timer_ns().map_or(true, |next| next <= t + wait));
        }
        let expect: Vec<usize> = if timer {
            vec![3, 6, 9, 12, 15, 18]
        } else {
            vec![15]
        };
        assert_eq!(at, expect, "timer {timer}");
    }
}
