//! The sender: frames from the encoder model (or a trace) are packetised into the RTP
//! queue, paced out on an absolute schedule within the controller's send window, and
//! feedback from the receiver drives the controller. One thread, one socket; it sleeps in
//! `ppoll` until the next due packet, the next frame, or feedback.
//!
//! This file is the loop; the settings and the controller they choose are in config.rs,
//! the CSV logs in logs.rs, the end-of-run summary in summary.rs.

use std::collections::VecDeque;
use std::net::UdpSocket;

use crate::clock::{mono_ns, process_cpu_ns, reduce_timer_slack, Clock};
use crate::encoder::{EncoderModel, EncoderSettings, FrameSource, FrameTrace, TraceReplay};
use crate::history::{FeedbackSummary, TxHistory};
use crate::net;
use crate::rfc8888::{Feedback, FMT_CCFB, PT_RTPFB};
use crate::rtcp::{self, TfrcReport};
use crate::rtp::{flags, Packetizer, PayloadHeader, QueuedPacket};
use crate::stop;

mod config;
mod logs;
mod summary;

pub use config::{loss_detection, CcKind, SenderConfig};

use config::build_controller;
use logs::{log_controller, Logs};
use summary::Counts;

/// Runs the sender until the duration ends or a signal arrives.
pub fn run(cfg: SenderConfig) -> Result<(), String> {
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
    stop::install();
    reduce_timer_slack();

    let mut source: Box<dyn FrameSource> = match &cfg.frames_trace {
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
    };
    let frame_period = source.frame_period_s();
    let mut cc = build_controller(&cfg, frame_period);
    let mut logs = Logs::open(&cfg.log_dir)?;
    let clock = Clock::new();
    let start = clock.now();
    let cpu_start = process_cpu_ns();
    let end = cfg.duration_s.map(|d| start + (d * 1e9) as i64);
    let first_seq = (cfg.seed as u16).wrapping_mul(7919);
    let mut packetizer = Packetizer::new(
        cfg.ssrc,
        cfg.payload_type,
        cfg.max_payload,
        first_seq,
        cfg.seed as u32,
    );
    let mut history = TxHistory::new(
        cfg.ssrc,
        packetizer.next_seq(),
        cfg.reorder_window_ns,
        loss_detection(&cfg),
    );
    let mut queue: VecDeque<QueuedPacket> = VecDeque::new();
    let mut queue_bytes = 0usize;
    let mut pacer = crate::pacer::Pacer::new(start);
    let mut window_blocked = false;
    let mut last_send_ns = start;
    let mut next_window_probe = i64::MAX;
    let mut last_feedback_ns = start;
    let mut last_discard_ns = i64::MIN / 2;
    let mut frame_id: u32 = 0;
    // The frame timestamp of the last I-frame: losses of earlier frames need no other.
    let mut last_keyframe_rtp_ts: Option<u32> = None;
    let mut counts = Counts {
        pacing_errors_ns: Vec::with_capacity(1 << 16),
        ..Counts::default()
    };
    let mut buf = vec![0u8; 65_536];
    let mut frame_flags = if cc.wants_tfrc_reports() {
        flags::WANT_TFRC
    } else {
        0
    };
    if cc.wants_sparse_feedback() {
        frame_flags |= flags::SPARSE_FEEDBACK;
    }

    loop {
        let mut now = clock.now();
        if stop::requested() || end.is_some_and(|e| now >= e) {
            break;
        }

        // Feedback.
        while let Ok(Some((len, _src))) = net::recv_nowait(&sock, &mut buf) {
            let datagram = &buf[..len];
            let Some(parts) = rtcp::split(datagram) else {
                counts.rtcp_malformed += 1;
                continue;
            };
            for part in parts {
                if part[1] == PT_RTPFB && part[0] & 0x1f == FMT_CCFB {
                    match Feedback::decode(part, cfg.num_reports) {
                        Ok(fb) => {
                            let s = history.on_feedback(&fb, now, &clock);
                            last_feedback_ns = now;
                            cc.on_feedback(&s);
                            if s.needs_keyframe(last_keyframe_rtp_ts) {
                                source.request_keyframe();
                                counts.keyframe_requests += 1;
                            }
                            let qd = queue
                                .front()
                                .map_or(0.0, |q| (now - q.enqueued_ns) as f64 * 1e-9);
                            log_controller(
                                &mut logs.controller,
                                &clock,
                                now,
                                "feedback",
                                cc.as_ref(),
                                history.bytes_in_flight(),
                                Some(&s),
                                queue_bytes,
                                qd,
                            );
                        }
                        Err(_) => counts.rtcp_malformed += 1,
                    }
                } else if rtcp::is_app(part) {
                    match TfrcReport::decode(part) {
                        Some(r) => {
                            counts.tfrc_reports += 1;
                            let now_us = clock.wall(now) / 1000;
                            let rtt_us = now_us - r.t_recvdata_us as i64 - r.t_delay_us as i64;
                            cc.on_tfrc_report(now, &r, rtt_us.max(10) * 1000);
                            let qd = queue
                                .front()
                                .map_or(0.0, |q| (now - q.enqueued_ns) as f64 * 1e-9);
                            log_controller(
                                &mut logs.controller,
                                &clock,
                                now,
                                "tfrc_report",
                                cc.as_ref(),
                                history.bytes_in_flight(),
                                None,
                                queue_bytes,
                                qd,
                            );
                        }
                        None => counts.rtcp_malformed += 1,
                    }
                } else {
                    counts.rtcp_unknown += 1;
                }
            }
        }

        // Timers: losses past the reordering window (the `AfterGap` rule), feedback
        // timeout, controller timers.
        let mut tick = FeedbackSummary {
            now_ns: now,
            bytes_in_flight: history.bytes_in_flight(),
            ..FeedbackSummary::default()
        };
        history.detect_losses(now, &mut tick);
        if tick.packets_newly_lost > 0 {
            cc.on_feedback(&tick);
            if tick.needs_keyframe(last_keyframe_rtp_ts) {
                source.request_keyframe();
                counts.keyframe_requests += 1;
            }
            log_controller(
                &mut logs.controller,
                &clock,
                now,
                "loss_timer",
                cc.as_ref(),
                history.bytes_in_flight(),
                Some(&tick),
                queue_bytes,
                0.0,
            );
        }
        if now - last_feedback_ns > cfg.feedback_timeout_ns {
            history.on_feedback_timeout();
            cc.on_feedback_timeout(now);
            last_feedback_ns = now;
            log_controller(
                &mut logs.controller,
                &clock,
                now,
                "feedback_timeout",
                cc.as_ref(),
                0,
                None,
                queue_bytes,
                0.0,
            );
        }
        cc.on_tick(now);

        // Frames that are due.
        while start + (source.next_time_s() * 1e9) as i64 <= now {
            let frame_t = start + (source.next_time_s() * 1e9) as i64;
            let frame = source.produce(cc.target_bitrate());
            let rtp_ts = packetizer.rtp_timestamp(frame_t - start);
            if frame.keyframe {
                last_keyframe_rtp_ts = Some(rtp_ts);
            }
            let f = frame_flags | if frame.keyframe { flags::KEYFRAME } else { 0 };
            let pkts = packetizer.packetize(frame_id, frame.bytes, rtp_ts, f, now);
            if queue.is_empty() {
                pacer.reanchor(now);
            }
            let media_qdelay = queue
                .front()
                .map_or(0.0, |q| (now - q.enqueued_ns) as f64 * 1e-9);
            if logs.frames.enabled() {
                logs.frames
                    .int(frame_id as i64)
                    .int(clock.wall(frame_t))
                    .uint(frame.bytes as u64)
                    .uint(pkts.len() as u64)
                    .boolean(frame.keyframe)
                    .float(cc.target_bitrate())
                    .float(frame.encoder_bps);
                logs.frames.end();
            }
            for p in pkts {
                queue_bytes += p.bytes.len();
                queue.push_back(p);
            }
            cc.on_frame(now, frame.bytes, media_qdelay, queue_bytes);
            counts.frames += 1;
            counts.keyframes += frame.keyframe as u64;
            frame_id = frame_id.wrapping_add(1);
        }

        // RTP queue too old: throw it away and ask for an I-frame (draft 4.4's frame
        // discard), at most every 250 ms.
        if let Some(front) = queue.front() {
            if (now - front.enqueued_ns) as f64 * 1e-9 > cfg.max_rtp_queue_s
                && now - last_discard_ns > 250_000_000
            {
                counts.discarded_packets += queue.len() as u64;
                counts.discards += 1;
                queue.clear();
                queue_bytes = 0;
                last_discard_ns = now;
                source.request_keyframe();
                counts.keyframe_requests += 1;
            }
        }

        // A wake-up late by more than a microburst window (a host timer stall) would send
        // every overdue packet back to back: a burst the flow never meant, which a shallow
        // AQM marks or drops (DualPI2's 1 ms step threshold). The schedule moves instead;
        // the pacing headroom (1.5 x the target) makes up the delay.
        let behind = now - cfg.burst_ns - pacer.due_ns();
        if behind > 0 && !queue.is_empty() && !window_blocked {
            counts.pacing_slips += 1;
            counts.pacing_slip_max_ns = counts.pacing_slip_max_ns.max(behind);
            pacer.reanchor(now - cfg.burst_ns);
        }
        // Send everything that is due.
        while let Some(front) = queue.front() {
            let size = front.bytes.len();
            // A closed window still lets packets out at the minimum rate: SCReAM v2 is
            // "not entirely self-clocked" (draft section 1), so lost feedback cannot stall
            // the flow until the feedback timeout.
            let min_rate_due = last_send_ns + (size as f64 * 8.0 / cfg.limits.min_bps * 1e9) as i64;
            if !cc.may_send(history.bytes_in_flight(), size) && now < min_rate_due {
                window_blocked = true;
                next_window_probe = min_rate_due;
                break;
            }
            if window_blocked {
                pacer.reanchor(now);
                window_blocked = false;
            }
            let due = pacer.due_ns();
            if due > now + cfg.burst_ns {
                break;
            }
            let mut p = queue.pop_front().unwrap();
            queue_bytes -= size;
            let send_ns = clock.now();
            let wall = clock.wall(send_ns);
            let rtt_us = cc
                .srtt_ns()
                .map_or(0, |r| (r / 1000).clamp(0, u32::MAX as i64) as u32);
            PayloadHeader::stamp(&mut p.bytes, (wall / 1000) as u64, rtt_us);
            if sock.send_to(&p.bytes, cfg.dest).is_err() {
                counts.send_errors += 1;
            }
            history.on_sent(p.seq, send_ns, size, p.rtp_ts);
            cc.on_sent(send_ns, size, history.bytes_in_flight());
            pacer.on_sent(size, cc.pacing_rate());
            counts.pacing_errors_ns.push(send_ns - due);
            last_send_ns = send_ns;
            counts.packets += 1;
            counts.bytes += size as u64;
            if logs.packets.enabled() {
                logs.packets
                    .int(wall)
                    .uint(p.seq)
                    .uint(p.seq & 0xffff)
                    .uint(p.rtp_ts as u64)
                    .uint(p.frame_id as u64)
                    .uint(size as u64)
                    .boolean(p.marker)
                    .uint(cfg.ecn.bits() as u64)
                    .int(clock.wall(due))
                    .int((send_ns - p.enqueued_ns) / 1000);
                logs.packets.end();
            }
            now = send_ns;
        }

        // Sleep until the next thing to do: a due packet, a frame, a timer (5 ms at most,
        // for the loss and feedback timers), or feedback arriving.
        now = clock.now();
        let mut next = start + (source.next_time_s() * 1e9) as i64;
        next = next.min(now + 5_000_000);
        if !queue.is_empty() && !window_blocked {
            next = next.min(pacer.due_ns());
        }
        if !queue.is_empty() && window_blocked {
            next = next.min(next_window_probe);
        }
        if let Some(e) = end {
            next = next.min(e);
        }
        let wait = next - now - cfg.spin_ns;
        let readable = wait > 0 && net::wait_readable(&sock, wait);
        if !readable && cfg.spin_ns > 0 {
            while mono_ns() < next && !stop::requested() {
                std::hint::spin_loop();
            }
        }
    }

    // Summary.
    let now = clock.now();
    let wall_s = (now - start) as f64 * 1e-9;
    let cpu_s = (process_cpu_ns() - cpu_start) as f64 * 1e-9;
    for log in [&mut logs.packets, &mut logs.frames, &mut logs.controller] {
        log.finish()
            .map_err(|e| format!("cannot finish a log: {e}"))?;
    }
    let hc = history.counters;
    let j = summary::summary(
        &cfg,
        cc.name(),
        clock.wall(start),
        wall_s,
        cpu_s,
        &counts,
        &hc,
    );
    if let Some(dir) = &cfg.log_dir {
        j.write(&dir.join("sender_summary.json"))
            .map_err(|e| format!("cannot write the summary: {e}"))?;
    }
    if !cfg.quiet {
        eprint!("{}", j.render());
    }
    Ok(())
}
