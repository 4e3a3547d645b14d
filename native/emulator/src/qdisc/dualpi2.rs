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

use super::{Backlog, Counters, Ctx, PacketQueue, Qdisc};
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

    fn mark(&mut self, ctx: &mut Ctx, p: &mut Packet, now: Nanos, why: &str) -> bool {
        let ok = self.cnt.mark(ctx, p, now, why);
        if ok {
            self.ecn_mark += 1;
        }
        ok
    }

    /// The probabilistic AQM decision; true means drop. Marks in place when it marks.
    fn must_drop(&mut self, ctx: &mut Ctx, p: &mut Packet, now: Nanos) -> bool {
        if self.backlog_bytes() < 2 * self.mtu {
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

    fn backlog(&self) -> Backlog {
        self.l.backlog() + self.c.backlog()
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
mod tests;
