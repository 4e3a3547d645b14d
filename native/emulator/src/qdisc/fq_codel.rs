//! FQ-CoDel (RFC 8290) as in Linux's sch_fq_codel: flows hashed into buckets, new flows
//! served before old ones by deficit round robin, CoDel per flow (ECN on by default), and on
//! overflow half of the fattest flow's backlog dropped from its head (at most drop_batch).

use std::collections::VecDeque;

use super::codel::{CodelParams, CodelStats, CodelVars};
use super::dualpi2::SKB_OVERHEAD;
use super::{Backlog, Counters, Ctx, PacketQueue, Qdisc};
use crate::config::FqCodelConfig;
use crate::json::ObjWriter;
use crate::packet::{Nanos, Packet};

#[derive(Clone, Copy, PartialEq)]
enum List {
    None,
    New,
    Old,
}

struct Flow {
    q: PacketQueue,
    deficit: i64,
    vars: CodelVars,
    list: List,
}

pub struct FqCodel {
    flows: Vec<Flow>,
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    limit: usize,
    memory_limit: u64,
    quantum: i64,
    drop_batch: usize,
    prm: CodelParams,
    st: CodelStats,
    /// Packets and bytes over all the flows' queues.
    backlog: Backlog,
    salt: u64,
    new_flow_count: u64,
    drop_overlimit: u64,
    drop_overmemory: u64,
    c: Counters,
}

impl FqCodel {
    pub fn new(cfg: &FqCodelConfig, mtu: u32, seed: u64) -> Self {
        FqCodel {
            flows: (0..cfg.flows)
                .map(|_| Flow {
                    q: PacketQueue::default(),
                    deficit: 0,
                    vars: CodelVars::default(),
                    list: List::None,
                })
                .collect(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            limit: cfg.limit,
            memory_limit: cfg.memory_limit_bytes,
            quantum: cfg.quantum as i64,
            drop_batch: cfg.drop_batch,
            prm: CodelParams {
                target_ns: cfg.target_ns,
                interval_ns: cfg.interval_ns,
                ecn: cfg.ecn,
                ce_threshold_ns: cfg.ce_threshold_ns,
                mtu: mtu as u64,
            },
            st: CodelStats::default(),
            backlog: Backlog::default(),
            salt: seed | 1,
            new_flow_count: 0,
            drop_overlimit: 0,
            drop_overmemory: 0,
            c: Counters::default(),
        }
    }

    fn memory_usage(&self) -> u64 {
        self.backlog.bytes + self.backlog.packets as u64 * SKB_OVERHEAD
    }

    /// Drops up to half of the fattest flow's backlog from its head.
    fn drop_from_fattest(&mut self, ctx: &mut Ctx, now: Nanos) -> u64 {
        let (idx, max) = self
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| (i, f.q.bytes()))
            .max_by_key(|&(_, b)| b)
            .unwrap_or((0, 0));
        let threshold = max / 2;
        let (mut len, mut i) = (0u64, 0usize);
        while let Some(p) = self.flows[idx].q.pop() {
            len += p.len() as u64;
            self.backlog.remove_packet(&p);
            self.c.drop(ctx, p, now, "overlimit");
            i += 1;
            if i >= self.drop_batch || len >= threshold {
                break;
            }
        }
        i as u64
    }
}

impl Qdisc for FqCodel {
    fn kind(&self) -> &'static str {
        "fq_codel"
    }

    fn enqueue(&mut self, mut p: Packet, now: Nanos, ctx: &mut Ctx) {
        let idx = (p.meta.salted_hash(self.salt) % self.flows.len() as u64) as usize;
        p.t_enqueue = now;
        self.backlog.add_packet(&p);
        let f = &mut self.flows[idx];
        f.q.push(p);
        if f.list == List::None {
            f.list = List::New;
            f.deficit = self.quantum;
            self.new_flows.push_back(idx);
            self.new_flow_count += 1;
        }
        let over_memory = self.memory_usage() > self.memory_limit;
        if self.backlog.packets <= self.limit && !over_memory {
            return;
        }
        self.c.overlimits += 1;
        let n = self.drop_from_fattest(ctx, now);
        if over_memory {
            self.drop_overmemory += n;
        } else {
            self.drop_overlimit += n;
        }
    }

    fn dequeue(&mut self, now: Nanos, ctx: &mut Ctx) -> Option<Packet> {
        loop {
            let from_new = !self.new_flows.is_empty();
            let idx = *(if from_new {
                self.new_flows.front()
            } else {
                self.old_flows.front()
            })?;
            let f = &mut self.flows[idx];
            if f.deficit <= 0 {
                f.deficit += self.quantum;
                f.list = List::Old;
                if from_new {
                    self.new_flows.pop_front();
                } else {
                    self.old_flows.pop_front();
                }
                self.old_flows.push_back(idx);
                continue;
            }
            // CoDel may drop packets from the head before it hands one out (or none).
            let before = f.q.backlog();
            let p = f
                .vars
                .dequeue(&mut f.q, &self.prm, &mut self.st, &mut self.c, ctx, now);
            self.backlog -= before - f.q.backlog();
            match p {
                None => {
                    if from_new {
                        self.new_flows.pop_front();
                    } else {
                        self.old_flows.pop_front();
                    }
                    if from_new && !self.old_flows.is_empty() {
                        f.list = List::Old;
                        self.old_flows.push_back(idx);
                    } else {
                        f.list = List::None;
                    }
                }
                Some(p) => {
                    f.deficit -= p.len() as i64;
                    self.c.sent(&p);
                    return Some(p);
                }
            }
        }
    }

    fn backlog(&self) -> Backlog {
        self.backlog
    }

    fn counters(&self) -> &Counters {
        &self.c
    }

    fn stats(&self, _now: Nanos, w: &mut ObjWriter) {
        w.u64("maxpacket", self.st.maxpacket)
            .u64("drop_overlimit", self.drop_overlimit)
            .u64("drop_overmemory", self.drop_overmemory)
            .u64("ecn_mark", self.st.ecn_mark)
            .u64("ce_mark", self.st.ce_mark)
            .u64("new_flow_count", self.new_flow_count)
            .u64("new_flows_len", self.new_flows.len() as u64)
            .u64("old_flows_len", self.old_flows.len() as u64)
            .u64("memory_used", self.memory_usage());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::testutil::pkt;
    use crate::packet::ECN_NOT_ECT;
    use crate::qdisc::testutil::Harness;

    const MS: u64 = 1_000_000;

    fn fq(limit: usize) -> FqCodel {
        FqCodel::new(
            &FqCodelConfig {
                limit,
                flows: 1024,
                quantum: 1514,
                target_ns: 5 * MS,
                interval_ns: 100 * MS,
                ecn: true,
                ce_threshold_ns: None,
                memory_limit_bytes: 32 << 20,
                drop_batch: 64,
            },
            1514,
            1,
        )
    }

    #[test]
    fn a_sparse_flow_overtakes_a_bulk_backlog() {
        let mut h = Harness::new();
        let mut q = fq(10_000);
        for i in 0..100 {
            h.enq(&mut q, pkt(1500, 1, ECN_NOT_ECT, i, 0), 0);
        }
        h.deq(&mut q, 0).unwrap();
        h.enq(&mut q, pkt(200, 2, ECN_NOT_ECT, 1000, 0), 0);
        // The new flow is served within the bulk flow's quantum.
        let next: Vec<u64> = (0..2).map(|_| h.deq(&mut q, 0).unwrap().id).collect();
        assert!(next.contains(&1000), "{next:?}");
    }

    #[test]
    fn overflow_drops_from_the_fattest_flow() {
        let mut h = Harness::new();
        let mut q = fq(100);
        for i in 0..10 {
            h.enq(&mut q, pkt(100, 2, ECN_NOT_ECT, 10_000 + i, 0), 0);
        }
        for i in 0..91 {
            h.enq(&mut q, pkt(1500, 1, ECN_NOT_ECT, i, 0), 0);
        }
        assert!(h.totals.dropped > 0);
        let mut small = 0;
        while let Some(p) = h.deq(&mut q, 0) {
            small += (p.id >= 10_000) as usize;
        }
        assert_eq!(small, 10, "the thin flow lost nothing");
    }
}
