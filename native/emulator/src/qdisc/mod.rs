//! Queue disciplines behind one trait, named and parameterised like the kernel's (tc).
//!
//! A discipline only decides which packet leaves next and which are dropped or CE-marked;
//! the link (rate or trace) decides when. Every call gets the current time explicitly, so
//! a discipline runs identically in the live emulator and in simulated-time unit tests.

use std::collections::VecDeque;
use std::iter::Sum;
use std::ops::{Add, Sub, SubAssign};

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
    /// Packets and bytes queued, over all of the discipline's queues.
    fn backlog(&self) -> Backlog;
    fn counters(&self) -> &Counters;
    fn len(&self) -> usize {
        self.backlog().packets
    }
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn backlog_bytes(&self) -> u64 {
        self.backlog().bytes
    }
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

/// Packets and bytes waiting: one queue's, or the total over a discipline's queues (kept
/// alongside them by the disciplines that hold many, so `len` never walks the flows).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Backlog {
    pub packets: usize,
    pub bytes: u64,
}

impl Backlog {
    /// `p` joined the queue(s).
    pub fn add_packet(&mut self, p: &Packet) {
        self.packets += 1;
        self.bytes += p.len() as u64;
    }

    /// `p` left the queue(s), sent or dropped.
    pub fn remove_packet(&mut self, p: &Packet) {
        self.packets -= 1;
        self.bytes -= p.len() as u64;
    }
}

impl Add for Backlog {
    type Output = Backlog;
    fn add(self, o: Backlog) -> Backlog {
        Backlog {
            packets: self.packets + o.packets,
            bytes: self.bytes + o.bytes,
        }
    }
}

impl Sub for Backlog {
    type Output = Backlog;
    fn sub(self, o: Backlog) -> Backlog {
        Backlog {
            packets: self.packets - o.packets,
            bytes: self.bytes - o.bytes,
        }
    }
}

impl SubAssign for Backlog {
    fn sub_assign(&mut self, o: Backlog) {
        *self = *self - o;
    }
}

impl Sum for Backlog {
    fn sum<I: Iterator<Item = Backlog>>(iter: I) -> Backlog {
        iter.fold(Backlog::default(), Add::add)
    }
}

/// A FIFO of packets that tracks its byte backlog.
#[derive(Default)]
pub struct PacketQueue {
    q: VecDeque<Packet>,
    backlog: Backlog,
}

impl PacketQueue {
    pub fn push(&mut self, p: Packet) {
        self.backlog.add_packet(&p);
        self.q.push_back(p);
    }
    pub fn push_front(&mut self, p: Packet) {
        self.backlog.add_packet(&p);
        self.q.push_front(p);
    }
    pub fn pop(&mut self) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.backlog.remove_packet(&p);
        Some(p)
    }
    pub fn pop_back(&mut self) -> Option<Packet> {
        let p = self.q.pop_back()?;
        self.backlog.remove_packet(&p);
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
        self.backlog.bytes
    }
    pub fn backlog(&self) -> Backlog {
        self.backlog
    }
    pub fn drain(&mut self) -> impl Iterator<Item = Packet> + '_ {
        self.backlog = Backlog::default();
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
