//! A replayed frame-size trace: the recorded frame times and sizes, looping, with sizes
//! scaled by the ratio of the encoder's rate to the trace's mean rate.

use std::path::Path;

use super::{Frame, FrameSource, RateFollower, MAX_PAYBACK_SHARE};

/// A recorded sequence of frames: (seconds from the trace's start, bytes).
#[derive(Clone, Debug)]
pub struct FrameTrace {
    pub frames: Vec<(f64, u64)>,
}

impl FrameTrace {
    /// Reads a CSV of `t_s,size_bytes` (a header line is allowed; extra columns ignored).
    pub fn read_csv(path: &Path) -> Result<FrameTrace, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read the frame trace: {e}", path.display()))?;
        FrameTrace::parse_csv(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn parse_csv(text: &str) -> Result<FrameTrace, String> {
        let mut frames = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut cols = line.split(',').map(str::trim);
            let (t, b) = (cols.next().unwrap_or(""), cols.next().unwrap_or(""));
            match (t.parse::<f64>(), b.parse::<f64>()) {
                (Ok(t), Ok(b)) if t.is_finite() && b >= 0.0 => frames.push((t, b as u64)),
                _ if frames.is_empty() && i == 0 => continue, // header
                _ => {
                    return Err(format!(
                        "line {}: expected 't_s,size_bytes' (seconds, bytes), got {line:?}",
                        i + 1
                    ))
                }
            }
        }
        if frames.len() < 2 {
            return Err("a frame trace needs at least two frames".into());
        }
        frames.sort_by(|a, b| a.0.total_cmp(&b.0));
        let t0 = frames[0].0;
        for f in &mut frames {
            f.0 -= t0;
        }
        Ok(FrameTrace { frames })
    }

    /// Length of one pass of the trace: up to the last frame plus one mean frame interval.
    pub fn period_s(&self) -> f64 {
        let n = self.frames.len() as f64;
        let last = self.frames.last().unwrap().0;
        last + last / (n - 1.0)
    }

    /// Mean bitrate of the trace over one pass.
    pub fn mean_bps(&self) -> f64 {
        let bytes: u64 = self.frames.iter().map(|f| f.1).sum();
        bytes as f64 * 8.0 / self.period_s()
    }
}

/// Replays a frame trace, looping, with sizes scaled to follow the target bitrate.
pub struct TraceReplay {
    trace: FrameTrace,
    mean_bps: f64,
    rate: RateFollower,
    keyframe_factor: f64,
    index: usize,
    loops: u64,
    last_time_s: f64,
    keyframe_requested: bool,
    debt_bytes: f64,
}

impl TraceReplay {
    pub fn new(
        trace: FrameTrace,
        start_bps: f64,
        min_bps: f64,
        max_bps: f64,
        lag_s: f64,
        keyframe_factor: f64,
    ) -> Self {
        let mean_bps = trace.mean_bps().max(1.0);
        TraceReplay {
            trace,
            mean_bps,
            rate: RateFollower {
                rate_bps: start_bps.clamp(min_bps, max_bps),
                lag_s,
                min_bps,
                max_bps,
            },
            keyframe_factor,
            index: 0,
            loops: 0,
            last_time_s: 0.0,
            keyframe_requested: false,
            debt_bytes: 0.0,
        }
    }
}

impl FrameSource for TraceReplay {
    fn next_time_s(&self) -> f64 {
        self.loops as f64 * self.trace.period_s() + self.trace.frames[self.index].0
    }

    fn produce(&mut self, target_bps: f64) -> Frame {
        let now_s = self.next_time_s();
        let dt = (now_s - self.last_time_s).max(0.0);
        self.last_time_s = now_s;
        let rate = self.rate.follow(target_bps, dt);
        let nominal = self.trace.frames[self.index].1 as f64 * rate / self.mean_bps;
        let mut bytes = nominal;
        let keyframe = self.keyframe_requested;
        if keyframe {
            bytes *= self.keyframe_factor.max(1.0);
            self.debt_bytes += bytes - nominal;
            self.keyframe_requested = false;
        } else if self.debt_bytes > 0.0 {
            let pay = self.debt_bytes.min(nominal * MAX_PAYBACK_SHARE);
            self.debt_bytes -= pay;
            bytes -= pay;
        }
        self.index += 1;
        if self.index == self.trace.frames.len() {
            self.index = 0;
            self.loops += 1;
        }
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
        self.trace.period_s() / self.trace.frames.len() as f64
    }
}
