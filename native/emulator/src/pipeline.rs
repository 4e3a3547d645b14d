//! One direction: random loss -> queue discipline -> link (rate or trace) -> delay line.
//!
//! The pipeline is a discrete-event simulation driven by real timestamps: a frame enters at
//! its kernel receive time, and `advance(t)` runs every link service and discipline timer
//! up to `t` in time order. Frames read late (the emulator slept) are still enqueued at the
//! time they arrived, so the queue's behaviour does not depend on when the process woke up;
//! only the moment a frame is physically written out does.

use std::collections::VecDeque;

use crate::config::{PipelineConfig, RateConfig};
use crate::events::EventLog;
use crate::json::ObjWriter;
use crate::link::Link;
use crate::packet::{Nanos, Packet};
use crate::qdisc::{self, Ctx, Qdisc, Totals};
use crate::rng::Rng;

#[derive(Debug, Default, Clone)]
pub struct Traffic {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub tx_errors: u64,
    pub loss_dropped: u64,
    /// Arrivals that found the link busy or packets already waiting.
    pub waited: u64,
    /// Frames the kernel dropped because the receive ring was full.
    pub rx_ring_drops: u64,
    /// Frames that could not be forwarded whole (larger than the ring slot / MTU).
    pub rx_oversize: u64,
}

pub struct Pipeline {
    pub dir: &'static str,
    qdisc: Box<dyn Qdisc>,
    link: Link,
    rate_desc: RateDesc,
    loss: f64,
    delay_ns: u64,
    jitter_ns: u64,
    delayed: VecDeque<(Nanos, Packet)>,
    last_due: Nanos,
    rng: Rng,
    pub totals: Totals,
    pub traffic: Traffic,
    next_id: u64,
    clock: Nanos,
    departures: Vec<(Packet, Nanos)>,
}

enum RateDesc {
    Line,
    Mbit(f64),
    Trace {
        path: String,
        scale: f64,
        mean_mbit: f64,
    },
}

impl Pipeline {
    pub fn new(dir: &'static str, cfg: &PipelineConfig, mtu: u32, now: Nanos, seed: u64) -> Self {
        let (link, rate_desc) = match &cfg.rate {
            RateConfig::Line => (Link::line(now), RateDesc::Line),
            RateConfig::Fixed { bit_per_s } => (
                Link::fixed(*bit_per_s, now),
                RateDesc::Mbit(bit_per_s / 1e6),
            ),
            RateConfig::Trace { path, scale, trace } => (
                Link::trace(trace.clone(), *scale, now),
                RateDesc::Trace {
                    path: path.display().to_string(),
                    scale: *scale,
                    mean_mbit: trace.mean_mbit() * scale,
                },
            ),
        };
        Pipeline {
            dir,
            qdisc: qdisc::build(&cfg.qdisc, mtu, now, seed),
            link,
            rate_desc,
            loss: cfg.loss,
            delay_ns: cfg.delay_ns,
            jitter_ns: cfg.jitter_ns,
            delayed: VecDeque::new(),
            last_due: 0,
            rng: Rng::new(seed ^ 0x5eed),
            totals: Totals::default(),
            traffic: Traffic::default(),
            next_id: 0,
            clock: now,
            departures: Vec::new(),
        }
    }

    /// A frame arrived at `t` (clamped so time never runs backwards).
    pub fn arrive(&mut self, data: Vec<u8>, t: Nanos, mut events: Option<&mut EventLog>) {
        let t = t.max(self.clock);
        self.advance(t, events.as_deref_mut());
        let p = Packet::new(data, self.next_id, t);
        self.next_id += 1;
        self.traffic.rx_packets += 1;
        self.traffic.rx_bytes += p.len() as u64;
        let mut ctx = Ctx {
            rng: &mut self.rng,
            totals: &mut self.totals,
            events: events.as_deref_mut(),
            dir: self.dir,
        };
        if ctx.rng.chance(self.loss) {
            self.traffic.loss_dropped += 1;
            ctx.totals.dropped += 1;
            ctx.record(t, "drop", &p, None, "loss");
            return;
        }
        ctx.record(t, "enqueue", &p, None, "");
        let idle = self.qdisc.is_empty() && !self.link.busy();
        if !idle || self.link.is_busy_at(t) {
            self.traffic.waited += 1;
        }
        if idle {
            self.link.wake(t);
        }
        self.qdisc.enqueue(p, t, &mut ctx);
        self.advance(t, events);
    }

    /// Runs link services and discipline timers due up to `t`, in time order.
    pub fn advance(&mut self, t: Nanos, mut events: Option<&mut EventLog>) {
        loop {
            let svc = self.link.next_service(!self.qdisc.is_empty());
            let tmr = self.qdisc.next_timer();
            let next = match (svc, tmr) {
                (Some(s), Some(m)) => s.min(m),
                (Some(s), None) => s,
                (None, Some(m)) => m,
                (None, None) => break,
            };
            if next > t {
                break;
            }
            if tmr == Some(next) {
                self.qdisc.on_timer(next);
                continue;
            }
            let mut ctx = Ctx {
                rng: &mut self.rng,
                totals: &mut self.totals,
                events: events.as_deref_mut(),
                dir: self.dir,
            };
            self.link
                .serve(next, self.qdisc.as_mut(), &mut ctx, &mut self.departures);
            for (p, t_dep) in self.departures.drain(..) {
                ctx.record(
                    t_dep,
                    "dequeue",
                    &p,
                    Some(t_dep.saturating_sub(p.t_arrival)),
                    "",
                );
                let mut due = t_dep + self.delay_ns;
                if self.jitter_ns > 0 {
                    let j = (ctx.rng.f64() * 2.0 - 1.0) * self.jitter_ns as f64;
                    due = (due as i64 + j as i64).max(t_dep as i64) as Nanos;
                }
                // Never reorder: a frame leaves no earlier than the one before it.
                due = due.max(self.last_due);
                self.last_due = due;
                self.delayed.push_back((due, p));
            }
        }
        self.clock = self.clock.max(t);
    }

    /// The next frame whose time to leave has come, if any.
    pub fn pop_due(&mut self, now: Nanos) -> Option<(Nanos, Packet)> {
        if self.delayed.front().is_some_and(|(due, _)| *due <= now) {
            self.delayed.pop_front()
        } else {
            None
        }
    }

    /// When something next has to happen on the wire: a frame due, or a departure.
    pub fn next_wake(&self) -> Option<Nanos> {
        let due = self.delayed.front().map(|(d, _)| *d);
        let svc = self.link.next_service(!self.qdisc.is_empty());
        match (due, svc) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A frame that arrived but cannot be forwarded (too big): counted and logged as a drop.
    pub fn drop_unforwardable(
        &mut self,
        p: Packet,
        t: Nanos,
        events: Option<&mut EventLog>,
        why: &str,
    ) {
        self.traffic.rx_packets += 1;
        self.traffic.rx_bytes += p.len() as u64;
        self.traffic.rx_oversize += 1;
        self.totals.dropped += 1;
        if let Some(ev) = events {
            ev.record(t, "drop", self.dir, &p, None, why);
        }
    }

    /// Frames lost in the receive ring: the emulator never saw them, the captures did.
    pub fn note_ring_drops(&mut self, n: u64) {
        self.traffic.rx_ring_drops += n;
        self.totals.dropped += n;
    }

    pub fn note_sent(&mut self, p: &Packet) {
        self.traffic.tx_packets += 1;
        self.traffic.tx_bytes += p.len() as u64;
    }

    /// One statistics object (without the time stamp, added by the caller).
    pub fn stats(&self, now: Nanos, w: &mut ObjWriter) {
        let c = self.qdisc.counters();
        w.str("direction", self.dir)
            .u64("sent_bytes", c.sent_bytes)
            .u64("sent_packets", c.sent_packets)
            .u64("dropped", self.totals.dropped)
            .u64("overlimits", self.traffic.waited + c.overlimits)
            .u64("marked", self.totals.marked)
            .u64("backlog_bytes", self.qdisc.backlog_bytes())
            .u64("backlog_packets", self.qdisc.len() as u64)
            .str("qdisc", self.qdisc.kind())
            .u64("rx_packets", self.traffic.rx_packets)
            .u64("rx_bytes", self.traffic.rx_bytes)
            .u64("tx_packets", self.traffic.tx_packets)
            .u64("tx_bytes", self.traffic.tx_bytes)
            .u64("tx_errors", self.traffic.tx_errors)
            .u64("loss_dropped", self.traffic.loss_dropped)
            .u64("rx_ring_drops", self.traffic.rx_ring_drops)
            .u64("rx_oversize", self.traffic.rx_oversize)
            .u64("delay_line_packets", self.delayed.len() as u64);
        match &self.rate_desc {
            RateDesc::Line => {
                w.str("rate", "line");
            }
            RateDesc::Mbit(m) => {
                w.f64("rate_mbit", *m);
            }
            RateDesc::Trace {
                path,
                scale,
                mean_mbit,
            } => {
                w.str("trace", path)
                    .f64("trace_scale", *scale)
                    .f64("trace_mean_mbit", *mean_mbit);
                if let Some(b) = self.link.offered_bytes() {
                    w.u64("trace_offered_bytes", b as u64);
                }
            }
        }
        self.qdisc.stats(now, w);
    }

    pub fn queued(&self) -> usize {
        self.qdisc.len() + self.delayed.len()
    }
}

#[cfg(test)]
mod tests;
