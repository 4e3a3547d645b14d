//! No congestion control: a constant target bitrate (the "No CCA" column of TMA 2024
//! Table I, eCGP sending 30 Mbit/s whatever the network does). Feedback is still read, for
//! the log (RTT and queue delay as the sender would see them).

use super::{smooth_rtt, Controller, ControllerState};
use crate::history::FeedbackSummary;

pub struct NoControl {
    rate_bps: f64,
    pace_factor: f64,
    srtt_s: Option<f64>,
    base_owd_ns: Option<i64>,
    qdelay_s: Option<f64>,
}

impl NoControl {
    pub fn new(rate_bps: f64, pace_factor: f64) -> Self {
        NoControl {
            rate_bps,
            pace_factor,
            srtt_s: None,
            base_owd_ns: None,
            qdelay_s: None,
        }
    }
}

impl Controller for NoControl {
    fn name(&self) -> &'static str {
        "none"
    }

    fn on_sent(&mut self, _now_ns: i64, _size: usize, _bif: u64) {}

    fn on_feedback(&mut self, fb: &FeedbackSummary) {
        if let Some(rtt) = fb.rtt_sample_ns {
            self.srtt_s = Some(smooth_rtt(self.srtt_s, rtt as f64 * 1e-9));
        }
        if let Some(owd) = fb.owd_ns {
            let base = self.base_owd_ns.map_or(owd, |b| b.min(owd));
            self.base_owd_ns = Some(base);
            self.qdelay_s = Some((owd - base) as f64 * 1e-9);
        }
    }

    fn target_bitrate(&self) -> f64 {
        self.rate_bps
    }

    fn pacing_rate(&self) -> f64 {
        self.rate_bps * self.pace_factor
    }

    fn srtt_ns(&self) -> Option<i64> {
        self.srtt_s.map(|s| (s * 1e9) as i64)
    }

    fn state(&self) -> ControllerState {
        ControllerState {
            target_bps: self.rate_bps,
            pace_bps: self.pacing_rate(),
            srtt_ms: self.srtt_s.map(|s| s * 1e3),
            qdelay_ms: self.qdelay_s.map(|s| s * 1e3),
            ..ControllerState::default()
        }
    }
}
