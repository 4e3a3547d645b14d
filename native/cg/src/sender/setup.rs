//! The start of a run: the socket, the frame source (the encoder model or a trace), the
//! controller, the logs, and the loop's state at time zero.

use std::net::UdpSocket;

use super::config::build_controller;
use super::{loss_detection, CcKind, Counts, Logs, RtpQueue, Sender, SenderConfig};
use crate::clock::{process_cpu_ns, Clock};
use crate::encoder::{EncoderModel, EncoderSettings, FrameSource, FrameTrace, TraceReplay};
use crate::history::TxHistory;
use crate::net;
use crate::pacer::Pacer;
use crate::rtp::{flags, Packetizer};

/// The UDP socket, bound (to any address of the destination's family unless `--bind`),
/// with the ECN/DSCP bits set.
pub(super) fn open_socket(cfg: &SenderConfig) -> Result<UdpSocket, String> {
    let ipv6 = cfg.dest.is_ipv6();
    let bind = cfg.bind.unwrap_or_else(|| {
        if ipv6 {
            "[::]:0".parse().unwrap()
        } else {
            "0.0.0.0:0".parse().unwrap()
        }
    });
    let sock = UdpSocket::bind(bind).map_err(|e| format!("cannot bind {bind}: {e}"))?;
    net::set_tos(&sock, (cfg.dscp << 2) | cfg.ecn.bits(), ipv6)
        .map_err(|e| format!("cannot set the ECN/DSCP bits: {e}"))?;
    net::set_buffers(&sock, 4 << 20);
    Ok(sock)
}

/// A frame-size trace replayed at the controller's target, or the encoder model (fixed at
/// `--rate-mbps` for `--cc none`).
fn frame_source(cfg: &SenderConfig) -> Result<Box<dyn FrameSource>, String> {
    Ok(match &cfg.frames_trace {
        Some(path) => Box::new(TraceReplay::new(
            FrameTrace::read_csv(path)?,
            cfg.limits.start_bps,
            cfg.limits.min_bps,
            cfg.limits.max_bps,
            cfg.encoder_lag_s,
            cfg.keyframe_factor,
        )),
        None => Box::new(EncoderModel::new(EncoderSettings {
            fps: cfg.fps,
            start_bps: if cfg.cc == CcKind::None {
                cfg.rate_bps
            } else {
                cfg.limits.start_bps
            },
            min_bps: if cfg.cc == CcKind::None {
                cfg.rate_bps
            } else {
                cfg.limits.min_bps
            },
            max_bps: if cfg.cc == CcKind::None {
                cfg.rate_bps
            } else {
                cfg.limits.max_bps
            },
            lag_s: cfg.encoder_lag_s,
            size_cv: cfg.frame_size_cv,
            keyframe_interval_s: cfg.keyframe_interval_s,
            keyframe_factor: cfg.keyframe_factor,
            seed: cfg.seed,
        })),
    })
}

impl Sender {
    /// The frame source, controller and logs, then the clock starts.
    pub(super) fn new(cfg: SenderConfig, sock: UdpSocket) -> Result<Self, String> {
        let source = frame_source(&cfg)?;
        let cc = build_controller(&cfg, source.frame_period_s());
        let logs = Logs::open(&cfg.log_dir)?;
        let clock = Clock::new();
        let start = clock.now();
        let cpu_start_ns = process_cpu_ns();
        let end = cfg.duration_s.map(|d| start + (d * 1e9) as i64);
        let first_seq = (cfg.seed as u16).wrapping_mul(7919);
        let packetizer = Packetizer::new(
            cfg.ssrc,
            cfg.payload_type,
            cfg.max_payload,
            first_seq,
            cfg.seed as u32,
        );
        let history = TxHistory::new(
            cfg.ssrc,
            packetizer.next_seq(),
            cfg.reorder_window_ns,
            loss_detection(&cfg),
        );
        let mut frame_flags = if cc.wants_tfrc_reports() {
            flags::WANT_TFRC
        } else {
            0
        };
        if cc.wants_sparse_feedback() {
            frame_flags |= flags::SPARSE_FEEDBACK;
        }
        if cc.wants_5ms_feedback_timer() {
            frame_flags |= flags::FEEDBACK_TIMER_5MS;
        }
        Ok(Sender {
            cfg,
            sock,
            source,
            cc,
            logs,
            clock,
            start,
            cpu_start_ns,
            end,
            packetizer,
            history,
            queue: RtpQueue::default(),
            pacer: Pacer::new(start),
            test_loop_wake: None,
            window_blocked: false,
            next_window_probe: i64::MAX,
            last_send_ns: start,
            last_feedback_ns: start,
            last_discard_ns: i64::MIN / 2,
            frame_id: 0,
            last_keyframe_rtp_ts: None,
            frame_flags,
            counts: Counts {
                pacing_errors_ns: Vec::with_capacity(1 << 16),
                ..Counts::default()
            },
        })
    }
}
