//! Queue disciplines behind one trait, named and parameterised like the kernel's (tc).
//!
//! A discipline only decides which packet leaves next and which are dropped or CE-marked;
//! the link (rate or trace) decides when. Every call gets the current time explicitly, so
//! a discipline runs identically in the live emulator and in simulated-time unit tests.

use std::collections::VecDeque;

use crate::config::QdiscConfig;
use crate::events::EventLog;
use crate::json::ObjWriter;
use crate::packet::{Nanos, Packet};
use crate::rng::Rng;

pub mod codel;
pub mod drr;
pub mod dualpi2;
pub mod fifo;
pub mod fq_codel;
pub mod htb;
pub mod pie;
pub mod sfq;
pub mod sqf;

/// Totals of one direction, and where drop/mark events go.
#[derive(Debug, Default, Clone)]
pub struct Totals {
    pub dropped: u64,
    pub marked: u64,
}

/// What a discipline needs from its surroundings besides the clock.
pub struct Ctx<'a> {
    pub rng: &'a mut Rng,
    pub totals: &'a mut Totals,
    pub events: Option<&'a mut EventLog>,
    pub dir: &'static str,
}

impl Ctx<'_> {
    pub fn record(&mut self, t: Nanos, event: &str, p: &Packet, sojourn: Option<u64>, why: &str) {
        if let Some(ev) = self.events.as_deref_mut() {
            ev.record(t, event, self.dir, p, sojourn, why);
        }
    }
}

/// The per-discipline counters that `tc -s` shows.
#[derive(Debug, Default, Clone)]
pub struct Counters {
    pub sent_bytes: u64,
    pub sent_packets: u64,
    pub dropped: u64,
    pub marked: u64,
    pub overlimits: u64,
}

impl Counters {
    pub fn drop(&mut self, ctx: &mut Ctx, p: Packet, t: Nanos, reason: &str) {
        self.dropped += 1;
        ctx.totals.dropped += 1;
        ctx.record(t, "drop", &p, None, reason);
    }

    /// CE-marks `p` if it is ECN-capable; false means the caller must drop it instead.
    pub fn mark(&mut self, ctx: &mut Ctx, p: &mut Packet, t: Nanos, reason: &str) -> bool {
        if !p.set_ce() {
            return false;
        }
        self.marked += 1;
        ctx.totals.marked += 1;
        ctx.record(t, "mark", p, None, reason);
        true
    }

    pub fn sent(&mut self, p: &Packet) {
        self.sent_bytes += p.len() as u64;
        self.sent_packets += 1;
    }
}

pub trait Qdisc {
    fn kind(&self) -> &'static str;
    /// Takes the packet (or drops it, reporting through `ctx`). Sets `p.t_enqueue = now`.
    fn enqueue(&mut self, p: Packet, now: Nanos, ctx: &mut Ctx);
    /// The next packet to send at `now`, or None (empty, everything dropped, or throttled).
    fn dequeue(&mut self, now: Nanos, ctx: &mut Ctx) -> Option<Packet>;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn backlog_bytes(&self) -> u64;
    fn counters(&self) -> &Counters;
    /// When a non-empty discipline that returned None (shaped classes) can send again.
    fn next_ready(&self, _now: Nanos) -> Option<Nanos> {
        None
    }
    /// The next periodic update (DualPI2's and PIE's probability), if any.
    fn next_timer(&self) -> Option<Nanos> {
        None
    }
    fn on_timer(&mut self, _now: Nanos) {}
    /// Kind-specific statistics, named like `tc -s -j`.
    fn stats(&self, _now: Nanos, _w: &mut ObjWriter) {}
}

/// A FIFO of packets that tracks its byte backlog.
#[derive(Default)]
pub struct PacketQueue {
    q: VecDeque<Packet>,
    bytes: u64,
}

impl PacketQueue {
    pub fn push(&mut self, p: Packet) {
        self.bytes += p.len() as u64;
        self.q.push_back(p);
    }
    pub fn push_front(&mut self, p: Packet) {
        self.bytes += p.len() as u64;
        self.q.push_front(p);
    }
    pub fn pop(&mut self) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.len() as u64;
        Some(p)
    }
    pub fn pop_back(&mut self) -> Option<Packet> {
        let p = self.q.pop_back()?;
        self.bytes -= p.len() as u64;
        Some(p)
    }
    pub fn front(&self) -> Option<&Packet> {
        self.q.front()
    }
    pub fn len(&self) -> usize {
        self.q.len()
    }
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn drain(&mut self) -> impl Iterator<Item = Packet> + '_ {
        self.bytes = 0;
        self.q.drain(..)
    }
}

/// Builds a discipline from its configuration. `mtu` is the egress interface's MTU plus the
/// Ethernet header (the kernel's psched_mtu), `now` the start time (first timer ticks).
pub fn build(cfg: &QdiscConfig, mtu: u32, now: Nanos, seed: u64) -> Box<dyn Qdisc> {
    match cfg {
        QdiscConfig::Pfifo { limit } => Box::new(fifo::Fifo::pfifo(*limit)),
        QdiscConfig::Bfifo { limit_bytes } => Box::new(fifo::Fifo::bfifo(*limit_bytes)),
        QdiscConfig::Sfq(c) => Box::new(sfq::Sfq::new(c, mtu, now, seed)),
        QdiscConfig::DualPi2(c) => Box::new(dualpi2::DualPi2::new(c, mtu, now)),
        QdiscConfig::Codel(c) => Box::new(codel::Codel::new(c, mtu)),
        QdiscConfig::FqCodel(c) => Box::new(fq_codel::FqCodel::new(c, mtu, seed)),
        QdiscConfig::Sqf(c) => Box::new(sqf::Sqf::new(c)),
        QdiscConfig::Drr(c) => Box::new(drr::Drr::new(c, mtu, seed)),
        QdiscConfig::Pie(c) => Box::new(pie::Pie::new(c, mtu, now)),
        QdiscConfig::Htb(c) => Box::new(htb::Htb::new(c, mtu, now, seed)),
    }
}

#[cfg(test)]
pub mod testutil {
    //! Drives a discipline in simulated time.
    use super::*;

    pub struct Harness {
        pub rng: Rng,
        pub totals: Totals,
    }

    impl Default for Harness {
        fn default() -> Self {
            Self::new()
        }
    }

    impl Harness {
        pub fn new() -> Self {
            Harness {
                rng: Rng::new(42),
                totals: Totals::default(),
            }
        }
        pub fn ctx(&mut self) -> Ctx<'_> {
            Ctx {
                rng: &mut self.rng,
                totals: &mut self.totals,
                events: None,
                dir: "test",
            }
        }
        pub fn enq(&mut self, q: &mut dyn Qdisc, p: Packet, t: Nanos) {
            let mut c = self.ctx();
            q.enqueue(p, t, &mut c);
        }
        pub fn deq(&mut self, q: &mut dyn Qdisc, t: Nanos) -> Option<Packet> {
            let mut c = self.ctx();
            q.dequeue(t, &mut c)
        }
    }
}
