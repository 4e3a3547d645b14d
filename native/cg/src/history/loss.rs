//! Which unacknowledged packets are lost. Two rules:
//! - `AfterGap` (the draft profile, and every controller but SCReAM's Ericsson profile):
//!   a packet is lost once it has been missing for a reordering window after a later
//!   packet was acknowledged, checked at each report and by the sender's timer (like
//!   RACK, RFC 8985).
//! - `Ericsson` (ScreamV2Tx.cpp's `detectLoss`, E:1099-1220), checked only as a report
//!   arrives: a packet is lost when the packet acknowledged last was sent more than the
//!   reordering window (`kReorderTime`, 30 ms) later than it, beyond the difference of
//!   their frames' timestamps (`tsDiffCorrection`); or when it falls 512 packets behind
//!   the highest acknowledged one (at most 32 such per report). In a paced video stream
//!   send times follow frame times, so the first test seldom fires and a loss is mostly
//!   seen 512 packets later (about 0.2 s at 25 Mbit/s). When several drops of one queue
//!   overflow arrive then, the queue has drained after the first backoff, and their
//!   conditional loss backoff (loss rate over 1 % or `qdelay_avg` over a quarter of the
//!   target) lets the rest pass: one backoff per overflow where the draft's rule gives two.
//! - `Ericsson2023` (aca6556's `detectLoss`, E23:896-966, for the `ericsson-2023` profile):
//!   as a report arrives, a packet still missing is lost once the packet acknowledged last
//!   was sent more than 10 ms (`kReordertime_ntp`, E23:34) after it, with no correction
//!   for frames and no 512-packet rule; the scan covers the previous highest acknowledged
//!   packet's 256 predecessors onwards. A drop is then found about one RTT + 10 ms after
//!   it was sent, where c8f84c3's rule mostly waits 512 packets.

use super::{FeedbackSummary, TxHistory};
use crate::rtp::VIDEO_CLOCK_HZ;

/// How losses are detected (see the module).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossDetection {
    AfterGap,
    Ericsson,
    Ericsson2023,
}

/// Ericsson: packets this far behind the highest acknowledged one are lost ...
const BEHIND: u64 = 512;
/// ... at most this many per report.
const BEHIND_PER_REPORT: u64 = 32;
/// aca6556: the reordering time (E23:34) and how far below the previous highest
/// acknowledged packet a report's scan starts (E23:902).
const REORDER_2023_NS: i64 = 10_000_000;
const SCAN_BELOW_2023: u64 = 256;

impl FeedbackSummary {
    /// Keeps the latest frame timestamp of the packets found lost (wrap-safe).
    fn note_lost_frame(&mut self, rtp_ts: u32) {
        match self.newest_lost_rtp_ts {
            Some(t) if (rtp_ts.wrapping_sub(t) as i32) <= 0 => {}
            _ => self.newest_lost_rtp_ts = Some(rtp_ts),
        }
    }

    /// Whether the losses found need an I-frame: one of their frames is not older than
    /// the last I-frame (`last_keyframe_rtp_ts`). The receiver recovers with the first
    /// I-frame after a loss; a drop found after an I-frame that left later (Ericsson's
    /// rule finds most drops about 0.2 s late, several reports apart) asks for nothing.
    pub fn needs_keyframe(&self, last_keyframe_rtp_ts: Option<u32>) -> bool {
        match (self.newest_lost_rtp_ts, last_keyframe_rtp_ts) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(lost), Some(key)) => lost.wrapping_sub(key) as i32 >= 0,
        }
    }
}

impl TxHistory {
    /// Ericsson's rule: remembers the send time of the packet acknowledged last and the
    /// highest frame timestamp acknowledged (wrap-safe, E:986-988).
    pub(super) fn note_acked(&mut self, t_send_ns: i64, rtp_ts: u32) {
        self.ack_t_send_ns = t_send_ns;
        match self.ack_rtp_ts_high {
            Some(high) if rtp_ts.wrapping_sub(high) >= 50_000 => {}
            _ => self.ack_rtp_ts_high = Some(rtp_ts),
        }
    }

    /// Declares lost the packets still missing a reordering window after a later packet
    /// was acknowledged (`AfterGap`; for `Ericsson`, losses are found as reports arrive).
    pub fn detect_losses(&mut self, now_ns: i64, out: &mut FeedbackSummary) {
        if self.loss_detection != LossDetection::AfterGap {
            return;
        }
        let Some(highest) = self.highest_acked else {
            return;
        };
        let window = self.reorder_window_ns;
        let mut s = self.loss_scan_from.max(self.first_seq);
        let mut prefix_done = true;
        while s < highest {
            if let Some(p) = self.slot_mut(s) {
                if !p.acked && !p.lost {
                    if p.gap_seen_ns != 0 && now_ns - p.gap_seen_ns >= window {
                        p.lost = true;
                        out.packets_newly_lost += 1;
                        out.note_lost_frame(p.rtp_ts);
                    } else {
                        prefix_done = false;
                    }
                }
            }
            if prefix_done {
                self.loss_scan_from = s + 1;
            }
            s += 1;
        }
        self.counters.packets_lost += out.packets_newly_lost;
    }

    /// Ericsson's rule, once a report was applied (`before`: the highest acknowledged
    /// sequence number before it).
    pub(super) fn detect_losses_ericsson(
        &mut self,
        before: Option<u64>,
        out: &mut FeedbackSummary,
    ) {
        let (Some(highest), Some(ts_high)) = (self.highest_acked, self.ack_rtp_ts_high) else {
            return;
        };
        let before = before.unwrap_or(self.first_seq);
        let edge = before.saturating_sub(BEHIND).max(self.first_seq);
        let step = BEHIND_PER_REPORT.min(highest.saturating_sub(before));
        let (window, ack_t) = (self.reorder_window_ns, self.ack_t_send_ns);
        let mut lost = 0;
        for s in edge.saturating_sub(step).max(self.first_seq)..=highest {
            let Some(p) = self.slot_mut(s) else {
                continue;
            };
            if p.acked || p.lost {
                continue;
            }
            let frames_apart_ns =
                i64::from(ts_high.wrapping_sub(p.rtp_ts)) * 1_000_000_000 / VIDEO_CLOCK_HZ;
            if s < edge || p.t_send_ns + window + frames_apart_ns < ack_t {
                p.lost = true;
                lost += 1;
                out.note_lost_frame(p.rtp_ts);
            }
        }
        out.packets_newly_lost += lost;
        self.counters.packets_lost += lost;
    }

    /// aca6556's rule (`Ericsson2023`), once a report was applied (`before`: the highest
    /// acknowledged sequence number before it).
    pub(super) fn detect_losses_2023(&mut self, before: Option<u64>, out: &mut FeedbackSummary) {
        let Some(highest) = self.highest_acked else {
            return;
        };
        let from = before
            .unwrap_or(self.first_seq)
            .saturating_sub(SCAN_BELOW_2023)
            .max(self.first_seq);
        let ack_t = self.ack_t_send_ns;
        let mut lost = 0;
        for s in from..=highest {
            let Some(p) = self.slot_mut(s) else {
                continue;
            };
            if !p.acked && !p.lost && p.t_send_ns + REORDER_2023_NS < ack_t {
                p.lost = true;
                lost += 1;
                out.note_lost_frame(p.rtp_ts);
            }
        }
        out.packets_newly_lost += lost;
        self.counters.packets_lost += lost;
    }
}
