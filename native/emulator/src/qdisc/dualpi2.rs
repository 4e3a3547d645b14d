//! DualPI2 (RFC 9332), with the behaviour of Linux's sch_dualpi2 (>= 6.17):
//!
//! - ECT(1) and CE go to the L queue (`l4s_ect`; with `any_ect` ECT(0) too), the rest to C.
//! - A PI controller updates the base probability p' every tupdate from the larger of the two
//!   head sojourn times: p' += alpha (qdelay - target) + beta (qdelay - qdelay_prev).
//! - C packets are dropped (Not-ECT) or marked (ECT) with p'^2; L packets are marked with
//!   k p' (coupling) and, at dequeue, whenever their L-queue sojourn exceeds step_thresh.
//! - Overload (k p' > 1): C packets are dropped even if ECT; with drop_on_overload L packets
//!   are dropped with p'^2 and the rest marked; without it p' is capped at 1/k.
//! - No probabilistic drop or mark while the total backlog is under 2 MTU.
//! - A WRR credit scheduler gives L priority but keeps classic_protection % for C.
//!
//! Probabilities are f64 here (the kernel uses 32-bit fixed point); alpha and beta are
//! truncated to 1/256 Hz as tc does when it sends them to the kernel (so `alpha 0.16` is
//! 40/256 Hz), and default to the kernel's own 41/256 and 819/256 Hz.

use super::{Counters, Ctx, PacketQueue, Qdisc};
use crate::config::{DualPi2Config, StepThresh};
use crate::json::ObjWriter;
use crate::packet::{Nanos, Packet};

const TAG_L4S: u32 = 1;
const TAG_APPLY_STEP: u32 = 2;
/// Memory charged per packet on top of its bytes, standing in for the kernel's skb truesize.
pub const SKB_OVERHEAD: u64 = 576;

pub struct DualPi2 {
    limit: usize,
    memory_limit: u64,
    target_ns: u64,
    tupdate_ns: u64,
    alpha: f64,
    beta: f64,
    k: f64,
    step: StepThresh,
    min_qlen_step: usize,
    drop_overload: bool,
    drop_early: bool,
    ecn_mask: u8,
    wc: i64,
    wl: i64,
    credit_init: i64,
    mtu: u64,

    l: PacketQueue,
    c: PacketQueue,
    /// Base probability p' in [0, 1].
    pub prob: f64,
    last_qdelay_ns: u64,
    next_tick: Nanos,
    credit: i64,
    memory_used: u64,
    max_memory_used: u64,
    packets_in_c: u64,
    packets_in_l: u64,
    maxq: usize,
    ecn_mark: u64,
    step_marks: u64,
    cnt: Counters,
}

/// A gain as the kernel receives it from tc: a whole number of 1/256 Hz.
fn tc_gain(hz: Option<f64>, kernel_default_256ths: u32) -> f64 {
    hz.map_or(kernel_default_256ths as f64, |h| {
        (h * 256.0).floor().max(1.0)
    }) / 256.0
}

impl DualPi2 {
    pub fn new(cfg: &DualPi2Config, mtu: u32, now: Nanos) -> Self {
        let mtu = mtu as u64;
        let wc = cfg.classic_protection as i64;
        let wl = 100 - wc;
        let credit_init = mtu as i64 * (wc - wl);
        DualPi2 {
            limit: cfg.limit,
            memory_limit: cfg.memlimit_bytes.unwrap_or(cfg.limit as u64 * 2 * mtu),
            target_ns: cfg.target_ns,
            tupdate_ns: cfg.tupdate_ns,
            alpha: tc_gain(cfg.alpha, 41),
            beta: tc_gain(cfg.beta, 819),
            k: cfg.coupling_factor as f64,
            step: cfg.step_thresh,
            min_qlen_step: cfg.min_qlen_step,
            drop_overload: cfg.drop_on_overload,
            drop_early: cfg.drop_enqueue,
            ecn_mask: if cfg.l4s_ect { 1 } else { 3 },
            wc,
            wl,
            credit_init,
            mtu,
            l: PacketQueue::default(),
            c: PacketQueue::default(),
            prob: 0.0,
            last_qdelay_ns: 0,
            next_tick: now + cfg.tupdate_ns,
            credit: credit_init,
            memory_used: 0,
            max_memory_used: 0,
            packets_in_c: 0,
            packets_in_l: 0,
            maxq: 0,
            ecn_mark: 0,
            step_marks: 0,
            cnt: Counters::default(),
        }
    }

    fn is_l4s(&self, p: &Packet) -> bool {
        p.meta.l3_off > 0 && p.meta.ecn & self.ecn_mask != 0
    }

    fn truesize(p: &Packet) -> u64 {
        p.len() as u64 + SKB_OVERHEAD
    }

    fn backlog(&self) -> u64 {
        self.l.bytes() + self.c.bytes()
    }

    fn mark(&mut self, ctx: &mut Ctx, p: &mut Packet, now: Nanos, why: &str) -> bool {
        let ok = self.cnt.mark(ctx, p, now, why);
        if ok {
            self.ecn_mark += 1;
        }
        ok
    }

    /// The probabilistic AQM decision; true means drop. Marks in place when it marks.
    fn must_drop(&mut self, ctx: &mut Ctx, p: &mut Packet, now: Nanos) -> bool {
        if self.backlog() < 2 * self.mtu {
            return false;
        }
        let prob = self.prob;
        let local_l_prob = prob * self.k;
        let overload = local_l_prob > 1.0;
        if p.tag & TAG_L4S == 0 {
            if ctx.rng.chance(prob) && ctx.rng.chance(prob) {
                if overload || !p.is_ect() {
                    return true;
                }
                self.mark(ctx, p, now, "classic_prob");
            }
            return false;
        }
        if overload {
            if self.drop_overload && ctx.rng.chance(prob) && ctx.rng.chance(prob) {
                return true;
            }
            self.mark(ctx, p, now, "overload");
            return false;
        }
        if ctx.rng.chance(local_l_prob) {
            if !p.is_ect() {
                return true;
            }
            self.mark(ctx, p, now, "coupled_prob");
        }
        false
    }

    fn head_delay(q: &PacketQueue, now: Nanos) -> u64 {
        q.front().map_or(0, |p| now.saturating_sub(p.t_enqueue))
    }

    fn update_probability(&mut self, now: Nanos) {
        let qdelay = Self::head_delay(&self.l, now).max(Self::head_delay(&self.c, now));
        let delta = self.alpha * (qdelay as f64 - self.target_ns as f64) / 1e9
            + self.beta * (qdelay as f64 - self.last_qdelay_ns as f64) / 1e9;
        self.last_qdelay_ns = qdelay;
        self.prob = (self.prob + delta).clamp(0.0, 1.0);
        if !self.drop_overload {
            self.prob = self.prob.min(1.0 / self.k);
        }
    }

    /// Picks the queue by the WRR credit; returns the packet, whether it is from L, and the
    /// credit change to apply if it is sent.
    fn dequeue_packet(&mut self) -> Option<(Packet, bool, i64)> {
        let c_len = self.c.len();
        if !self.l.is_empty() && (c_len == 0 || self.credit <= 0) {
            let p = self.l.pop()?;
            let change = if c_len > 0 {
                self.wc * p.len() as i64
            } else {
                0
            };
            self.memory_used -= Self::truesize(&p);
            Some((p, true, change))
        } else if c_len > 0 {
            let p = self.c.pop()?;
            let change = if !self.l.is_empty() {
                -self.wl * p.len() as i64
            } else {
                0
            };
            self.memory_used -= Self::truesize(&p);
            Some((p, false, change))
        } else {
            self.credit = self.credit_init;
            None
        }
    }
}

impl Qdisc for DualPi2 {
    fn kind(&self) -> &'static str {
        "dualpi2"
    }

    fn enqueue(&mut self, mut p: Packet, now: Nanos, ctx: &mut Ctx) {
        p.tag = if self.is_l4s(&p) { TAG_L4S } else { 0 };
        let qlen = self.len();
        if qlen >= self.limit || self.memory_used + Self::truesize(&p) > self.memory_limit {
            self.cnt.overlimits += 1;
            self.cnt.drop(ctx, p, now, "overlimit");
            return;
        }
        if self.drop_early && self.must_drop(ctx, &mut p, now) {
            self.cnt.drop(ctx, p, now, "aqm");
            return;
        }
        p.t_enqueue = now;
        self.memory_used += Self::truesize(&p);
        self.max_memory_used = self.max_memory_used.max(self.memory_used);
        self.maxq = self.maxq.max(qlen);
        if p.tag & TAG_L4S != 0 {
            if self.l.len() >= self.min_qlen_step {
                p.tag |= TAG_APPLY_STEP;
            }
            self.packets_in_l += 1;
            self.l.push(p);
        } else {
            self.packets_in_c += 1;
            self.c.push(p);
        }
    }

    fn dequeue(&mut self, now: Nanos, ctx: &mut Ctx) -> Option<Packet> {
        while let Some((mut p, from_l, credit_change)) = self.dequeue_packet() {
            if !self.drop_early && self.must_drop(ctx, &mut p, now) {
                self.cnt.drop(ctx, p, now, "aqm");
                continue;
            }
            if from_l && p.tag & TAG_APPLY_STEP != 0 {
                let over = match self.step {
                    StepThresh::Time(t) => now.saturating_sub(p.t_enqueue) > t,
                    StepThresh::Packets(n) => self.l.len() > n,
                };
                if over {
                    if !p.is_ect() {
                        self.cnt.drop(ctx, p, now, "step_non_ect");
                        continue;
                    }
                    if self.mark(ctx, &mut p, now, "step") {
                        self.step_marks += 1;
                    }
                }
            }
            self.credit += credit_change;
            self.cnt.sent(&p);
            return Some(p);
        }
        None
    }

    fn len(&self) -> usize {
        self.l.len() + self.c.len()
    }

    fn backlog_bytes(&self) -> u64 {
        self.backlog()
    }

    fn counters(&self) -> &Counters {
        &self.cnt
    }

    fn next_timer(&self) -> Option<Nanos> {
        Some(self.next_tick)
    }

    fn on_timer(&mut self, now: Nanos) {
        self.update_probability(now);
        self.next_tick = now + self.tupdate_ns;
    }

    fn stats(&self, now: Nanos, w: &mut ObjWriter) {
        w.f64("prob", self.prob)
            .u64("delay_c_us", Self::head_delay(&self.c, now) / 1000)
            .u64("delay_l_us", Self::head_delay(&self.l, now) / 1000)
            .u64("pkts_in_c", self.packets_in_c)
            .u64("pkts_in_l", self.packets_in_l)
            .u64("maxq", self.maxq as u64)
            .u64("ecn_mark", self.ecn_mark)
            .u64("step_mark", self.step_marks)
            .i64("credit", self.credit)
            .u64("memory_used", self.memory_used)
            .u64("max_memory_used", self.max_memory_used)
            .u64("memory_limit", self.memory_limit)
            .u64("backlog_c_packets", self.c.len() as u64)
            .u64("backlog_l_packets", self.l.len() as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{self, QdiscConfig};
    use crate::json;
    use crate::packet::testutil::pkt;
    use crate::packet::{ECN_CE, ECN_ECT0, ECN_ECT1, ECN_NOT_ECT};
    use crate::qdisc::testutil::Harness;

    const MTU: u32 = 1514;
    const MS: u64 = 1_000_000;

    fn dualpi2(extra: &str) -> DualPi2 {
        let text = format!(r#"{{"kind": "dualpi2", "limit": 100000{extra}}}"#);
        let QdiscConfig::DualPi2(c) =
            config::qdisc("q", &json::parse(&text).unwrap(), false).unwrap()
        else {
            panic!()
        };
        DualPi2::new(&c, MTU, 0)
    }

    #[test]
    fn classifies_by_ecn() {
        let mut h = Harness::new();
        let mut q = dualpi2("");
        for (i, ecn) in [ECN_NOT_ECT, ECN_ECT0, ECN_ECT1, ECN_CE]
            .into_iter()
            .enumerate()
        {
            h.enq(&mut q, pkt(100, 1, ecn, i as u64, 0), 0);
        }
        assert_eq!((q.c.len(), q.l.len()), (2, 2));
        assert_eq!((q.packets_in_c, q.packets_in_l), (2, 2));
        let mut any = dualpi2(r#", "l4s_ect": false"#);
        for (i, ecn) in [ECN_NOT_ECT, ECN_ECT0, ECN_ECT1, ECN_CE]
            .into_iter()
            .enumerate()
        {
            h.enq(&mut any, pkt(100, 1, ecn, i as u64, 0), 0);
        }
        assert_eq!((any.c.len(), any.l.len()), (1, 3));
    }

    /// Makes the WRR scheduler always serve the classic (or the L) queue first, so the packet
    /// under test leaves before the filler that keeps the backlog up.
    fn serve_first(q: &mut DualPi2, classic: bool) {
        (q.wc, q.wl) = if classic { (100, 0) } else { (0, 100) };
        q.credit_init = if classic { i64::MAX / 4 } else { -i64::MAX / 4 };
        q.credit = q.credit_init;
    }

    /// Keeps a standing backlog well above 2 MTU in the other queue and sends `n` packets of
    /// `ecn` through at zero sojourn; returns (marked, dropped) among them.
    fn rates(q: &mut DualPi2, h: &mut Harness, ecn: u8, n: usize) -> (usize, usize) {
        let (mut marked, mut sent) = (0, 0);
        let filler_ecn = if ecn == ECN_ECT1 || ecn == ECN_CE {
            ECN_NOT_ECT
        } else {
            ECN_ECT1
        };
        for i in 0..n {
            // 3 MTU of the other class keep the backlog above the floor; they never leave
            // because the scheduler serves the packet under test first or drops it.
            while q.backlog() < 4 * MTU as u64 {
                h.enq(q, pkt(1500, 9, filler_ecn, u64::MAX, 0), 0);
            }
            h.enq(q, pkt(1000, 1, ecn, i as u64, 0), 0);
            // Pop until the packet under test comes out or disappears (dropped).
            while let Some(p) = h.deq(q, 0) {
                if p.id == i as u64 {
                    sent += 1;
                    marked += (p.meta.ecn == ECN_CE) as usize;
                    break;
                }
            }
        }
        (marked, n - sent)
    }

    #[test]
    fn l4s_marking_is_coupled_k_times_p() {
        let mut h = Harness::new();
        let mut q = dualpi2(r#", "step_thresh_ms": 1000"#);
        q.prob = 0.1;
        serve_first(&mut q, false);
        let (marked, dropped) = rates(&mut q, &mut h, ECN_ECT1, 20_000);
        assert_eq!(dropped, 0);
        let frac = marked as f64 / 20_000.0;
        assert!(
            (frac - 0.2).abs() < 0.015,
            "p_L = {frac}, expected k p' = 0.2"
        );
    }

    #[test]
    fn classic_marking_and_dropping_is_p_squared() {
        let mut h = Harness::new();
        let mut q = dualpi2(r#", "step_thresh_ms": 1000"#);
        q.prob = 0.3;
        serve_first(&mut q, true);
        let (marked, dropped) = rates(&mut q, &mut h, ECN_ECT0, 20_000);
        let frac = marked as f64 / 20_000.0;
        assert_eq!(dropped, 0);
        assert!(
            (frac - 0.09).abs() < 0.01,
            "ECT(0) mark rate {frac}, expected p'^2 = 0.09"
        );
        let (marked, dropped) = rates(&mut q, &mut h, ECN_NOT_ECT, 20_000);
        let frac = dropped as f64 / 20_000.0;
        assert_eq!(marked, 0);
        assert!(
            (frac - 0.09).abs() < 0.01,
            "Not-ECT drop rate {frac}, expected p'^2 = 0.09"
        );
    }

    #[test]
    fn overload_drops_classic_ect_and_l4s() {
        let mut h = Harness::new();
        let mut q = dualpi2(r#", "step_thresh_ms": 1000"#);
        q.prob = 0.6; // k p' = 1.2 > 1
        serve_first(&mut q, true);
        let (marked, dropped) = rates(&mut q, &mut h, ECN_ECT0, 20_000);
        assert_eq!(
            marked, 0,
            "classic ECT packets are dropped, not marked, in overload"
        );
        assert!((dropped as f64 / 20_000.0 - 0.36).abs() < 0.015);
        let mut q = dualpi2(r#", "step_thresh_ms": 1000"#);
        q.prob = 0.6;
        serve_first(&mut q, false);
        let (marked, dropped) = rates(&mut q, &mut h, ECN_ECT1, 20_000);
        assert!(
            (dropped as f64 / 20_000.0 - 0.36).abs() < 0.015,
            "L drops {dropped}"
        );
        assert_eq!(
            marked + dropped,
            20_000,
            "every surviving L packet is marked"
        );
        // Without drop_on_overload p' is capped at 1/k: L packets are marked, never dropped.
        let mut q = dualpi2(r#", "step_thresh_ms": 1000, "drop_on_overload": false"#);
        q.prob = 0.9;
        q.update_probability(0);
        assert!(q.prob <= 0.5 + 1e-12);
    }

    #[test]
    fn nothing_is_marked_under_two_mtu_of_backlog() {
        let mut h = Harness::new();
        let mut q = dualpi2(r#", "step_thresh_ms": 1000"#);
        q.prob = 1.0;
        for i in 0..1000u64 {
            let ecn = [ECN_NOT_ECT, ECN_ECT0, ECN_ECT1][(i % 3) as usize];
            h.enq(&mut q, pkt(1000, 1, ecn, i, i * 10), i * 10);
            h.enq(&mut q, pkt(1000, 2, ecn, i, i * 10), i * 10); // 2000 B < 2 x 1514
            let a = h.deq(&mut q, i * 10 + 5).unwrap();
            let b = h.deq(&mut q, i * 10 + 5).unwrap();
            assert!(a.meta.ecn != ECN_CE && b.meta.ecn != ECN_CE);
        }
        assert_eq!((h.totals.dropped, h.totals.marked), (0, 0));
    }

    #[test]
    fn step_marks_l_packets_above_one_ms() {
        let mut h = Harness::new();
        let mut q = dualpi2("");
        // prob stays 0: only the step AQM acts. Sojourns 0.5 ms and 1.5 ms alternate.
        for i in 0..100u64 {
            let t0 = i * 10 * MS;
            h.enq(&mut q, pkt(1000, 1, ECN_ECT1, i, t0), t0);
            let wait = if i % 2 == 0 { MS / 2 } else { 3 * MS / 2 };
            let p = h.deq(&mut q, t0 + wait).unwrap();
            assert_eq!(
                p.meta.ecn == ECN_CE,
                i % 2 == 1,
                "packet {i} sojourn {wait} ns"
            );
        }
        assert_eq!(q.step_marks, 50);
        // A classic packet with the same sojourn is never step-marked.
        h.enq(&mut q, pkt(1000, 1, ECN_ECT0, 999, 0), 0);
        assert_ne!(h.deq(&mut q, 5 * MS).unwrap().meta.ecn, ECN_CE);
    }

    #[test]
    fn pi_controller_follows_the_rfc_update() {
        let mut q = dualpi2("");
        let mut h = Harness::new();
        h.enq(&mut q, pkt(1000, 1, ECN_NOT_ECT, 0, 0), 0);
        // First tick at t = 16 ms with the head packet enqueued at 0: qdelay = 16 ms.
        let t = q.next_timer().unwrap();
        assert_eq!(t, 16 * MS);
        q.on_timer(t);
        let alpha = 41.0 / 256.0;
        let beta = 819.0 / 256.0;
        let expected = alpha * (0.016 - 0.015) + beta * 0.016;
        assert!(
            (q.prob - expected).abs() < 1e-12,
            "{} vs {expected}",
            q.prob
        );
        // Queue empty: qdelay 0, probability falls by alpha*target + beta*16ms.
        h.deq(&mut q, t);
        q.on_timer(t + 16 * MS);
        assert_eq!(q.prob, 0.0);
    }

    #[test]
    fn credit_scheduler_keeps_classic_protection() {
        let mut h = Harness::new();
        let mut q = dualpi2(r#", "step_thresh_ms": 4000"#);
        let (mut l_bytes, mut c_bytes) = (0u64, 0u64);
        for i in 0..20_000u64 {
            while q.l.len() < 5 {
                h.enq(&mut q, pkt(1500, 1, ECN_ECT1, i, 0), 0);
            }
            while q.c.len() < 5 {
                h.enq(&mut q, pkt(1500, 2, ECN_NOT_ECT, i, 0), 0);
            }
            let p = h.deq(&mut q, 0).unwrap();
            if p.meta.ecn == ECN_ECT1 {
                l_bytes += p.len() as u64;
            } else {
                c_bytes += p.len() as u64;
            }
        }
        let share = c_bytes as f64 / (l_bytes + c_bytes) as f64;
        assert!((share - 0.10).abs() < 0.01, "classic share {share}");
    }

    #[test]
    fn overflow_drops_at_the_limit() {
        let mut h = Harness::new();
        let text = r#"{"kind": "dualpi2", "limit": 10}"#;
        let QdiscConfig::DualPi2(c) =
            config::qdisc("q", &json::parse(text).unwrap(), false).unwrap()
        else {
            panic!()
        };
        let mut q = DualPi2::new(&c, MTU, 0);
        for i in 0..15 {
            h.enq(&mut q, pkt(100, 1, ECN_ECT1, i, 0), 0);
        }
        assert_eq!(
            (q.len(), q.counters().overlimits, h.totals.dropped),
            (10, 5, 5)
        );
    }
}
