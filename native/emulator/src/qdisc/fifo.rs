//! pfifo and bfifo: drop-tail FIFOs limited in packets or in bytes (kernel sch_fifo).

use super::{Backlog, Counters, Ctx, PacketQueue, Qdisc};
use crate::packet::{Nanos, Packet};

pub struct Fifo {
    kind: &'static str,
    limit_packets: usize,
    limit_bytes: u64,
    q: PacketQueue,
    c: Counters,
}

impl Fifo {
    pub fn pfifo(limit: usize) -> Self {
        Fifo {
            kind: "pfifo",
            limit_packets: limit,
            limit_bytes: u64::MAX,
            q: PacketQueue::default(),
            c: Counters::default(),
        }
    }

    pub fn bfifo(limit_bytes: u64) -> Self {
        Fifo {
            kind: "bfifo",
            limit_packets: usize::MAX,
            limit_bytes,
            q: PacketQueue::default(),
            c: Counters::default(),
        }
    }
}

impl Qdisc for Fifo {
    fn kind(&self) -> &'static str {
        self.kind
    }

    fn enqueue(&mut self, mut p: Packet, now: Nanos, ctx: &mut Ctx) {
        if self.q.len() >= self.limit_packets || self.q.bytes() + p.len() as u64 > self.limit_bytes
        {
            self.c.drop(ctx, p, now, "overlimit");
            return;
        }
        p.t_enqueue = now;
        self.q.push(p);
    }

    fn dequeue(&mut self, _now: Nanos, _ctx: &mut Ctx) -> Option<Packet> {
        let p = self.q.pop()?;
        self.c.sent(&p);
        Some(p)
    }

    fn backlog(&self) -> Backlog {
        self.q.backlog()
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
    fn pfifo_drops_the_tail_beyond_its_limit() {
        let mut h = Harness::new();
        let mut q = Fifo::pfifo(3);
        for i in 0..5 {
            h.enq(&mut q, pkt(100, 1, 0, i, 0), 0);
        }
        assert_eq!((q.len(), q.counters().dropped, h.totals.dropped), (3, 2, 2));
        let ids: Vec<u64> = (0..3).map(|_| h.deq(&mut q, 1).unwrap().id).collect();
        assert_eq!(ids, vec![0, 1, 2]);
        assert!(h.deq(&mut q, 1).is_none());
    }

    #[test]
    fn bfifo_counts_bytes() {
        let mut h = Harness::new();
        let mut q = Fifo::bfifo(2500);
        for i in 0..3 {
            h.enq(&mut q, pkt(1000, 1, 0, i, 0), 0);
        }
        assert_eq!(
            (q.len(), q.backlog_bytes(), q.counters().dropped),
            (2, 2000, 1)
        );
        h.enq(&mut q, pkt(400, 1, 0, 9, 0), 0);
        assert_eq!(q.len(), 3);
    }
}
