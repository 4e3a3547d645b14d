//! The receiver program: reads RTP packets with their ECN bits and kernel arrival times,
//! sends feedback to whoever sent them, and logs packets and frames.

use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;

use crate::clock::{process_cpu_ns, reduce_timer_slack, Clock};
use crate::log::{CsvLog, JsonObject, RECEIVER_FRAMES, RECEIVER_PACKETS};
use crate::net::{self, RecvBatch};
use crate::receiver::frames::FrameRecord;
use crate::receiver::{Output, Receiver, ReceiverConfig};
use crate::rfc8888::NumReports;
use crate::stop;

#[derive(Clone, Debug)]
pub struct ReceiveConfig {
    pub listen: SocketAddr,
    pub duration_s: Option<f64>,
    pub num_reports: NumReports,
    pub feedback_packets: u32,
    pub feedback_interval_ns: i64,
    pub log_dir: Option<PathBuf>,
    pub quiet: bool,
}

fn log_frames(log: &mut CsvLog, frames: &[FrameRecord]) {
    if !log.enabled() {
        return;
    }
    for f in frames {
        log.int(f.frame_id as i64)
            .opt_int(f.rtp_ts.map(|t| t as i64))
            .opt_int(f.send_t_ns)
            .opt_int(f.t_first_ns)
            .opt_int(f.t_last_ns)
            .opt_int(f.packets_expected.map(|v| v as i64))
            .int(f.packets_received as i64)
            .opt_int(f.bytes_expected.map(|v| v as i64))
            .uint(f.bytes_received)
            .boolean(f.complete)
            .boolean(f.keyframe);
        log.end();
    }
}

/// Datagrams one receive call takes: a wake-up finds a few packets of a microburst, a
/// late one a few more.
const RECV_BATCH: usize = 32;

/// Runs the receiver until the duration ends or a signal arrives.
pub fn run(cfg: ReceiveConfig) -> Result<(), String> {
    let sock = open_socket(&cfg)?;
    stop::install();
    reduce_timer_slack();
    let mut app = ReceiverApp::new(cfg, sock)?;
    let mut batch = RecvBatch::new(RECV_BATCH, 65_536);
    // One clock read per turn, after the receive (a report must not be stamped before the
    // packets it acknowledges arrived); the next turn's sleep starts from it, late by this
    // turn's work (microseconds, against timers of 5 ms and more). Under user-mode Linux
    // each system call, a clock read included, costs two host context switches.
    let mut now = app.clock.now();
    loop {
        if stop::requested() || app.end.is_some_and(|e| now >= e) {
            break;
        }
        now = if app.wait(now) {
            app.read_datagrams(&mut batch)?
        } else {
            app.clock.now()
        };
        let out = app.rx.on_tick(now);
        app.handle(out);
    }
    app.recv_calls = batch.calls;
    app.finish()
}

/// The UDP socket, bound to the listening address, with ECN and kernel timestamps on.
fn open_socket(cfg: &ReceiveConfig) -> Result<UdpSocket, String> {
    let sock =
        UdpSocket::bind(cfg.listen).map_err(|e| format!("cannot bind {}: {e}", cfg.listen))?;
    net::enable_rx_metadata(&sock, cfg.listen.is_ipv6())
        .map_err(|e| format!("cannot enable ECN / timestamp reception: {e}"))?;
    net::set_buffers(&sock, 8 << 20);
    Ok(sock)
}

/// Everything the loop holds between turns.
struct ReceiverApp {
    cfg: ReceiveConfig,
    sock: UdpSocket,
    packets_log: CsvLog,
    frames_log: CsvLog,
    clock: Clock,
    start: i64,
    cpu_start_ns: i64,
    /// When the run's duration is over (monotonic ns), if it has one.
    end: Option<i64>,
    rx: Receiver,
    /// Where feedback goes: the source of the last RTP packet.
    peer: Option<SocketAddr>,
    send_errors: u64,
    /// `recvmmsg` calls (system calls per packet, next to `packets`).
    recv_calls: u64,
}

impl ReceiverApp {
    /// The logs, then the clock starts.
    fn new(cfg: ReceiveConfig, sock: UdpSocket) -> Result<Self, String> {
        let (packets_log, frames_log) = match &cfg.log_dir {
            None => (CsvLog::disabled(), CsvLog::disabled()),
            Some(d) => {
                std::fs::create_dir_all(d).map_err(|e| {
                    format!("{}: cannot create the log directory: {e}", d.display())
                })?;
                (
                    CsvLog::create(d, "receiver_packets.csv", RECEIVER_PACKETS)
                        .map_err(|e| e.to_string())?,
                    CsvLog::create(d, "receiver_frames.csv", RECEIVER_FRAMES)
                        .map_err(|e| e.to_string())?,
                )
            }
        };
        let clock = Clock::new();
        let start = clock.now();
        let cpu_start_ns = process_cpu_ns();
        let end = cfg.duration_s.map(|d| start + (d * 1e9) as i64);
        let rcfg = ReceiverConfig {
            num_reports: cfg.num_reports,
            feedback_packets: cfg.feedback_packets,
            feedback_interval_ns: cfg.feedback_interval_ns,
            ..ReceiverConfig::default()
        };
        Ok(ReceiverApp {
            rx: Receiver::new(rcfg, clock),
            cfg,
            sock,
            packets_log,
            frames_log,
            clock,
            start,
            cpu_start_ns,
            end,
            peer: None,
            send_errors: 0,
            recv_calls: 0,
        })
    }

    /// Sleeps until a packet arrives, the receiver's next timer, the end, or 50 ms; returns
    /// whether the socket is readable.
    fn wait(&self, now: i64) -> bool {
        let mut next = now + 50_000_000;
        if let Some(t) = self.rx.next_timer_ns() {
            next = next.min(t);
        }
        if let Some(e) = self.end {
            next = next.min(e);
        }
        net::wait_readable(&self.sock, next - now)
    }

    /// Hands every datagram waiting on the socket to the receiver, a batch at a time, each
    /// batch with the time read just after it arrived; returns the last time read.
    fn read_datagrams(&mut self, batch: &mut RecvBatch) -> Result<i64, String> {
        loop {
            let n = batch
                .recv(&self.sock)
                .map_err(|e| format!("receive failed: {e}"))?;
            let now = self.clock.now();
            for i in 0..n {
                let (data, meta) = batch.datagram(i);
                let arrival = meta.kernel_ns.unwrap_or_else(|| self.clock.wall(now));
                let out = self
                    .rx
                    .on_datagram(data, meta.ecn.unwrap_or(0), arrival, now);
                if out.packet.is_some() {
                    self.peer = Some(meta.src);
                }
                self.handle(out);
            }
            if !batch.more_may_wait() {
                return Ok(now);
            }
        }
    }

    /// Sends what the receiver wants sent (to the peer, once there is one) and logs the
    /// packet and the frames it finished.
    fn handle(&mut self, out: Output) {
        if let Some(p) = self.peer {
            for d in &out.datagrams {
                if self.sock.send_to(d, p).is_err() {
                    self.send_errors += 1;
                }
            }
        }
        if let Some(r) = &out.packet {
            let pl = &mut self.packets_log;
            if pl.enabled() {
                pl.int(r.t_ns)
                    .uint(r.ssrc as u64)
                    .uint(r.rtp_seq as u64)
                    .int(r.seq)
                    .uint(r.rtp_ts as u64)
                    .boolean(r.marker)
                    .uint(r.payload_type as u64)
                    .uint(r.size_bytes as u64)
                    .uint(r.ecn as u64)
                    .opt_int(r.frame_id.map(|f| f as i64))
                    .opt_int(r.send_t_ns);
                pl.end();
            }
        }
        log_frames(&mut self.frames_log, &out.frames);
    }

    /// Logs the frames still open, closes the logs and writes the summary
    /// (receiver_summary.json, and stderr).
    fn finish(mut self) -> Result<(), String> {
        let rest = self.rx.finish();
        log_frames(&mut self.frames_log, &rest);
        self.packets_log.finish().map_err(|e| e.to_string())?;
        self.frames_log.finish().map_err(|e| e.to_string())?;

        let now = self.clock.now();
        let wall_s = (now - self.start) as f64 * 1e-9;
        let cpu_s = (process_cpu_ns() - self.cpu_start_ns) as f64 * 1e-9;
        let j = self.summary(wall_s, cpu_s);
        if let Some(dir) = &self.cfg.log_dir {
            j.write(&dir.join("receiver_summary.json"))
                .map_err(|e| e.to_string())?;
        }
        if !self.cfg.quiet {
            eprint!("{}", j.render());
        }
        Ok(())
    }

    fn summary(&self, wall_s: f64, cpu_s: f64) -> JsonObject {
        let cfg = &self.cfg;
        let c = self.rx.counters;
        let mut j = JsonObject::default();
        j.text("role", "receiver")
            .text("listen", &cfg.listen.to_string())
            .text("num_reports", cfg.num_reports.name())
            .timing(self.clock.wall(self.start), wall_s, cpu_s)
            .int("packets", c.packets as i64)
            .int("bytes", c.bytes as i64)
            .int("not_rtp", c.not_rtp as i64)
            .int("duplicates", c.duplicates as i64)
            .int("ecn_not_ect", c.ecn_not_ect as i64)
            .int("ecn_ect1", c.ecn_ect1 as i64)
            .int("ecn_ect0", c.ecn_ect0 as i64)
            .int("ecn_ce", c.ecn_ce as i64)
            .int("feedback_sent", c.feedback_sent as i64)
            .int("tfrc_reports_sent", c.tfrc_reports_sent as i64)
            .int("sender_restarts", c.sender_restarts as i64)
            .int("frames_complete", c.frames_complete as i64)
            .int("frames_incomplete", c.frames_incomplete as i64)
            .int("send_errors", self.send_errors as i64)
            .int("recv_calls", self.recv_calls as i64);
        j
    }
}
