//! Per-flow Deficit Round Robin (Shreedhar and Varghese), the scheduler SQF's paper compares
//! against. Linux's `drr` is classful (filters pick classes); here flows are hashed into
//! `flows` buckets, which is what DRR means in that comparison. Each active flow gets
//! `quantum` bytes per round. The buffer holds `limit` packets in total; on overflow the
//! flow with the most bytes loses its tail (as per-class leaves would drop that flow's
//! packets first), so a bulk flow cannot take a thin flow's buffer space.

use std::collections::VecDeque;

use super::{Backlog, Counters, Ctx, PacketQueue, Qdisc};
use crate::config::DrrConfig;
use crate::packet::{Nanos, Packet};

struct Flow {
    q: PacketQueue,
    deficit: i64,
    active: bool,
    /// Its turn has started (this round's quantum was granted).
    turn: bool,
}

pub struct Drr {
    limit: usize,
    quantum: i64,
    salt: u64,
    flows: Vec<Flow>,
    round: VecDeque<usize>,
    /// Packets and bytes over all the flows' queues.
    backlog: Backlog,
    c: Counters,
}

impl Drr {
    pub fn new(cfg: &DrrConfig, mtu: u32, seed: u64) -> Self {
        Drr {
            limit: cfg.limit,
            quantum: cfg.quantum.unwrap_or(mtu) as i64,
            salt: seed | 1,
            flows: (0..cfg.flows)
                .map(|_| Flow {
                    q: PacketQueue::default(),
                    deficit: 0,
                    active: false,
                    turn: false,
                })
                .collect(),
            round: VecDeque::new(),
            backlog: Backlog::default(),
            c: Counters::default(),
        }
    }
}

impl Qdisc for Drr {
    fn kind(&self) -> &'static str {
        "drr"
    }

    fn enqueue(&mut self, mut p: Packet, now: Nanos, ctx: &mut Ctx) {
        p.t_enqueue = now;
        let i = (p.meta.salted_hash(self.salt) % self.flows.len() as u64) as usize;
        self.backlog.add_packet(&p);
        self.flows[i].q.push(p);
        if !self.flows[i].active {
            self.flows[i].active = true;
            self.flows[i].deficit = 0;
            self.flows[i].turn = false;
            self.round.push_back(i);
        }
        if self.backlog.packets > self.limit {
            let fat = *self
                .round
                .iter()
                .max_by_key(|&&f| self.flows[f].q.bytes())
                .expect("non-empty");
            if let Some(v) = self.flows[fat].q.pop_back() {
                self.backlog.remove_packet(&v);
                self.c.drop(ctx, v, now, "overlimit");
            }
            // The flow stays in the round even if now empty; dequeue skips and removes it.
        }
    }

    fn dequeue(&mut self, _now: Nanos, _ctx: &mut Ctx) -> Option<Packet> {
        // A flow's turn starts with a quantum; it sends while its head fits in its deficit,
        // then goes to the back of the round.
        loop {
            let &i = self.round.front()?;
            let f = &mut self.flows[i];
            let Some(head_len) = f.q.front().map(|p| p.len() as i64) else {
                (f.active, f.turn, f.deficit) = (false, false, 0);
                self.round.pop_front();
                continue;
            };
            if !f.turn {
                f.turn = true;
                f.deficit += self.quantum;
            }
            if head_len > f.deficit {
                f.turn = false;
                self.round.rotate_left(1);
                continue;
            }
            let p = f.q.pop().expect("head exists");
            f.deficit -= head_len;
            if f.q.is_empty() {
                (f.active, f.turn, f.deficit) = (false, false, 0);
                self.round.pop_front();
            }
            self.backlog.remove_packet(&p);
            self.c.sent(&p);
            return Some(p);
        }
    }

    fn backlog(&self) -> Backlog {
        self.backlog
    }

    fn counters(&self) -> &Counters {
        &self.c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::testutil::pkt;
    use crate::qdisc::testutil::Harness;

    #[test]
    fn equal_byte_shares_for_unequal_packet_sizes() {
        let mut h = Harness::new();
        let mut q = Drr::new(
            &DrrConfig {
                limit: 10_000,
                quantum: Some(1500),
                flows: 1024,
            },
            1514,
            3,
        );
        for i in 0..300 {
            h.enq(&mut q, pkt(1500, 1, 0, i, 0), 0);
            h.enq(&mut q, pkt(300, 2, 0, i, 0), 0);
            h.enq(&mut q, pkt(300, 2, 0, i, 0), 0);
        }
        let (mut a, mut b) = (0usize, 0usize);
        for _ in 0..300 {
            let p = h.deq(&mut q, 0).unwrap();
            if p.meta.sport == 1 {
                a += p.len()
            } else {
                b += p.len()
            }
        }
        let ratio = a as f64 / b as f64;
        assert!((0.9..1.1).contains(&ratio), "byte ratio {ratio}");
    }
}
