//! What one feedback report feeds into SCReAM, step by step in the order `on_feedback`
//! takes them: the RTT sample, losses (draft 4.2.1.1), the one-way delay sample, the bytes
//! in flight of this and the previous round trip, the loss event rate and the acknowledged
//! bitrate (draft 4.1.2).

use super::{Scream, LOSS_RATE_THRESHOLD};
use crate::history::FeedbackSummary;

impl Scream {
    /// sRTT from the report's RTT sample; the first one also sets the initial window and
    /// starts the per-RTT clocks.
    pub(super) fn take_rtt_sample(&mut self, now: f64, fb: &FeedbackSummary) {
        if let Some(rtt) = fb.rtt_sample_ns {
            let first = self.s_rtt.is_none();
            let s = self.smooth_rtt(now, rtt as f64 * 1e-9);
            self.s_rtt = Some(s);
            if first {
                self.ref_wnd = self.initial_ref_wnd(s);
                self.last_bif_roll = now;
                self.acked_window_start = now;
                self.last_loss_event_rate_update = now;
            }
        }
    }

    /// Loss: flag and the per-packet loss rate average (draft 4.2.1.1).
    pub(super) fn note_losses(&mut self, now: f64, s_rtt: f64, fb: &FeedbackSummary) {
        let alpha = (LOSS_RATE_THRESHOLD / 4.0).min(self.mss() / self.ref_wnd / 2.0);
        for _ in 0..fb.packets_newly_acked.min(10_000) {
            self.loss_rate *= 1.0 - alpha;
        }
        for _ in 0..fb.packets_newly_lost.min(10_000) {
            self.loss_rate = (1.0 - alpha) * self.loss_rate + alpha;
        }
        if fb.packets_newly_lost > 0 {
            let conditional_ok = !self.cfg.conditional_loss_backoff
                || self.loss_rate > LOSS_RATE_THRESHOLD
                || self.qdelay_avg > self.qdelay_target / 4.0;
            let spaced =
                !self.p.loss_srtt_after_reaction || now - self.last_reaction_to_congestion > s_rtt;
            if conditional_ok && spaced {
                self.loss_detected = true;
            }
            self.loss_in_this_rtt = true;
        }
    }

    /// The queue delay over the base delay, and what follows from it.
    pub(super) fn take_delay_sample(&mut self, now: f64, s_rtt: f64, fb: &FeedbackSummary) {
        let Some(owd) = fb.owd_ns else {
            return;
        };
        // Ericsson's code takes every packet a report acknowledges into its base delay
        // (E:1012, 1933) and its jitter trackers (E:711-721), so the spread it damps
        // includes each frame's own queue ramp from first to last packet; the queue
        // delay it acts on is still the newest packet's (E:1018-1050). The draft
        // profile takes the newest packet only.
        let (lo, hi) = if self.cfg.every_packet_delay {
            (
                fb.owd_min_ns.map_or(owd, |m| m.min(owd)),
                fb.owd_max_ns.map_or(owd, |m| m.max(owd)),
            )
        } else {
            (owd, owd)
        };
        let base = self.base.update(fb.now_ns, lo);
        let secs = |d: i64| (d - base) as f64 * 1e-9;
        let qdelay = secs(owd);
        self.update_qdelay(now, s_rtt, qdelay, secs(lo), secs(hi));
        if self.cfg.adapt_qdelay_target {
            self.adjust_qdelay_target(qdelay);
        }
    }

    /// Bytes in flight of this and the previous round trip. Ericsson's: as the report
    /// arrives, before its acknowledgements (E:705), over this and the previous 50 ms
    /// (E:1519, 1604-1607).
    pub(super) fn track_bytes_in_flight(&mut self, now: f64, s_rtt: f64, fb: &FeedbackSummary) {
        let (bif, roll) = if self.p.ericsson_max_bytes_in_flight {
            ((fb.bytes_in_flight + fb.bytes_newly_acked) as f64, 0.05)
        } else {
            (fb.bytes_in_flight as f64, s_rtt)
        };
        self.max_bytes_in_flight = self.max_bytes_in_flight.max(bif);
        if now - self.last_bif_roll >= roll {
            self.max_bytes_in_flight_prev = self.max_bytes_in_flight;
            self.max_bytes_in_flight = if self.p.ericsson_max_bytes_in_flight {
                0.0
            } else {
                bif
            };
            self.last_bif_roll = now;
        }
    }

    /// Loss event rate: fraction of RTTs with a loss (for the qdelay target adaptation).
    pub(super) fn update_loss_event_rate(&mut self, now: f64, s_rtt: f64) {
        if now - self.last_loss_event_rate_update >= s_rtt {
            let x = if self.loss_in_this_rtt { 1.0 } else { 0.0 };
            self.loss_event_rate = 0.9 * self.loss_event_rate + 0.1 * x;
            self.loss_in_this_rtt = false;
            self.last_loss_event_rate_update = now;
        }
    }

    /// Acknowledged bitrate over about two frame periods or one RTT (draft 4.1.2).
    pub(super) fn update_acked_bitrate(&mut self, now: f64, s_rtt: f64, fb: &FeedbackSummary) {
        self.acked_bytes_acc += fb.bytes_newly_acked as f64;
        let window = (2.0 * self.cfg.frame_period_s).max(s_rtt);
        if now - self.acked_window_start >= window {
            self.acked_bitrate = self.acked_bytes_acc * 8.0 / (now - self.acked_window_start);
            self.acked_bytes_acc = 0.0;
            self.acked_window_start = now;
        }
    }
}
