//! The main loop: read frames from both rings, run the two pipelines up to now, write what
//! is due, write statistics, then sleep until the next departure, frame or signal.
//!
//! One thread does everything (no locks); with `busy_poll` it never sleeps, which trades a
//! core for the host's timer lateness.

use std::io::Write;

use crate::clock;
use crate::config::{Config, PipelineConfig, RateConfig};
use crate::events::EventLog;
use crate::io::{Frame, OpenError, PacketSocket};
use crate::packet::{complete_l4_checksum, Nanos, Packet};
use crate::pipeline::Pipeline;
use crate::stats::StatsWriter;

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

struct Signals {
    fd: libc::c_int,
}

impl Signals {
    /// Blocks SIGTERM, SIGINT and SIGHUP and receives them through a signalfd, so a signal
    /// can never slip in between checking for it and going to sleep.
    fn install() -> Result<Self, RunError> {
        // SAFETY: sigset manipulation on a local set; signalfd on it.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for s in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
                libc::sigaddset(&mut set, s);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            let fd = libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
            if fd < 0 {
                return Err(fail(
                    1,
                    format!("signalfd: {}", std::io::Error::last_os_error()),
                ));
            }
            Ok(Signals { fd })
        }
    }

    fn pending(&self) -> bool {
        let mut buf = [0u8; 128];
        // SAFETY: reading into a local buffer of the size we pass.
        let n = unsafe { libc::read(self.fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        n > 0
    }
}

fn open(ifname: &str, key: &str, opts: &Options) -> Result<PacketSocket, RunError> {
    PacketSocket::open(ifname, opts.ring_bytes).map_err(|e| match e {
        OpenError::NoSuchInterface => fail(
            2,
            format!("{key}: no interface '{ifname}' in this network namespace"),
        ),
        OpenError::Os(m) => fail(1, m),
    })
}

fn describe(p: &PipelineConfig) -> String {
    let rate = match &p.rate {
        RateConfig::Line => "line rate".to_string(),
        RateConfig::Fixed { bit_per_s } => format!("{} Mbit/s", bit_per_s / 1e6),
        RateConfig::Trace { path, scale, trace } => {
            format!(
                "trace {} x{scale} (mean {:.2} Mbit/s)",
                path.display(),
                trace.mean_mbit() * scale
            )
        }
    };
    let kind = p.qdisc.kind();
    format!(
        "{rate}, {kind}, delay {} ms, jitter {} ms, loss {}",
        p.delay_ns as f64 / 1e6,
        p.jitter_ns as f64 / 1e6,
        p.loss
    )
}

/// Per-direction state that is not the pipeline: warnings already given, ring drops.
#[derive(Default)]
struct DirState {
    warned_oversize: bool,
    warned_tx: bool,
}

fn ingest(
    fr: Frame,
    offset: i64,
    pipe: &mut Pipeline,
    st: &mut DirState,
    ifname: &str,
    events: Option<&mut EventLog>,
) {
    let now = clock::mono_ns();
    let t = if fr.ts_real_ns > 0 {
        ((fr.ts_real_ns - offset).max(0) as Nanos).min(now)
    } else {
        now
    };
    if fr.truncated {
        if !st.warned_oversize {
            eprintln!(
                "cga-emu: frames larger than the MTU arrive on {ifname} and are dropped: turn off \
                 segmentation offloads on the senders (ethtool -K DEV tso off gso off gro off)"
            );
            st.warned_oversize = true;
        }
        pipe.drop_unforwardable(
            Packet::new(fr.data.to_vec(), u64::MAX, t),
            t,
            events,
            "oversize",
        );
        return;
    }
    let mut data = Vec::with_capacity(fr.data.len() + 4);
    match fr.vlan {
        Some((tci, tpid)) if fr.data.len() >= 12 => {
            data.extend_from_slice(&fr.data[..12]);
            data.extend_from_slice(&tpid.to_be_bytes());
            data.extend_from_slice(&tci.to_be_bytes());
            data.extend_from_slice(&fr.data[12..]);
        }
        _ => data.extend_from_slice(fr.data),
    }
    if fr.csum_not_ready {
        complete_l4_checksum(&mut data);
    }
    pipe.arrive(data, t, events);
}

fn transmit(
    pipe: &mut Pipeline,
    out: &PacketSocket,
    st: &mut DirState,
    now: Nanos,
    batch: &mut Vec<Packet>,
    mut events: Option<&mut EventLog>,
) {
    batch.clear();
    while let Some((_, p)) = pipe.pop_due(now) {
        batch.push(p);
    }
    if batch.is_empty() {
        return;
    }
    let t_send = clock::mono_ns();
    let frames: Vec<&[u8]> = batch.iter().map(|p| p.data.as_slice()).collect();
    let (failed, err) = out.send_batch(&frames);
    if failed > 0 {
        pipe.traffic.tx_errors += failed as u64;
        if !st.warned_tx {
            let e = err.map_or_else(|| "unknown error".to_string(), |e| e.to_string());
            eprintln!(
                "cga-emu: cannot write {failed} frame(s) to {}: {e} (counted as tx_errors)",
                out.ifname
            );
            st.warned_tx = true;
        }
    }
    for p in batch.iter() {
        pipe.note_sent(p);
        if let Some(ev) = events.as_deref_mut() {
            ev.record(
                t_send,
                "send",
                pipe.dir,
                p,
                Some(t_send.saturating_sub(p.t_arrival)),
                "",
            );
        }
    }
}

/// Brings both directions to `now` (departures due, delay stage) and sends what is due:
/// once per loop turn, and once more at exit so the final statistics are current.
fn serve_both(
    dirs: [(&mut Pipeline, &PacketSocket, &mut DirState); 2],
    now: Nanos,
    batch: &mut Vec<Packet>,
    events: &mut Option<EventLog>,
) {
    let [(ab, out_b, st_ab), (ba, out_a, st_ba)] = dirs;
    ab.advance(now, events.as_mut());
    ba.advance(now, events.as_mut());
    transmit(ab, out_b, st_ab, now, batch, events.as_mut());
    transmit(ba, out_a, st_ba, now, batch, events.as_mut());
}

pub fn run(cfg: &Config, opts: &Options) -> Result<(), RunError> {
    let signals = Signals::install()?;
    clock::minimise_timer_slack();
    let sock_a = open(&cfg.iface_a, "interfaces.a", opts)?;
    let sock_b = open(&cfg.iface_b, "interfaces.b", opts)?;
    let mut events = match &cfg.events {
        None => None,
        Some(p) => Some(EventLog::create(p).map_err(|e| {
            fail(
                2,
                format!("events.path: cannot create {}: {e}", p.display()),
            )
        })?),
    };
    let start = clock::mono_ns();
    let mut stats = match &cfg.stats {
        None => None,
        Some(s) => Some(
            StatsWriter::create(&s.path, s.interval_ns, start).map_err(|e| {
                fail(
                    2,
                    format!("stats.path: cannot create {}: {e}", s.path.display()),
                )
            })?,
        ),
    };
    let seed = cfg.seed.unwrap_or_else(|| clock::real_ns() as u64);
    let passthrough = PipelineConfig::passthrough();
    let cfg_ab = cfg.a_to_b.as_ref().unwrap_or(&passthrough);
    let cfg_ba = cfg.b_to_a.as_ref().unwrap_or(&passthrough);
    // The discipline's MTU is the egress interface's, plus the Ethernet header (psched_mtu).
    let mut ab = Pipeline::new("a_to_b", cfg_ab, sock_b.mtu + 14, start, seed);
    let mut ba = Pipeline::new(
        "b_to_a",
        cfg_ba,
        sock_a.mtu + 14,
        start,
        seed.wrapping_add(1),
    );
    let (mut st_ab, mut st_ba) = (DirState::default(), DirState::default());
    let mut offset = clock::mono_to_real_offset();
    let mut next_offset_refresh = start + OFFSET_REFRESH_NS;
    if let Some(ev) = events.as_mut() {
        ev.mono_to_real_ns = offset;
    }
    eprintln!(
        "cga-emu: {} (mtu {}) <-> {} (mtu {}); a_to_b: {}; b_to_a: {}{}",
        cfg.iface_a,
        sock_a.mtu,
        cfg.iface_b,
        sock_b.mtu,
        if cfg.a_to_b.is_some() {
            describe(cfg_ab)
        } else {
            "pass-through".into()
        },
        if cfg.b_to_a.is_some() {
            describe(cfg_ba)
        } else {
            "pass-through".into()
        },
        if cfg.busy_poll { "; busy polling" } else { "" },
    );
    println!("cga-emu: ready");
    let _ = std::io::stdout().flush();

    let mut sock_a = sock_a;
    let mut sock_b = sock_b;
    let mut batch = Vec::with_capacity(256);
    let mut last_sig_check = start;
    let mut fds = [
        libc::pollfd {
            fd: sock_a.fd,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: sock_b.fd,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: signals.fd,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        let name_a = cfg.iface_a.as_str();
        let name_b = cfg.iface_b.as_str();
        sock_a.poll_rx(RX_BATCH, |fr| {
            ingest(fr, offset, &mut ab, &mut st_ab, name_a, events.as_mut())
        });
        sock_b.poll_rx(RX_BATCH, |fr| {
            ingest(fr, offset, &mut ba, &mut st_ba, name_b, events.as_mut())
        });

        let now = clock::mono_ns();
        serve_both(
            [
                (&mut ab, &sock_b, &mut st_ab),
                (&mut ba, &sock_a, &mut st_ba),
            ],
            now,
            &mut batch,
            &mut events,
        );

        if now >= next_offset_refresh {
            offset = clock::mono_to_real_offset();
            if let Some(ev) = events.as_mut() {
                ev.mono_to_real_ns = offset;
            }
            next_offset_refresh = now + OFFSET_REFRESH_NS;
        }
        if let Some(s) = stats.as_mut() {
            if now >= s.next {
                ab.note_ring_drops(sock_a.ring_drops());
                ba.note_ring_drops(sock_b.ring_drops());
                s.write(now as i64 + offset, now, &[&ab, &ba], false);
                s.next += s.interval_ns;
                if s.next <= now {
                    s.next = now + s.interval_ns;
                }
            }
        }

        let mut wake = next_offset_refresh;
        for w in [
            ab.next_wake(),
            ba.next_wake(),
            stats.as_ref().map(|s| s.next),
        ]
        .into_iter()
        .flatten()
        {
            wake = wake.min(w);
        }
        let now = clock::mono_ns();
        if cfg.busy_poll || wake.saturating_sub(now) <= opts.spin_ns {
            if now.saturating_sub(last_sig_check) > 1_000_000 {
                last_sig_check = now;
                if signals.pending() {
                    break;
                }
            }
            std::hint::spin_loop();
            continue;
        }
        let wait = wake.saturating_sub(now).saturating_sub(opts.spin_ns);
        let ts = libc::timespec {
            tv_sec: (wait / 1_000_000_000) as libc::time_t,
            tv_nsec: (wait % 1_000_000_000) as libc::c_long,
        };
        for f in fds.iter_mut() {
            f.revents = 0;
        }
        // SAFETY: fds and ts are live locals; no signal mask change.
        let rc = unsafe {
            libc::ppoll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                &ts,
                std::ptr::null(),
            )
        };
        if rc > 0 && fds[2].revents & libc::POLLIN != 0 && signals.pending() {
            break;
        }
    }

    // Final statistics: bring both pipelines to now so the counters are current.
    let now = clock::mono_ns();
    serve_both(
        [
            (&mut ab, &sock_b, &mut st_ab),
            (&mut ba, &sock_a, &mut st_ba),
        ],
        now,
        &mut batch,
        &mut events,
    );
    if let Some(s) = stats.as_mut() {
        ab.note_ring_drops(sock_a.ring_drops());
        ba.note_ring_drops(sock_b.ring_drops());
        s.write(
            now as i64 + clock::mono_to_real_offset(),
            now,
            &[&ab, &ba],
            true,
        );
    }
    if let Some(ev) = events.as_mut() {
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
    Ok(())
}
