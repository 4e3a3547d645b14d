//! SCReAM's congestion signals (draft 4.2.1): LEDBAT's base delay, the queue-delay
//! averages and jitter scale, the L4S (CE) fraction and the optional qdelay-target
//! adaptation to competing loss-based flows.

use std::collections::VecDeque;

use super::{
    Scream, WindowRule, L4S_AVG_G_DOWN, L4S_AVG_G_UP, QDELAY_AVG_G, QDELAY_DEV_AVG_G,
    QDELAY_DEV_THRESHOLD, QDELAY_MIN_MAX_AVG_G, QDELAY_TARGET_HI, QDELAY_TARGET_LO,
};

/// Ericsson's slow average of the queue delay's minima: one minimum per this many sRTT
/// (`kQueueDelayMinSlowAvgUpdateRtts`, E:95), averaged with this gain (E:73).
const QDELAY_MIN_SLOW_RTTS: f64 = 100.0;
const QDELAY_MIN_SLOW_G: f64 = 1.0 / 8.0;

/// LEDBAT's base delay: the minimum one-way delay over ten one-minute minima, so that a
/// route change is forgotten in ten minutes. aca6556 keeps fifty 10 s minima
/// (E23:37 `kBaseDelayUpdateInterval_ntp`, H23:72 `kBaseOwdHistSize`) and may forget
/// them all at once (v2023.rs).
#[derive(Clone, Debug)]
pub(super) struct BaseDelay {
    bucket_ns: i64,
    buckets: usize,
    minima: VecDeque<(i64, i64)>, // (bucket index, min owd ns)
}

impl BaseDelay {
    pub(super) fn for_rule(rule: WindowRule) -> Self {
        let (bucket_ns, buckets) = match rule {
            WindowRule::VirtualCe => (60_000_000_000, 10),
            WindowRule::Ledbat2023 => (10_000_000_000, 50),
        };
        BaseDelay {
            bucket_ns,
            buckets,
            minima: VecDeque::new(),
        }
    }

    pub(super) fn update(&mut self, now_ns: i64, owd_ns: i64) -> i64 {
        let bucket = now_ns.div_euclid(self.bucket_ns);
        match self.minima.back_mut() {
            Some((b, v)) if *b == bucket => *v = (*v).min(owd_ns),
            _ => {
                self.minima.push_back((bucket, owd_ns));
                while self.minima.len() > self.buckets {
                    self.minima.pop_front();
                }
            }
        }
        self.minima.iter().map(|&(_, v)| v).min().unwrap_or(owd_ns)
    }

    /// Forget every minimum: the next sample is the base.
    pub(super) fn reset(&mut self) {
        self.minima.clear();
    }
}

impl Scream {
    /// Draft 4.2.1.4: qdelay samples, their averages and (optionally) the jitter scale.
    /// `qdelay` is the newest packet's; `lowest` and `highest` bound the report's packets
    /// for the jitter trackers (all three equal when only the newest packet counts).
    pub(super) fn update_qdelay(
        &mut self,
        now: f64,
        s_rtt: f64,
        qdelay: f64,
        lowest: f64,
        highest: f64,
    ) {
        self.qdelay = qdelay;
        self.qdelay_max_avg = self.qdelay_target.min(highest.max(self.qdelay_max_avg));
        self.qdelay_min_avg = lowest.min(self.qdelay_min_avg);
        self.qdelay_min = self.qdelay_min.min(qdelay);
        if now - self.last_update_qdelay_avg >= self.p.reaction_interval_s.min(s_rtt) {
            let mut sample = qdelay;
            if self.p.qdelay_minus_slow_min {
                if now - self.last_qdelay_min_slow_update > QDELAY_MIN_SLOW_RTTS * s_rtt {
                    self.qdelay_min_slow_avg = if self.qdelay_min < self.qdelay_min_slow_avg {
                        self.qdelay_min
                    } else {
                        QDELAY_MIN_SLOW_G * self.qdelay_min
                            + (1.0 - QDELAY_MIN_SLOW_G) * self.qdelay_min_slow_avg
                    };
                    self.qdelay_min = f64::INFINITY;
                    self.last_qdelay_min_slow_update = now;
                }
                sample -= self.qdelay_min_slow_avg;
            }
            // Slow attack, fast decay: delay spikes alone do not cause a backoff.
            if sample < self.qdelay_avg {
                self.qdelay_avg = sample;
            } else {
                self.qdelay_avg = QDELAY_AVG_G * sample + (1.0 - QDELAY_AVG_G) * self.qdelay_avg;
            }
            if self.cfg.reduce_jitter {
                // E:829-846: the spread of max and min averages, capped at twice the
                // threshold, is taken before both averages decay toward each other.
                let spread = (self.qdelay_max_avg - self.qdelay_min_avg)
                    .clamp(0.0, 2.0 * QDELAY_DEV_THRESHOLD);
                self.qdelay_dev_avg =
                    (1.0 - QDELAY_DEV_AVG_G) * self.qdelay_dev_avg + QDELAY_DEV_AVG_G * spread;
                self.ref_wnd_delay_scale =
                    (1.0 - self.qdelay_dev_avg / QDELAY_DEV_THRESHOLD).clamp(0.0, 1.0);
                self.qdelay_max_avg *= 1.0 - QDELAY_MIN_MAX_AVG_G;
                self.qdelay_min_avg = self.qdelay_min_avg * (1.0 - QDELAY_MIN_MAX_AVG_G)
                    + self.qdelay_max_avg * QDELAY_MIN_MAX_AVG_G;
            }
            self.last_update_qdelay_avg = now;
        }
    }

    /// Draft 4.2.1.3: fast attack, slow decay average of the CE-marked fraction.
    pub(super) fn update_l4s_alpha(&mut self, now: f64, s_rtt: f64, acked: u64, marked: u64) {
        self.units_delivered_this_rtt += acked;
        self.units_marked_this_rtt += marked;
        if now - self.last_update_l4s_alpha >= self.p.l4s_alpha_interval_s.min(s_rtt)
            && self.units_delivered_this_rtt > 0
        {
            let fraction = self.units_marked_this_rtt as f64 / self.units_delivered_this_rtt as f64;
            if let Some(g) = self.cfg.l4s_alpha_gain {
                self.l4s_alpha = g * fraction + (1.0 - g) * self.l4s_alpha;
            } else if fraction >= self.l4s_alpha {
                self.l4s_alpha = L4S_AVG_G_UP * fraction + (1.0 - L4S_AVG_G_UP) * self.l4s_alpha;
            } else {
                self.l4s_alpha *= 1.0 - L4S_AVG_G_DOWN;
            }
            self.last_update_l4s_alpha = now;
            self.units_delivered_this_rtt = 0;
            self.units_marked_this_rtt = 0;
        }
    }

    /// Draft 4.4.3 (optional): raise the qdelay target when loss-based flows share the
    /// bottleneck, so that SCReAM is not starved; lower it again otherwise.
    pub(super) fn adjust_qdelay_target(&mut self, qdelay: f64) {
        self.qdelay_norm_history
            .push_back(qdelay / QDELAY_TARGET_LO);
        while self.qdelay_norm_history.len() > 200 {
            self.qdelay_norm_history.pop_front();
        }
        let h = &self.qdelay_norm_history;
        let mean_all = h.iter().sum::<f64>() / h.len() as f64;
        let var = h.iter().map(|v| (v - mean_all).powi(2)).sum::<f64>() / h.len() as f64;
        let recent: Vec<f64> = h.iter().rev().take(50).copied().collect();
        let avg = recent.iter().sum::<f64>() / recent.len() as f64;
        let new_target = (avg + var.sqrt()) * QDELAY_TARGET_LO;
        if self.loss_event_rate > 0.002 {
            self.qdelay_target = 1.5 * new_target;
        } else if var < 0.2 {
            self.qdelay_target = new_target;
        } else if new_target < QDELAY_TARGET_LO {
            self.qdelay_target = (self.qdelay_target * 0.5).max(new_target);
        } else {
            self.qdelay_target *= 0.9;
        }
        self.qdelay_target = self.qdelay_target.clamp(QDELAY_TARGET_LO, QDELAY_TARGET_HI);
    }
}
