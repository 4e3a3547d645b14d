//! Reports applied to the history: acknowledgements, losses (both rules), reordering.

use super::*;
use crate::clock::ntp32_ceil;
use crate::rfc8888::{ato_from_ns, MetricBlock, StreamReport};

const MS: i64 = 1_000_000;

fn report(clock: &Clock, now: i64, begin: u16, rx: &[(bool, u8, i64)]) -> Feedback {
    // rx: (received, ecn, arrival monotonic ns)
    let rts = ntp32_ceil(clock.wall(now));
    let rts_wall = ntp32_to_wall_ns(rts, clock.wall(now));
    Feedback {
        sender_ssrc: 1,
        streams: vec![StreamReport {
            ssrc: 9,
            begin_seq: begin,
            blocks: rx
                .iter()
                .map(|&(r, ecn, t)| {
                    if r {
                        MetricBlock {
                            received: true,
                            ecn,
                            ato: ato_from_ns(rts_wall - clock.wall(t)),
                        }
                    } else {
                        MetricBlock::MISSING
                    }
                })
                .collect(),
        }],
        report_ts: rts,
    }
}

fn sent(h: &mut TxHistory, n: u64, t0: i64) {
    for i in 0..n {
        h.on_sent(i, t0 + i as i64 * MS, 1000, 0);
    }
}

#[test]
fn acks_rtt_and_bytes_in_flight() {
    let clock = Clock::identity();
    let mut h = TxHistory::new(9, 0, 30 * MS, LossDetection::AfterGap);
    sent(&mut h, 4, 1_000 * MS);
    assert_eq!(h.bytes_in_flight(), 4000);
    // Packets 0..=2 arrive 10 ms after sending; report at 1020 ms.
    let fb = report(
        &clock,
        1_020 * MS,
        0,
        &[
            (true, 1, 1_010 * MS),
            (true, 1, 1_011 * MS),
            (true, 3, 1_012 * MS),
        ],
    );
    let s = h.on_feedback(&fb, 1_020 * MS, &clock);
    assert_eq!(s.bytes_newly_acked, 3000);
    assert_eq!(s.packets_newly_acked, 3);
    assert_eq!(s.packets_newly_ce, 1);
    assert_eq!(s.bytes_in_flight, 1000);
    // RTT of packet 2: sent 1002, reported at 1020 -> 18 ms (hold time included).
    assert_eq!(s.rtt_sample_ns, Some(18 * MS));
    let owd = s.owd_ns.unwrap();
    assert!((owd - 10 * MS).abs() < MS, "{owd}");
    // The same report again teaches nothing.
    let again = h.on_feedback(&fb, 1_021 * MS, &clock);
    assert!(again.nothing_new);
    assert_eq!(again.rtt_sample_ns, None);
    assert_eq!(h.counters.reports_nothing_new, 1);
}

#[test]
fn loss_after_reordering_window_and_spurious_loss() {
    let clock = Clock::identity();
    let mut h = TxHistory::new(9, 0, 30 * MS, LossDetection::AfterGap);
    sent(&mut h, 3, 0);
    let fb = report(
        &clock,
        10 * MS,
        0,
        &[(true, 0, 5 * MS), (false, 0, 0), (true, 0, 7 * MS)],
    );
    let s = h.on_feedback(&fb, 10 * MS, &clock);
    assert_eq!(s.packets_newly_lost, 0, "not before the reordering window");
    let mut tick = FeedbackSummary::default();
    h.detect_losses(39 * MS, &mut tick);
    assert_eq!(tick.packets_newly_lost, 0);
    h.detect_losses(41 * MS, &mut tick);
    assert_eq!(tick.packets_newly_lost, 1);
    // Packet 1 shows up after all: a spurious loss, and the window grows.
    let fb = report(&clock, 80 * MS, 1, &[(true, 0, 75 * MS)]);
    let s = h.on_feedback(&fb, 80 * MS, &clock);
    assert_eq!(s.packets_spurious_loss, 1);
    assert!(h.reorder_window_ns() >= 70 * MS);
}

#[test]
fn unknown_and_foreign_blocks_are_ignored() {
    let clock = Clock::identity();
    let mut h = TxHistory::new(9, 100, 30 * MS, LossDetection::AfterGap);
    h.on_sent(100, 0, 500, 0);
    let mut fb = report(
        &clock,
        5 * MS,
        100,
        &[(true, 0, MS), (true, 0, MS), (true, 0, MS)],
    );
    fb.streams.push(StreamReport {
        ssrc: 77,
        begin_seq: 100,
        blocks: vec![MetricBlock::MISSING],
    });
    let s = h.on_feedback(&fb, 5 * MS, &clock);
    assert_eq!(s.packets_newly_acked, 1);
    assert_eq!(h.counters.blocks_unknown_seq, 2);
    assert_eq!(h.counters.reports_other_ssrc, 1);
}

#[test]
fn timeout_clears_flight() {
    let clock = Clock::identity();
    let mut h = TxHistory::new(9, 0, 30 * MS, LossDetection::AfterGap);
    sent(&mut h, 10, 0);
    h.on_feedback_timeout();
    assert_eq!(h.bytes_in_flight(), 0);
    // A late report about those packets changes nothing.
    let fb = report(&clock, 50 * MS, 0, &[(true, 0, 10 * MS)]);
    let s = h.on_feedback(&fb, 50 * MS, &clock);
    assert!(s.nothing_new);
    h.on_sent(10, 60 * MS, 1000, 0);
    assert_eq!(h.bytes_in_flight(), 1000);
}

/// Ericsson's rule: `frames` packets of `per_frame` each, the frames 1/60 s apart and
/// their packets sent 1 ms apart from the frame's time on.
fn sent_frames(h: &mut TxHistory, frames: u64, per_frame: u64) {
    for f in 0..frames {
        for k in 0..per_frame {
            let seq = f * per_frame + k;
            let t = f as i64 * 16_667 * 1000 + k as i64 * MS;
            h.on_sent(seq, t, 1000, (f * 1500) as u32);
        }
    }
}

#[test]
fn ericsson_a_packet_is_late_only_beyond_its_frames_distance() {
    let clock = Clock::identity();
    let mut h = TxHistory::new(9, 0, 30 * MS, LossDetection::Ericsson);
    sent_frames(&mut h, 5, 10);
    // Packet 0 missing; packets 1..=40 (frames 0-3) acknowledged: packet 40 was sent
    // 50 ms after packet 0, but its frame is 50 ms later too: not lost.
    let mut rx = vec![(false, 0, 0)];
    rx.extend((1..=40).map(|i| (true, 0, 60 * MS + i * MS)));
    let s = h.on_feedback(&report(&clock, 110 * MS, 0, &rx), 110 * MS, &clock);
    assert_eq!(s.packets_newly_lost, 0);
    // and no timer declares it lost either
    let mut tick = FeedbackSummary::default();
    h.detect_losses(500 * MS, &mut tick);
    assert_eq!(tick.packets_newly_lost, 0);
}

#[test]
fn ericsson_a_packet_of_the_same_frame_sent_30_ms_later_makes_it_late() {
    let clock = Clock::identity();
    let mut h = TxHistory::new(9, 0, 30 * MS, LossDetection::Ericsson);
    sent_frames(&mut h, 1, 40);
    // packet 39 of the same frame left 39 ms after packet 0
    let mut rx = vec![(false, 0, 0)];
    rx.extend((1..40).map(|i| (true, 0, 20 * MS + i * MS)));
    let s = h.on_feedback(&report(&clock, 70 * MS, 0, &rx), 70 * MS, &clock);
    assert_eq!(s.packets_newly_lost, 1);
}

#[test]
fn ericsson_a_packet_512_behind_is_lost_at_most_32_a_report() {
    let clock = Clock::identity();
    let mut h = TxHistory::new(9, 0, 30 * MS, LossDetection::Ericsson);
    sent_frames(&mut h, 20, 40); // 800 packets, frames 1/60 s apart: never late
    let ack = |h: &mut TxHistory, from: u64, to: u64, missing: &[u64]| {
        let rx: Vec<_> = (from..=to)
            .map(|i| (!missing.contains(&i), 0, 400 * MS + i as i64 * MS))
            .collect();
        let now = 400 * MS + to as i64 * MS + MS;
        h.on_feedback(&report(&clock, now, from as u16, &rx), now, &clock)
    };
    assert_eq!(ack(&mut h, 0, 100, &[10, 11, 12]).packets_newly_lost, 0);
    assert_eq!(ack(&mut h, 101, 600, &[]).packets_newly_lost, 0);
    // the highest acknowledged was 600: packets before 600 - 512 = 88 were checked (none)
    // now 88 - 32 .. 88 are: not yet 10-12; the next report moves the edge to 100 - 32
    assert_eq!(ack(&mut h, 601, 612, &[]).packets_newly_lost, 0);
    let mut lost = 0;
    for top in (620..=800).step_by(8) {
        lost += ack(&mut h, top - 7, top, &[]).packets_newly_lost;
    }
    assert_eq!(
        lost, 0,
        "a report that moves the edge by 8 looks back 8: 10-12 stay behind"
    );
    // a fresh history, where one report moves the edge past them by at most 32
    let mut h = TxHistory::new(9, 0, 30 * MS, LossDetection::Ericsson);
    sent_frames(&mut h, 20, 40);
    ack(&mut h, 0, 100, &[10, 11, 12]);
    ack(&mut h, 101, 530, &[]);
    assert_eq!(ack(&mut h, 531, 560, &[]).packets_newly_lost, 3);
}

#[test]
fn ericsson_2023_a_packet_sent_10_ms_before_the_last_acknowledged_one_is_lost() {
    let clock = Clock::identity();
    let mut h = TxHistory::new(9, 0, 30 * MS, LossDetection::Ericsson2023);
    sent_frames(&mut h, 5, 10);
    // Packet 0 missing; 1..=19 acknowledged: packet 19 left 25.7 ms after it, a frame
    // later, which c8f84c3's rule forgives (the test above) and aca6556's does not.
    let mut rx = vec![(false, 0, 0)];
    rx.extend((1..=19).map(|i| (true, 0, 60 * MS + i * MS)));
    let s = h.on_feedback(&report(&clock, 80 * MS, 0, &rx), 80 * MS, &clock);
    assert_eq!(s.packets_newly_lost, 1);
    // Packet 20 missing; 21..=29 acknowledged, the last sent 9 ms after it: not yet.
    let mut rx = vec![(false, 0, 0)];
    rx.extend((21..=29).map(|i| (true, 0, 90 * MS + i * MS)));
    let s = h.on_feedback(&report(&clock, 130 * MS, 20, &rx), 130 * MS, &clock);
    assert_eq!(s.packets_newly_lost, 0);
    // Packet 30 (frame 3, 50 ms) acknowledged: 20 (frame 2, 33.3 ms) is now lost.
    let rx = vec![(true, 0, 140 * MS)];
    let s = h.on_feedback(&report(&clock, 141 * MS, 30, &rx), 141 * MS, &clock);
    assert_eq!(s.packets_newly_lost, 1);
}

#[test]
fn losses_of_frames_before_the_last_keyframe_need_no_other() {
    let clock = Clock::identity();
    let mut h = TxHistory::new(9, 0, 30 * MS, LossDetection::Ericsson);
    sent_frames(&mut h, 1, 40); // frame 0 (RTP timestamp 0), 40 packets
    let mut rx = vec![(false, 0, 0)];
    rx.extend((1..40).map(|i| (true, 0, 20 * MS + i * MS)));
    let s = h.on_feedback(&report(&clock, 70 * MS, 0, &rx), 70 * MS, &clock);
    assert_eq!((s.packets_newly_lost, s.newest_lost_rtp_ts), (1, Some(0)));
    assert!(s.needs_keyframe(None), "no I-frame yet");
    assert!(s.needs_keyframe(Some(0)), "the I-frame itself was hit");
    assert!(!s.needs_keyframe(Some(1500)), "a later I-frame repairs it");
    assert!(
        s.needs_keyframe(Some(u32::MAX - 100)),
        "across the timestamp wrap"
    );
    assert!(
        !FeedbackSummary::default().needs_keyframe(None),
        "nothing lost"
    );
}
