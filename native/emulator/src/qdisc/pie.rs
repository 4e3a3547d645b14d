//! PIE (RFC 8033) as in Linux's sch_pie with its default timestamp-based delay estimate
//! (dq_rate_estimator off): drop (or, with `ecn`, mark while p <= 10 %) at enqueue with
//! probability p, updated every tupdate from the head packet's sojourn, with the RFC's
//! auto-scaled gains, burst allowance (150 ms), derandomisation and 2-MTU floor.

use super::{Backlog, Counters, Ctx, PacketQueue, Qdisc};
use crate::config::PieConfig;
use crate::json::ObjWriter;
use crate::packet::{Nanos, Packet};

const BURST_NS: u64 = 150_000_000;
const DELAY_250MS_NS: u64 = 250_000_000;

pub struct Pie {
    limit: usize,
    target_ns: u64,
    tupdate_ns: u64,
    alpha: f64,
    beta: f64,
    ecn: bool,
    bytemode: bool,
    mtu: u64,
    q: PacketQueue,
    pub prob: f64,
    qdelay_ns: u64,
    qdelay_old_ns: u64,
    burst_ns: u64,
    accu_prob: f64,
    dq_tstamp: Option<Nanos>,
    next_tick: Nanos,
    packets_in: u64,
    overlimit: u64,
    maxq: usize,
    ecn_mark: u64,
    c: Counters,
}

impl Pie {
    pub fn new(cfg: &PieConfig, mtu: u32, now: Nanos) -> Self {
        Pie {
            limit: cfg.limit,
            target_ns: cfg.target_ns,
            tupdate_ns: cfg.tupdate_ns,
            // tc gives alpha and beta in 1/16 Hz.
            alpha: cfg.alpha as f64 / 16.0,
            beta: cfg.beta as f64 / 16.0,
            ecn: cfg.ecn,
            bytemode: cfg.bytemode,
            mtu: mtu as u64,
            q: PacketQueue::default(),
            prob: 0.0,
            qdelay_ns: 0,
            qdelay_old_ns: 0,
            burst_ns: BURST_NS,
            accu_prob: 0.0,
            dq_tstamp: None,
            // The kernel's first update runs half a second after creation.
            next_tick: now + 500_000_000,
            packets_in: 0,
            overlimit: 0,
            maxq: 0,
            ecn_mark: 0,
            c: Counters::default(),
        }
    }

    fn drop_early(&mut self, packet_size: u64, ctx: &mut Ctx) -> bool {
        if self.burst_ns > 0 {
            return false;
        }
        if self.qdelay_ns < self.target_ns / 2 && self.prob < 0.2 {
            return false;
        }
        if self.q.bytes() < 2 * self.mtu {
            return false;
        }
        let local = if self.bytemode && packet_size <= self.mtu {
            self.prob * packet_size as f64 / self.mtu as f64
        } else {
            self.prob
        };
        if local == 0.0 {
            self.accu_prob = 0.0;
        } else {
            self.accu_prob += local;
        }
        if self.accu_prob < 0.85 {
            return false;
        }
        if self.accu_prob >= 8.5 {
            return true;
        }
        if ctx.rng.chance(local) {
            self.accu_prob = 0.0;
            return true;
        }
        false
    }

    fn calculate_probability(&mut self) {
        let qdelay = self.qdelay_ns;
        let qdelay_old = self.qdelay_old_ns;
        let backlog = self.q.bytes();
        let mut update_prob = !(qdelay == 0 && backlog != 0);
        let (mut alpha, mut beta) = (self.alpha, self.beta);
        if self.prob < 0.1 {
            alpha /= 2.0;
            beta /= 2.0;
            let mut power = 100.0;
            while self.prob < 1.0 / power && power <= 1e6 {
                alpha /= 4.0;
                beta /= 4.0;
                power *= 10.0;
            }
        }
        let mut delta = alpha * (qdelay as f64 - self.target_ns as f64) / 1e9
            + beta * (qdelay as f64 - qdelay_old as f64) / 1e9;
        if delta > 0.02 && self.prob >= 0.1 {
            delta = 0.02;
        }
        if qdelay > DELAY_250MS_NS {
            delta += 0.02;
        }
        self.prob += delta;
        if self.prob >= 1.0 {
            self.prob = 1.0;
            update_prob = false;
        }
        if self.prob < 0.0 {
            self.prob = 0.0;
        }
        if qdelay == 0 && qdelay_old == 0 && update_prob {
            self.prob -= self.prob / 64.0;
        }
        self.qdelay_ns = qdelay;
        if qdelay < self.target_ns / 2
            && self.qdelay_old_ns < self.target_ns / 2
            && self.prob == 0.0
        {
            // Restart the measurement cycle (pie_vars_init).
            self.burst_ns = BURST_NS;
            self.accu_prob = 0.0;
            self.dq_tstamp = None;
        }
        self.qdelay_old_ns = qdelay;
    }
}

impl Qdisc for Pie {
    fn kind(&self) -> &'static str {
        "pie"
    }

    fn enqueue(&mut self, mut p: Packet, now: Nanos, ctx: &mut Ctx) {
        if self.q.len() >= self.limit {
            self.overlimit += 1;
            self.c.overlimits += 1;
            self.accu_prob = 0.0;
            self.c.drop(ctx, p, now, "overlimit");
            return;
        }
        let enqueue = if !self.drop_early(p.len() as u64, ctx) {
            true
        } else if self.ecn && self.prob <= 0.1 && self.c.mark(ctx, &mut p, now, "pie") {
            self.ecn_mark += 1;
            true
        } else {
            false
        };
        if !enqueue {
            self.accu_prob = 0.0;
            self.c.drop(ctx, p, now, "aqm");
            return;
        }
        p.t_enqueue = now;
        self.packets_in += 1;
        self.maxq = self.maxq.max(self.q.len());
        self.q.push(p);
    }

    fn dequeue(&mut self, now: Nanos, _ctx: &mut Ctx) -> Option<Packet> {
        let p = self.q.pop()?;
        self.qdelay_ns = now.saturating_sub(p.t_enqueue);
        let dtime = self.dq_tstamp.map_or(0, |t| now.saturating_sub(t));
        self.dq_tstamp = Some(now);
        if self.q.is_empty() {
            self.qdelay_ns = 0;
        }
        if dtime > 0 {
            self.burst_ns = self.burst_ns.saturating_sub(dtime);
        }
        self.c.sent(&p);
        Some(p)
    }

    fn backlog(&self) -> Backlog {
        self.q.backlog()
    }

    fn counters(&self) -> &Counters {
        &self.c
    }

    fn next_timer(&self) -> Option<Nanos> {
        Some(self.next_tick)
    }

    fn on_timer(&mut self, now: Nanos) {
        self.calculate_probability();
        self.next_tick = now + self.tupdate_ns;
    }

    fn stats(&self, _now: Nanos, w: &mut ObjWriter) {
        w.f64("prob", self.prob)
            .u64("delay_us", self.qdelay_ns / 1000)
            .u64("pkts_in", self.packets_in)
            .u64("overlimit", self.overlimit)
            .u64("maxq", self.maxq as u64)
            .u64("ecn_mark", self.ecn_mark);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::testutil::pkt;
    use crate::qdisc::testutil::Harness;

    #[test]
    fn probability_rises_with_standing_delay_and_drops_follow() {
        let ms = 1_000_000u64;
        let mut h = Harness::new();
        let mut q = Pie::new(
            &PieConfig {
                limit: 1000,
                target_ns: 15 * ms,
                tupdate_ns: 15 * ms,
                alpha: 2,
                beta: 20,
                ecn: false,
                bytemode: false,
            },
            1514,
            0,
        );
        // 1 packet/ms link, 1.2 packets/ms offered: the queue and its delay grow.
        let mut t_next_tick = q.next_timer().unwrap();
        for t in 0..20_000u64 {
            let now = t * ms;
            while t_next_tick <= now {
                q.on_timer(t_next_tick);
                t_next_tick = q.next_timer().unwrap();
            }
            h.enq(&mut q, pkt(1500, 1, 0, t, now), now);
            if t % 5 == 0 {
                h.enq(&mut q, pkt(1500, 1, 0, t, now), now);
            }
            h.deq(&mut q, now);
        }
        assert!(q.prob > 0.0);
        assert!(h.totals.dropped > 100);
        // Delay is held near the 15 ms target, far from the 1000-packet buffer's 1 s.
        assert!(q.len() < 200, "queue {}", q.len());
    }
}
