//! The sender: frames from the encoder model (or a trace) are packetised into the RTP
//! queue, paced out on an absolute schedule within the controller's send window, and
//! feedback from the receiver drives the controller. One thread, one socket; it sleeps in
//! `ppoll` until the next due packet, the next frame, or feedback.
//!
//! This file is the loop: `run` and the state it turns (`Sender`), its sleep and its end.
//! Each turn's steps are in feedback.rs (feedback and the timers that stand in for it) and
//! send.rs (frames into the queue, the queue out on the pacing schedule); the start in
//! setup.rs, the RTP queue in queue.rs, the settings and the controller they choose in
//! config.rs, the CSV logs in logs.rs, the end-of-run summary in summary.rs.

use std::net::UdpSocket;

use crate::cc::Controller;
use crate::clock::{mono_ns, process_cpu_ns, reduce_timer_slack, Clock};
use crate::encoder::FrameSource;
use crate::history::TxHistory;
use crate::net::{self, RecvBatch};
use crate::pacer::Pacer;
use crate::rtp::Packetizer;
use crate::stop;

mod config;
mod feedback;
mod logs;
mod queue;
mod send;
mod setup;
mod summary;

pub use config::{loss_detection, CcKind, SendLoop, SenderConfig};

use logs::Logs;
use queue::RtpQueue;
use summary::Counts;

/// Feedback datagrams one receive call takes (reports come every 16 or 32 packets, so a
/// wake-up rarely finds more than one).
const FEEDBACK_BATCH: usize = 8;

/// Runs the sender until the duration ends or a signal arrives.
pub fn run(cfg: SenderConfig) -> Result<(), String> {
    let sock = setup::open_socket(&cfg)?;
    stop::install();
    reduce_timer_slack();
    let mut s = Sender::new(cfg, sock)?;
    let mut feedback = RecvBatch::new(FEEDBACK_BATCH, 65_536);
    // The socket is read only when the last sleep saw it readable (and on the first turn):
    // an empty read is a wasted system call, and each costs two host context switches
    // under user-mode Linux.
    let mut readable = true;
    loop {
        let mut now = s.clock.now();
        if stop::requested() || s.end.is_some_and(|e| now >= e) {
            break;
        }
        if readable && s.read_feedback(&mut feedback, now) > 0 {
            // The controller and its log took time: the packets sent next are stamped
            // with the time they leave.
            now = s.clock.now();
        }
        s.check_timers(now);
        s.enqueue_due_frames(now);
        s.discard_stale_queue(now);
        s.skip_missed_schedule(now);
        let sent_at = s.send_due(now);
        readable = s.sleep(sent_at);
    }
    s.counts.recv_calls = feedback.calls;
    s.finish()
}

/// Everything the loop holds between turns.
struct Sender {
    cfg: SenderConfig,
    sock: UdpSocket,
    source: Box<dyn FrameSource>,
    cc: Box<dyn Controller>,
    logs: Logs,
    clock: Clock,
    /// Monotonic ns at the start: frame times count from here.
    start: i64,
    cpu_start_ns: i64,
    /// When the run's duration is over (monotonic ns), if it has one.
    end: Option<i64>,
    packetizer: Packetizer,
    history: TxHistory,
    queue: RtpQueue,
    pacer: Pacer,
    /// `--send-loop ericsson-test`: when the loop wakes after its last burst.
    test_loop_wake: Option<i64>,
    /// The controller's window held the queue back (packets leave at the minimum rate).
    window_blocked: bool,
    /// When a blocked window next lets a packet out at the minimum rate.
    next_window_probe: i64,
    last_send_ns: i64,
    last_feedback_ns: i64,
    last_discard_ns: i64,
    frame_id: u32,
    /// The frame timestamp of the last I-frame: losses of earlier frames need no other.
    last_keyframe_rtp_ts: Option<u32>,
    /// Flags every frame's packets carry (what feedback the controller wants).
    frame_flags: u8,
    counts: Counts,
}

impl Sender {
    /// When the next frame is ready (monotonic ns).
    fn next_frame_ns(&self) -> i64 {
        self.start + (self.source.next_time_s() * 1e9) as i64
    }

    /// Asks the frame source for an I-frame (after losses or a discarded queue).
    fn request_keyframe(&mut self) {
        self.source.request_keyframe();
        self.counts.keyframe_requests += 1;
    }

    /// Sleeps until the next thing to do: a due packet, a frame, a timer (5 ms at most, for
    /// the loss and feedback timers), or feedback arriving; `sent_at` is the time read after
    /// this turn's last send, if it sent (a clock read saved). Returns whether feedback may
    /// be waiting: the socket became readable, or the sender spun past the poll.
    fn sleep(&self, sent_at: Option<i64>) -> bool {
        let now = sent_at.unwrap_or_else(|| self.clock.now());
        let mut next = self.next_frame_ns();
        next = next.min(now + 5_000_000);
        if !self.queue.is_empty() && !self.window_blocked {
            next = next.min(match self.cfg.send_loop {
                SendLoop::Schedule => self.pacer.due_ns(),
                SendLoop::EricssonTest => self.test_loop_wake.unwrap_or(now),
            });
        }
        if !self.queue.is_empty() && self.window_blocked {
            next = next.min(self.next_window_probe);
        }
        if let Some(e) = self.end {
            next = next.min(e);
        }
        let wait = next - now - self.cfg.spin_ns;
        let readable = wait > 0 && net::wait_readable(&self.sock, wait);
        if !readable && self.cfg.spin_ns > 0 {
            while mono_ns() < next && !stop::requested() {
                std::hint::spin_loop();
            }
            return true;
        }
        readable
    }

    /// Closes the logs and writes the summary (sender_summary.json, and stderr).
    fn finish(mut self) -> Result<(), String> {
        let now = self.clock.now();
        let wall_s = (now - self.start) as f64 * 1e-9;
        let cpu_s = (process_cpu_ns() - self.cpu_start_ns) as f64 * 1e-9;
        let logs = &mut self.logs;
        for log in [&mut logs.packets, &mut logs.frames, &mut logs.controller] {
            log.finish()
                .map_err(|e| format!("cannot finish a log: {e}"))?;
        }
        let hc = self.history.counters;
        let j = summary::summary(
            &self.cfg,
            self.cc.name(),
            self.clock.wall(self.start),
            wall_s,
            cpu_s,
            &self.counts,
            &hc,
        );
        if let Some(dir) = &self.cfg.log_dir {
            j.write(&dir.join("sender_summary.json"))
                .map_err(|e| format!("cannot write the summary: {e}"))?;
        }
        if !self.cfg.quiet {
            eprint!("{}", j.render());
        }
        Ok(())
    }
}
