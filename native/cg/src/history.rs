//! The sender's record of transmitted packets, and what each RFC 8888 report says about
//! them: newly acknowledged bytes (CE-marked or not), losses, an RTT sample and a one-way
//! delay sample (SCReAM v2 draft 4.1.1-4.1.2).
//!
//! Robustness: reports may be lost (the receiver's reports overlap, so the next one
//! repeats what was missed), duplicated or reordered (acknowledging a packet twice is a
//! no-op and only a report that raises the highest acknowledged sequence number gives an
//! RTT sample), or name packets this sender never sent or has forgotten (ignored and
//! counted). Losses are declared by one of two rules (`loss`): a packet still missing a
//! reordering window after a later packet was acknowledged (time-based, like RACK, RFC
//! 8985; the window grows to the largest reordering actually seen), or Ericsson's.

use crate::clock::{ntp32_to_wall_ns, Clock};
use crate::rfc8888::{ato_to_ns, Feedback};
use crate::rtp::unwrap_seq;

/// Packets remembered (a power of two): ~5 s at 30 Mbit/s of 1200-byte packets.
const CAPACITY: usize = 1 << 14;
/// The reordering window never grows beyond this (a longer one delays every loss signal).
const MAX_REORDER_WINDOW_NS: i64 = 250_000_000;

mod loss;

pub use loss::LossDetection;

#[derive(Clone, Copy, Debug, Default)]
struct Sent {
    seq: u64,
    t_send_ns: i64,
    size: u32,
    /// The RTP timestamp of the packet's frame.
    rtp_ts: u32,
    acked: bool,
    lost: bool,
    /// When a later packet was first acknowledged while this one was not (0: never).
    gap_seen_ns: i64,
}

/// What one report (or a timer) changed.
#[derive(Clone, Debug, Default)]
pub struct FeedbackSummary {
    pub now_ns: i64,
    /// Sum of sizes of packets between the previous and the new highest acknowledged
    /// sequence number, lost ones included (draft 4.1.2 `bytes_newly_acked`).
    pub bytes_newly_acked: u64,
    /// Bytes of the packets newly reported received with CE.
    pub bytes_newly_acked_ce: u64,
    /// Packets reported received for the first time.
    pub packets_newly_acked: u64,
    /// Of those, packets reported CE-marked.
    pub packets_newly_ce: u64,
    /// Packets declared lost during this call.
    pub packets_newly_lost: u64,
    /// The latest frame (RTP timestamp) among them: an I-frame made after it repairs them.
    pub newest_lost_rtp_ts: Option<u32>,
    /// Packets earlier declared lost that this report shows received (reordering).
    pub packets_spurious_loss: u64,
    /// Time from sending the highest newly acknowledged packet to this report.
    pub rtt_sample_ns: Option<i64>,
    /// One-way delay of that packet (receiver clock minus sender clock).
    pub owd_ns: Option<i64>,
    /// Smallest and largest one-way delay over all packets this report newly acknowledges
    /// (each from its own arrival time offset). Ericsson's SCReAM feeds every acknowledged
    /// packet to its base delay and to its jitter trackers, not only the newest one.
    pub owd_min_ns: Option<i64>,
    pub owd_max_ns: Option<i64>,
    pub bytes_in_flight: u64,
    /// True when the report taught nothing new (duplicate or stale).
    pub nothing_new: bool,
}

/// Counters over the whole run (the summary file).
#[derive(Clone, Copy, Debug, Default)]
pub struct HistoryCounters {
    pub reports: u64,
    pub reports_nothing_new: u64,
    pub reports_reordered: u64,
    pub reports_other_ssrc: u64,
    pub blocks_unknown_seq: u64,
    pub packets_acked: u64,
    pub packets_ce: u64,
    pub packets_lost: u64,
    pub packets_spurious_loss: u64,
    pub feedback_timeouts: u64,
}

pub struct TxHistory {
    ring: Vec<Sent>,
    ssrc: u32,
    /// Next extended sequence number to be sent; `next_seq - 1` is the highest sent.
    next_seq: u64,
    first_seq: u64,
    highest_acked: Option<u64>,
    /// Lowest sequence number that may still be declared lost.
    loss_scan_from: u64,
    bytes_in_flight: u64,
    reorder_window_ns: i64,
    latest_report_ts: Option<u32>,
    loss_detection: LossDetection,
    /// Ericsson's rule: the send time of the packet acknowledged last and the highest
    /// frame timestamp acknowledged.
    ack_t_send_ns: i64,
    ack_rtp_ts_high: Option<u32>,
    pub counters: HistoryCounters,
}

impl TxHistory {
    pub fn new(
        ssrc: u32,
        first_seq: u64,
        reorder_window_ns: i64,
        loss_detection: LossDetection,
    ) -> Self {
        TxHistory {
            ring: vec![Sent::default(); CAPACITY],
            ssrc,
            next_seq: first_seq,
            first_seq,
            highest_acked: None,
            loss_scan_from: first_seq,
            bytes_in_flight: 0,
            reorder_window_ns,
            latest_report_ts: None,
            loss_detection,
            ack_t_send_ns: 0,
            ack_rtp_ts_high: None,
            counters: HistoryCounters::default(),
        }
    }

    fn slot(&self, seq: u64) -> Option<&Sent> {
        let s = &self.ring[(seq as usize) & (CAPACITY - 1)];
        (s.seq == seq && seq >= self.first_seq && seq < self.next_seq).then_some(s)
    }

    fn slot_mut(&mut self, seq: u64) -> Option<&mut Sent> {
        let (first, next) = (self.first_seq, self.next_seq);
        let s = &mut self.ring[(seq as usize) & (CAPACITY - 1)];
        (s.seq == seq && seq >= first && seq < next).then_some(s)
    }

    pub fn bytes_in_flight(&self) -> u64 {
        self.bytes_in_flight
    }

    pub fn reorder_window_ns(&self) -> i64 {
        self.reorder_window_ns
    }

    /// Records a transmitted packet (`seq` must be the next one) of the frame with RTP
    /// timestamp `rtp_ts`.
    pub fn on_sent(&mut self, seq: u64, t_send_ns: i64, size: usize, rtp_ts: u32) {
        debug_assert!(seq >= self.next_seq);
        self.next_seq = seq + 1;
        if self.next_seq - self.first_seq > CAPACITY as u64 {
            self.first_seq = self.next_seq - CAPACITY as u64;
            self.loss_scan_from = self.loss_scan_from.max(self.first_seq);
        }
        self.ring[(seq as usize) & (CAPACITY - 1)] = Sent {
            seq,
            t_send_ns,
            size: size as u32,
            rtp_ts,
            ..Sent::default()
        };
        self.bytes_in_flight += size as u64;
    }

    /// Applies one decoded RFC 8888 report received at `now_ns`.
    pub fn on_feedback(&mut self, fb: &Feedback, now_ns: i64, clock: &Clock) -> FeedbackSummary {
        self.counters.reports += 1;
        let mut out = FeedbackSummary {
            now_ns,
            ..FeedbackSummary::default()
        };
        if let Some(prev) = self.latest_report_ts {
            if (fb.report_ts.wrapping_sub(prev) as i32) < 0 {
                self.counters.reports_reordered += 1;
            }
        }
        if self
            .latest_report_ts
            .map_or(true, |prev| (fb.report_ts.wrapping_sub(prev) as i32) > 0)
        {
            self.latest_report_ts = Some(fb.report_ts);
        }
        let now_wall = clock.wall(now_ns);
        let rts_wall = ntp32_to_wall_ns(fb.report_ts, now_wall);
        let highest_sent = self.next_seq.saturating_sub(1);
        let mut new_highest: Option<(u64, Option<i64>)> = None; // (seq, ato ns)
        for stream in &fb.streams {
            if stream.ssrc != self.ssrc {
                self.counters.reports_other_ssrc += 1;
                continue;
            }
            for (i, block) in stream.blocks.iter().enumerate() {
                if !block.received {
                    continue;
                }
                let seq16 = stream.begin_seq.wrapping_add(i as u16);
                let seq = unwrap_seq(seq16, highest_sent);
                let ce = block.ecn == 3;
                let window = self.reorder_window_ns;
                let Some(p) = self.slot_mut(seq) else {
                    self.counters.blocks_unknown_seq += 1;
                    continue;
                };
                if p.acked {
                    continue;
                }
                p.acked = true;
                let size = p.size as u64;
                let (t_send_ns, rtp_ts) = (p.t_send_ns, p.rtp_ts);
                if p.lost {
                    // It arrived after all: the reordering window was too short.
                    p.lost = false;
                    out.packets_spurious_loss += 1;
                    let late = now_ns - p.gap_seen_ns;
                    if self.loss_detection == LossDetection::AfterGap {
                        self.reorder_window_ns = window.max(late.min(MAX_REORDER_WINDOW_NS));
                    }
                }
                self.note_acked(t_send_ns, rtp_ts);
                out.packets_newly_acked += 1;
                if ce {
                    out.packets_newly_ce += 1;
                    out.bytes_newly_acked_ce += size;
                }
                let ato = ato_to_ns(block.ato);
                if let Some(ato_ns) = ato {
                    let owd = rts_wall - ato_ns - clock.wall(t_send_ns);
                    out.owd_min_ns = Some(out.owd_min_ns.map_or(owd, |m| m.min(owd)));
                    out.owd_max_ns = Some(out.owd_max_ns.map_or(owd, |m| m.max(owd)));
                }
                if new_highest.map_or(true, |(h, _)| seq > h) {
                    new_highest = Some((seq, ato));
                }
            }
        }
        let highest_before = self.highest_acked;
        if let Some((seq, ato)) = new_highest {
            let old = self.highest_acked;
            if old.map_or(true, |h| seq > h) {
                let from = old.map_or(self.first_seq, |h| h + 1);
                for s in from..=seq {
                    let (size, acked) = match self.slot(s) {
                        Some(p) => (p.size as u64, p.acked),
                        None => continue,
                    };
                    out.bytes_newly_acked += size;
                    self.bytes_in_flight = self.bytes_in_flight.saturating_sub(size);
                    if !acked {
                        if let Some(p) = self.slot_mut(s) {
                            if p.gap_seen_ns == 0 {
                                p.gap_seen_ns = now_ns;
                            }
                        }
                    }
                }
                self.highest_acked = Some(seq);
                if let Some(p) = self.slot(seq) {
                    if let Some(ato_ns) = ato {
                        let arrival_wall = rts_wall - ato_ns;
                        out.owd_ns = Some(arrival_wall - clock.wall(p.t_send_ns));
                    }
                    // The RTT as the self-clocking sees it: from sending to the report,
                    // receiver hold time included (as TCP's RTT includes delayed ACKs,
                    // RFC 6298, and as Ericsson's SCReAM measures it). ref_wnd / s_rtt is
                    // then the rate the acknowledgements actually clock out.
                    out.rtt_sample_ns = Some((now_ns - p.t_send_ns).max(10_000));
                }
            }
        }
        match self.loss_detection {
            LossDetection::AfterGap => self.detect_losses(now_ns, &mut out),
            LossDetection::Ericsson => self.detect_losses_ericsson(highest_before, &mut out),
            LossDetection::Ericsson2023 => self.detect_losses_2023(highest_before, &mut out),
        }
        out.bytes_in_flight = self.bytes_in_flight;
        out.nothing_new = out.packets_newly_acked == 0 && out.packets_newly_lost == 0;
        if out.nothing_new {
            self.counters.reports_nothing_new += 1;
        }
        self.counters.packets_acked += out.packets_newly_acked;
        self.counters.packets_ce += out.packets_newly_ce;
        self.counters.packets_spurious_loss += out.packets_spurious_loss;
        out
    }

    /// No report for too long: forget what is in flight (the receiver may be gone or not
    /// started yet) so that the send window opens again; not a congestion signal.
    pub fn on_feedback_timeout(&mut self) {
        self.counters.feedback_timeouts += 1;
        if self.next_seq > self.first_seq {
            let top = self.next_seq - 1;
            for s in self.highest_acked.map_or(self.first_seq, |h| h + 1)..=top {
                if let Some(p) = self.slot_mut(s) {
                    // Neither acknowledged nor lost: later reports about them are ignored.
                    p.acked = true;
                }
            }
            self.highest_acked = Some(top);
            self.loss_scan_from = self.next_seq;
        }
        self.bytes_in_flight = 0;
    }
}

#[cfg(test)]
mod tests;
