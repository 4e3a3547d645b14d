//! SQF, Shortest Queue First (Benameur, Guillemin, Muscariello; seed 001).
//!
//! Each flow with backlogged packets owns a virtual queue, up to `flows` of them; packets of
//! further flows share one default queue (and stay there while the flow has packets in it,
//! so a flow is never reordered). The queue with the fewest backlogged bytes is served
//! first (ties: the oldest head packet). When the buffer (`limit` packets) overflows, the
//! queue with the most backlogged bytes loses its tail (Longest Queue Drop).

use std::collections::HashMap;

use super::{Backlog, Counters, Ctx, PacketQueue, Qdisc};
use crate::config::SqfConfig;
use crate::json::ObjWriter;
use crate::packet::{Nanos, Packet};

/// Exact flow identity (addresses, protocol, ports), not a hash: SQF has no collisions.
type FlowKey = ([u8; 16], [u8; 16], u8, u16, u16);

fn key(p: &Packet) -> FlowKey {
    let m = &p.meta;
    if m.l3_off == 0 {
        // Non-IP frames share one pseudo-flow keyed by their hash.
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&m.flow_hash.to_le_bytes());
        return (k, [0; 16], 0, 0, 0);
    }
    (m.src, m.dst, m.proto, m.sport, m.dport)
}

struct VQueue {
    q: PacketQueue,
    /// The flow owning this virtual queue (None for the default queue or a free one).
    owner: Option<FlowKey>,
}

pub struct Sqf {
    limit: usize,
    max_flows: usize,
    /// Index 0 is the default queue; 1..=max_flows the per-flow virtual queues.
    queues: Vec<VQueue>,
    free: Vec<usize>,
    active: Vec<usize>,
    /// Flow -> (queue index, packets of the flow in that queue).
    flows: HashMap<FlowKey, (usize, usize)>,
    /// Packets and bytes over all the flows' queues.
    backlog: Backlog,
    c: Counters,
}

impl Sqf {
    pub fn new(cfg: &SqfConfig) -> Self {
        Sqf {
            limit: cfg.limit,
            max_flows: cfg.flows,
            queues: (0..=cfg.flows)
                .map(|_| VQueue {
                    q: PacketQueue::default(),
                    owner: None,
                })
                .collect(),
            free: (1..=cfg.flows).rev().collect(),
            active: Vec::new(),
            flows: HashMap::new(),
            backlog: Backlog::default(),
            c: Counters::default(),
        }
    }

    fn activate(&mut self, qi: usize) {
        if self.queues[qi].q.len() == 1 {
            self.active.push(qi);
        }
    }

    /// Bookkeeping after a packet of flow `k` left queue `qi`.
    fn forget(&mut self, qi: usize, k: &FlowKey) {
        if let Some(entry) = self.flows.get_mut(k) {
            entry.1 -= 1;
            if entry.1 == 0 {
                self.flows.remove(k);
            }
        }
        if self.queues[qi].q.is_empty() {
            if let Some(pos) = self.active.iter().position(|&x| x == qi) {
                self.active.swap_remove(pos);
            }
            if qi != 0 {
                self.queues[qi].owner = None;
                self.free.push(qi);
            }
        }
    }

    fn take(&mut self, qi: usize, from_tail: bool) -> Option<Packet> {
        let p = if from_tail {
            self.queues[qi].q.pop_back()
        } else {
            self.queues[qi].q.pop()
        }?;
        self.backlog.remove_packet(&p);
        let k = key(&p);
        self.forget(qi, &k);
        Some(p)
    }

    pub fn flows_active(&self) -> usize {
        self.max_flows - self.free.len()
    }
}

impl Qdisc for Sqf {
    fn kind(&self) -> &'static str {
        "sqf"
    }

    fn enqueue(&mut self, mut p: Packet, now: Nanos, ctx: &mut Ctx) {
        p.t_enqueue = now;
        let k = key(&p);
        let qi = match self.flows.get_mut(&k) {
            Some(entry) => {
                entry.1 += 1;
                entry.0
            }
            None => {
                let qi = self.free.pop().unwrap_or(0);
                if qi != 0 {
                    self.queues[qi].owner = Some(k);
                }
                self.flows.insert(k, (qi, 1));
                qi
            }
        };
        self.backlog.add_packet(&p);
        self.queues[qi].q.push(p);
        self.activate(qi);
        while self.backlog.packets > self.limit {
            // Longest Queue Drop: the virtual queue with the most bytes loses its tail.
            let Some(&longest) = self
                .active
                .iter()
                .max_by_key(|&&i| self.queues[i].q.bytes())
            else {
                break;
            };
            if let Some(victim) = self.take(longest, true) {
                self.c.drop(ctx, victim, now, "lqd");
            }
        }
    }

    fn dequeue(&mut self, _now: Nanos, _ctx: &mut Ctx) -> Option<Packet> {
        let &qi = self.active.iter().min_by_key(|&&i| {
            let q = &self.queues[i].q;
            (q.bytes(), q.front().map_or(u64::MAX, |p| p.t_enqueue))
        })?;
        let p = self.take(qi, false)?;
        self.c.sent(&p);
        Some(p)
    }

    fn backlog(&self) -> Backlog {
        self.backlog
    }

    fn counters(&self) -> &Counters {
        &self.c
    }

    fn stats(&self, _now: Nanos, w: &mut ObjWriter) {
        w.u64("flows_active", self.flows_active() as u64)
            .u64("default_backlog_packets", self.queues[0].q.len() as u64)
            .u64("default_backlog_bytes", self.queues[0].q.bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::testutil::pkt;
    use crate::qdisc::fifo::Fifo;
    use crate::qdisc::testutil::Harness;

    fn sqf(limit: usize, flows: usize) -> Sqf {
        Sqf::new(&SqfConfig { limit, flows })
    }

    #[test]
    fn serves_the_queue_with_fewest_bytes() {
        let mut h = Harness::new();
        let mut q = sqf(100, 128);
        for i in 0..10 {
            h.enq(&mut q, pkt(1500, 1, 0, i, 0), 0);
        }
        h.enq(&mut q, pkt(100, 2, 0, 100, 1), 1);
        h.enq(&mut q, pkt(100, 2, 0, 101, 2), 2);
        assert_eq!(h.deq(&mut q, 3).unwrap().id, 100);
        assert_eq!(h.deq(&mut q, 3).unwrap().id, 101);
        assert_eq!(h.deq(&mut q, 3).unwrap().id, 0);
    }

    #[test]
    fn longest_queue_drop_spares_the_short_flow() {
        let mut h = Harness::new();
        let mut q = sqf(10, 128);
        for i in 0..3 {
            h.enq(&mut q, pkt(200, 2, 0, 100 + i, 0), 0);
        }
        for i in 0..20 {
            h.enq(&mut q, pkt(1500, 1, 0, i, 0), 0);
        }
        assert_eq!((q.len(), h.totals.dropped), (10, 13));
        let out: Vec<Packet> = std::iter::from_fn(|| h.deq(&mut q, 1)).collect();
        assert_eq!(out.iter().filter(|p| p.meta.sport == 2).count(), 3);
        // The bulk flow kept its oldest packets (tail drop), in order.
        let bulk: Vec<u64> = out
            .iter()
            .filter(|p| p.meta.sport == 1)
            .map(|p| p.id)
            .collect();
        assert_eq!(bulk, (0..7).collect::<Vec<_>>());
    }

    #[test]
    fn flows_beyond_n_share_the_default_queue_without_reordering() {
        let mut h = Harness::new();
        let mut q = sqf(1000, 2);
        for f in 0..4u16 {
            for i in 0..3 {
                h.enq(
                    &mut q,
                    pkt(100 + f as usize, f, 0, (f as u64) * 10 + i, 0),
                    0,
                );
            }
        }
        assert_eq!(q.flows_active(), 2);
        assert_eq!(q.queues[0].q.len(), 6);
        let out: Vec<Packet> = std::iter::from_fn(|| h.deq(&mut q, 0)).collect();
        for f in 0..4u16 {
            let ids: Vec<u64> = out
                .iter()
                .filter(|p| p.meta.sport == f)
                .map(|p| p.id)
                .collect();
            assert_eq!(ids.len(), 3);
            assert!(ids.windows(2).all(|w| w[0] < w[1]));
        }
        assert_eq!(q.flows_active(), 0);
        assert!(q.flows.is_empty());
    }

    /// The seed's claim in simulated time: a saturating bulk flow and a smooth low-rate flow
    /// through a 1 packet/ms link. Under SQF the smooth flow waits at most about one packet;
    /// under FIFO it waits behind the whole buffer.
    #[test]
    fn smooth_flow_delay_near_zero_under_sqf_not_fifo() {
        fn run(q: &mut dyn Qdisc) -> f64 {
            let mut h = Harness::new();
            let ms = 1_000_000u64;
            let mut smooth_delay = Vec::new();
            for t in 0..5000u64 {
                let now = t * ms;
                if t % 20 == 0 {
                    h.enq(q, pkt(200, 2, 0, 1, now), now); // smooth: one small packet per 20 ms
                }
                for _ in 0..2 {
                    h.enq(q, pkt(1500, 1, 0, 0, now), now); // bulk: twice the link rate
                }
                if let Some(p) = h.deq(q, now + ms) {
                    if p.meta.sport == 2 {
                        smooth_delay.push((now + ms - p.t_enqueue) as f64 / ms as f64);
                    }
                }
            }
            smooth_delay.sort_by(f64::total_cmp);
            smooth_delay[smooth_delay.len() / 2]
        }
        let sqf_ms = run(&mut sqf(100, 128));
        let fifo_ms = run(&mut Fifo::pfifo(100));
        assert!(sqf_ms <= 1.0, "SQF median {sqf_ms} ms");
        assert!(fifo_ms > 50.0, "FIFO median {fifo_ms} ms");
    }
}
