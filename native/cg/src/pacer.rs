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

    /// Restarts the schedule at `now_ns` even if it lies ahead: the next packet is then due
    /// one pacing interval after this one leaves (Ericsson's `addTransmitted`, E23:507),
    /// for the send loop of their test program ([`TestLoopBurst`]).
    pub fn restart(&mut self, now_ns: i64) {
        self.next_due_ns = now_ns;
    }

    /// The packet booked last left `by_ns` later than booked: the next one is due that
    /// much later (Ericsson's `addTransmitted` reads the clock after the send, S23:269).
    pub fn shift(&mut self, by_ns: i64) {
        self.next_due_ns += by_ns.max(0);
    }

    /// Advances the schedule after a packet of `size` bytes left at `rate_bps`.
    pub fn on_sent(&mut self, size: usize, rate_bps: f64) {
        let gap_ns = (size as f64 * 8.0 / rate_bps.max(1.0) * 1e9) as i64;
        self.next_due_ns += gap_ns.max(1);
    }
}

/// The send loop of Ericsson's test sender (aca6556 `scream_sender.cpp:232-289`,
/// `--send-loop ericsson-test`): awake, it sends the queue's head whatever its due time,
/// adds the time until that packet was due (`accumulatedPaceTime`), less the time the
/// turn took, and goes on while the sum is at most 1 ms (`minPaceInterval`); then it
/// sleeps the sum, at most 900 us (`minPaceIntervalUs`), from the burst's end, in
/// `usleep`, which the kernel lets run over by the thread's timer slack (Linux's default,
/// 50 us: the program keeps it; the sender runs with 1 ns and adds it). With each packet
/// due one interval after its predecessor left, a burst is 1 ms / interval + 1 packets
/// (one more when the sends are slow), one burst per ~0.95 ms: faster than the pacing
/// rate (at a 272 us interval, 5 packets per 0.95 ms).
#[derive(Clone, Debug, Default)]
pub struct TestLoopBurst {
    accumulated_ns: i64,
}

impl TestLoopBurst {
    pub const LIMIT_NS: i64 = 1_000_000;
    pub const MAX_SLEEP_NS: i64 = 900_000;
    /// Linux's default timer slack (`timer_slack_ns`), by which the program's `usleep`
    /// wakes late.
    pub const USLEEP_SLACK_NS: i64 = 50_000;

    /// Books a packet that was due `owed_ns` after it left (negative: overdue) and whose
    /// turn took `elapsed_ns` (their loop subtracts each turn's duration, measured around
    /// the send, S23:249-279); whether the burst goes on.
    pub fn on_sent(&mut self, owed_ns: i64, elapsed_ns: i64) -> bool {
        self.accumulated_ns += owed_ns.max(0);
        self.accumulated_ns = (self.accumulated_ns - elapsed_ns.max(0)).max(0);
        self.accumulated_ns <= Self::LIMIT_NS
    }

    /// How long the loop sleeps after the burst; None: it polls again at once.
    pub fn sleep_ns(&self) -> Option<i64> {
        (self.accumulated_ns > 0)
            .then(|| self.accumulated_ns.min(Self::MAX_SLEEP_NS) + Self::USLEEP_SLACK_NS)
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

    /// Packets of `size` bytes paced at `rate`, each turn taking `turn_ns`: how many
    /// one burst sends, and the burst's state after it.
    fn burst(size: usize, rate: f64, turn_ns: i64) -> (usize, TestLoopBurst) {
        let mut p = Pacer::new(0);
        let mut b = TestLoopBurst::default();
        let mut now = 0;
        let mut sent = 0;
        loop {
            let (start, due) = (now, p.due_ns());
            p.restart(now);
            p.on_sent(size, rate);
            now += turn_ns; // the send takes the turn
            p.shift(turn_ns);
            sent += 1;
            if !b.on_sent(due - start, turn_ns) {
                return (sent, b);
            }
        }
    }

    #[test]
    fn the_test_loop_sends_past_its_pacing_rate() {
        // 1,225-byte packets paced at 36 Mbit/s: 272 us apart. Due 0, +272, +272, +272,
        // +272 us: the fifth passes 1 ms and ends the burst.
        let (size, rate) = (1225, 36e6);
        let (sent, b) = burst(size, rate, 0);
        assert_eq!(sent, 5);
        assert_eq!(b.sleep_ns(), Some(900_000 + TestLoopBurst::USLEEP_SLACK_NS));
        // 5 packets per 0.95 ms is 52 Mbit/s, over 1.4 times the pacing rate.
        let burst_rate = 5.0 * size as f64 * 8.0 / 0.95e-3;
        assert!(burst_rate > 1.4 * rate);
        // A lone packet that was due leaves and the loop polls again at once.
        let mut lone = TestLoopBurst::default();
        assert!(lone.on_sent(-10, 10));
        assert_eq!(lone.sleep_ns(), None);
    }

    #[test]
    fn the_time_each_send_takes_is_not_owed() {
        // 230 us apart: the sixth packet brings the time owed to 1,150 us and ends the
        // burst. When each turn takes 40 us, their loop subtracts it: after the sixth
        // 950 us are owed and a seventh leaves (1,140) before the burst ends.
        let rate = 1225.0 * 8.0 / 230e-6;
        assert_eq!(burst(1225, rate, 0).0, 6);
        assert_eq!(burst(1225, rate, 40_000).0, 7);
    }
}
