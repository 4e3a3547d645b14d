//! TFRC sender (RFC 5348 section 4) and gTFRC (Jourjon et al., ICON 2006: sending rate
//! G = max(g, X), g the target rate guaranteed by the network, X TFRC's rate).
//!
//! The receiver measures the loss event rate p and the receive rate X_recv and reports
//! them once per RTT ([`crate::receiver::tfrc`]); the sender computes
//! `X = max(min(X_Bps, 2 X_recv), s / t_mbi)` from the throughput equation when p > 0,
//! and doubles X once per RTT (slow start, capped at 2 X_recv) while p = 0. The video
//! encoder's target is X clamped to the encoder's limits.
//!
//! Deviations, for video over RTP: the initial rate is the configured start bitrate (RFC
//! 5348 4.2 starts from one packet per second or W_init/R); `recv_limit` uses the latest
//! X_recv only (the simple form of 4.3 step 4, without the data-limited X_recv_set).

use super::{smooth_rtt, Controller, ControllerState, RateLimits};
use crate::history::FeedbackSummary;
use crate::rtcp::TfrcReport;
use crate::tfrc_eq;

/// Maximum back-off interval, seconds (RFC 5348 4.3).
const T_MBI_S: f64 = 64.0;
/// RTT filter constant q (RFC 5348 4.3 recommends 0.9).
const RTT_Q: f64 = 0.9;

pub struct Tfrc {
    limits: RateLimits,
    pace_factor: f64,
    /// gTFRC target rate g (bytes/s); None for plain TFRC.
    g_bytes_s: Option<f64>,
    /// Allowed sending rate X, bytes/s.
    x: f64,
    /// Rate given by the equation at the last report, bytes/s.
    x_calc: Option<f64>,
    x_recv: Option<f64>,
    p: f64,
    rtt_s: Option<f64>,
    /// Mean packet size s (bytes), exponentially averaged.
    s_bytes: f64,
    tld_ns: i64,
    nofeedback_deadline_ns: Option<i64>,
    owd_base_ns: Option<i64>,
    qdelay_s: Option<f64>,
    srtt_8888_s: Option<f64>,
    pub nofeedback_expiries: u64,
}

impl Tfrc {
    pub fn new(limits: RateLimits, pace_factor: f64, g_bps: Option<f64>) -> Self {
        Tfrc {
            limits,
            pace_factor,
            g_bytes_s: g_bps.map(|g| g / 8.0),
            x: limits.clamp(limits.start_bps) / 8.0,
            x_calc: None,
            x_recv: None,
            p: 0.0,
            rtt_s: None,
            s_bytes: 1200.0,
            tld_ns: i64::MIN / 2,
            nofeedback_deadline_ns: None,
            owd_base_ns: None,
            qdelay_s: None,
            srtt_8888_s: None,
            nofeedback_expiries: 0,
        }
    }

    /// TFRC's own allowed rate X (bytes/s), before the gTFRC floor.
    pub fn x_bytes_s(&self) -> f64 {
        self.x
    }

    /// The sending rate in bytes/s: X, or max(g, X) for gTFRC.
    pub fn sending_rate_bytes_s(&self) -> f64 {
        match self.g_bytes_s {
            Some(g) => g.max(self.x),
            None => self.x,
        }
    }

    fn nofeedback_interval_ns(&self) -> i64 {
        let r = self.rtt_s.unwrap_or(0.5);
        let t = (4.0 * r).max(2.0 * self.s_bytes / self.x.max(1.0));
        (t * 1e9) as i64
    }

    /// RFC 5348 4.3: what the sender does on a receiver report.
    pub fn on_report(&mut self, now_ns: i64, p: f64, x_recv: f64, rtt_sample_s: f64) {
        self.rtt_s = Some(match self.rtt_s {
            None => rtt_sample_s,
            Some(r) => RTT_Q * r + (1.0 - RTT_Q) * rtt_sample_s,
        });
        let r = self.rtt_s.unwrap().max(1e-4);
        self.p = p;
        self.x_recv = Some(x_recv);
        let recv_limit = 2.0 * x_recv;
        let min_rate = self.s_bytes / T_MBI_S;
        if p > 0.0 {
            let x_calc = tfrc_eq::x_bps(self.s_bytes, r, p);
            self.x_calc = Some(x_calc);
            self.x = x_calc.min(recv_limit).max(min_rate);
        } else if now_ns - self.tld_ns >= (r * 1e9) as i64 {
            // Slow start: double once per RTT, never above twice what arrived.
            let w_init = (4.0 * self.s_bytes).min((2.0 * self.s_bytes).max(4380.0));
            self.x = (2.0 * self.x).min(recv_limit).max(w_init / r);
            self.tld_ns = now_ns;
        }
        self.nofeedback_deadline_ns = Some(now_ns + self.nofeedback_interval_ns());
    }

    fn target(&self) -> f64 {
        self.limits.clamp(self.sending_rate_bytes_s() * 8.0)
    }
}

impl Controller for Tfrc {
    fn name(&self) -> &'static str {
        if self.g_bytes_s.is_some() {
            "gtfrc"
        } else {
            "tfrc"
        }
    }

    fn on_sent(&mut self, now_ns: i64, size: usize, _bif: u64) {
        self.s_bytes += (size as f64 - self.s_bytes) / 16.0;
        if self.nofeedback_deadline_ns.is_none() {
            // RFC 5348 4.2: the first nofeedback timer is 2 s.
            self.nofeedback_deadline_ns = Some(now_ns + 2_000_000_000);
        }
    }

    fn on_feedback(&mut self, fb: &FeedbackSummary) {
        // RFC 8888 reports are not TFRC's signal; kept for the log (RTT, queue delay).
        if let Some(rtt) = fb.rtt_sample_ns {
            self.srtt_8888_s = Some(smooth_rtt(self.srtt_8888_s, rtt as f64 * 1e-9));
        }
        if let Some(owd) = fb.owd_ns {
            let base = self.owd_base_ns.map_or(owd, |b| b.min(owd));
            self.owd_base_ns = Some(base);
            self.qdelay_s = Some((owd - base) as f64 * 1e-9);
        }
    }

    fn on_tfrc_report(&mut self, now_ns: i64, report: &TfrcReport, rtt_ns: i64) {
        self.on_report(
            now_ns,
            report.p,
            report.x_recv_bps as f64,
            (rtt_ns as f64 * 1e-9).max(1e-5),
        );
    }

    fn on_tick(&mut self, now_ns: i64) {
        if let Some(deadline) = self.nofeedback_deadline_ns {
            if now_ns >= deadline {
                // RFC 5348 4.4 (simplified): halve the rate, not below one packet per t_mbi.
                self.x = (self.x / 2.0).max(self.s_bytes / T_MBI_S);
                self.nofeedback_expiries += 1;
                self.nofeedback_deadline_ns = Some(now_ns + self.nofeedback_interval_ns());
            }
        }
    }

    fn target_bitrate(&self) -> f64 {
        self.target()
    }

    fn pacing_rate(&self) -> f64 {
        self.target() * self.pace_factor
    }

    fn srtt_ns(&self) -> Option<i64> {
        self.rtt_s.or(self.srtt_8888_s).map(|s| (s * 1e9) as i64)
    }

    fn wants_tfrc_reports(&self) -> bool {
        true
    }

    fn state(&self) -> ControllerState {
        ControllerState {
            target_bps: self.target(),
            pace_bps: self.pacing_rate(),
            srtt_ms: self.rtt_s.or(self.srtt_8888_s).map(|s| s * 1e3),
            qdelay_ms: self.qdelay_s.map(|s| s * 1e3),
            loss_event_rate: Some(self.p),
            x_recv_bps: self.x_recv.map(|x| x * 8.0),
            x_calc_bps: self.x_calc.map(|x| x * 8.0),
            ..ControllerState::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    fn limits() -> RateLimits {
        RateLimits {
            min_bps: 1.0,
            start_bps: 10e6,
            max_bps: 1e9,
        }
    }

    #[test]
    fn rate_follows_the_equation_with_loss() {
        let mut t = Tfrc::new(limits(), 1.5, None);
        t.s_bytes = 1200.0;
        // Plenty of receive rate, so the equation binds.
        t.on_report(0, 0.01, 1e9, 0.05);
        let expected = tfrc_eq::x_bps(1200.0, 0.05, 0.01);
        assert!((t.x_bytes_s() - expected).abs() / expected < 1e-9);
        assert!((t.target_bitrate() - expected * 8.0).abs() / (expected * 8.0) < 1e-9);
        // The RTT is filtered with q = 0.9.
        t.on_report(100 * MS, 0.01, 1e9, 0.15);
        let r = 0.9 * 0.05 + 0.1 * 0.15;
        let expected = tfrc_eq::x_bps(1200.0, r, 0.01);
        assert!((t.x_bytes_s() - expected).abs() / expected < 1e-9);
    }

    #[test]
    fn receive_rate_caps_and_slow_start_doubles() {
        let mut t = Tfrc::new(limits(), 1.5, None);
        let x0 = t.x_bytes_s();
        t.on_report(0, 0.0, 1e9, 0.02);
        assert!((t.x_bytes_s() - 2.0 * x0).abs() < 1.0);
        // Within the same RTT: no second doubling.
        t.on_report(10 * MS, 0.0, 1e9, 0.02);
        assert!((t.x_bytes_s() - 2.0 * x0).abs() < 1.0);
        // Twice the receive rate caps X, down to the initial rate W_init/R (RFC 5348 4.3).
        t.on_report(100 * MS, 0.0, 1e6, 0.02);
        assert!((t.x_bytes_s() - 2e6).abs() < 1e-6);
        t.on_report(200 * MS, 0.0, 1000.0, 0.02);
        assert!((t.x_bytes_s() - 4380.0 / 0.02).abs() < 1e-6);
    }

    #[test]
    fn nofeedback_timer_halves() {
        let mut t = Tfrc::new(limits(), 1.5, None);
        t.on_sent(0, 1200, 1200);
        let x0 = t.x_bytes_s();
        t.on_tick(1_999 * MS);
        assert_eq!(t.x_bytes_s(), x0);
        t.on_tick(2_000 * MS);
        assert_eq!(t.x_bytes_s(), x0 / 2.0);
    }

    #[test]
    fn gtfrc_never_below_its_target() {
        let g = 4e6;
        let mut t = Tfrc::new(limits(), 1.5, Some(g));
        let mut now = 0;
        for (i, p) in [0.0, 0.001, 0.05, 0.3, 0.9, 0.9, 0.2, 0.0]
            .iter()
            .enumerate()
        {
            now += 50 * MS;
            t.on_report(now, *p, 1e5 * (i as f64 + 1.0), 0.05);
            assert!(t.target_bitrate() >= g, "p={p}: {}", t.target_bitrate());
            // And it is TFRC's rate whenever that is higher.
            let tfrc = t.x_bytes_s() * 8.0;
            assert!((t.target_bitrate() - tfrc.max(g)).abs() < 1e-6);
            t.on_tick(now + 10_000 * MS);
            assert!(t.target_bitrate() >= g);
        }
        // Plain TFRC in the same conditions falls well below g.
        let mut plain = Tfrc::new(limits(), 1.5, None);
        plain.on_report(0, 0.3, 1e5, 0.05);
        assert!(plain.target_bitrate() < g);
    }
}
