//! SCReAM's media rate (draft 4.4): the smoothed RTT, the target bitrate from `ref_wnd`
//! and sRTT, and the window that gives the start bitrate.

use super::super::smooth_rtt;
use super::{Scream, WindowRule, MIN_RTT_FOR_RATE, PACKET_OVERHEAD, REF_WND_OVERHEAD_MIN};

impl Scream {
    /// Draft 4.4: target bitrate from ref_wnd and the smoothed RTT.
    pub(super) fn update_target_bitrate(&mut self) {
        let Some(s_rtt) = self.s_rtt else {
            return;
        };
        if self.p.window_rule == WindowRule::Ledbat2023 {
            self.target_bitrate = self.cfg.limits.clamp(self.target_2023(s_rtt));
            return;
        }
        let mut tmp = 1.0;
        tmp *= 1.0 - (self.ref_wnd_ratio() - 0.1).clamp(0.0, 0.2);
        tmp *= self.mss() / (self.mss() + PACKET_OVERHEAD);
        tmp /= self.target_divisor();
        let rtt = (s_rtt + self.p.srtt_add_s).max(MIN_RTT_FOR_RATE);
        let rate = tmp * 8.0 * self.ref_wnd / rtt;
        self.target_bitrate = self.cfg.limits.clamp(rate);
    }

    /// Draft: 1.2 + rate_adjust + frame_size_dev; Ericsson: 1.1 x (1 + rate_adjust).
    pub(super) fn target_divisor(&self) -> f64 {
        if self.p.target_uses_frame_size_dev {
            self.p.target_divisor + self.rate_adjust_factor + self.frame_size_dev
        } else {
            self.p.target_divisor * (1.0 + self.rate_adjust_factor)
        }
    }

    pub(super) fn ref_wnd_overhead(&self) -> f64 {
        REF_WND_OVERHEAD_MIN
            + (self.p.ref_wnd_overhead_max - REF_WND_OVERHEAD_MIN) * self.ref_wnd_delay_scale
    }

    /// The next sRTT after an RTT sample (`two_stage_srtt` chooses the filter).
    pub(super) fn smooth_rtt(&mut self, now: f64, sample: f64) -> f64 {
        let Some(s_rtt) = self.s_rtt else {
            self.s_rtt_short = sample;
            self.last_s_rtt_update = now;
            return sample;
        };
        if !self.p.two_stage_srtt {
            return smooth_rtt(Some(s_rtt), sample);
        }
        self.s_rtt_short += (sample - self.s_rtt_short) / 8.0;
        if now - self.last_s_rtt_update <= self.s_rtt_short {
            return s_rtt;
        }
        self.last_s_rtt_update = now;
        let slow = self.p.srtt_slow_when_app_limited && self.app_limited;
        let gain = if slow && s_rtt > self.s_rtt_short {
            1.0 / 1024.0
        } else {
            1.0 / 8.0
        };
        s_rtt + (self.s_rtt_short - s_rtt) * gain
    }

    /// The window that gives the start bitrate at this RTT (inverse of the target formula;
    /// the draft profile's window at the first RTT sample).
    pub(super) fn initial_ref_wnd(&self, s_rtt: f64) -> f64 {
        let factor = self.mss() / (self.mss() + PACKET_OVERHEAD) / self.p.target_divisor;
        let rtt = (s_rtt + self.p.srtt_add_s).max(MIN_RTT_FOR_RATE);
        let wnd = self.cfg.limits.start_bps * rtt / 8.0 / factor;
        wnd.max(self.p.min_ref_wnd)
    }
}
