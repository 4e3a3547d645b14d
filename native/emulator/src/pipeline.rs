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
mod tests {
    use super::*;
    use crate::config::{self, QdiscConfig};
    use crate::link::Trace;
    use crate::packet::testutil::udp4;

    fn pipe(rate: RateConfig, qdisc: QdiscConfig, delay_ns: u64) -> Pipeline {
        let cfg = PipelineConfig {
            rate,
            qdisc,
            delay_ns,
            jitter_ns: 0,
            loss: 0.0,
        };
        Pipeline::new("a_to_b", &cfg, 1514, 0, 1)
    }

    /// Offers `offered_mbit` of 1514-byte frames for `secs`, advancing the clock in steps of
    /// `wake_ns` as a late-waking process would; returns the delivered Mbit/s.
    fn delivered(p: &mut Pipeline, offered_mbit: f64, secs: f64, wake_ns: u64) -> f64 {
        let gap = 1514.0 * 8.0 / offered_mbit * 1e3; // ns
        let end = (secs * 1e9) as u64;
        let (mut t_arr, mut now, mut bytes) = (0.0f64, 0u64, 0u64);
        let mut first: Option<Nanos> = None;
        let mut last = 0;
        while now < end {
            now += wake_ns;
            while t_arr <= now as f64 {
                p.arrive(udp4(1514, 1, 2, 0), t_arr as u64, None);
                t_arr += gap;
            }
            p.advance(now, None);
            while let Some((due, pk)) = p.pop_due(now) {
                if due > end / 10 {
                    first.get_or_insert(due);
                    bytes += pk.len() as u64;
                    last = due;
                }
            }
        }
        bytes as f64 * 8.0 / ((last - first.unwrap()) as f64 / 1e9) / 1e6
    }

    #[test]
    fn fixed_rate_is_exact_despite_late_wakeups() {
        // 80 Mbit/s offered to 50 Mbit/s, waking only every 1.7 ms: still 50.0 Mbit/s.
        let mut p = pipe(
            RateConfig::Fixed { bit_per_s: 50e6 },
            QdiscConfig::Pfifo { limit: 250 },
            0,
        );
        let mbit = delivered(&mut p, 80.0, 10.0, 1_700_000);
        assert!((mbit / 50.0 - 1.0).abs() < 0.001, "{mbit}");
        assert!(p.totals.dropped > 0);
    }

    #[test]
    fn trace_rate_matches_its_mean_and_scale() {
        // 1 opportunity per ms = 1504 B/ms; scaled by 2: two 1500-byte IP packets (each
        // counting 1504 with mahimahi's TUN header) per ms, 24 Mbit/s of IP bytes.
        let text: String = (1..=1000).map(|i| format!("{i}\n")).collect();
        let trace = Trace::parse(&text).unwrap();
        let rate = RateConfig::Trace {
            path: "t".into(),
            scale: 2.0,
            trace,
        };
        let mut p = pipe(rate, QdiscConfig::Pfifo { limit: 1000 }, 0);
        let mbit = delivered(&mut p, 40.0, 5.0, 300_000);
        // Frames are 1514 B on the wire but count 1504 B against the trace.
        let expected = 2.0 * 12.0 * 1514.0 / 1500.0;
        assert!(
            (mbit / expected - 1.0).abs() < 0.002,
            "{mbit} vs {expected}"
        );
    }

    #[test]
    fn delay_line_adds_exactly_the_delay() {
        let mut p = pipe(
            RateConfig::Line,
            QdiscConfig::Pfifo { limit: 1000 },
            30_000_000,
        );
        for i in 0..100u64 {
            p.arrive(udp4(200, 1, 2, 0), i * 1_000_000, None);
        }
        p.advance(200_000_000, None);
        let mut n = 0;
        while let Some((due, pk)) = p.pop_due(200_000_000) {
            assert_eq!(due - pk.t_arrival, 30_000_000);
            n += 1;
        }
        assert_eq!(n, 100);
    }

    #[test]
    fn idle_link_keeps_no_credit() {
        // A lone frame on an idle link leaves when it arrives; back-to-back frames are paced.
        let mut p = pipe(
            RateConfig::Fixed { bit_per_s: 10e6 },
            QdiscConfig::Pfifo { limit: 10 },
            0,
        );
        for _ in 0..3 {
            p.arrive(udp4(1250, 1, 2, 0), 5_000_000_000, None);
        }
        p.advance(6_000_000_000, None);
        let dues: Vec<Nanos> = std::iter::from_fn(|| p.pop_due(6_000_000_000))
            .map(|(d, _)| d)
            .collect();
        assert_eq!(dues, vec![5_000_000_000, 5_001_000_000, 5_002_000_000]);
    }

    /// HTB (CG class 10 Mbit/s prio 0 on port 30002, best effort 20 prio 1, both with
    /// `ceil` and `cburst`) over a trace of one opportunity per ms scaled by `scale`; CG
    /// offers 6 Mbit/s, best effort is backlogged. Returns (CG, best effort, trace) Mbit/s.
    fn htb_over_trace(scale: f64, ceil: f64, cburst: Option<u64>) -> (f64, f64, f64) {
        let text: String = (1..=1000).map(|i| format!("{i}\n")).collect();
        let rate = RateConfig::Trace {
            path: "t".into(),
            scale,
            trace: Trace::parse(&text).unwrap(),
        };
        let cb = cburst.map_or(String::new(), |b| format!(r#", "cburst_bytes": {b}"#));
        let q = config::qdisc(
            "q",
            &crate::json::parse(&format!(
                r#"{{"kind": "htb", "default": "20", "classes": [
                {{"classid": "10", "rate_mbit": 10, "ceil_mbit": {ceil}, "prio": 0{cb},
                  "match": {{"proto": "udp", "port": 30002}}}},
                {{"classid": "20", "rate_mbit": 20, "ceil_mbit": {ceil}, "prio": 1{cb}}}]}}"#
            ))
            .unwrap(),
            false,
        )
        .unwrap();
        let mut p = pipe(rate, q, 0);
        let (secs, mut bytes) = (5u64, [0u64; 2]);
        let cg_gap = 1514 * 8 * 1000 / 6; // ns between CG frames at 6 Mbit/s
        let (mut next_cg, mut next_be) = (0u64, 0u64);
        for ms in 0..secs * 1000 {
            let now = (ms + 1) * 1_000_000;
            while next_cg < now {
                p.arrive(udp4(1514, 30001, 30002, 0), next_cg, None);
                next_cg += cg_gap;
            }
            while p.queued() < 200 {
                p.arrive(udp4(1514, 40000, 5201, 0), next_be.max(now - 1), None);
                next_be += 100_000;
            }
            p.advance(now, None);
            while let Some((due, pk)) = p.pop_due(now) {
                if due > 1_000_000_000 {
                    let cg = pk.meta.dport == 30002;
                    bytes[usize::from(!cg)] += pk.len() as u64;
                }
            }
        }
        let mbit = |b: u64| b as f64 * 8.0 / (secs - 1) as f64 / 1e6;
        let trace = scale * 12.032 * 1514.0 / 1500.0;
        (mbit(bytes[0]), mbit(bytes[1]), trace)
    }

    /// The CG class got all it offered (6 Mbit/s) and the two classes the whole trace.
    fn assert_cg_first_and_trace_used((cg, be, trace): (f64, f64, f64)) {
        assert!((cg / 6.0 - 1.0).abs() < 0.03, "CG {cg} Mbit/s");
        let total = cg + be;
        assert!(
            (total / trace - 1.0).abs() < 0.03,
            "total {total} of {trace}"
        );
    }

    #[test]
    fn htb_over_a_trace_serves_the_guaranteed_class_first() {
        // A 12 Mbit/s trace under an HTB provisioned for 50 Mbit/s: the prio-0 class gets
        // all it offers, best effort what the trace has left, together the whole trace.
        assert_cg_first_and_trace_used(htb_over_trace(1.0, 50.0, None));
    }

    #[test]
    fn htb_over_a_bursty_trace_needs_buckets_that_hold_an_opportunity() {
        // Scaled x4, each opportunity carries four packets at one instant. Default buckets
        // (about one packet) let one packet out per instant and the rest of the opportunity
        // is lost; buckets that hold the burst use the whole trace.
        let (cg, be, trace) = htb_over_trace(4.0, 10_000.0, None);
        assert!(
            (cg + be) / trace < 0.75,
            "default buckets: {} of {trace}",
            cg + be
        );
        assert_cg_first_and_trace_used(htb_over_trace(4.0, 10_000.0, Some(1_000_000)));
    }

    #[test]
    fn dualpi2_over_a_trace_marks() {
        let text: String = (1..=1000).map(|i| format!("{i}\n")).collect();
        let rate = RateConfig::Trace {
            path: "t".into(),
            scale: 1.0,
            trace: Trace::parse(&text).unwrap(),
        };
        let q = config::qdisc(
            "q",
            &crate::json::parse(r#"{"kind": "dualpi2", "limit": 1000}"#).unwrap(),
            false,
        )
        .unwrap();
        let mut p = pipe(rate, q, 0);
        for i in 0..20_000u64 {
            // 2 frames per ms of ECT(1) into a 1 frame/ms trace: the step AQM marks.
            p.arrive(udp4(1514, 1, 2, 1), i * 500_000, None);
        }
        p.advance(20_000_000_000, None);
        assert!(p.totals.marked > 1000, "marked {}", p.totals.marked);
    }
}
