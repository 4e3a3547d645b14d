//! The sender's settings and the congestion controller they choose.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::cc::none::NoControl;
use crate::cc::scream::{Profile, Scream, ScreamConfig};
use crate::cc::tfrc::Tfrc;
use crate::cc::{Controller, RateLimits};
use crate::history::LossDetection;
use crate::net::Ecn;
use crate::rfc8888::NumReports;

/// Which controller drives the rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcKind {
    Scream,
    None,
    Tfrc,
    Gtfrc,
}

impl CcKind {
    pub fn parse(name: &str) -> Option<CcKind> {
        match name {
            "scream" => Some(CcKind::Scream),
            "none" => Some(CcKind::None),
            "tfrc" => Some(CcKind::Tfrc),
            "gtfrc" => Some(CcKind::Gtfrc),
            _ => None,
        }
    }
}

/// How packets leave the RTP queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendLoop {
    /// On the pacing schedule, in microbursts of `burst_ns` (ours).
    Schedule,
    /// As Ericsson's test sender's loop (crate::pacer::TestLoopBurst).
    EricssonTest,
}

impl SendLoop {
    pub fn parse(name: &str) -> Option<SendLoop> {
        match name {
            "schedule" => Some(SendLoop::Schedule),
            "ericsson-test" => Some(SendLoop::EricssonTest),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SendLoop::Schedule => "schedule",
            SendLoop::EricssonTest => "ericsson-test",
        }
    }
}

#[derive(Clone, Debug)]
pub struct SenderConfig {
    pub dest: SocketAddr,
    pub bind: Option<SocketAddr>,
    pub cc: CcKind,
    pub ecn: Ecn,
    pub dscp: u8,
    pub duration_s: Option<f64>,
    pub limits: RateLimits,
    /// Constant bitrate of `none`.
    pub rate_bps: f64,
    /// gTFRC target rate g.
    pub gtfrc_target_bps: Option<f64>,
    pub fps: f64,
    pub frames_trace: Option<PathBuf>,
    pub keyframe_interval_s: f64,
    pub keyframe_factor: f64,
    pub frame_size_cv: f64,
    pub encoder_lag_s: f64,
    pub seed: u64,
    pub qdelay_target_s: f64,
    /// SCReAM: whose constants where the draft and Ericsson's code differ.
    pub scream_profile: Profile,
    /// SCReAM: whose queue sampling (None: the profile's).
    pub delay_sampling: Option<Profile>,
    /// Whose loss detection (None: SCReAM's profile's; the draft's for other controllers).
    pub loss_detection: Option<Profile>,
    pub reduce_jitter: bool,
    pub adapt_qdelay_target: bool,
    pub conditional_loss_backoff: bool,
    /// SCReAM: relaxed pacing near the maximum bitrate (off by default).
    pub relaxed_pacing: bool,
    /// SCReAM: one EWMA gain for l4s_alpha both ways (older drafts), instead of 1/8 up and
    /// 1/128 down.
    pub l4s_alpha_gain: Option<f64>,
    /// Pacing rate over the target for `none`, `tfrc`, `gtfrc` (SCReAM paces itself).
    pub pace_factor: f64,
    pub ssrc: u32,
    pub payload_type: u8,
    pub max_payload: usize,
    /// RTP queue delay beyond which the queue is discarded (and an I-frame requested).
    pub max_rtp_queue_s: f64,
    /// Busy-wait this long before a due packet instead of sleeping (ns).
    pub spin_ns: i64,
    /// Packets due within this window are sent together (a microburst), so the sender
    /// wakes about once per window rather than once per packet (ns).
    pub burst_ns: i64,
    pub send_loop: SendLoop,
    pub feedback_timeout_ns: i64,
    pub reorder_window_ns: i64,
    pub num_reports: NumReports,
    pub log_dir: Option<PathBuf>,
    pub quiet: bool,
}

/// How the sender's history declares losses: Ericsson's rule for SCReAM's Ericsson
/// profile (their `detectLoss`), the reordering-window rule otherwise.
pub fn loss_detection(cfg: &SenderConfig) -> LossDetection {
    let profile = match (cfg.loss_detection, cfg.cc) {
        (Some(p), _) => p,
        (None, CcKind::Scream) => cfg.scream_profile,
        (None, _) => Profile::Draft,
    };
    match profile {
        Profile::Ericsson => LossDetection::Ericsson,
        Profile::Ericsson2023 => LossDetection::Ericsson2023,
        Profile::Draft => LossDetection::AfterGap,
    }
}

pub(super) fn build_controller(cfg: &SenderConfig, frame_period_s: f64) -> Box<dyn Controller> {
    match cfg.cc {
        CcKind::Scream => {
            let mut sc = ScreamConfig::with_profile(
                cfg.ecn == Ecn::Ect1,
                cfg.limits,
                frame_period_s,
                cfg.scream_profile,
            );
            sc.qdelay_target_s = cfg.qdelay_target_s;
            // The options turn on what the profile leaves off (Ericsson's has both on).
            sc.reduce_jitter |= cfg.reduce_jitter;
            if let Some(sampling) = cfg.delay_sampling {
                let p = sampling.params();
                sc.every_packet_delay = p.every_packet_delay;
                sc.sparse_feedback = p.sparse_feedback;
            }
            sc.adapt_qdelay_target = cfg.adapt_qdelay_target;
            sc.conditional_loss_backoff |= cfg.conditional_loss_backoff;
            sc.relaxed_pacing = cfg.relaxed_pacing;
            sc.l4s_alpha_gain = cfg.l4s_alpha_gain.or(sc.l4s_alpha_gain);
            // The draft's MSS is the largest RTP packet: the window grows by about one
            // packet per RTT, and L4S's "two marks per RTT" counts packets.
            sc.mss = (cfg.max_payload + crate::rtp::RTP_HEADER_BYTES) as f64;
            Box::new(Scream::new(sc))
        }
        CcKind::None => Box::new(NoControl::new(cfg.rate_bps, cfg.pace_factor)),
        CcKind::Tfrc => Box::new(Tfrc::new(cfg.limits, cfg.pace_factor, None)),
        CcKind::Gtfrc => Box::new(Tfrc::new(
            cfg.limits,
            cfg.pace_factor,
            Some(cfg.gtfrc_target_bps.unwrap_or(cfg.limits.min_bps)),
        )),
    }
}
