//! TFRC receiver (RFC 5348 section 5 and 6): loss events, the average loss interval, the
//! loss event rate p, the receive rate X_recv, and a report once per RTT (at once when a
//! new loss event starts).
//!
//! - A packet is lost when three packets with higher sequence numbers have arrived
//!   (NDUPACK = 3, 5.1).
//! - A lost packet starts a new loss event when its interpolated arrival time is more than
//!   one RTT after the start of the current loss event (5.2).
//! - The average loss interval uses the last n = 8 intervals with weights
//!   1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2, counting the open interval only when it raises the
//!   average (5.4); p = 1 / I_mean.
//! - After the first loss event, the first interval is the one that gives, through the
//!   throughput equation, the rate received in the last RTT (6.3.1).

use std::collections::VecDeque;

use crate::tfrc_eq;

const NDUPACK: u64 = 3;
const N_INTERVALS: usize = 8;
const WEIGHTS: [f64; N_INTERVALS] = [1.0, 1.0, 1.0, 1.0, 0.8, 0.6, 0.4, 0.2];

/// What the receiver reports (RFC 5348 3.2.2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TfrcFeedback {
    pub t_recvdata_us: u64,
    pub t_delay_ns: i64,
    pub x_recv_bytes_s: f64,
    pub p: f64,
}

#[derive(Clone, Copy, Debug)]
struct Arrival {
    seq: u64,
    t_ns: i64,
}

pub struct TfrcReceiver {
    /// Recent arrivals in sequence order (for loss detection and interpolation).
    recent: VecDeque<Arrival>,
    highest_seq: Option<u64>,
    /// Packets checked for loss up to here (exclusive).
    checked_to: u64,
    /// Closed loss intervals, newest first (packets), and the open one's start.
    intervals: VecDeque<f64>,
    current_event_start: Option<(u64, i64)>, // (seq, time) of the current loss event
    rtt_ns: i64,
    mean_size: f64,
    // Receive-rate bookkeeping.
    bytes_since_report: u64,
    last_report_ns: Option<i64>,
    last_data: Option<(u64, i64)>, // (sender timestamp us, arrival mono ns)
    bytes_in_rtt: VecDeque<(i64, u64)>,
    new_loss_event: bool,
    pub loss_events: u64,
}

impl Default for TfrcReceiver {
    fn default() -> Self {
        Self::new()
    }
}

impl TfrcReceiver {
    pub fn new() -> Self {
        TfrcReceiver {
            recent: VecDeque::new(),
            highest_seq: None,
            checked_to: 0,
            intervals: VecDeque::new(),
            current_event_start: None,
            rtt_ns: 100_000_000,
            mean_size: 1200.0,
            bytes_since_report: 0,
            last_report_ns: None,
            last_data: None,
            bytes_in_rtt: VecDeque::new(),
            new_loss_event: false,
            loss_events: 0,
        }
    }

    /// Records a data packet; `rtt_us` is the sender's estimate (0 when unknown).
    pub fn on_packet(
        &mut self,
        seq: u64,
        size: usize,
        send_time_us: u64,
        rtt_us: u32,
        now_ns: i64,
    ) {
        if rtt_us > 0 {
            self.rtt_ns = rtt_us as i64 * 1000;
        }
        self.mean_size += (size as f64 - self.mean_size) / 16.0;
        self.bytes_since_report += size as u64;
        self.bytes_in_rtt.push_back((now_ns, size as u64));
        while self
            .bytes_in_rtt
            .front()
            .is_some_and(|&(t, _)| now_ns - t > self.rtt_ns.max(1_000_000))
        {
            self.bytes_in_rtt.pop_front();
        }
        self.last_data = Some((send_time_us, now_ns));
        if self.highest_seq.is_none() {
            self.checked_to = seq;
        }
        if seq < self.checked_to {
            return; // late arrival of a packet already judged
        }
        // Keep `recent` sorted by sequence number (reordering is rare; insert in place).
        let pos = self
            .recent
            .iter()
            .rposition(|a| a.seq < seq)
            .map_or(0, |i| i + 1);
        if self.recent.get(pos).is_some_and(|a| a.seq == seq) {
            return; // duplicate
        }
        self.recent.insert(pos, Arrival { seq, t_ns: now_ns });
        self.highest_seq = Some(self.highest_seq.map_or(seq, |h| h.max(seq)));
        self.detect_losses();
    }

    fn detect_losses(&mut self) {
        // A sequence number s is judged once NDUPACK packets above it have arrived.
        loop {
            let s = self.checked_to;
            let above = self.recent.iter().filter(|a| a.seq > s).count() as u64;
            if above < NDUPACK {
                break;
            }
            let idx = self.recent.iter().position(|a| a.seq >= s);
            let arrived = idx.is_some_and(|i| self.recent[i].seq == s);
            if !arrived {
                self.on_loss(s);
            }
            self.checked_to += 1;
            // Forget arrivals well below the judged point (keep one for interpolation).
            while self.recent.len() > 1 && self.recent[1].seq < self.checked_to {
                self.recent.pop_front();
            }
        }
    }

    fn on_loss(&mut self, seq: u64) {
        // Interpolate the lost packet's arrival between its neighbours (5.2).
        let before = self.recent.iter().rev().find(|a| a.seq < seq).copied();
        let after = self.recent.iter().find(|a| a.seq > seq).copied();
        let t_loss = match (before, after) {
            (Some(b), Some(a)) => {
                b.t_ns + (a.t_ns - b.t_ns) * (seq - b.seq) as i64 / (a.seq - b.seq) as i64
            }
            (None, Some(a)) => a.t_ns,
            (Some(b), None) => b.t_ns,
            (None, None) => return,
        };
        let new_event = match self.current_event_start {
            None => true,
            Some((_, t_start)) => t_loss - t_start > self.rtt_ns,
        };
        if !new_event {
            return;
        }
        self.loss_events += 1;
        self.new_loss_event = true;
        match self.current_event_start {
            None => {
                // First loss event: seed the history with the interval that explains the
                // rate received over the last RTT (6.3.1).
                let x_recv = self.rate_over_last_rtt();
                let p = tfrc_eq::p_for_rate(self.mean_size, self.rtt_ns as f64 * 1e-9, x_recv);
                self.intervals.push_front((1.0 / p).max(1.0));
            }
            Some((start_seq, _)) => {
                self.intervals.push_front((seq - start_seq) as f64);
                while self.intervals.len() > N_INTERVALS {
                    self.intervals.pop_back();
                }
            }
        }
        self.current_event_start = Some((seq, t_loss));
    }

    fn rate_over_last_rtt(&self) -> f64 {
        let bytes: u64 = self.bytes_in_rtt.iter().map(|&(_, b)| b).sum();
        bytes as f64 / (self.rtt_ns.max(1_000_000) as f64 * 1e-9)
    }

    /// Loss event rate p (0 before the first loss event).
    pub fn loss_event_rate(&self) -> f64 {
        let Some((start_seq, _)) = self.current_event_start else {
            return 0.0;
        };
        let open = (self.highest_seq.unwrap_or(start_seq) + 1 - start_seq) as f64;
        let closed: Vec<f64> = self.intervals.iter().copied().collect();
        // I_tot1: closed intervals only; I_tot0: the open interval then the closed ones.
        let k = closed.len().min(N_INTERVALS);
        let w_tot1: f64 = WEIGHTS[..k].iter().sum();
        let i_tot1: f64 = closed.iter().take(k).zip(WEIGHTS).map(|(i, w)| i * w).sum();
        let k0 = (closed.len() + 1).min(N_INTERVALS);
        let with_open: Vec<f64> = std::iter::once(open)
            .chain(closed.iter().copied())
            .collect();
        let w_tot0: f64 = WEIGHTS[..k0].iter().sum();
        let i_tot0: f64 = with_open
            .iter()
            .take(k0)
            .zip(WEIGHTS)
            .map(|(i, w)| i * w)
            .sum();
        let mean = (i_tot0 / w_tot0).max(if k > 0 { i_tot1 / w_tot1 } else { 0.0 });
        if mean <= 0.0 {
            0.0
        } else {
            (1.0 / mean).min(1.0)
        }
    }

    /// A report is due: once per RTT, or at once after a new loss event.
    pub fn report_due(&self, now_ns: i64) -> bool {
        self.last_data.is_some()
            && (self.new_loss_event
                || self
                    .last_report_ns
                    .map_or(true, |t| now_ns - t >= self.rtt_ns.max(1_000_000)))
    }

    /// Makes the report and restarts the receive-rate interval.
    pub fn make_report(&mut self, now_ns: i64) -> Option<TfrcFeedback> {
        let (t_recvdata_us, arrived_ns) = self.last_data?;
        let since = self
            .last_report_ns
            .map_or(self.rtt_ns, |t| now_ns - t)
            .max(1_000_000);
        let x_recv = self.bytes_since_report as f64 / (since as f64 * 1e-9);
        self.bytes_since_report = 0;
        self.last_report_ns = Some(now_ns);
        self.new_loss_event = false;
        Some(TfrcFeedback {
            t_recvdata_us,
            t_delay_ns: now_ns - arrived_ns,
            x_recv_bytes_s: x_recv,
            p: self.loss_event_rate(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    #[test]
    fn no_loss_means_p_zero() {
        let mut r = TfrcReceiver::new();
        for s in 0..100 {
            r.on_packet(s, 1000, 0, 20_000, s as i64 * MS);
        }
        assert_eq!(r.loss_event_rate(), 0.0);
    }

    #[test]
    fn periodic_loss_gives_p_near_one_over_interval() {
        let mut r = TfrcReceiver::new();
        // One loss every 100 packets, 1 ms apart, RTT 20 ms: every loss is a new event.
        let mut t = 0;
        for s in 0..5_000u64 {
            t += MS;
            if s % 100 == 50 {
                continue;
            }
            r.on_packet(s, 1000, 0, 20_000, t);
        }
        let p = r.loss_event_rate();
        assert!((p - 0.01).abs() < 0.001, "{p}");
        assert_eq!(r.loss_events, 50);
    }

    #[test]
    fn losses_within_one_rtt_are_one_event() {
        let mut r = TfrcReceiver::new();
        let mut t = 0;
        for s in 0..300u64 {
            t += MS;
            if (100..105).contains(&s) {
                continue; // five losses within 5 ms < RTT
            }
            r.on_packet(s, 1000, 0, 20_000, t);
        }
        assert_eq!(r.loss_events, 1);
    }

    #[test]
    fn reports_once_per_rtt_and_at_loss() {
        let mut r = TfrcReceiver::new();
        r.on_packet(0, 1000, 77, 20_000, 0);
        assert!(r.report_due(0));
        let rep = r.make_report(5 * MS).unwrap();
        assert_eq!(rep.t_recvdata_us, 77);
        assert_eq!(rep.t_delay_ns, 5 * MS);
        assert!(!r.report_due(10 * MS));
        assert!(r.report_due(25 * MS));
    }
}
