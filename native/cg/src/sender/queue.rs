//! The RTP queue: packets of whole frames waiting for the pacer, with their byte count and
//! the age of the oldest (the queue delay the controller and the logs see).

use std::collections::VecDeque;

use crate::rtp::QueuedPacket;

#[derive(Default)]
pub(super) struct RtpQueue {
    packets: VecDeque<QueuedPacket>,
    bytes: usize,
}

impl RtpQueue {
    pub(super) fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    pub(super) fn len(&self) -> usize {
        self.packets.len()
    }

    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(super) fn front(&self) -> Option<&QueuedPacket> {
        self.packets.front()
    }

    /// Seconds the oldest packet has waited at `now_ns` (0 when empty).
    pub(super) fn delay_s(&self, now_ns: i64) -> f64 {
        self.packets
            .front()
            .map_or(0.0, |q| (now_ns - q.enqueued_ns) as f64 * 1e-9)
    }

    pub(super) fn push(&mut self, p: QueuedPacket) {
        self.bytes += p.bytes.len();
        self.packets.push_back(p);
    }

    pub(super) fn pop(&mut self) -> Option<QueuedPacket> {
        let p = self.packets.pop_front()?;
        self.bytes -= p.bytes.len();
        Some(p)
    }

    pub(super) fn clear(&mut self) {
        self.packets.clear();
        self.bytes = 0;
    }
}
