//! The rules of Ericsson's SCReAM V2 at aca6556 (2023-09-20), the code TMA 2024's eCGP
//! built, where they differ from c8f84c3's (`Profile::Ericsson2023`, `WindowRule::
//! Ledbat2023`). Places: E23 = code/ScreamV2Tx.cpp, St23 = code/ScreamV2TxStream.cpp,
//! S23 = code/scream_sender.cpp, all at aca6556.
//!
//! Its window has no virtual CE: between loss and CE events a LEDBAT-like gain moves it
//! by the newest queue delay's distance from the target (up by 1x, down by 2x the
//! acknowledged bytes' share), and its target bitrate is the window over sRTT divided by
//! half the pacing headroom, twice when L4S has not marked for 10 s.

use super::Scream;

/// LEDBAT gains up and down (ScreamTx.h:51-52 at aca6556, `kGainUp`, `kGainDown`).
const GAIN_UP: f64 = 1.0;
const GAIN_DOWN: f64 = 2.0;
/// The inflexion point is taken at most every 250 ms (E23:1306, 16384/65536 s).
const REF_WND_I_INTERVAL_S: f64 = 0.25;
/// Before the first congestion, the increase is multiplied by 0.1 + 10 x 0.05 x cwnd/MSS
/// (E23:68, 1297-1298), brought in over `postCongestionDelay` = 4 s (S23:83, E23:1115).
const LOW_CWND_SCALE: f64 = 0.1;
const POST_CONGESTION_DELAY_S: f64 = 4.0;
/// The packet pacing headroom (S23:65); the target and the L4S backoff divide by half of
/// it above one (E23:1363, St23:348-371).
const PACING_HEADROOM: f64 = 1.5;
/// CE marks count as L4S for 10 s after the last CE event (E23:758).
const L4S_ACTIVE_S: f64 = 10.0;
/// Long without congestion (E23:1365): the window falls back to what was in flight and the
/// backoff is at least a quarter (E23:1374-1381).
const LONG_UNCONGESTED_S: f64 = 5.0;
/// The send window is cwnd x 2 (L4S active) or x 1, plus one MSS (E23:65-66, 413-417).
const SEND_WINDOW_L4S: f64 = 2.0;
const SEND_WINDOW_NO_L4S: f64 = 1.0;
/// The base-delay reset (E23:1123-1137): every 50 ms (E23:28) the smallest queue delay is
/// averaged with gain 1/1000 (taken at once when lower, E23:1204-1207); above a quarter
/// of the target, 20 s after the last reset, the base delay is forgotten.
const MIN_AVG_INTERVAL_S: f64 = 0.05;
const MIN_AVG_G: f64 = 0.001;
const BASE_RESET_MIN_S: f64 = 20.0;
/// The window is updated at a report when 30 ms passed since the last update (E23:734,
/// 1966/65536 s; its comment says 10 ms), at a loss or CE event, or after a new frame;
/// the acknowledged bytes add up in between.
const WINDOW_UPDATE_INTERVAL_S: f64 = 1966.0 / 65536.0;
/// Frame sizes (St23:9, 207-240): mean with gain 1/32; a 20-bin histogram of how much
/// frames above 0.9 x the mean exceed it, decaying by 1/1024 (St23:7), whose median
/// (St23:8) divides the target, counted after 100 frames.
const FRAME_SIZE_AVG_G: f64 = 1.0 / 32.0;
const REL_FRAME_BINS: usize = 20;
const REL_FRAME_DECAY: f64 = 1.0 / 1024.0;
const REL_FRAME_PERCENTILE: f64 = 0.5;
const REL_FRAME_MIN_FRAMES: u64 = 100;

/// aca6556's state that c8f84c3's rules do not keep.
#[derive(Clone, Debug)]
pub(super) struct State2023 {
    /// When the last CE event was (`lastCeEventT_ntp`, which starts at the start,
    /// E23:1088), and whether one came in the last 10 s as of the last report.
    last_ce_event: f64,
    l4s_active: bool,
    /// Any congestion yet (`lastCongestionDetectedT_ntp != 0`).
    congested: bool,
    qdelay_min: f64,
    qdelay_min_avg: f64,
    last_min_avg_update: f64,
    last_base_reset: f64,
    pub(super) frame_size_avg: f64,
    frames: u64,
    rel_frame_hist: [f64; REL_FRAME_BINS],
    rel_frame_high: f64,
    /// When the window was last updated, and whether a frame came since (`isNewFrame`).
    last_window_update: Option<f64>,
    new_frame: bool,
}

impl Default for State2023 {
    fn default() -> Self {
        let mut rel_frame_hist = [0.0; REL_FRAME_BINS];
        rel_frame_hist[0] = 1.0; // St23:96
        State2023 {
            last_ce_event: 0.0,
            l4s_active: true,
            congested: false,
            qdelay_min: f64::INFINITY,
            qdelay_min_avg: 0.0,
            last_min_avg_update: 0.0,
            last_base_reset: 0.0,
            frame_size_avg: 0.0,
            frames: 0,
            rel_frame_hist,
            rel_frame_high: 1.0,
            last_window_update: None,
            new_frame: false,
        }
    }
}

impl State2023 {
    /// A frame of `bytes` was produced (St23:205-236).
    pub(super) fn on_frame(&mut self, bytes: f64) {
        self.new_frame = true;
        self.frame_size_avg = if self.frame_size_avg == 0.0 {
            bytes
        } else {
            FRAME_SIZE_AVG_G * bytes + (1.0 - FRAME_SIZE_AVG_G) * self.frame_size_avg
        };
        if bytes > 0.9 * self.frame_size_avg && self.frames >= REL_FRAME_MIN_FRAMES {
            let excess = (bytes - self.frame_size_avg) / self.frame_size_avg;
            let bin = ((excess * REL_FRAME_BINS as f64) as i64).clamp(0, REL_FRAME_BINS as i64 - 1);
            self.rel_frame_hist[bin as usize] += 1.0;
            for v in &mut self.rel_frame_hist {
                *v *= 1.0 - REL_FRAME_DECAY;
            }
            let mark = self.rel_frame_hist.iter().sum::<f64>() * REL_FRAME_PERCENTILE;
            let (mut ix, mut sum) = (1, self.rel_frame_hist[0]);
            while sum < mark && ix < REL_FRAME_BINS {
                sum += self.rel_frame_hist[ix];
                ix += 1;
            }
            self.rel_frame_high = 1.0 + (ix - 1) as f64 / REL_FRAME_BINS as f64;
        }
        self.frames += 1;
    }
}

impl Scream {
    /// L4S is on and a CE event came within the last 10 s before the last report (E23:758).
    pub(super) fn l4s_active_2023(&self) -> bool {
        self.cfg.l4s && self.v2023.l4s_active
    }

    /// St23:346-380: 8 cwnd / sRTT (sRTT within 1..200 ms), over the frame-size median,
    /// half the pacing headroom, and that again when L4S is not active.
    pub(super) fn target_2023(&self, s_rtt: f64) -> f64 {
        let half_headroom = 1.0 + (PACING_HEADROOM - 1.0) / 2.0;
        let mut tmp = 1.0 / self.v2023.rel_frame_high / half_headroom;
        if !self.l4s_active_2023() {
            tmp /= half_headroom;
        }
        tmp * 8.0 * self.ref_wnd / s_rtt.clamp(0.001, 0.2)
    }

    /// The send window over `ref_wnd` (E23:413-417).
    pub(super) fn send_window_2023(&self) -> f64 {
        let overhead = if self.l4s_active_2023() {
            SEND_WINDOW_L4S
        } else {
            SEND_WINDOW_NO_L4S
        };
        self.ref_wnd * overhead + self.mss()
    }

    fn take_ref_wnd_i_2023(&mut self, now: f64) {
        if now - self.last_ref_wnd_i_update > REF_WND_I_INTERVAL_S {
            self.last_ref_wnd_i_update = now;
            self.ref_wnd_i = self.ref_wnd;
        }
    }

    /// The slow minimum of the queue delay and the base-delay reset (E23:1119-1137,
    /// 1204-1208).
    fn base_delay_reset_2023(&mut self, now: f64) {
        let st = &mut self.v2023;
        st.qdelay_min = st.qdelay_min.min(self.qdelay);
        if st.qdelay_min_avg > 0.25 * self.qdelay_target
            && now - st.last_base_reset > BASE_RESET_MIN_S
        {
            st.qdelay_min_avg = 0.0;
            st.last_base_reset = now;
            self.base.reset();
        }
        if now - st.last_min_avg_update > MIN_AVG_INTERVAL_S {
            st.qdelay_min_avg = if st.qdelay_min < st.qdelay_min_avg {
                st.qdelay_min
            } else {
                MIN_AVG_G * st.qdelay_min + (1.0 - MIN_AVG_G) * st.qdelay_min_avg
            };
            st.qdelay_min = f64::INFINITY;
            st.last_min_avg_update = now;
        }
    }

    /// One report's end (E23:667-751): a CE event, then the window if its update is due.
    /// Returns whether it was updated (the acknowledged bytes were then taken).
    pub(super) fn on_report_2023(&mut self, now: f64, s_rtt: f64) -> bool {
        // A CE event at most every min(30 ms, sRTT) after the last loss or CE event
        // (E23:668); the loss gate is note_losses' (E23:953).
        let since_event = now - self.last_reaction_to_congestion;
        let ce = self.data_units_marked && since_event > self.p.reaction_interval_s.min(s_rtt);
        self.data_units_marked = false;
        if ce {
            self.v2023.last_ce_event = now;
        }
        let last = *self.v2023.last_window_update.get_or_insert(now);
        let due = now - last > WINDOW_UPDATE_INTERVAL_S
            || self.loss_detected
            || ce
            || self.v2023.new_frame;
        if due {
            self.update_ref_wnd_2023(now, s_rtt, ce);
            self.v2023.last_window_update = Some(now);
            self.v2023.new_frame = false;
        }
        self.v2023.l4s_active = now - self.v2023.last_ce_event < L4S_ACTIVE_S;
        due
    }

    /// aca6556's `updateCwnd` (E23:1110-1500), `ce`: a CE event at this report.
    fn update_ref_wnd_2023(&mut self, now: f64, s_rtt: f64, ce: bool) {
        self.base_delay_reset_2023(now);
        let mss = self.mss();
        let post_congestion_scale = if self.v2023.congested {
            1.0 // only read before the first congestion
        } else {
            (now / POST_CONGESTION_DELAY_S).clamp(0.0, 1.0)
        };
        let cwnd_scale = if self.v2023.congested {
            1.0
        } else {
            LOW_CWND_SCALE + 10.0 * self.p.mul_increase_factor * self.ref_wnd / mss
        };
        if self.loss_detected {
            self.take_ref_wnd_i_2023(now);
            self.ref_wnd *= super::BETA_LOSS;
            self.reactions.loss += 1;
        } else if ce {
            self.take_ref_wnd_i_2023(now);
            self.reactions.ce += 1;
            if self.cfg.l4s {
                let mut backoff = self.l4s_alpha / 2.0;
                backoff *= cwnd_scale.min(1.0); // E23:1346
                backoff *= (1.0 - 2.0 * self.ref_wnd_ratio()).max(0.8); // E23:1354
                backoff /= 1.0 + (PACING_HEADROOM - 1.0) / 2.0; // E23:1363
                let last_congestion = if self.v2023.congested {
                    self.last_congestion_detected
                } else {
                    0.0
                };
                if now - last_congestion > LONG_UNCONGESTED_S {
                    self.ref_wnd = self.ref_wnd.min(self.max_bytes_in_flight_prev);
                    backoff = backoff.max(0.25);
                }
                self.ref_wnd *= 1.0 - backoff;
            } else {
                self.ref_wnd *= self.p.beta_ecn;
            }
        }
        if self.loss_detected || ce {
            self.loss_detected = false;
            self.last_reaction_to_congestion = now;
            self.last_congestion_detected = now;
            self.v2023.congested = true;
        }
        self.ref_wnd = self.ref_wnd.max(self.p.min_ref_wnd);
        let ratio = self.ref_wnd_ratio();
        let off_target = (self.qdelay_target - self.qdelay) / self.qdelay_target;
        if off_target > 0.0 {
            let mut increment =
                GAIN_UP * off_target * (self.bytes_newly_acked - self.bytes_newly_acked_ce) * ratio;
            increment *= (s_rtt / super::VIRTUAL_RTT).min(1.0).powi(2); // E23:1423-1424
            if !self.l4s_active_2023() {
                let d = 4.0 * (self.ref_wnd - self.ref_wnd_i) / self.ref_wnd_i;
                increment *= (d * d).clamp(0.1, 1.0); // E23:1427-1432
            }
            let mut scale = cwnd_scale;
            if scale > 1.0 {
                scale = 1.0 + (scale - 1.0) * post_congestion_scale;
            }
            increment *= scale;
            let max_allowed = mss
                + self.max_bytes_in_flight.max(self.max_bytes_in_flight_prev)
                    * self.p.bytes_in_flight_headroom;
            self.app_limited = max_allowed < self.ref_wnd;
            let candidate = self.ref_wnd + (increment + 0.5).floor();
            if candidate <= max_allowed {
                self.ref_wnd = candidate;
            }
        } else {
            // Over the target: down by twice the acknowledged share, at most a quarter
            // window (E23:1458-1478).
            self.take_ref_wnd_i_2023(now);
            let delta =
                (-GAIN_DOWN * off_target * self.bytes_newly_acked * ratio).min(self.ref_wnd / 4.0);
            self.ref_wnd -= delta;
            self.reactions.virtual_ce += 1;
            self.last_congestion_detected = now;
            self.v2023.congested = true;
        }
        self.ref_wnd = self.ref_wnd.max(self.p.min_ref_wnd);
    }
}
