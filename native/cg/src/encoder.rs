//! Where frames come from: a model of a video encoder, or a replayed frame-size trace.
//!
//! Both follow the controller's target bitrate through the same first-order lag (an
//! encoder's rate control needs a few frames to reach a new target), stay within the
//! configured minimum and maximum, and make an I-frame when asked (after a loss or an RTP
//! queue discard). The model adds log-normal frame-size variability around the nominal
//! size and, if asked, periodic I-frames (a cloud-gaming encoder runs an infinite GOP, so
//! the command line's default is none: docs/cg.md); the trace keeps the recorded frame
//! times and sizes, scaled by the ratio of the encoder's rate to the trace's mean rate.
//!
//! This file has the model and what both share; the trace is in encoder/trace.rs.

mod trace;

pub use trace::{FrameTrace, TraceReplay};

/// One encoded frame.
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    pub bytes: usize,
    pub keyframe: bool,
    /// Rate the encoder was producing when it made this frame (bits/s).
    pub encoder_bps: f64,
}

/// A source of frames driven by the controller's target bitrate.
pub trait FrameSource {
    /// Seconds after the start at which the next frame is ready.
    fn next_time_s(&self) -> f64;
    /// Makes that frame; `target_bps` is the controller's current target.
    fn produce(&mut self, target_bps: f64) -> Frame;
    /// Asks for an I-frame as soon as possible.
    fn request_keyframe(&mut self);
    /// Nominal frame period, seconds.
    fn frame_period_s(&self) -> f64;
}

/// Deterministic pseudo-random numbers (SplitMix64), so runs are repeatable by seed.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// The encoder's rate control: follows the target with a first-order lag, within limits.
#[derive(Clone, Debug)]
pub struct RateFollower {
    pub rate_bps: f64,
    pub lag_s: f64,
    pub min_bps: f64,
    pub max_bps: f64,
}

impl RateFollower {
    /// Moves the rate towards `target_bps` over `dt_s` and returns it.
    pub fn follow(&mut self, target_bps: f64, dt_s: f64) -> f64 {
        let target = target_bps.clamp(self.min_bps, self.max_bps);
        if self.lag_s <= 0.0 {
            self.rate_bps = target;
        } else {
            let k = 1.0 - (-dt_s.max(0.0) / self.lag_s).exp();
            self.rate_bps += (target - self.rate_bps) * k;
        }
        self.rate_bps = self.rate_bps.clamp(self.min_bps, self.max_bps);
        self.rate_bps
    }
}

/// Settings of [`EncoderModel`].
#[derive(Clone, Debug)]
pub struct EncoderSettings {
    pub fps: f64,
    pub start_bps: f64,
    pub min_bps: f64,
    pub max_bps: f64,
    /// Time constant of the rate control, seconds (0: follows at once).
    pub lag_s: f64,
    /// Coefficient of variation of P-frame sizes (0: constant).
    pub size_cv: f64,
    /// Seconds between periodic I-frames (0: only on request).
    pub keyframe_interval_s: f64,
    /// I-frame size over the nominal P-frame size.
    pub keyframe_factor: f64,
    pub seed: u64,
}

/// A video encoder: frames every 1/fps at the followed rate.
pub struct EncoderModel {
    s: EncoderSettings,
    rate: RateFollower,
    rng: Rng,
    frame_index: u64,
    last_keyframe_s: f64,
    keyframe_requested: bool,
    /// Bytes produced beyond the rate budget by requested I-frames, paid back by the
    /// following frames (a rate-controlled encoder keeps its mean rate on target).
    debt_bytes: f64,
}

/// Requests closer together than this give one I-frame (an encoder answers a burst of
/// loss reports once).
const MIN_KEYFRAME_SPACING_S: f64 = 0.2;

impl EncoderModel {
    pub fn new(s: EncoderSettings) -> Self {
        let rate = RateFollower {
            rate_bps: s.start_bps.clamp(s.min_bps, s.max_bps),
            lag_s: s.lag_s,
            min_bps: s.min_bps,
            max_bps: s.max_bps,
        };
        EncoderModel {
            rng: Rng::new(s.seed),
            rate,
            s,
            frame_index: 0,
            last_keyframe_s: f64::NEG_INFINITY,
            keyframe_requested: false,
            debt_bytes: 0.0,
        }
    }
}

/// At most this share of a frame's nominal size goes to paying back I-frame debt.
const MAX_PAYBACK_SHARE: f64 = 0.5;

impl FrameSource for EncoderModel {
    fn next_time_s(&self) -> f64 {
        self.frame_index as f64 / self.s.fps
    }

    fn produce(&mut self, target_bps: f64) -> Frame {
        let now_s = self.next_time_s();
        let period = 1.0 / self.s.fps;
        let rate = self.rate.follow(target_bps, period);
        // A rate-controlled encoder spends its budget over the I-frame period: P-frames
        // shrink so that periodic I-frames keep the mean on target.
        let gop = if self.s.keyframe_interval_s > 0.0 {
            (self.s.keyframe_interval_s * self.s.fps).max(1.0)
        } else {
            f64::INFINITY
        };
        let k = self.s.keyframe_factor.max(1.0);
        let p_share = if gop.is_finite() {
            gop / (gop - 1.0 + k)
        } else {
            1.0
        };
        let nominal = rate / self.s.fps / 8.0 * p_share;
        let periodic = self.s.keyframe_interval_s > 0.0
            && now_s - self.last_keyframe_s >= self.s.keyframe_interval_s - period / 2.0;
        let requested =
            self.keyframe_requested && now_s - self.last_keyframe_s >= MIN_KEYFRAME_SPACING_S;
        let keyframe = self.frame_index == 0 || periodic || requested;
        let mut bytes = if keyframe { nominal * k } else { nominal };
        if keyframe && !periodic && self.frame_index > 0 {
            // An extra I-frame is outside the periodic budget: owe its excess.
            self.debt_bytes += nominal * (k - 1.0);
        } else if !keyframe && self.debt_bytes > 0.0 {
            let pay = self.debt_bytes.min(nominal * MAX_PAYBACK_SHARE);
            self.debt_bytes -= pay;
            bytes -= pay;
        }
        if self.s.size_cv > 0.0 {
            let sigma = (1.0 + self.s.size_cv * self.s.size_cv).ln().sqrt();
            bytes *= (sigma * self.rng.normal() - sigma * sigma / 2.0).exp();
        }
        if keyframe {
            self.last_keyframe_s = now_s;
            self.keyframe_requested = false;
        }
        self.frame_index += 1;
        Frame {
            bytes: bytes.round().max(1.0) as usize,
            keyframe,
            encoder_bps: rate,
        }
    }

    fn request_keyframe(&mut self) {
        self.keyframe_requested = true;
    }

    fn frame_period_s(&self) -> f64 {
        1.0 / self.s.fps
    }
}

#[cfg(test)]
mod tests;
