//! SCReAM's settings and the two sets of constants it can run with.
//!
//! `Profile::Ericsson` (default) follows Ericsson's SCReAM V2 code (github.com/
//! EricssonResearch/scream at c8f84c3, 2026; TMA 2024's eCGP built the earlier aca6556)
//! where it and the IETF draft disagree; `Profile::Draft` keeps the draft's values. Each Ericsson value
//! names its place: E = code/ScreamV2Tx.cpp, St = code/ScreamV2TxStream.cpp,
//! S = code/scream_sender.cpp. `Profile::Ericsson2023` follows the code TMA 2024 ran,
//! aca6556 (2023-09-20), where it differs from c8f84c3; its places carry a 23: E23, St23,
//! S23 (same files at aca6556), H23 = code/ScreamV2Tx.h, and its window, target and send
//! window rules are in v2023.rs. docs/cg.md lists them all, with what is not followed.

use super::super::RateLimits;

// Constants of the draft (RECOMMENDED values) that both profiles share.
pub const QDELAY_TARGET_LO: f64 = 0.06;
pub const QDELAY_TARGET_HI: f64 = 0.4;
pub const MIN_REF_WND: f64 = 3000.0;
pub const BETA_LOSS: f64 = 0.7;
/// The draft's default MSS; the sender sets the largest RTP packet it makes (1212 bytes).
pub const MSS: f64 = 1000.0;
pub const VIRTUAL_RTT: f64 = 0.025;
pub const ACKED_BITRATE_MARGIN: f64 = 0.8;
pub const BACKOFF_SCALE_LOW_TARGET_RATE: f64 = 0.25;
pub const L4S_AVG_G_UP: f64 = 1.0 / 8.0;
pub const L4S_AVG_G_DOWN: f64 = 1.0 / 128.0;
pub const QDELAY_AVG_G: f64 = 1.0 / 4.0;
pub const QDELAY_MIN_MAX_AVG_G: f64 = 1.0 / 16.0;
pub const QDELAY_DEV_AVG_G: f64 = 1.0 / 32.0;
pub const QDELAY_DEV_THRESHOLD: f64 = 0.01;
pub const LOSS_RATE_THRESHOLD: f64 = 0.01;
pub const REF_WND_OVERHEAD_MIN: f64 = 1.5;
pub const RATE_PACE_MIN: f64 = 50_000.0;
pub const PACKET_PACING_HEADROOM: f64 = 1.5;
pub const MAX_RELAXED_PACING_FACTOR: f64 = 4.0;
pub const RELAXED_PACING_LIMIT_LOW: f64 = 0.8;
pub const PACKET_OVERHEAD: f64 = 20.0;
pub const FRAME_SIZE_DEV_ALPHA: f64 = 1.0 / 64.0;
/// This implementation's floor on the RTT in the target bitrate (see the module doc).
pub const MIN_RTT_FOR_RATE: f64 = 0.001;

/// Whose constants and rules SCReAM follows where the draft and Ericsson's code differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    Draft,
    Ericsson,
    /// Ericsson's code at aca6556 (2023), as TMA 2024's eCGP built it.
    Ericsson2023,
}

/// How the window, the target bitrate and the send window are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowRule {
    /// The draft's and c8f84c3's: loss, CE and virtual CE (queue delay over half the
    /// target) reduce the window at most once per reaction interval; it grows on every
    /// report while the delay allows (window.rs).
    VirtualCe,
    /// aca6556's `updateCwnd` (E23:1110-1500, v2023.rs): loss and CE reduce it; between
    /// them a LEDBAT-like gain moves it up or down by the newest queue delay's distance
    /// from the target.
    Ledbat2023,
}

/// The controller's state before any report (Ericsson profile).
#[derive(Clone, Copy, Debug)]
pub struct StartState {
    /// sRTT before the first sample.
    pub s_rtt_s: f64,
    /// The window is the start bitrate times this.
    pub window_s: f64,
}

/// The values that differ between the profiles.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// Every packet a report acknowledges updates the base delay and the jitter trackers
    /// (E:711-721, 1012, 1933); the draft's pseudocode takes one sample per report.
    pub every_packet_delay: bool,
    /// Ask the receiver for a report every 32 packets and at frame ends (Ericsson's
    /// receiver: scream_receiver.cpp:67, 597; ScreamRx.cpp:47, 365) rather than every 16:
    /// the queue-delay sample (the newest packet's) then comes from each frame's end.
    pub sparse_feedback: bool,
    /// Ask the receiver for a report at least every 5 ms while packets arrive (aca6556's
    /// receiver, ScreamRx.cpp:244; c8f84c3's and ours otherwise wait up to 40 ms).
    pub feedback_timer_5ms: bool,
    /// Jitter damping (the draft's optional REDUCE_JITTER; Ericsson's
    /// `latencyDiffCwndScale`, always on, E:826-840).
    pub reduce_jitter: bool,
    /// Loss backoff only when the loss rate or the queue delay says congestion (E:1134,
    /// 1206; the draft's optional conditional loss backoff).
    pub conditional_loss_backoff: bool,
    /// Largest send-window headroom over ref_wnd (draft 3.0; E:1632 with S:62's 5.0).
    pub ref_wnd_overhead_max: f64,
    /// ref_wnd may grow to this times the bytes in flight (draft 1.5; S:67 2.0).
    pub bytes_in_flight_headroom: f64,
    /// Multiplicative increase factor (draft 0.02; S:68 0.05).
    pub mul_increase_factor: f64,
    /// Congestion-free RTTs before the multiplicative increase is whole (draft 100; E:87 200).
    pub post_congestion_delay_rtts: f64,
    /// Shortest interval between reactions, and the RTT over which a backoff is scaled down
    /// (draft VIRTUAL_RTT 25 ms; E:63 30 ms).
    pub reaction_interval_s: f64,
    /// Ericsson divides the virtual (delay-based) alpha by sRTT/30 ms where it computes it
    /// and the backoff again (E:880, 1761): twice.
    pub virtual_backoff_scaled_twice: bool,
    /// Target bitrate `8 ref_wnd / (s_rtt + srtt_add_s) * .. / divisor / (1 + rate_adjust)`:
    /// the draft divides by 1.2 + rate_adjust + frame_size_dev; Ericsson by 1.1 and by
    /// (1 + rate_adjust) (E:1862-1878, St:324), adding 1 ms to sRTT.
    pub target_divisor: f64,
    pub target_uses_frame_size_dev: bool,
    pub srtt_add_s: f64,
    /// Rate adjustment: gain and the RTP queue delay it aims at, in frame periods (draft
    /// 1/16 against fp/4; St:201 0.2/8 against fp/2).
    pub rate_adjust_gain: f64,
    pub rate_adjust_ref_fp: f64,
    /// Classic ECN backoff (draft 0.8; S:590 0.7).
    pub beta_ecn: f64,
    /// l4s_alpha's initial value (draft 0; E:213 0.1).
    pub l4s_alpha_init: f64,
    /// How the controller starts. Draft (this implementation's choice): `None`, the window
    /// is MIN_REF_WND until the first RTT sample, then set so that the first target is the
    /// start bitrate. Ericsson: `Some(s)`, sRTT starts at 50 ms (E:142-145) and the window at
    /// the start bitrate x 100 ms (their test program's `cwnd_`, S:592; E:274-279), both
    /// before any report; the first target is then 0.1 / 0.051 / 1.1 x the overhead factor
    /// = 1.75 x the start bitrate. With MIN_REF_WND x the send-window headroom (15 kB)
    /// before the first report, a 60 frame/s encoder's first frames wait ~70 ms in the RTP
    /// queue, the rate adjustment grows to ~0.2, and the window reaches the maximum rate
    /// ~20 % larger than theirs. Their start also counts as a congestion event, so the
    /// multiplicative increase comes in over the first 200 sRTT (E:1385, 1439-1443).
    pub start: Option<StartState>,
    /// When the inflexion point `ref_wnd_i` is taken: at a reaction at most every 10 sRTT
    /// (this implementation's reading of the draft), or, as Ericsson's code, at every
    /// reaction after which the window has grown (`cwndIUpdateBlocked`, E:1653-1658, 1830),
    /// with the increase scaled by the distance measured before the reduction (E:1636-1640).
    pub ref_wnd_i_every_reaction: bool,
    /// sRTT as RFC 6298 (1/8 per sample), or, as Ericsson's code, two stages: a 1/8 average
    /// per report, which sRTT follows with 1/8 once per round trip (1/1024 while the
    /// window is application-limited and the RTT falls; E:1068-1088). The second stage
    /// makes the rate loop `8 ref_wnd / s_rtt` about three times slower, which sets how far
    /// the queue swings around its mean.
    pub two_stage_srtt: bool,
    /// A loss is a congestion event only a whole sRTT after the last reaction of any kind
    /// (Ericsson: `time - lastLossEventT > sRtt` before `setLossEvent`, E:1134, 1206, with
    /// CE and virtual CE also setting that time, E:893); otherwise it is not acted on. The
    /// draft reacts to a loss once the reaction interval (min(VIRTUAL_RTT, sRTT)) has
    /// passed. Matters when drop-tail losses follow delay-based (virtual CE) reductions:
    /// Ericsson's code then backs off once, the draft twice.
    pub loss_srtt_after_reaction: bool,
    /// `qdelay_avg` averages the queue delay minus a slow average of its minima (each
    /// minimum over 100 sRTT, gain 1/8, taken at once when lower; `queueDelayMinSlowAvg`,
    /// E:806-825), so a queue that never drains (a competing flow's standing queue, clock
    /// drift) counts less toward the virtual CE threshold. The draft averages the queue
    /// delay itself.
    pub qdelay_minus_slow_min: bool,
    /// The pacer runs at 1.5 x the larger of the target and the RTP rate produced, scaled
    /// up to 1.5 x more while the RTP queue holds more than a frame (Ericsson, E:1462-1510,
    /// St:248-253; pacing.rs); the draft paces at 1.5 x the target.
    pub adaptive_pacing: bool,
    /// MSS is the largest packet sent in this or the previous second (Ericsson: `mss` and
    /// `prevMss`, reset every second, E:439-456, 550, 2180), so that at low rates, with a
    /// frame in one short packet, the window's steps, its growth limit `mss + 2 x bytes in
    /// flight` and the overhead factor follow the packets actually sent; the draft's MSS
    /// is the largest packet the sender may make (`--max-payload` + 12).
    pub mss_from_sent: bool,
    /// The largest bytes in flight (which bounds the window's growth to 2x it) is taken as
    /// each report arrives, before its acknowledgements (E:705), and kept for this and the
    /// previous 50 ms (E:1519, 1604-1607); the draft's, after the acknowledgements and per
    /// sRTT. At low rates, one packet per frame, this decides whether the window can
    /// outgrow what is in flight: if it does, the flow counts as application-limited, sRTT
    /// falls 128 times slower, and the target stays at the minimum long after a competitor
    /// has left.
    pub ericsson_max_bytes_in_flight: bool,
    /// See `WindowRule`.
    pub window_rule: WindowRule,
    /// The smallest window: MIN_REF_WND (draft, c8f84c3's 3 MSS) or aca6556's sender's
    /// `setCwndMinLow(5000)` (S23:666).
    pub min_ref_wnd: f64,
    /// One EWMA gain for l4s_alpha both ways (aca6556's kL4sG = 1/16, E23:40, 717); None:
    /// fast attack L4S_AVG_G_UP 1/8, slow decay L4S_AVG_G_DOWN 1/128 (draft, E:43-45).
    pub l4s_alpha_gain: Option<f64>,
    /// l4s_alpha is updated at most once per min(this, sRTT): 10 ms (this implementation's
    /// reading of the draft, kept for c8f84c3) or 30 ms (aca6556's 1966/65536 s, E23:694).
    pub l4s_alpha_interval_s: f64,
    /// sRTT's second stage falls 1/1024 per round trip while the window is
    /// application-limited (c8f84c3, E:1068-1088); aca6556 always uses 1/8 (E23:877-884).
    pub srtt_slow_when_app_limited: bool,
    /// Adaptive pacing's RTP-rate measurement: interval and how many are averaged (c8f84c3
    /// E:31 100 ms and ScreamTx.h:104 four; aca6556 E23:31 50 ms and H23:76 eight), and
    /// whether the frame-size scale is against the mean frame (aca6556, St23:207, 239) or
    /// the frame the target asks for (c8f84c3, St:248-253).
    pub pacing_interval_s: f64,
    pub pacing_history: usize,
    pub pacing_scale_vs_mean_frame: bool,
}

impl Profile {
    pub fn params(self) -> Params {
        match self {
            Profile::Draft => Params {
                every_packet_delay: false,
                sparse_feedback: false,
                feedback_timer_5ms: false,
                reduce_jitter: false,
                conditional_loss_backoff: false,
                ref_wnd_overhead_max: 3.0,
                bytes_in_flight_headroom: 1.5,
                mul_increase_factor: 0.02,
                post_congestion_delay_rtts: 100.0,
                reaction_interval_s: VIRTUAL_RTT,
                virtual_backoff_scaled_twice: false,
                target_divisor: 1.2,
                target_uses_frame_size_dev: true,
                srtt_add_s: 0.0,
                rate_adjust_gain: 1.0 / 16.0,
                rate_adjust_ref_fp: 0.25,
                beta_ecn: 0.8,
                l4s_alpha_init: 0.0,
                start: None,
                ref_wnd_i_every_reaction: false,
                two_stage_srtt: false,
                loss_srtt_after_reaction: false,
                qdelay_minus_slow_min: false,
                adaptive_pacing: false,
                mss_from_sent: false,
                ericsson_max_bytes_in_flight: false,
                window_rule: WindowRule::VirtualCe,
                min_ref_wnd: MIN_REF_WND,
                l4s_alpha_gain: None,
                l4s_alpha_interval_s: 0.01,
                srtt_slow_when_app_limited: false,
                pacing_interval_s: 0.1,
                pacing_history: 4,
                pacing_scale_vs_mean_frame: false,
            },
            Profile::Ericsson => Params {
                every_packet_delay: true,
                sparse_feedback: true,
                feedback_timer_5ms: false,
                reduce_jitter: true,
                conditional_loss_backoff: true,
                ref_wnd_overhead_max: 5.0,
                bytes_in_flight_headroom: 2.0,
                mul_increase_factor: 0.05,
                post_congestion_delay_rtts: 200.0,
                reaction_interval_s: 0.03,
                virtual_backoff_scaled_twice: true,
                target_divisor: 1.1,
                target_uses_frame_size_dev: false,
                srtt_add_s: 0.001,
                rate_adjust_gain: 0.2 / 8.0,
                rate_adjust_ref_fp: 0.5,
                beta_ecn: 0.7,
                l4s_alpha_init: 0.1,
                start: Some(StartState {
                    s_rtt_s: 0.05,
                    window_s: 0.1,
                }),
                ref_wnd_i_every_reaction: true,
                two_stage_srtt: true,
                loss_srtt_after_reaction: true,
                qdelay_minus_slow_min: true,
                adaptive_pacing: true,
                mss_from_sent: true,
                ericsson_max_bytes_in_flight: true,
                window_rule: WindowRule::VirtualCe,
                min_ref_wnd: MIN_REF_WND,
                l4s_alpha_gain: None,
                l4s_alpha_interval_s: 0.01,
                srtt_slow_when_app_limited: true,
                pacing_interval_s: 0.1,
                pacing_history: 4,
                pacing_scale_vs_mean_frame: false,
            },
            Profile::Ericsson2023 => ericsson_2023(),
        }
    }
}

/// aca6556's values (2023), where they differ from c8f84c3's. Fields that only the
/// `VirtualCe` rule reads keep c8f84c3's values: the `Ledbat2023` rule does not use them.
fn ericsson_2023() -> Params {
    Params {
        // Every acknowledged packet updates the base delay (E23:810-815); no jitter damping
        // (no `latencyDiff` in E23) and an unconditional loss backoff once per sRTT after
        // the last loss or CE event (E23:953).
        reduce_jitter: false,
        conditional_loss_backoff: false,
        loss_srtt_after_reaction: true,
        // aca6556's receiver reports every 16 packets (R23 ScreamRx.cpp:187,
        // `nReportedRtpPackets / 4` of 64; c8f84c3's every 32, `/ 2`, its :365).
        sparse_feedback: false,
        // ... and at least every 5 ms while packets arrive (R23 ScreamRx.cpp:244).
        feedback_timer_5ms: true,
        // S23:637-647: scaleFactor 0.7 for loss and classic ECN, bytesInFlightHeadroom 2.0,
        // multiplicativeIncreaseFactor 0.05.
        beta_ecn: 0.7,
        bytes_in_flight_headroom: 2.0,
        mul_increase_factor: 0.05,
        // A CE event at most every min(30 ms, sRTT) (E23:668).
        reaction_interval_s: 0.03,
        // No rate adjustment to the RTP queue in St23's target (St23:330-395).
        rate_adjust_gain: 0.0,
        // E23:122 l4sAlpha(0.1f); sRTT 20 ms (E23:97-99) and the window the start bitrate x
        // 100 ms (S23:640 `(initRate * 100) / 8`) before any report.
        l4s_alpha_init: 0.1,
        start: Some(StartState {
            s_rtt_s: 0.02,
            window_s: 0.1,
        }),
        qdelay_minus_slow_min: false,
        window_rule: WindowRule::Ledbat2023,
        min_ref_wnd: 5000.0,
        l4s_alpha_gain: Some(1.0 / 16.0),
        l4s_alpha_interval_s: 0.03,
        srtt_slow_when_app_limited: false,
        pacing_interval_s: 0.05,
        pacing_history: 8,
        pacing_scale_vs_mean_frame: true,
        ..Profile::Ericsson.params()
    }
}

/// SCReAM settings.
#[derive(Clone, Debug)]
pub struct ScreamConfig {
    /// L4S mode (ECT(1)): CE marks scale the window by the marked fraction; otherwise CE
    /// is classic ECN (x beta_ecn).
    pub l4s: bool,
    pub limits: RateLimits,
    pub qdelay_target_s: f64,
    pub mss: f64,
    pub frame_period_s: f64,
    pub profile: Profile,
    /// Jitter damping; on in the Ericsson profile, optional in the draft's.
    pub reduce_jitter: bool,
    /// How the queue is sampled (Params::every_packet_delay and ::sparse_feedback): the
    /// profile's by default, either one's with `--delay-sampling`.
    pub every_packet_delay: bool,
    pub sparse_feedback: bool,
    /// Optional qdelay target adaptation against loss-based competitors (draft 4.4.3).
    pub adapt_qdelay_target: bool,
    /// Conditional loss backoff (draft 4.4.2); on in the Ericsson profile.
    pub conditional_loss_backoff: bool,
    /// Relaxed pacing near the maximum bitrate (earlier drafts and Ericsson's code: up to
    /// MAX_RELAXED_PACING_FACTOR x faster). Off by default in both profiles (Ericsson's
    /// test program too, S: `-relaxedpacing`): it lets a frame leave faster than a 50 Mbit/s
    /// link drains it, and DualPI2's 1 ms step threshold then marks the flow's own burst.
    pub relaxed_pacing: bool,
    /// One EWMA gain for `l4s_alpha` both ways (the draft's older L4S_AVG_G, 1/16) instead
    /// of fast attack / slow decay (L4S_AVG_G_UP / _DOWN). None: fast attack, slow decay.
    /// The profile's by default (1/16 in `ericsson-2023`).
    pub l4s_alpha_gain: Option<f64>,
}

impl ScreamConfig {
    /// The Ericsson profile (the default).
    pub fn new(l4s: bool, limits: RateLimits, frame_period_s: f64) -> Self {
        Self::with_profile(l4s, limits, frame_period_s, Profile::Ericsson)
    }

    pub fn with_profile(
        l4s: bool,
        limits: RateLimits,
        frame_period_s: f64,
        profile: Profile,
    ) -> Self {
        let p = profile.params();
        ScreamConfig {
            l4s,
            limits,
            qdelay_target_s: QDELAY_TARGET_LO,
            mss: MSS,
            frame_period_s,
            profile,
            reduce_jitter: p.reduce_jitter,
            every_packet_delay: p.every_packet_delay,
            sparse_feedback: p.sparse_feedback,
            adapt_qdelay_target: false,
            conditional_loss_backoff: p.conditional_loss_backoff,
            relaxed_pacing: false,
            l4s_alpha_gain: p.l4s_alpha_gain,
        }
    }
}
