//! SCReAM's reference window (draft 4.2.2): the reduction on loss, CE marks and queue
//! delay (virtual CE) at most once per reaction interval, and the increase on every
//! feedback.

use super::{
    Scream, ACKED_BITRATE_MARGIN, BACKOFF_SCALE_LOW_TARGET_RATE, BETA_LOSS, MIN_REF_WND,
    VIRTUAL_RTT,
};

impl Scream {
    /// How far `ref_wnd` is from the last inflexion point, as the scale (0.1..1) that slows
    /// the increase and the L4S backoff near it.
    pub(super) fn inflexion_scale(&self) -> f64 {
        let d = (self.ref_wnd - self.ref_wnd_i) / self.ref_wnd_i * 8.0;
        (d * d).clamp(0.1, 1.0)
    }

    /// Draft 4.2.2.1: reduce `ref_wnd` at most once per min(VIRTUAL_RTT, s_rtt). `scl` is
    /// the inflexion scale before this feedback.
    pub(super) fn reduce_ref_wnd(&mut self, now: f64, s_rtt: f64, scl: f64) {
        if self.loss_detected || self.data_units_marked {
            self.last_congestion_detected = now;
        }
        let (mut is_loss, mut is_ce, mut is_virtual_ce) = (false, false, false);
        let mut alpha_v = 0.0;
        let interval = self.p.reaction_interval_s;
        if now - self.last_reaction_to_congestion >= interval.min(s_rtt) {
            if self.loss_detected {
                is_loss = true;
            } else if self.data_units_marked {
                is_ce = true;
            } else if self.qdelay_avg > self.qdelay_target / 2.0 {
                // Delay acts as a virtual CE fraction growing from 0 at qdelay_target/2 to 1
                // at qdelay_target.
                alpha_v = ((self.qdelay_avg - self.qdelay_target / 2.0)
                    / (self.qdelay_target / 2.0))
                    .clamp(0.0, 1.0);
                if self.p.virtual_backoff_scaled_twice {
                    alpha_v /= (s_rtt / interval).max(1.0); // E:880
                }
                is_virtual_ce = true;
            }
            self.l4s_alpha_v = alpha_v;
        }
        let reaction = is_loss || is_ce || is_virtual_ce;
        if self.p.ref_wnd_i_every_reaction {
            if reaction && !self.ref_wnd_i_blocked {
                self.ref_wnd_i = self.ref_wnd;
                self.ref_wnd_i_blocked = true;
            }
        } else if reaction && now - self.last_ref_wnd_i_update > 10.0 * s_rtt {
            self.last_ref_wnd_i_update = now;
            self.ref_wnd_i = self.ref_wnd;
        }
        if is_loss {
            self.ref_wnd *= BETA_LOSS;
            self.reactions.loss += 1;
        }
        if is_ce {
            self.reactions.ce += 1;
            if self.cfg.l4s {
                let mut backoff = self.l4s_alpha / 2.0;
                if self.target_bitrate < self.acked_bitrate * ACKED_BITRATE_MARGIN {
                    backoff *= BACKOFF_SCALE_LOW_TARGET_RATE;
                }
                backoff /= (s_rtt / interval).max(1.0);
                if self.qdelay < self.qdelay_target * 0.25 {
                    backoff *= scl.max(0.25);
                    backoff *= self.ref_wnd_delay_scale.max(0.25);
                }
                if now - self.last_reaction_to_congestion > 100.0 * VIRTUAL_RTT.max(s_rtt)
                    && self.max_bytes_in_flight_prev > 0.0
                {
                    // Long uncongested (source-limited): bring ref_wnd back near what is
                    // actually in flight before backing off.
                    self.ref_wnd = self.ref_wnd.min(self.max_bytes_in_flight_prev);
                }
                self.ref_wnd *= 1.0 - backoff;
            } else {
                self.ref_wnd *= self.p.beta_ecn;
            }
        }
        if is_virtual_ce {
            self.reactions.virtual_ce += 1;
            let mut backoff = alpha_v / 2.0;
            if self.target_bitrate < self.acked_bitrate * ACKED_BITRATE_MARGIN {
                backoff *= BACKOFF_SCALE_LOW_TARGET_RATE;
            }
            backoff /= (s_rtt / interval).max(1.0);
            self.ref_wnd *= 1.0 - backoff;
        }
        self.ref_wnd = self.ref_wnd.max(MIN_REF_WND);
        if is_loss || is_ce || is_virtual_ce {
            self.last_reaction_to_congestion = now;
            self.loss_detected = false;
            self.data_units_marked = false;
        }
    }

    /// Draft 4.2.2.2: increase `ref_wnd` on every feedback. Ericsson's code scales it by
    /// the inflexion distance before this feedback's reduction (`scl`), the draft's
    /// pseudocode by the distance after it.
    pub(super) fn increase_ref_wnd(&mut self, now: f64, s_rtt: f64, scl_before: f64) {
        let scl = if self.p.ref_wnd_i_every_reaction {
            scl_before
        } else {
            self.inflexion_scale()
        };
        let post_congestion_scale = ((now - self.last_congestion_detected)
            / (self.p.post_congestion_delay_rtts * VIRTUAL_RTT.max(s_rtt)))
        .clamp(0.0, 1.0);
        let scale_factor = 1.0 + (self.p.mul_increase_factor * self.ref_wnd) / self.mss();
        let mut increment =
            (self.bytes_newly_acked - self.bytes_newly_acked_ce) * self.ref_wnd_ratio();
        increment *= (s_rtt / VIRTUAL_RTT).min(1.0);
        increment *= scl.max(0.25);
        increment *= self.ref_wnd_delay_scale.max(0.1);
        let mut tmp = scale_factor;
        if tmp > 1.0 {
            tmp = 1.0 + (tmp - 1.0) * post_congestion_scale * scl;
        }
        increment *= tmp;
        let max_allowed = self.mss()
            + self.max_bytes_in_flight.max(self.max_bytes_in_flight_prev)
                * self.p.bytes_in_flight_headroom;
        self.app_limited = max_allowed < self.ref_wnd;
        let candidate = self.ref_wnd + increment.max(0.0);
        if candidate <= max_allowed && self.target_bitrate < self.cfg.limits.max_bps {
            // Ericsson rounds the increment to whole bytes (E:1826-1832): only a real growth
            // frees the inflexion point.
            if candidate.round() > self.ref_wnd.round() {
                self.ref_wnd_i_blocked = false;
            }
            self.ref_wnd = candidate;
        }
    }
}
