//! SCReAM v2 (IETF draft-ietf-ccwg-rfc8298bis-screamv2), written from the draft's
//! pseudocode: network congestion control (reference window `ref_wnd`), sender
//! transmission control (send window and pacing) and media rate control (target bitrate
//! from `ref_wnd` and the smoothed RTT).
//!
//! Names follow the draft (section numbers of the -01 working-group draft). Where the
//! draft leaves a choice open this module documents it next to the code:
//! - the one-way-delay base is LEDBAT's (RFC 6817): the minimum over ten one-minute
//!   buckets;
//! - `ref_wnd` is initialised at the first RTT sample so that the first target bitrate
//!   is the configured start bitrate (draft profile; the draft starts at MIN_REF_WND);
//!   the Ericsson profile starts as Ericsson's code, with sRTT 50 ms and a window of the
//!   start bitrate x 100 ms before any report (params.rs, `StartState`);
//! - the RTT used in `8 * ref_wnd / s_rtt` is at least 1 ms, so that the sub-millisecond
//!   RTTs of a namespace testbed do not turn a 3 kB window into hundreds of Mbit/s;
//! - the optional parts (REDUCE_JITTER, the competing-flows qdelay target adaptation, the
//!   conditional loss backoff) are settings.
//!
//! Where the draft and Ericsson's SCReAM V2 code differ, `Profile` (params.rs) chooses; the
//! default follows Ericsson's code (what the papers ran).
//!
//! This file holds the controller's state and the `Controller`
//! interface; what each report feeds in (RTT, losses, delay, bytes in flight, the acked
//! rate) is in feedback.rs, the congestion signals in signals.rs, the reference window in
//! window.rs, sRTT and the target bitrate in rate.rs.

use std::collections::VecDeque;

use super::{Controller, ControllerState};
use crate::history::FeedbackSummary;

mod feedback;
mod pacing;
mod params;
mod rate;
mod signals;
mod v2023;
mod window;
pub use params::*;

use pacing::AdaptivePacing;
use signals::BaseDelay;
use v2023::State2023;

/// Which congestion signal caused a reduction (counted for tests and logs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reactions {
    pub loss: u64,
    pub ce: u64,
    pub virtual_ce: u64,
}

pub struct Scream {
    cfg: ScreamConfig,
    p: Params,
    started_ns: Option<i64>,
    // Network congestion control.
    pub ref_wnd: f64,
    ref_wnd_i: f64,
    s_rtt: Option<f64>,
    /// Ericsson's first sRTT stage (`sRttSh`) and when sRTT last followed it.
    s_rtt_short: f64,
    last_s_rtt_update: f64,
    /// `ref_wnd` above what the bytes in flight allow it to grow to (E:1829).
    app_limited: bool,
    qdelay: f64,
    qdelay_avg: f64,
    /// Ericsson's `queueDelayMin` (since the last slow update) and `queueDelayMinSlowAvg`.
    qdelay_min: f64,
    qdelay_min_slow_avg: f64,
    last_qdelay_min_slow_update: f64,
    qdelay_max_avg: f64,
    qdelay_min_avg: f64,
    qdelay_dev_avg: f64,
    ref_wnd_delay_scale: f64,
    qdelay_target: f64,
    base: BaseDelay,
    l4s_alpha: f64,
    l4s_alpha_v: f64,
    last_update_l4s_alpha: f64,
    units_delivered_this_rtt: u64,
    units_marked_this_rtt: u64,
    last_update_qdelay_avg: f64,
    last_congestion_detected: f64,
    last_reaction_to_congestion: f64,
    last_ref_wnd_i_update: f64,
    /// Ericsson's `cwndIUpdateBlocked`: `ref_wnd_i` was taken and the window has not grown
    /// since.
    ref_wnd_i_blocked: bool,
    loss_detected: bool,
    data_units_marked: bool,
    loss_rate: f64,
    bytes_newly_acked: f64,
    bytes_newly_acked_ce: f64,
    max_bytes_in_flight: f64,
    max_bytes_in_flight_prev: f64,
    last_bif_roll: f64,
    acked_bitrate: f64,
    acked_bytes_acc: f64,
    acked_window_start: f64,
    // Competing flows compensation (optional).
    qdelay_norm_history: VecDeque<f64>,
    loss_event_rate: f64,
    loss_in_this_rtt: bool,
    last_loss_event_rate_update: f64,
    // Media rate control.
    target_bitrate: f64,
    rate_adjust_factor: f64,
    frame_size_dev: f64,
    pacing: AdaptivePacing,
    /// Largest packet sent in the current and the previous second (`mss_from_sent`), and
    /// when the current second began.
    sent_max: [f64; 2],
    sent_max_since: Option<f64>,
    /// aca6556's own state (`Profile::Ericsson2023`).
    v2023: State2023,
    pub reactions: Reactions,
}

impl Scream {
    pub fn new(cfg: ScreamConfig) -> Self {
        let target = cfg.limits.clamp(cfg.limits.start_bps);
        let qt = cfg.qdelay_target_s;
        let p = cfg.profile.params();
        let ericsson = cfg.profile == Profile::Ericsson;
        Scream {
            p,
            started_ns: None,
            ref_wnd: p.start.map_or(p.min_ref_wnd, |st| {
                (cfg.limits.start_bps * st.window_s / 8.0).max(p.min_ref_wnd)
            }),
            ref_wnd_i: 1.0,
            s_rtt: p.start.map(|st| st.s_rtt_s),
            s_rtt_short: p.start.map_or(0.0, |st| st.s_rtt_s),
            last_s_rtt_update: f64::NEG_INFINITY,
            app_limited: false,
            qdelay: 0.0,
            qdelay_avg: 0.0,
            qdelay_min: f64::INFINITY,
            qdelay_min_slow_avg: 0.0,
            last_qdelay_min_slow_update: f64::NEG_INFINITY,
            // E:164-165 start the max average at 0 and the min average high.
            qdelay_max_avg: if ericsson { 0.0 } else { qt },
            qdelay_min_avg: if ericsson { 1000.0 } else { 0.0 },
            qdelay_dev_avg: 0.0,
            ref_wnd_delay_scale: 1.0,
            qdelay_target: qt,
            base: BaseDelay::for_rule(p.window_rule),
            l4s_alpha: p.l4s_alpha_init,
            l4s_alpha_v: 0.0,
            last_update_l4s_alpha: 0.0,
            units_delivered_this_rtt: 0,
            units_marked_this_rtt: 0,
            last_update_qdelay_avg: 0.0,
            // Ericsson's start counts as a congestion event for the multiplicative increase,
            // which then comes in over 200 sRTT (E:1385, 1439-1443; their clock starts with
            // the program, S:651); the draft's starts whole.
            last_congestion_detected: if p.start.is_some() {
                0.0
            } else {
                f64::NEG_INFINITY
            },
            last_reaction_to_congestion: f64::NEG_INFINITY,
            last_ref_wnd_i_update: f64::NEG_INFINITY,
            ref_wnd_i_blocked: false,
            loss_detected: false,
            data_units_marked: false,
            loss_rate: 0.0,
            bytes_newly_acked: 0.0,
            bytes_newly_acked_ce: 0.0,
            max_bytes_in_flight: 0.0,
            max_bytes_in_flight_prev: 0.0,
            last_bif_roll: 0.0,
            acked_bitrate: 0.0,
            acked_bytes_acc: 0.0,
            acked_window_start: 0.0,
            qdelay_norm_history: VecDeque::new(),
            loss_event_rate: 0.0,
            loss_in_this_rtt: false,
            last_loss_event_rate_update: 0.0,
            target_bitrate: target,
            rate_adjust_factor: 0.0,
            frame_size_dev: 0.0,
            pacing: AdaptivePacing::new(p.pacing_interval_s, p.pacing_history),
            sent_max: [0.0; 2],
            sent_max_since: None,
            v2023: State2023::default(),
            reactions: Reactions::default(),
            cfg,
        }
    }

    /// Seconds since the controller started (the draft's `now`).
    fn secs(&mut self, now_ns: i64) -> f64 {
        let start = *self.started_ns.get_or_insert(now_ns);
        (now_ns - start) as f64 * 1e-9
    }

    pub fn s_rtt(&self) -> Option<f64> {
        self.s_rtt
    }

    pub fn qdelay_avg(&self) -> f64 {
        self.qdelay_avg
    }

    pub fn l4s_alpha(&self) -> f64 {
        self.l4s_alpha
    }

    fn mss(&self) -> f64 {
        let sent = self.sent_max[0].max(self.sent_max[1]);
        if self.p.mss_from_sent && sent > 0.0 {
            sent
        } else {
            self.cfg.mss
        }
    }

    /// Ericsson's MSS tracking (E:439-456, 550): the largest packet of this and the
    /// previous second.
    fn track_sent_size(&mut self, now_s: f64, size: usize) {
        let since = *self.sent_max_since.get_or_insert(now_s);
        if now_s - since > 1.0 {
            self.sent_max = [0.0, self.sent_max[0]];
            self.sent_max_since = Some(now_s);
        }
        self.sent_max[0] = self.sent_max[0].max(size as f64);
    }

    /// How many bytes may be in flight (draft 4.3.1; aca6556's rule in v2023.rs).
    fn send_window_bytes(&self) -> f64 {
        match self.p.window_rule {
            WindowRule::Ledbat2023 => self.send_window_2023(),
            WindowRule::VirtualCe => self.ref_wnd * self.ref_wnd_overhead(),
        }
    }

    fn ref_wnd_ratio(&self) -> f64 {
        (self.mss() / self.ref_wnd).min(1.0)
    }
}

impl Controller for Scream {
    fn name(&self) -> &'static str {
        "scream"
    }

    fn on_sent(&mut self, now_ns: i64, size: usize, bytes_in_flight: u64) {
        self.max_bytes_in_flight = self.max_bytes_in_flight.max(bytes_in_flight as f64);
        self.track_sent_size(now_ns as f64 * 1e-9, size);
    }

    fn on_feedback(&mut self, fb: &FeedbackSummary) {
        let now = self.secs(fb.now_ns);
        self.take_rtt_sample(now, fb);
        self.bytes_newly_acked += fb.bytes_newly_acked as f64;
        self.bytes_newly_acked_ce += fb.bytes_newly_acked_ce as f64;
        let Some(s_rtt) = self.s_rtt else {
            return;
        };
        self.note_losses(now, s_rtt, fb);
        if fb.packets_newly_ce > 0 {
            self.data_units_marked = true;
        }
        self.take_delay_sample(now, s_rtt, fb);
        self.update_l4s_alpha(now, s_rtt, fb.packets_newly_acked, fb.packets_newly_ce);
        self.track_bytes_in_flight(now, s_rtt, fb);
        self.update_loss_event_rate(now, s_rtt);
        self.update_acked_bitrate(now, s_rtt, fb);

        let window_updated = if self.p.window_rule == WindowRule::Ledbat2023 {
            self.on_report_2023(now, s_rtt)
        } else {
            let scl = self.inflexion_scale();
            self.reduce_ref_wnd(now, s_rtt, scl);
            self.increase_ref_wnd(now, s_rtt, scl);
            true
        };
        if window_updated {
            self.bytes_newly_acked = 0.0;
            self.bytes_newly_acked_ce = 0.0;
        }
        self.update_target_bitrate();
    }

    fn on_feedback_timeout(&mut self, _now_ns: i64) {
        // No feedback: the self-clocking has stopped. Fall back to the minimum window and
        // rate; the normal increase brings them back once reports resume.
        self.ref_wnd = self.p.min_ref_wnd;
        self.max_bytes_in_flight = 0.0;
        self.max_bytes_in_flight_prev = 0.0;
        self.target_bitrate = self.cfg.limits.min_bps;
    }

    fn on_frame(
        &mut self,
        now_ns: i64,
        frame_bytes: usize,
        media_qdelay_s: f64,
        queue_bytes: usize,
    ) {
        // Draft 4.4: integrate the RTP queue delay beyond a quarter frame period, and track
        // how much frames exceed their nominal size.
        let fp = self.cfg.frame_period_s;
        let nominal = self.target_bitrate * fp / 8.0;
        // its own clock: the controller's (secs) starts at the first report
        let now = now_ns as f64 * 1e-9;
        self.v2023.on_frame(frame_bytes as f64);
        // aca6556 scales the pace by the frame against the mean frame (St23:239).
        let reference = if self.p.pacing_scale_vs_mean_frame {
            self.v2023.frame_size_avg
        } else {
            nominal
        };
        self.pacing
            .on_frame(now, frame_bytes as f64, queue_bytes as f64, reference);
        let error = (media_qdelay_s - fp * self.p.rate_adjust_ref_fp) / fp;
        self.rate_adjust_factor =
            (self.rate_adjust_factor + error * self.p.rate_adjust_gain).clamp(0.0, 0.5);
        if nominal > 0.0 {
            let deviation = ((frame_bytes as f64 - nominal) / nominal).max(0.0);
            self.frame_size_dev = ((1.0 - FRAME_SIZE_DEV_ALPHA) * self.frame_size_dev
                + FRAME_SIZE_DEV_ALPHA * deviation)
                .min(0.2);
        }
        self.update_target_bitrate();
    }

    fn target_bitrate(&self) -> f64 {
        self.target_bitrate
    }

    fn pacing_rate(&self) -> f64 {
        // Draft 4.3.2: 1.5 x the target; Ericsson's: 1.5 x the adaptive rate (pacing.rs).
        // Optionally relaxed near the maximum bitrate.
        let pace = if self.p.adaptive_pacing {
            RATE_PACE_MIN.max(self.pacing.base_rate(self.target_bitrate) * PACKET_PACING_HEADROOM)
        } else {
            RATE_PACE_MIN.max(self.target_bitrate) * PACKET_PACING_HEADROOM
        };
        if !self.cfg.relaxed_pacing {
            return pace;
        }
        let nominal = self.target_bitrate / self.cfg.limits.max_bps;
        let scale =
            ((nominal - RELAXED_PACING_LIMIT_LOW) / (1.0 - RELAXED_PACING_LIMIT_LOW)).min(1.0);
        pace / (1.0 - scale).clamp(1.0 / MAX_RELAXED_PACING_FACTOR, 1.0)
    }

    fn may_send(&self, bytes_in_flight: u64, size: usize) -> bool {
        // Bytes in flight may exceed ref_wnd by the overhead factor (draft 4.3.1).
        bytes_in_flight == 0 || (bytes_in_flight + size as u64) as f64 <= self.send_window_bytes()
    }

    fn send_window(&self, bytes_in_flight: u64) -> Option<f64> {
        Some(self.send_window_bytes() - bytes_in_flight as f64)
    }

    fn srtt_ns(&self) -> Option<i64> {
        self.s_rtt.map(|s| (s * 1e9) as i64)
    }

    fn wants_sparse_feedback(&self) -> bool {
        self.cfg.sparse_feedback
    }

    fn wants_5ms_feedback_timer(&self) -> bool {
        self.p.feedback_timer_5ms
    }

    fn state(&self) -> ControllerState {
        ControllerState {
            ref_wnd_bytes: Some(self.ref_wnd),
            target_bps: self.target_bitrate,
            pace_bps: self.pacing_rate(),
            srtt_ms: self.s_rtt.map(|s| s * 1e3),
            qdelay_ms: Some(self.qdelay * 1e3),
            qdelay_avg_ms: Some(self.qdelay_avg * 1e3),
            qdelay_target_ms: Some(self.qdelay_target * 1e3),
            l4s_alpha: Some(self.l4s_alpha),
            l4s_alpha_v: Some(self.l4s_alpha_v),
            loss_rate: Some(self.loss_rate),
            ..ControllerState::default()
        }
    }
}

#[cfg(test)]
mod sim;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_2023;
#[cfg(test)]
mod tests_sim;
#[cfg(test)]
mod tests_start;
