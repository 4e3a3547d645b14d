//! The sender's CSV logs (sender_packets.csv, sender_frames.csv, controller.csv) and the
//! controller-state row written at every feedback, report and timer event.

use std::path::PathBuf;

use crate::cc::Controller;
use crate::clock::Clock;
use crate::history::FeedbackSummary;
use crate::log::{CsvLog, CONTROLLER, SENDER_FRAMES, SENDER_PACKETS};

pub(super) struct Logs {
    pub(super) packets: CsvLog,
    pub(super) frames: CsvLog,
    pub(super) controller: CsvLog,
}

impl Logs {
    pub(super) fn open(dir: &Option<PathBuf>) -> Result<Logs, String> {
        match dir {
            None => Ok(Logs {
                packets: CsvLog::disabled(),
                frames: CsvLog::disabled(),
                controller: CsvLog::disabled(),
            }),
            Some(d) => {
                std::fs::create_dir_all(d).map_err(|e| {
                    format!("{}: cannot create the log directory: {e}", d.display())
                })?;
                let open = |name: &str, cols: &[&str]| {
                    CsvLog::create(d, name, cols)
                        .map_err(|e| format!("{}: {e}", d.join(name).display()))
                };
                Ok(Logs {
                    packets: open("sender_packets.csv", SENDER_PACKETS)?,
                    frames: open("sender_frames.csv", SENDER_FRAMES)?,
                    controller: open("controller.csv", CONTROLLER)?,
                })
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn log_controller(
    log: &mut CsvLog,
    clock: &Clock,
    now: i64,
    event: &str,
    cc: &dyn Controller,
    bif: u64,
    fb: Option<&FeedbackSummary>,
    queue_bytes: usize,
    queue_delay_s: f64,
) {
    if !log.enabled() {
        return;
    }
    let st = cc.state();
    log.int(clock.wall(now))
        .text(event)
        .text(cc.name())
        .opt_float(st.ref_wnd_bytes)
        .opt_float(cc.send_window(bif))
        .uint(bif)
        .float(st.target_bps)
        .float(st.pace_bps)
        .opt_float(st.srtt_ms)
        .opt_float(fb.and_then(|f| f.rtt_sample_ns).map(|r| r as f64 * 1e-6))
        .opt_float(st.qdelay_ms)
        .opt_float(st.qdelay_avg_ms)
        .opt_float(st.qdelay_target_ms)
        .opt_float(st.l4s_alpha)
        .opt_float(st.l4s_alpha_v)
        .opt_float(st.loss_rate)
        .opt_float(st.loss_event_rate)
        .opt_float(st.x_recv_bps)
        .opt_float(st.x_calc_bps)
        .opt_int(fb.map(|f| f.packets_newly_acked as i64))
        .opt_int(fb.map(|f| f.packets_newly_ce as i64))
        .opt_int(fb.map(|f| f.packets_newly_lost as i64))
        .uint(queue_bytes as u64)
        .float(queue_delay_s * 1e3);
    log.end();
}
