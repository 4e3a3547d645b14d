//! The sender's end-of-run summary (sender_summary.json): what it sent, how closely the
//! pacing kept its schedule, and what the feedback reported.

use super::SenderConfig;
use crate::history::HistoryCounters;
use crate::log::JsonObject;

/// Counters and pacing errors of one run (the summary's input).
#[derive(Default)]
pub(super) struct Counts {
    pub(super) packets: u64,
    pub(super) bytes: u64,
    pub(super) frames: u64,
    pub(super) keyframes: u64,
    pub(super) send_errors: u64,
    /// `sendmmsg` and `recvmmsg` calls (system calls per packet, next to `packets`).
    pub(super) send_calls: u64,
    pub(super) recv_calls: u64,
    pub(super) rtcp_malformed: u64,
    pub(super) rtcp_unknown: u64,
    pub(super) tfrc_reports: u64,
    pub(super) discarded_packets: u64,
    pub(super) discards: u64,
    pub(super) keyframe_requests: u64,
    /// Wake-ups so late that the pacing schedule was moved rather than caught up in a burst.
    pub(super) pacing_slips: u64,
    pub(super) pacing_slip_max_ns: i64,
    /// Send time minus due time of every packet (negative within a microburst).
    pub(super) pacing_errors_ns: Vec<i64>,
}

/// Pacing error statistics (send time minus due time).
fn percentile(sorted: &[i64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[idx] as f64
}

/// The run's summary: `start_wall_ns` is the wall-clock start, `wall_s` and `cpu_s` the time
/// the run took and the CPU time it used.
pub(super) fn summary(
    cfg: &SenderConfig,
    cc_name: &str,
    start_wall_ns: i64,
    wall_s: f64,
    cpu_s: f64,
    counts: &Counts,
    hc: &HistoryCounters,
) -> JsonObject {
    let mut lateness_ns: Vec<i64> = counts
        .pacing_errors_ns
        .iter()
        .map(|e| e.max(&0).to_owned())
        .collect();
    lateness_ns.sort_unstable();
    let mut abs_error_ns: Vec<i64> = counts.pacing_errors_ns.iter().map(|e| e.abs()).collect();
    abs_error_ns.sort_unstable();
    let mut j = JsonObject::default();
    j.text("role", "sender")
        .text("cc", cc_name)
        .text("ecn", cfg.ecn.name())
        .text("dest", &cfg.dest.to_string())
        .text("num_reports", cfg.num_reports.name())
        .int("ssrc", cfg.ssrc as i64)
        .timing(start_wall_ns, wall_s, cpu_s)
        .int("packets_sent", counts.packets as i64)
        .int("bytes_sent", counts.bytes as i64)
        .num(
            "mean_rate_mbps",
            counts.bytes as f64 * 8.0 / wall_s.max(1e-9) / 1e6,
        )
        .int("frames", counts.frames as i64)
        .int("keyframes", counts.keyframes as i64)
        .int("keyframe_requests", counts.keyframe_requests as i64)
        .int("send_errors", counts.send_errors as i64)
        .int("send_calls", counts.send_calls as i64)
        .int("recv_calls", counts.recv_calls as i64)
        .int("rtp_queue_discards", counts.discards as i64)
        .int("packets_discarded", counts.discarded_packets as i64)
        .num("burst_us", cfg.burst_ns as f64 / 1e3)
        .text("send_loop", cfg.send_loop.name())
        .int("pacing_slips", counts.pacing_slips as i64)
        .num("pacing_slip_max_us", counts.pacing_slip_max_ns as f64 / 1e3)
        .num("pacing_error_p50_us", percentile(&abs_error_ns, 0.5) / 1e3)
        .num("pacing_error_p99_us", percentile(&abs_error_ns, 0.99) / 1e3)
        .num("pacing_error_max_us", percentile(&abs_error_ns, 1.0) / 1e3)
        .num(
            "pacing_lateness_p50_us",
            percentile(&lateness_ns, 0.5) / 1e3,
        )
        .num(
            "pacing_lateness_p99_us",
            percentile(&lateness_ns, 0.99) / 1e3,
        )
        .int("feedback_reports", hc.reports as i64)
        .int("feedback_nothing_new", hc.reports_nothing_new as i64)
        .int("feedback_reordered", hc.reports_reordered as i64)
        .int("feedback_other_ssrc", hc.reports_other_ssrc as i64)
        .int("feedback_unknown_seq_blocks", hc.blocks_unknown_seq as i64)
        .int("feedback_malformed", counts.rtcp_malformed as i64)
        .int("rtcp_unknown", counts.rtcp_unknown as i64)
        .int("tfrc_reports", counts.tfrc_reports as i64)
        .int("feedback_timeouts", hc.feedback_timeouts as i64)
        .int("packets_acked", hc.packets_acked as i64)
        .int("packets_ce", hc.packets_ce as i64)
        .int("packets_lost", hc.packets_lost as i64)
        .int("packets_spurious_loss", hc.packets_spurious_loss as i64);
    j
}
