//! Opening everything the loop needs: the stop signals, both interfaces' rings, the event
//! and statistics logs, and both directions' pipelines; then the line saying what runs.

use std::io::Write;

use super::forward::DirState;
use super::signals::Signals;
use super::{fail, Emulator, Options, RunError, OFFSET_REFRESH_NS};
use crate::clock;
use crate::config::{Config, PipelineConfig, RateConfig};
use crate::events::EventLog;
use crate::io::{OpenError, PacketSocket};
use crate::pipeline::Pipeline;
use crate::stats::StatsWriter;

fn open_socket(ifname: &str, key: &str, opts: &Options) -> Result<PacketSocket, RunError> {
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

fn pollfd(fd: libc::c_int) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

impl<'a> Emulator<'a> {
    /// Signals, both interfaces, the logs and both pipelines; every failure is a RunError.
    pub(super) fn open(cfg: &'a Config, opts: &'a Options) -> Result<Self, RunError> {
        let signals = Signals::install()?;
        clock::minimise_timer_slack();
        let sock_a = open_socket(&cfg.iface_a, "interfaces.a", opts)?;
        let sock_b = open_socket(&cfg.iface_b, "interfaces.b", opts)?;
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
        let stats = match &cfg.stats {
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
        let ab = Pipeline::new("a_to_b", cfg_ab, sock_b.mtu + 14, start, seed);
        let ba = Pipeline::new(
            "b_to_a",
            cfg_ba,
            sock_a.mtu + 14,
            start,
            seed.wrapping_add(1),
        );
        let offset = clock::mono_to_real_offset();
        if let Some(ev) = events.as_mut() {
            ev.mono_to_real_ns = offset;
        }
        let fds = [pollfd(sock_a.fd), pollfd(sock_b.fd), pollfd(signals.fd)];
        Ok(Emulator {
            cfg,
            opts,
            signals,
            sock_a,
            sock_b,
            ab,
            ba,
            st_ab: DirState::default(),
            st_ba: DirState::default(),
            events,
            stats,
            offset,
            next_offset_refresh: start + OFFSET_REFRESH_NS,
            batch: Vec::with_capacity(256),
            last_sig_check: start,
            fds,
        })
    }

    /// What runs in each direction, then "ready" on stdout (what the caller waits for).
    pub(super) fn announce(&self) {
        let cfg = self.cfg;
        let direction = |p: &Option<PipelineConfig>| match p {
            Some(p) => describe(p),
            None => "pass-through".into(),
        };
        eprintln!(
            "cga-emu: {} (mtu {}) <-> {} (mtu {}); a_to_b: {}; b_to_a: {}{}",
            cfg.iface_a,
            self.sock_a.mtu,
            cfg.iface_b,
            self.sock_b.mtu,
            direction(&cfg.a_to_b),
            direction(&cfg.b_to_a),
            if cfg.busy_poll { "; busy polling" } else { "" },
        );
        println!("cga-emu: ready");
        let _ = std::io::stdout().flush();
    }
}
