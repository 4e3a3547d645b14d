//! The main loop: read frames from both rings, run the two pipelines up to now, write what
//! is due, write statistics, then sleep until the next departure, frame or signal.
//!
//! One thread does everything (no locks); with `busy_poll` it never sleeps, which trades a
//! core for the host's timer lateness.
//!
//! This file is the loop and its steps (`Emulator`); opening the interfaces, logs and
//! pipelines is in open.rs, frames in and out in forward.rs, the stop signals in signals.rs.

use crate::clock;
use crate::config::Config;
use crate::events::EventLog;
use crate::io::PacketSocket;
use crate::packet::{Nanos, Packet};
use crate::pipeline::Pipeline;
use crate::stats::StatsWriter;

mod forward;
mod open;
mod signals;

use forward::{ingest, transmit, DirState};
use signals::Signals;

/// A failure with the process exit code: 2 for configuration problems, 1 for the rest.
pub struct RunError {
    pub code: i32,
    pub message: String,
}

fn fail(code: i32, message: impl Into<String>) -> RunError {
    RunError {
        code,
        message: message.into(),
    }
}

pub struct Options {
    /// Spin instead of sleeping when the next event is this close (ns); 0 = never.
    pub spin_ns: u64,
    pub ring_bytes: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            spin_ns: 0,
            ring_bytes: 8 << 20,
        }
    }
}

const RX_BATCH: usize = 1024;
const OFFSET_REFRESH_NS: u64 = 1_000_000_000;

pub fn run(cfg: &Config, opts: &Options) -> Result<(), RunError> {
    let mut emu = Emulator::open(cfg, opts)?;
    emu.announce();
    loop {
        emu.receive();
        let now = clock::mono_ns();
        emu.serve(now);
        emu.refresh_offset(now);
        emu.write_stats(now);
        if emu.wait(emu.next_wake()) == Turn::Stop {
            break;
        }
    }
    emu.finish();
    Ok(())
}

#[derive(PartialEq)]
enum Turn {
    Again,
    Stop,
}

/// Everything the loop holds: both interfaces, both directions, the logs and the clocks.
struct Emulator<'a> {
    cfg: &'a Config,
    opts: &'a Options,
    signals: Signals,
    sock_a: PacketSocket,
    sock_b: PacketSocket,
    /// Frames read on a go to b (sent on sock_b), and the reverse.
    ab: Pipeline,
    ba: Pipeline,
    st_ab: DirState,
    st_ba: DirState,
    events: Option<EventLog>,
    stats: Option<StatsWriter>,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC (frame time stamps are real time).
    offset: i64,
    next_offset_refresh: Nanos,
    batch: Vec<Packet>,
    last_sig_check: Nanos,
    /// sock_a, sock_b and the signalfd, for ppoll.
    fds: [libc::pollfd; 3],
}

impl Emulator<'_> {
    /// Reads what both receive rings hold (up to a batch each) into the pipelines.
    fn receive(&mut self) {
        let Emulator {
            cfg,
            sock_a,
            sock_b,
            ab,
            ba,
            st_ab,
            st_ba,
            events,
            offset,
            ..
        } = self;
        let (name_a, name_b) = (cfg.iface_a.as_str(), cfg.iface_b.as_str());
        let offset = *offset;
        sock_a.poll_rx(RX_BATCH, |fr| {
            ingest(fr, offset, ab, st_ab, name_a, events.as_mut())
        });
        sock_b.poll_rx(RX_BATCH, |fr| {
            ingest(fr, offset, ba, st_ba, name_b, events.as_mut())
        });
    }

    /// Brings both directions to `now` (departures due, delay stage) and sends what is due:
    /// once per loop turn, and once more at exit so the final statistics are current.
    fn serve(&mut self, now: Nanos) {
        let events = &mut self.events;
        self.ab.advance(now, events.as_mut());
        self.ba.advance(now, events.as_mut());
        let batch = &mut self.batch;
        transmit(
            &mut self.ab,
            &self.sock_b,
            &mut self.st_ab,
            now,
            batch,
            events.as_mut(),
        );
        transmit(
            &mut self.ba,
            &self.sock_a,
            &mut self.st_ba,
            now,
            batch,
            events.as_mut(),
        );
    }

    /// Re-reads the real-time offset once a second (NTP may step or slew the real clock).
    fn refresh_offset(&mut self, now: Nanos) {
        if now >= self.next_offset_refresh {
            self.offset = clock::mono_to_real_offset();
            if let Some(ev) = self.events.as_mut() {
                ev.mono_to_real_ns = self.offset;
            }
            self.next_offset_refresh = now + OFFSET_REFRESH_NS;
        }
    }

    /// One statistics line when its interval has come.
    fn write_stats(&mut self, now: Nanos) {
        if let Some(s) = self.stats.as_mut() {
            if now >= s.next {
                self.ab.note_ring_drops(self.sock_a.ring_drops());
                self.ba.note_ring_drops(self.sock_b.ring_drops());
                s.write(now as i64 + self.offset, now, &[&self.ab, &self.ba], false);
                s.next += s.interval_ns;
                if s.next <= now {
                    s.next = now + s.interval_ns;
                }
            }
        }
    }

    /// The next thing to do: a departure or a frame due, statistics, the offset refresh.
    fn next_wake(&self) -> Nanos {
        let mut wake = self.next_offset_refresh;
        for w in [
            self.ab.next_wake(),
            self.ba.next_wake(),
            self.stats.as_ref().map(|s| s.next),
        ]
        .into_iter()
        .flatten()
        {
            wake = wake.min(w);
        }
        wake
    }

    /// Spins (busy polling, or `wake` within spin_ns) or sleeps in ppoll until `wake`, a
    /// frame or a signal; Stop when a signal came.
    fn wait(&mut self, wake: Nanos) -> Turn {
        let now = clock::mono_ns();
        if self.cfg.busy_poll || wake.saturating_sub(now) <= self.opts.spin_ns {
            if now.saturating_sub(self.last_sig_check) > 1_000_000 {
                self.last_sig_check = now;
                if self.signals.pending() {
                    return Turn::Stop;
                }
            }
            std::hint::spin_loop();
            return Turn::Again;
        }
        let wait = wake.saturating_sub(now).saturating_sub(self.opts.spin_ns);
        let ts = libc::timespec {
            tv_sec: (wait / 1_000_000_000) as libc::time_t,
            tv_nsec: (wait % 1_000_000_000) as libc::c_long,
        };
        for f in self.fds.iter_mut() {
            f.revents = 0;
        }
        // SAFETY: fds and ts are live; no signal mask change.
        let rc = unsafe {
            libc::ppoll(
                self.fds.as_mut_ptr(),
                self.fds.len() as libc::nfds_t,
                &ts,
                std::ptr::null(),
            )
        };
        if rc > 0 && self.fds[2].revents & libc::POLLIN != 0 && self.signals.pending() {
            return Turn::Stop;
        }
        Turn::Again
    }

    /// Final statistics (both pipelines brought to now so the counters are current), the
    /// event log flushed, and one summary line.
    fn finish(mut self) {
        let now = clock::mono_ns();
        self.serve(now);
        let (ab, ba) = (&mut self.ab, &mut self.ba);
        if let Some(s) = self.stats.as_mut() {
            ab.note_ring_drops(self.sock_a.ring_drops());
            ba.note_ring_drops(self.sock_b.ring_drops());
            s.write(
                now as i64 + clock::mono_to_real_offset(),
                now,
                &[ab, ba],
                true,
            );
        }
        if let Some(ev) = self.events.as_mut() {
            ev.flush();
        }
        let left = ab.queued() + ba.queued();
        eprintln!(
            "cga-emu: stopped; a_to_b sent {} dropped {} marked {}; b_to_a sent {} dropped {} marked {}{}",
            ab.traffic.tx_packets,
            ab.totals.dropped,
            ab.totals.marked,
            ba.traffic.tx_packets,
            ba.totals.dropped,
            ba.totals.marked,
            if left > 0 { format!("; {left} frame(s) still queued were discarded") } else { String::new() }
        );
    }
}
