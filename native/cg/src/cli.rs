//! Command-line parsing for `cga-cg send`, `cga-cg receive` and `cga-cg timer-lateness`.
//!
//! Options are `--name VALUE` or `--name=VALUE`; every error names the option and what it
//! expects. This file holds the help texts and what each command's options mean; the
//! splitting of a command line and the value checks are in cli/args.rs.

use std::path::PathBuf;

use crate::cc::RateLimits;
use crate::net::Ecn;
use crate::receiver_app::ReceiveConfig;
use crate::rfc8888::NumReports;
use crate::sender::{CcKind, SendLoop, SenderConfig};

mod args;

use args::{addr, integer, non_negative, num_reports, positive, profile, Args};

pub const SEND_HELP: &str = "\
cga-cg send DEST_IP:PORT [options]   RTP video sender with congestion control

  --cc scream|none|tfrc|gtfrc   rate controller (default scream)
  --ecn ect1|ect0|none          ECN codepoint of the video packets (default ect1 for
                                scream = L4S mode, none otherwise); SCReAM runs its L4S
                                mode with ect1 and its classic mode otherwise
  --dscp N                      DSCP value (default 0)
  --duration S                  stop after S seconds (default: until SIGINT/SIGTERM)
  --min-mbps X / --start-mbps X / --max-mbps X
                                encoder bitrate limits (default 0.5 / 10 / 30, as eCGP)
  --rate-mbps X                 constant bitrate of --cc none (default: --max-mbps)
  --gtfrc-target-mbps X         gTFRC target rate g (default: --min-mbps)
  --fps N                       frame rate of the encoder model (default 60)
  --frames TRACE.csv            replay frame sizes (CSV t_s,size_bytes), scaled to the
                                controller's target, instead of the encoder model
  --keyframe-interval S         periodic I-frames every S seconds (e.g. 2, the older
                                model); default 0: I-frames only on request, as a
                                cloud-gaming encoder (infinite GOP, docs/cg.md)
  --keyframe-factor K           I-frame size / P-frame size (default 4)
  --frame-size-cv C             coefficient of variation of frame sizes (default 0.1)
  --encoder-lag-ms M            encoder rate-control time constant (default 100)
  --seed N                      random seed (frame sizes, first sequence number)
  --qdelay-target-ms M          SCReAM queue delay target (default 60)
  --profile P                   SCReAM: ericsson (default: Ericsson's SCReAM V2 code of
                                2026, c8f84c3), ericsson-2023 (their aca6556 of 2023,
                                which TMA 2024 ran) or draft (the IETF draft's constants)
  --delay-sampling P            SCReAM: how the queue is sampled, whatever the profile:
                                ericsson (every acknowledged packet feeds the base delay
                                and jitter, reports every 32 packets and at frame ends)
                                or draft (the newest packet of a report every 16)
  --loss-detection P            which packets are lost, whatever the profile: ericsson
                                (as each report arrives: sent 30 ms later than the packet
                                acknowledged last beyond their frames' distance, or 512
                                packets behind it; SCReAM's ericsson profile),
                                ericsson-2023 (sent over 10 ms before the packet
                                acknowledged last; its profile) or draft (30 ms missing
                                after a later packet was acknowledged)
  --reduce-jitter               SCReAM: jitter filtering (REDUCE_JITTER; on in ericsson)
  --adapt-qdelay-target         SCReAM: optional qdelay target adaptation against
                                loss-based competing flows
  --conditional-loss-backoff    SCReAM: conditional loss backoff (on in ericsson)
  --relaxed-pacing              SCReAM: pace up to 4x faster near the maximum bitrate
                                (earlier drafts; off: it bursts past an L4S step
                                threshold, docs/cg.md)
  --l4s-alpha-gain G            SCReAM: one EWMA gain in (0, 1] for l4s_alpha both ways,
                                as older drafts (1/16 = 0.0625); default: the current
                                draft's 1/8 up, 1/128 down
  --pace-factor F               pacing rate / target for none, tfrc, gtfrc (default 1.5)
  --ssrc N  --pt N              RTP SSRC (default 100) and payload type (default 96)
  --max-payload BYTES           largest RTP payload (default 1200)
  --max-rtp-queue-ms M          discard the RTP queue beyond this delay (default 200)
  --spin-us U                   busy-wait the last U us before a due packet (default 0)
  --burst-us U                  send packets due within U us together, one wake-up per
                                microburst (default 500, as Ericsson's SCReAM code)
  --send-loop schedule|ericsson-test
                                how packets leave: on the pacing schedule (default), or
                                as Ericsson's aca6556 test sender's loop (one packet
                                per send while the pacing time owed, less the sends'
                                time, is under 1 ms, then a sleep of at most 900 us
                                plus usleep's 50 us slack), to compare controllers with it
  --feedback-timeout-ms M       no feedback for this long: reset (default 1000)
  --reorder-window-ms M         initial loss reordering window (default 30)
  --num-reports count|count-minus-one
                                RFC 8888 num_reports meaning (default count, erratum
                                8166; Ericsson's SCReAM uses count-minus-one)
  --bind IP:PORT                local address (default any)
  --log DIR                     write sender_packets.csv, sender_frames.csv,
                                controller.csv and sender_summary.json into DIR
  --quiet                       no summary on stderr
";

pub const RECEIVE_HELP: &str = "\
cga-cg receive LISTEN_IP:PORT [options]   RTP video receiver with RFC 8888 feedback

  --duration S                  stop after S seconds (default: until SIGINT/SIGTERM)
  --num-reports count|count-minus-one
                                RFC 8888 num_reports meaning (default count)
  --feedback-packets N          feedback after N packets (default 16; at least 32 for a
                                sender asking for sparse feedback: SCReAM's ericsson
                                profile, as Ericsson's receiver reports)
  --feedback-interval-ms M      feedback at least every M ms (default 40)
  --log DIR                     write receiver_packets.csv, receiver_frames.csv and
                                receiver_summary.json into DIR
  --quiet                       no summary on stderr
";

pub fn parse_send(args: &[String]) -> Result<SenderConfig, String> {
    let flags = [
        "reduce-jitter",
        "adapt-qdelay-target",
        "conditional-loss-backoff",
        "relaxed-pacing",
        "quiet",
    ];
    let line = Args::split(args, &flags)?;
    let [dest] = line.positional.as_slice() else {
        return Err("expected exactly one DEST_IP:PORT (see cga-cg send --help)".into());
    };
    let get = |n: &str| line.get(n);
    let known = [
        "cc",
        "ecn",
        "dscp",
        "duration",
        "min-mbps",
        "start-mbps",
        "max-mbps",
        "rate-mbps",
        "gtfrc-target-mbps",
        "fps",
        "frames",
        "keyframe-interval",
        "keyframe-factor",
        "frame-size-cv",
        "encoder-lag-ms",
        "seed",
        "qdelay-target-ms",
        "pace-factor",
        "ssrc",
        "pt",
        "max-payload",
        "max-rtp-queue-ms",
        "spin-us",
        "burst-us",
        "send-loop",
        "l4s-alpha-gain",
        "profile",
        "delay-sampling",
        "loss-detection",
        "feedback-timeout-ms",
        "reorder-window-ms",
        "num-reports",
        "bind",
        "log",
    ];
    line.refuse_unknown(&known, &flags, "send")?;
    let cc_name = get("cc").unwrap_or("scream");
    let cc = CcKind::parse(cc_name)
        .ok_or_else(|| format!("--cc {cc_name:?}: expected scream, none, tfrc or gtfrc"))?;
    let ecn = match get("ecn") {
        Some(v) => {
            Ecn::parse(v).ok_or_else(|| format!("--ecn {v:?}: expected ect1, ect0 or none"))?
        }
        None if cc == CcKind::Scream => Ecn::Ect1,
        None => Ecn::NotEct,
    };
    let mbps = |n: &str, d: f64| -> Result<f64, String> {
        get(n).map_or(Ok(d), |v| positive(n, v)).map(|x| x * 1e6)
    };
    let limits = RateLimits {
        min_bps: mbps("min-mbps", 0.5)?,
        start_bps: mbps("start-mbps", 10.0)?,
        max_bps: mbps("max-mbps", 30.0)?,
    };
    if limits.min_bps > limits.max_bps {
        return Err(format!(
            "--min-mbps {} is above --max-mbps {}",
            limits.min_bps / 1e6,
            limits.max_bps / 1e6
        ));
    }
    let ms =
        |n: &str, d: f64| -> Result<f64, String> { get(n).map_or(Ok(d), |v| non_negative(n, v)) };
    let fps = get("fps").map_or(Ok(60.0), |v| positive("fps", v))?;
    if fps > 1000.0 {
        return Err(format!("--fps {fps}: at most 1000"));
    }
    let max_payload =
        get("max-payload").map_or(Ok(1200), |v| integer("max-payload", v, 65_000))? as usize;
    if max_payload < crate::rtp::PAYLOAD_HEADER_BYTES {
        return Err(format!(
            "--max-payload {max_payload}: at least {}",
            crate::rtp::PAYLOAD_HEADER_BYTES
        ));
    }
    Ok(SenderConfig {
        dest: addr("DEST_IP:PORT", dest)?,
        bind: get("bind").map(|v| addr("--bind", v)).transpose()?,
        cc,
        ecn,
        dscp: get("dscp").map_or(Ok(0), |v| integer("dscp", v, 63))? as u8,
        duration_s: get("duration")
            .map(|v| positive("duration", v))
            .transpose()?,
        limits,
        rate_bps: mbps("rate-mbps", limits.max_bps / 1e6)?,
        gtfrc_target_bps: get("gtfrc-target-mbps")
            .map(|v| positive("gtfrc-target-mbps", v).map(|x| x * 1e6))
            .transpose()?,
        fps,
        frames_trace: get("frames").map(PathBuf::from),
        // Cloud-gaming encoders run an infinite GOP (I-frames on request, intra refresh):
        // no periodic I-frames by default (docs/cg.md, encoder model).
        keyframe_interval_s: ms("keyframe-interval", 0.0)?,
        keyframe_factor: get("keyframe-factor")
            .map_or(Ok(4.0), |v| positive("keyframe-factor", v))?,
        frame_size_cv: ms("frame-size-cv", 0.1)?,
        encoder_lag_s: ms("encoder-lag-ms", 100.0)? * 1e-3,
        seed: get("seed").map_or(Ok(1), |v| integer("seed", v, u64::MAX))?,
        qdelay_target_s: get("qdelay-target-ms")
            .map_or(Ok(60.0), |v| positive("qdelay-target-ms", v))?
            * 1e-3,
        scream_profile: profile("profile", get("profile").unwrap_or("ericsson"))?,
        delay_sampling: get("delay-sampling")
            .map(|v| profile("delay-sampling", v))
            .transpose()?,
        loss_detection: get("loss-detection")
            .map(|v| profile("loss-detection", v))
            .transpose()?,
        reduce_jitter: get("reduce-jitter").is_some(),
        adapt_qdelay_target: get("adapt-qdelay-target").is_some(),
        conditional_loss_backoff: get("conditional-loss-backoff").is_some(),
        relaxed_pacing: get("relaxed-pacing").is_some(),
        l4s_alpha_gain: get("l4s-alpha-gain")
            .map(|v| positive("l4s-alpha-gain", v))
            .transpose()?
            .map(|g| {
                if g > 1.0 {
                    Err("--l4s-alpha-gain: must be in (0, 1]".to_string())
                } else {
                    Ok(g)
                }
            })
            .transpose()?,
        pace_factor: get("pace-factor").map_or(Ok(1.5), |v| positive("pace-factor", v))?,
        ssrc: get("ssrc").map_or(Ok(100), |v| integer("ssrc", v, u32::MAX as u64))? as u32,
        payload_type: get("pt").map_or(Ok(96), |v| integer("pt", v, 127))? as u8,
        max_payload,
        max_rtp_queue_s: ms("max-rtp-queue-ms", 200.0)? * 1e-3,
        spin_ns: (ms("spin-us", 0.0)? * 1e3) as i64,
        burst_ns: (ms("burst-us", 500.0)? * 1e3) as i64,
        send_loop: get("send-loop").map_or(Ok(SendLoop::Schedule), |v| {
            SendLoop::parse(v)
                .ok_or_else(|| format!("--send-loop: {v:?}: give schedule or ericsson-test"))
        })?,
        feedback_timeout_ns: (get("feedback-timeout-ms")
            .map_or(Ok(1000.0), |v| positive("feedback-timeout-ms", v))?
            * 1e6) as i64,
        reorder_window_ns: (ms("reorder-window-ms", 30.0)? * 1e6) as i64,
        num_reports: get("num-reports").map_or(Ok(NumReports::Count), num_reports)?,
        log_dir: get("log").map(PathBuf::from),
        quiet: get("quiet").is_some(),
    })
}

pub fn parse_receive(args: &[String]) -> Result<ReceiveConfig, String> {
    let flags = ["quiet"];
    let line = Args::split(args, &flags)?;
    let [listen] = line.positional.as_slice() else {
        return Err("expected exactly one LISTEN_IP:PORT (see cga-cg receive --help)".into());
    };
    let known = [
        "duration",
        "num-reports",
        "feedback-packets",
        "feedback-interval-ms",
        "log",
    ];
    line.refuse_unknown(&known, &flags, "receive")?;
    let get = |n: &str| line.get(n);
    Ok(ReceiveConfig {
        listen: addr("LISTEN_IP:PORT", listen)?,
        duration_s: get("duration")
            .map(|v| positive("duration", v))
            .transpose()?,
        num_reports: get("num-reports").map_or(Ok(NumReports::Count), num_reports)?,
        feedback_packets: get("feedback-packets")
            .map_or(Ok(16), |v| integer("feedback-packets", v, 1000))?
            .max(1) as u32,
        feedback_interval_ns: (get("feedback-interval-ms")
            .map_or(Ok(40.0), |v| positive("feedback-interval-ms", v))?
            * 1e6) as i64,
        log_dir: get("log").map(PathBuf::from),
        quiet: get("quiet").is_some(),
    })
}

#[cfg(test)]
mod tests;
