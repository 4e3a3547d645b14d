//! A closed-loop model for SCReAM's tests: a paced sender with a continuous or
//! frame-based video source, a FIFO bottleneck, propagation both ways and a receiver
//! sending real RFC 8888 reports through the sender's transmission history.

use super::*;
use crate::clock::{ntp32_ceil, ntp32_to_wall_ns, Clock};
use crate::history::{LossDetection, TxHistory};
use crate::rfc8888::{ato_from_ns, Feedback, MetricBlock, StreamReport};
use std::collections::VecDeque;

const MS: i64 = 1_000_000;

#[derive(Clone, Copy)]
pub enum Marking {
    None,
    /// Mark CE every `1/p`-th packet, whatever the queue (a steady CE fraction).
    Fraction(f64),
}

pub struct SimResult {
    /// Per 100 ms: (time s, delivered Mbit/s, mean queue delay ms, target Mbit/s).
    pub samples: Vec<(f64, f64, f64, f64)>,
    pub marks_per_rtt: f64,
    pub final_ref_wnd: f64,
    pub losses: u64,
    /// Mean over the second half of the controller's queue-delay sample per report, and
    /// of the queue delay every packet saw (ms).
    pub est_qdelay_ms: f64,
    pub true_qdelay_ms: f64,
}

/// How the simulated sender produces media and the receiver reports.
#[derive(Clone, Copy)]
pub struct SimSetup {
    /// None: a source that produces exactly the target bitrate continuously; Some(fps):
    /// frames of target/fps bytes every 1/fps s, the last packet of each carrying the
    /// marker (Ericsson's test program's constant frames).
    pub fps: Option<f64>,
    /// Report after this many packets, on every marker if `report_on_marker`, and at
    /// least every `report_ms` while packets arrive.
    pub report_packets: usize,
    pub report_on_marker: bool,
    pub report_ms: i64,
}

pub const CONTINUOUS: SimSetup = SimSetup {
    fps: None,
    report_packets: 16,
    report_on_marker: false,
    report_ms: 5,
};

/// Sender with a video source, a FIFO bottleneck of `capacity_mbps` with `buffer_bytes`,
/// one-way propagation `owd_ms` each way, and a receiver sending RFC 8888 reports.
pub fn simulate(
    cc: Scream,
    capacity_mbps: f64,
    owd_ms: f64,
    buffer_bytes: usize,
    marking: Marking,
    seconds: f64,
) -> SimResult {
    simulate_with(
        cc,
        CONTINUOUS,
        capacity_mbps,
        owd_ms,
        buffer_bytes,
        marking,
        seconds,
    )
}

pub fn simulate_with(
    mut cc: Scream,
    setup: SimSetup,
    capacity_mbps: f64,
    owd_ms: f64,
    buffer_bytes: usize,
    marking: Marking,
    seconds: f64,
) -> SimResult {
    let clock = Clock::identity();
    let step = 100_000i64; // 0.1 ms
    let size = 1000usize;
    let owd = (owd_ms * 1e6) as i64;
    let mut history = TxHistory::new(9, 0, 30 * MS, LossDetection::AfterGap);
    let mut next_seq = 0u64;
    let mut source_bytes = 0.0f64;
    // Frame mode: packets waiting to be paced out (true: the frame's last).
    let mut rtp_queue: VecDeque<bool> = VecDeque::new();
    let mut next_frame = 0i64;
    let mut next_send = 0i64;
    // Bottleneck: (seq, enqueue time, marker); service completes at `busy_until`.
    let mut queue: VecDeque<(u64, i64, bool)> = VecDeque::new();
    let mut busy_until = 0i64;
    let service = (size as f64 * 8.0 / (capacity_mbps * 1e6) * 1e9) as i64;
    // In flight to the receiver: (arrival time, seq, ce, queue delay, marker).
    let mut to_rx: VecDeque<(i64, u64, bool, i64, bool)> = VecDeque::new();
    let mut rx_pending: Vec<(u64, i64, bool)> = Vec::new();
    let mut rx_marker = false;
    let mut rx_last_report = 0i64;
    // Reports in flight back: (arrival time, report).
    let mut to_tx: VecDeque<(i64, Feedback)> = VecDeque::new();
    let mut delivered_bytes = 0u64;
    let mut qdelay_sum = 0i64;
    let mut qdelay_n = 0i64;
    let (mut est_sum, mut est_n, mut true_sum, mut true_n) = (0.0, 0u64, 0i64, 0i64);
    let mut samples = Vec::new();
    let mut marks = 0u64;
    let mut marks_from = 0i64;
    let mut losses = 0;
    let mut mark_credit = 0.0;
    let end = (seconds * 1e9) as i64;
    let mut t = 0i64;
    let mut last_sample = 0i64;
    while t < end {
        match setup.fps {
            // Source: the encoder produces exactly the target bitrate.
            None => {
                source_bytes += cc.target_bitrate() / 8.0 * step as f64 * 1e-9;
                source_bytes = source_bytes.min(200_000.0);
            }
            Some(fps) if t >= next_frame => {
                let packets = (cc.target_bitrate() / fps / 8.0 / size as f64).ceil() as usize;
                for i in 0..packets.max(1) {
                    rtp_queue.push_back(i + 1 == packets.max(1));
                }
                next_frame += (1e9 / fps) as i64;
            }
            Some(_) => {}
        }
        // Sender: paced, within the send window.
        loop {
            let have = match setup.fps {
                None => source_bytes >= size as f64,
                Some(_) => !rtp_queue.is_empty(),
            };
            if !(have && next_send <= t && cc.may_send(history.bytes_in_flight(), size)) {
                break;
            }
            let marker = match setup.fps {
                None => {
                    source_bytes -= size as f64;
                    false
                }
                Some(_) => rtp_queue.pop_front().unwrap(),
            };
            history.on_sent(next_seq, t, size, 0);
            cc.on_sent(t, size, history.bytes_in_flight());
            let queued: usize = queue.len() * size;
            if queued + size <= buffer_bytes {
                queue.push_back((next_seq, t, marker));
            } else {
                losses += 1;
            }
            next_seq += 1;
            next_send =
                next_send.max(t - step) + (size as f64 * 8.0 / cc.pacing_rate() * 1e9) as i64;
        }
        // Bottleneck service.
        while let Some(&(seq, t_in, marker)) = queue.front() {
            let start = busy_until.max(t_in);
            if start + service > t {
                break;
            }
            busy_until = start + service;
            queue.pop_front();
            let ce = match marking {
                Marking::None => false,
                Marking::Fraction(p) => {
                    mark_credit += p;
                    if mark_credit >= 1.0 {
                        mark_credit -= 1.0;
                        true
                    } else {
                        false
                    }
                }
            };
            to_rx.push_back((
                busy_until + owd,
                seq,
                ce,
                busy_until - service - t_in,
                marker,
            ));
        }
        // Receiver.
        while to_rx.front().is_some_and(|&(at, ..)| at <= t) {
            let (at, seq, ce, qd, marker) = to_rx.pop_front().unwrap();
            rx_pending.push((seq, at, ce));
            rx_marker |= marker;
            delivered_bytes += size as u64;
            qdelay_sum += qd;
            qdelay_n += 1;
            if t >= end / 2 {
                true_sum += qd;
                true_n += 1;
            }
            if ce && t >= marks_from {
                marks += 1;
            }
        }
        if !rx_pending.is_empty()
            && (rx_pending.len() >= setup.report_packets
                || (setup.report_on_marker && rx_marker)
                || t - rx_last_report >= setup.report_ms * MS)
        {
            let lo = rx_pending.iter().map(|p| p.0).min().unwrap();
            let hi = rx_pending.iter().map(|p| p.0).max().unwrap();
            let rts = ntp32_ceil(clock.wall(t));
            let rts_wall = ntp32_to_wall_ns(rts, clock.wall(t));
            let mut blocks = vec![MetricBlock::MISSING; (hi - lo + 1) as usize];
            for &(seq, at, ce) in &rx_pending {
                blocks[(seq - lo) as usize] = MetricBlock {
                    received: true,
                    ecn: if ce { 3 } else { 1 },
                    ato: ato_from_ns(rts_wall - at),
                };
            }
            to_tx.push_back((
                t + owd,
                Feedback {
                    sender_ssrc: 1,
                    streams: vec![StreamReport {
                        ssrc: 9,
                        begin_seq: lo as u16,
                        blocks,
                    }],
                    report_ts: rts,
                },
            ));
            rx_pending.clear();
            rx_marker = false;
            rx_last_report = t;
        }
        // Sender receives feedback; losses past the reordering window.
        while to_tx.front().is_some_and(|(at, _)| *at <= t) {
            let (_, report) = to_tx.pop_front().unwrap();
            let s = history.on_feedback(&report, t, &clock);
            cc.on_feedback(&s);
            if t >= end / 2 && s.owd_ns.is_some() {
                est_sum += cc.qdelay * 1e3;
                est_n += 1;
            }
        }
        let mut tick = FeedbackSummary {
            now_ns: t,
            ..FeedbackSummary::default()
        };
        history.detect_losses(t, &mut tick);
        if tick.packets_newly_lost > 0 {
            tick.bytes_in_flight = history.bytes_in_flight();
            cc.on_feedback(&tick);
        }
        if t - last_sample >= 100 * MS {
            let dt = (t - last_sample) as f64 * 1e-9;
            let qd = if qdelay_n > 0 {
                qdelay_sum as f64 / qdelay_n as f64 * 1e-6
            } else {
                0.0
            };
            samples.push((
                t as f64 * 1e-9,
                delivered_bytes as f64 * 8.0 / dt / 1e6,
                qd,
                cc.target_bitrate() / 1e6,
            ));
            delivered_bytes = 0;
            qdelay_sum = 0;
            qdelay_n = 0;
            last_sample = t;
            if t < end / 2 {
                marks = 0;
                marks_from = t;
            }
        }
        t += step;
    }
    let srtt = cc.s_rtt().unwrap_or(2.0 * owd_ms * 1e-3);
    let rtts = (end - marks_from) as f64 * 1e-9 / srtt;
    if std::env::var("SIM_DEBUG").is_ok() {
        for s in samples.iter().step_by(10) {
            eprintln!(
                "t={:.1} delivered={:.2} qd={:.2} target={:.2}",
                s.0, s.1, s.2, s.3
            );
        }
        eprintln!(
            "ref_wnd={} losses={} marks={} rtts={} reactions={:?}",
            cc.ref_wnd, losses, marks, rtts, cc.reactions
        );
    }
    SimResult {
        samples,
        marks_per_rtt: marks as f64 / rtts,
        final_ref_wnd: cc.ref_wnd,
        losses,
        est_qdelay_ms: est_sum / est_n.max(1) as f64,
        true_qdelay_ms: true_sum as f64 / true_n.max(1) as f64 * 1e-6,
    }
}

pub fn mean_after(r: &SimResult, from_s: f64, f: impl Fn(&(f64, f64, f64, f64)) -> f64) -> f64 {
    let v: Vec<f64> = r.samples.iter().filter(|s| s.0 >= from_s).map(f).collect();
    v.iter().sum::<f64>() / v.len() as f64
}
