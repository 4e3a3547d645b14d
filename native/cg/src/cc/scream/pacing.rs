//! Ericsson's adaptive pacing rate (E:1462-1510, St:248-253): the pacer runs at 1.5 x the
//! larger of the target and the RTP rate actually produced, scaled up to 1.5 x more while
//! the RTP queue holds more than a frame's worth. The draft paces at 1.5 x the target.
//!
//! It matters at start-up: the first frames wait for the first report, and paced at 1.5 x
//! the target they drain so slowly that the rate adjustment (which divides the target by
//! 1 + rate_adjust) grows to ~0.2; the window then has to grow 20 % larger before the
//! target reaches the maximum, and that window is what a competitor meets later.

/// Largest scale (ScreamTx.h:73 `kMaxAdaptivePacingRateScale`).
pub const MAX_ADAPTIVE_PACING_SCALE: f64 = 1.5;
/// Below this many bytes a frame's size says nothing (St:248).
const MIN_FRAME_SIZE_BYTES: f64 = 500.0;

/// The RTP rate produced and the pacing scale taken at each frame.
#[derive(Clone, Debug)]
pub struct AdaptivePacing {
    /// Rate-measurement interval and how many measurements are averaged (E:31
    /// `kRateUpdateInterval_ntp` 100 ms, ScreamTx.h:104 `kRateUpDateSize` 4; aca6556 50 ms
    /// and 8, params.rs).
    interval_s: f64,
    scale: f64,
    rtp_bytes: f64,
    history: Vec<f64>,
    next: usize,
    last_update_s: Option<f64>,
    rtp_rate_avg_bps: f64,
}

impl AdaptivePacing {
    pub fn new(interval_s: f64, history: usize) -> Self {
        AdaptivePacing {
            interval_s,
            scale: 1.0,
            rtp_bytes: 0.0,
            history: vec![0.0; history.max(1)],
            next: 0,
            last_update_s: None,
            rtp_rate_avg_bps: 0.0,
        }
    }

    /// A frame of `frame_bytes` entered the RTP queue, which now holds `queue_bytes`;
    /// `nominal_bytes` is the frame size the target asks for (target x frame period / 8),
    /// or in aca6556's rule the mean frame size.
    pub fn on_frame(&mut self, now_s: f64, frame_bytes: f64, queue_bytes: f64, nominal_bytes: f64) {
        self.rtp_bytes += frame_bytes;
        match self.last_update_s {
            None => self.last_update_s = Some(now_s),
            Some(last) if now_s - last > self.interval_s => {
                self.history[self.next] = self.rtp_bytes * 8.0 / (now_s - last);
                self.next = (self.next + 1) % self.history.len();
                // Zeros before the history is full, as Ericsson's (St:124-128).
                let n = self.history.len() as f64;
                self.rtp_rate_avg_bps = self.history.iter().sum::<f64>() / n;
                self.rtp_bytes = 0.0;
                self.last_update_s = Some(now_s);
            }
            Some(_) => {}
        }
        self.scale = if nominal_bytes > MIN_FRAME_SIZE_BYTES {
            (queue_bytes.max(frame_bytes) / nominal_bytes).clamp(1.0, MAX_ADAPTIVE_PACING_SCALE)
        } else {
            1.0
        };
    }

    /// The rate the pacer's headroom multiplies: the scaled larger of target and RTP rate.
    pub fn base_rate(&self, target_bps: f64) -> f64 {
        self.scale * target_bps.max(self.rtp_rate_avg_bps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backlog_speeds_the_pacer_up_to_one_and_a_half() {
        let mut p = AdaptivePacing::new(0.1, 4);
        p.on_frame(0.0, 10_000.0, 10_000.0, 10_000.0);
        assert_eq!(p.base_rate(8e6), 8e6);
        p.on_frame(0.016, 10_000.0, 13_000.0, 10_000.0);
        assert!((p.base_rate(8e6) - 1.3 * 8e6).abs() < 1.0);
        p.on_frame(0.033, 10_000.0, 90_000.0, 10_000.0);
        assert_eq!(p.base_rate(8e6), MAX_ADAPTIVE_PACING_SCALE * 8e6);
        // tiny frames say nothing
        p.on_frame(0.050, 100.0, 90_000.0, 400.0);
        assert_eq!(p.base_rate(8e6), 8e6);
    }

    #[test]
    fn an_encoder_above_the_target_sets_the_pace() {
        let mut p = AdaptivePacing::new(0.1, 4);
        // 60 frames/s of 25 kB: 12 Mbit/s produced against a 8 Mbit/s target
        for i in 0..120 {
            p.on_frame(i as f64 / 60.0, 25_000.0, 25_000.0, 1e9);
        }
        let rate = p.base_rate(8e6);
        assert!((rate - 12e6).abs() < 0.6e6, "{rate}");
    }
}
