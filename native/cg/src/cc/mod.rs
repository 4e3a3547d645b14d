//! Rate controllers, selected by name: `scream` (SCReAM v2), `none` (constant bitrate),
//! `tfrc` (RFC 5348) and `gtfrc` (sending rate = max(target rate, TFRC rate)).
//!
//! A controller turns feedback into three outputs the sender acts on: the encoder's
//! target bitrate, the pacing rate, and whether the send window lets another packet go.

pub mod none;
pub mod scream;
pub mod tfrc;

use crate::history::FeedbackSummary;
use crate::rtcp::TfrcReport;

/// Controller state for the per-feedback log; `None` where a quantity does not apply.
#[derive(Clone, Debug, Default)]
pub struct ControllerState {
    pub ref_wnd_bytes: Option<f64>,
    pub target_bps: f64,
    pub pace_bps: f64,
    pub srtt_ms: Option<f64>,
    pub qdelay_ms: Option<f64>,
    pub qdelay_avg_ms: Option<f64>,
    pub qdelay_target_ms: Option<f64>,
    pub l4s_alpha: Option<f64>,
    /// SCReAM's delay-based "virtual CE" fraction.
    pub l4s_alpha_v: Option<f64>,
    pub loss_rate: Option<f64>,
    /// TFRC loss event rate p as reported by the receiver.
    pub loss_event_rate: Option<f64>,
    pub x_recv_bps: Option<f64>,
    /// Rate given by the TFRC equation (bits/s).
    pub x_calc_bps: Option<f64>,
}

/// The interface the sender drives. Times are monotonic nanoseconds.
pub trait Controller {
    fn name(&self) -> &'static str;
    /// A packet of `size` bytes left; `bytes_in_flight` includes it.
    fn on_sent(&mut self, now_ns: i64, size: usize, bytes_in_flight: u64);
    /// An RFC 8888 report was applied to the transmission history.
    fn on_feedback(&mut self, fb: &FeedbackSummary);
    /// A TFRC receiver report arrived, with the RTT sample it gives.
    fn on_tfrc_report(&mut self, _now_ns: i64, _report: &TfrcReport, _rtt_ns: i64) {}
    /// No RFC 8888 report for a long time (receiver absent or restarting).
    fn on_feedback_timeout(&mut self, _now_ns: i64) {}
    /// Timers; called at every wake-up.
    fn on_tick(&mut self, _now_ns: i64) {}
    /// The encoder produced a frame; `media_qdelay_s` is how long the oldest packet has
    /// waited in the RTP queue; `queue_bytes` what the queue holds with this frame.
    fn on_frame(
        &mut self,
        _now_ns: i64,
        _frame_bytes: usize,
        _media_qdelay_s: f64,
        _queue_bytes: usize,
    ) {
    }
    /// Bitrate the encoder should produce (bits/s).
    fn target_bitrate(&self) -> f64;
    /// Rate at which packets leave (bits/s).
    fn pacing_rate(&self) -> f64;
    /// Whether the send window lets a packet of `size` bytes go now.
    fn may_send(&self, _bytes_in_flight: u64, _size: usize) -> bool {
        true
    }
    /// Remaining send window in bytes, when the controller has one.
    fn send_window(&self, _bytes_in_flight: u64) -> Option<f64> {
        None
    }
    /// Smoothed RTT, when known (written into each packet for the TFRC receiver).
    fn srtt_ns(&self) -> Option<i64>;
    /// Whether the receiver must send TFRC reports.
    fn wants_tfrc_reports(&self) -> bool {
        false
    }
    /// Whether RFC 8888 reports should come every `flags::SPARSE_FEEDBACK_PACKETS` packets
    /// (and at frame ends) rather than at the receiver's default count.
    fn wants_sparse_feedback(&self) -> bool {
        false
    }
    /// Whether a report should come at least every 5 ms while packets arrive
    /// (`flags::FEEDBACK_TIMER_5MS`).
    fn wants_5ms_feedback_timer(&self) -> bool {
        false
    }
    fn state(&self) -> ControllerState;
}

/// Bitrate limits of the encoder (bits/s).
#[derive(Clone, Copy, Debug)]
pub struct RateLimits {
    pub min_bps: f64,
    pub start_bps: f64,
    pub max_bps: f64,
}

impl RateLimits {
    pub fn clamp(&self, bps: f64) -> f64 {
        bps.clamp(self.min_bps, self.max_bps)
    }
}

/// Exponentially weighted RTT smoothing of RFC 6298 (gain 1/8).
pub fn smooth_rtt(srtt: Option<f64>, sample: f64) -> f64 {
    match srtt {
        None => sample,
        Some(s) => s + (sample - s) / 8.0,
    }
}
