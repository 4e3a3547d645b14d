//! CoDel (RFC 8289) as in Linux's codel_impl.h, and the `codel` discipline around one queue.
//!
//! The control law uses an exact square root instead of the kernel's Newton iteration; the
//! state machine (first_above_time, dropping, count/lastcount reuse) is the kernel's. With
//! `ecn`, ECT packets are CE-marked instead of dropped; `ce_threshold` marks every ECT
//! packet whose sojourn exceeds it (the kernel's shallow-threshold option).

use super::{Backlog, Counters, Ctx, PacketQueue, Qdisc};
use crate::config::CodelConfig;
use crate::json::ObjWriter;
use crate::packet::{Nanos, Packet};

#[derive(Debug, Clone, Copy)]
pub struct CodelParams {
    pub target_ns: u64,
    pub interval_ns: u64,
    pub ecn: bool,
    pub ce_threshold_ns: Option<u64>,
    pub mtu: u64,
}

#[derive(Debug, Default, Clone)]
pub struct CodelVars {
    pub count: u32,
    pub lastcount: u32,
    pub dropping: bool,
    first_above_time: Option<Nanos>,
    drop_next: Nanos,
    pub ldelay_ns: u64,
}

#[derive(Debug, Default, Clone)]
pub struct CodelStats {
    pub ecn_mark: u64,
    pub ce_mark: u64,
    pub drop_count: u64,
    pub maxpacket: u64,
}

fn control_law(t: Nanos, interval: u64, count: u32) -> Nanos {
    t + (interval as f64 / (count.max(1) as f64).sqrt()) as u64
}

impl CodelVars {
    fn should_drop(
        &mut self,
        p: Option<&Packet>,
        backlog_after: u64,
        now: Nanos,
        prm: &CodelParams,
        st: &mut CodelStats,
    ) -> bool {
        let Some(p) = p else {
            self.first_above_time = None;
            return false;
        };
        self.ldelay_ns = now.saturating_sub(p.t_enqueue);
        st.maxpacket = st.maxpacket.max(p.len() as u64);
        if self.ldelay_ns < prm.target_ns || backlog_after <= prm.mtu {
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now + prm.interval_ns);
                false
            }
            Some(t) => now > t,
        }
    }

    /// CoDel's dequeue over `q`: may drop (or mark) packets from its head.
    pub fn dequeue(
        &mut self,
        q: &mut PacketQueue,
        prm: &CodelParams,
        st: &mut CodelStats,
        cnt: &mut Counters,
        ctx: &mut Ctx,
        now: Nanos,
    ) -> Option<Packet> {
        let Some(mut p) = q.pop() else {
            self.dropping = false;
            return None;
        };
        let drop = self.should_drop(Some(&p), q.bytes(), now, prm, st);
        let out: Option<Packet> = 'decide: {
            if self.dropping {
                if !drop {
                    self.dropping = false;
                } else if now >= self.drop_next {
                    while self.dropping && now >= self.drop_next {
                        self.count = self.count.wrapping_add(1);
                        if prm.ecn && cnt.mark(ctx, &mut p, now, "codel") {
                            st.ecn_mark += 1;
                            self.drop_next =
                                control_law(self.drop_next, prm.interval_ns, self.count);
                            break 'decide Some(p);
                        }
                        st.drop_count += 1;
                        cnt.drop(ctx, p, now, "codel");
                        let Some(next) = q.pop() else {
                            self.should_drop(None, 0, now, prm, st);
                            self.dropping = false;
                            return None;
                        };
                        p = next;
                        if !self.should_drop(Some(&p), q.bytes(), now, prm, st) {
                            self.dropping = false;
                        } else {
                            self.drop_next =
                                control_law(self.drop_next, prm.interval_ns, self.count);
                        }
                    }
                }
            } else if drop {
                if prm.ecn && cnt.mark(ctx, &mut p, now, "codel") {
                    st.ecn_mark += 1;
                } else {
                    st.drop_count += 1;
                    cnt.drop(ctx, p, now, "codel");
                    match q.pop() {
                        Some(next) => {
                            p = next;
                            // Only for its side effects on first_above_time, as in the kernel.
                            self.should_drop(Some(&p), q.bytes(), now, prm, st);
                        }
                        None => {
                            self.should_drop(None, 0, now, prm, st);
                            // The kernel enters the dropping state here as well.
                            self.enter_dropping(now, prm);
                            return None;
                        }
                    }
                }
                self.enter_dropping(now, prm);
            }
            Some(p)
        };
        let mut p = out?;
        if let Some(ce) = prm.ce_threshold_ns {
            if self.ldelay_ns > ce
                && p.is_ect()
                && p.meta.ecn != crate::packet::ECN_CE
                && cnt.mark(ctx, &mut p, now, "ce_threshold")
            {
                st.ce_mark += 1;
            }
        }
        Some(p)
    }

    fn enter_dropping(&mut self, now: Nanos, prm: &CodelParams) {
        self.dropping = true;
        let delta = self.count.wrapping_sub(self.lastcount);
        if delta > 1 && (now as i64 - self.drop_next as i64) < 16 * prm.interval_ns as i64 {
            self.count = delta;
        } else {
            self.count = 1;
        }
        self.lastcount = self.count;
        self.drop_next = control_law(now, prm.interval_ns, self.count);
    }
}

pub struct Codel {
    limit: usize,
    prm: CodelParams,
    vars: CodelVars,
    st: CodelStats,
    q: PacketQueue,
    c: Counters,
    drop_overlimit: u64,
}

impl Codel {
    pub fn new(cfg: &CodelConfig, mtu: u32) -> Self {
        Codel {
            limit: cfg.limit,
            prm: CodelParams {
                target_ns: cfg.target_ns,
                interval_ns: cfg.interval_ns,
                ecn: cfg.ecn,
                ce_threshold_ns: cfg.ce_threshold_ns,
                mtu: mtu as u64,
            },
            vars: CodelVars::default(),
            st: CodelStats::default(),
            q: PacketQueue::default(),
            c: Counters::default(),
            drop_overlimit: 0,
        }
    }
}

impl Qdisc for Codel {
    fn kind(&self) -> &'static str {
        "codel"
    }

    fn enqueue(&mut self, mut p: Packet, now: Nanos, ctx: &mut Ctx) {
        if self.q.len() >= self.limit {
            self.drop_overlimit += 1;
            self.c.overlimits += 1;
            self.c.drop(ctx, p, now, "overlimit");
            return;
        }
        p.t_enqueue = now;
        self.q.push(p);
    }

    fn dequeue(&mut self, now: Nanos, ctx: &mut Ctx) -> Option<Packet> {
        let p = self
            .vars
            .dequeue(&mut self.q, &self.prm, &mut self.st, &mut self.c, ctx, now)?;
        self.c.sent(&p);
        Some(p)
    }

    fn backlog(&self) -> Backlog {
        self.q.backlog()
    }

    fn counters(&self) -> &Counters {
        &self.c
    }

    fn stats(&self, _now: Nanos, w: &mut ObjWriter) {
        w.u64("count", self.vars.count as u64)
            .u64("lastcount", self.vars.lastcount as u64)
            .u64("ldelay_us", self.vars.ldelay_ns / 1000)
            .bool("dropping", self.vars.dropping)
            .u64("ecn_mark", self.st.ecn_mark)
            .u64("ce_mark", self.st.ce_mark)
            .u64("drop_overlimit", self.drop_overlimit)
            .u64("maxpacket", self.st.maxpacket);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::testutil::pkt;
    use crate::packet::{ECN_CE, ECN_ECT0, ECN_NOT_ECT};
    use crate::qdisc::testutil::Harness;

    const MS: u64 = 1_000_000;

    fn codel(ecn: bool) -> Codel {
        Codel::new(
            &CodelConfig {
                limit: 10_000,
                target_ns: 5 * MS,
                interval_ns: 100 * MS,
                ecn,
                ce_threshold_ns: None,
            },
            1514,
        )
    }

    /// A link of 1 packet per ms fed 2 packets per ms: a standing queue that grows.
    fn overload(q: &mut Codel, h: &mut Harness, ecn: u8, ms: u64) -> (u64, u64, Vec<u64>) {
        let (mut sent, mut marked) = (0, 0);
        let mut sojourn = Vec::new();
        for t in 0..ms {
            let now = t * MS;
            for k in 0..2 {
                h.enq(q, pkt(1000, 1, ecn, t * 2 + k, now), now);
            }
            if let Some(p) = h.deq(q, now) {
                sent += 1;
                marked += (p.meta.ecn == ECN_CE) as u64;
                sojourn.push(now - p.t_enqueue);
            }
        }
        (sent, marked, sojourn)
    }

    #[test]
    fn no_action_below_target() {
        let mut h = Harness::new();
        let mut q = codel(false);
        for t in 0..1000u64 {
            h.enq(&mut q, pkt(1000, 1, ECN_NOT_ECT, t, t * MS), t * MS);
            h.enq(&mut q, pkt(1000, 1, ECN_NOT_ECT, t, t * MS), t * MS);
            h.deq(&mut q, t * MS + 2 * MS).unwrap();
            h.deq(&mut q, t * MS + 2 * MS).unwrap();
        }
        assert_eq!(h.totals.dropped, 0);
    }

    #[test]
    fn drops_start_after_an_interval_above_target_and_accelerate() {
        let mut h = Harness::new();
        let mut q = codel(false);
        let (_, _, _) = overload(&mut q, &mut h, ECN_NOT_ECT, 2000);
        // Queue above 5 ms from ~t=5 ms; first drop ~one interval later; then 1/sqrt(n).
        assert!(h.totals.dropped > 20, "dropped {}", h.totals.dropped);
        assert!(q.vars.count > 10);
    }

    #[test]
    fn marks_ect_instead_of_dropping() {
        let mut h = Harness::new();
        let mut q = codel(true);
        let (_, marked, _) = overload(&mut q, &mut h, ECN_ECT0, 2000);
        assert!(marked > 20);
        // Without drops the queue is only limited by marking: all packets delivered or queued.
        assert_eq!(h.totals.dropped, 0);
        assert_eq!(marked, q.st.ecn_mark);
    }

    #[test]
    fn ce_threshold_marks_by_sojourn() {
        let mut h = Harness::new();
        let mut q = Codel::new(
            &CodelConfig {
                limit: 100,
                target_ns: 5 * MS,
                interval_ns: 100 * MS,
                ecn: true,
                ce_threshold_ns: Some(MS),
            },
            1514,
        );
        h.enq(&mut q, pkt(100, 1, ECN_ECT0, 0, 0), 0);
        h.enq(&mut q, pkt(100, 1, ECN_ECT0, 1, 0), 0);
        assert_ne!(h.deq(&mut q, MS / 2).unwrap().meta.ecn, ECN_CE);
        assert_eq!(h.deq(&mut q, 2 * MS).unwrap().meta.ecn, ECN_CE);
    }
}
