//! The link: when the queue may send. A fixed rate, line rate, or a mahimahi trace.
//!
//! Departures are computed on a virtual clock from the configured rate (fixed: the next
//! packet may start when the previous one's transmission time has elapsed; trace: at each
//! delivery opportunity), never from when the emulator happened to wake up. A late wake-up
//! therefore sends everything that became due, and the long-run rate is exact.
//!
//! Trace semantics follow mahimahi's LinkQueue: each line is one delivery opportunity of
//! 1504 bytes at that millisecond, counted against each packet's IP bytes plus the 4-byte
//! header mahimahi's TUN device prepends (so one opportunity carries exactly one 1500-byte
//! packet, as in mahimahi: its LinkQueue reads whole TUN frames); a packet may span
//! opportunities and small packets share one; unused bytes of an opportunity are lost; the
//! trace repeats with a period equal to its last timestamp. `scale` multiplies the bytes
//! per opportunity, scaling the capacity while keeping the trace's timing pattern.

use std::path::Path;
use std::sync::Arc;

use crate::packet::{Nanos, Packet};
use crate::qdisc::{Ctx, Qdisc};

/// Bytes delivered per trace opportunity (mahimahi's PACKET_SIZE).
pub const OPPORTUNITY_BYTES: f64 = 1504.0;
/// What mahimahi counts on top of a packet's IP bytes: its TUN device's packet-information
/// header (IFF_TUN without IFF_NO_PI), read with every packet.
pub const TUN_HEADER_BYTES: f64 = 4.0;
const NS_PER_MS: u64 = 1_000_000;

#[derive(Debug, Clone)]
pub struct Trace {
    pub times_ms: Arc<Vec<u64>>,
    pub period_ms: u64,
}

impl Trace {
    pub fn load(path: &Path) -> Result<Trace, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read trace {}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Trace, String> {
        let mut times = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let t: u64 = line.parse().map_err(|_| {
                format!(
                    "line {}: '{line}' is not a timestamp in milliseconds",
                    i + 1
                )
            })?;
            if times.last().is_some_and(|&last| t < last) {
                return Err(format!("line {}: timestamps must not decrease", i + 1));
            }
            times.push(t);
        }
        let Some(&period_ms) = times.last() else {
            return Err("the trace is empty (no delivery opportunities)".into());
        };
        if period_ms == 0 {
            return Err("the trace's last timestamp is 0; it must span at least 1 ms".into());
        }
        Ok(Trace {
            times_ms: Arc::new(times),
            period_ms,
        })
    }

    /// Mean capacity in Mbit/s of opportunity bytes (IP + 4 per packet) at scale 1.
    pub fn mean_mbit(&self) -> f64 {
        self.times_ms.len() as f64 * OPPORTUNITY_BYTES * 8.0 / (self.period_ms as f64 / 1e3) / 1e6
    }
}

/// Position in a repeating trace.
pub struct TraceCursor {
    trace: Trace,
    start: Nanos,
    idx: usize,
    base_ms: u64,
}

impl TraceCursor {
    fn next_time(&self) -> Nanos {
        self.start + (self.base_ms + self.trace.times_ms[self.idx]) * NS_PER_MS
    }

    fn advance(&mut self) {
        self.idx += 1;
        if self.idx == self.trace.times_ms.len() {
            self.idx = 0;
            self.base_ms += self.trace.period_ms;
        }
    }

    /// Moves to the first opportunity at or after `t` (used when the link was idle).
    fn skip_to(&mut self, t: Nanos) {
        if self.next_time() >= t {
            return;
        }
        let rel_ms = (t - self.start).div_ceil(NS_PER_MS);
        let p = self.trace.period_ms;
        let mut base = rel_ms / p * p;
        let times = &self.trace.times_ms;
        let mut idx = times.partition_point(|&x| x < rel_ms - base);
        if idx == times.len() {
            idx = 0;
            base += p;
        }
        self.idx = idx;
        self.base_ms = base;
    }
}

pub enum Link {
    Line {
        t_free: Nanos,
    },
    Fixed {
        ns_per_byte: f64,
        t_free: f64,
    },
    Trace {
        cur: TraceCursor,
        bytes_per_opp: f64,
        in_transit: Option<(Packet, f64)>,
        offered_bytes: f64,
    },
}

impl Link {
    pub fn line(now: Nanos) -> Self {
        Link::Line { t_free: now }
    }

    pub fn fixed(bit_per_s: f64, now: Nanos) -> Self {
        Link::Fixed {
            ns_per_byte: 8e9 / bit_per_s,
            t_free: now as f64,
        }
    }

    pub fn trace(trace: Trace, scale: f64, now: Nanos) -> Self {
        Link::Trace {
            cur: TraceCursor {
                trace,
                start: now,
                idx: 0,
                base_ms: 0,
            },
            bytes_per_opp: OPPORTUNITY_BYTES * scale,
            in_transit: None,
            offered_bytes: 0.0,
        }
    }

    /// Whether a packet is partly transmitted (trace links only).
    pub fn busy(&self) -> bool {
        matches!(
            self,
            Link::Trace {
                in_transit: Some(_),
                ..
            }
        )
    }

    /// When the link next takes a packet from a queue that is (or becomes) non-empty.
    pub fn next_service(&self, backlogged: bool) -> Option<Nanos> {
        match self {
            Link::Line { t_free } => backlogged.then_some(*t_free),
            Link::Fixed { t_free, .. } => backlogged.then_some(*t_free as Nanos),
            Link::Trace {
                cur, in_transit, ..
            } => (backlogged || in_transit.is_some()).then(|| cur.next_time()),
        }
    }

    /// Whether a packet arriving at `t` has to wait for the link itself.
    pub fn is_busy_at(&self, t: Nanos) -> bool {
        match self {
            Link::Line { .. } => false,
            Link::Fixed { t_free, .. } => *t_free > t as f64,
            Link::Trace { in_transit, .. } => in_transit.is_some(),
        }
    }

    /// A packet arrives at `t` to an empty queue: an idle link starts from `t` and keeps no
    /// credit from its idle time (like a token bucket of one packet).
    pub fn wake(&mut self, t: Nanos) {
        match self {
            Link::Line { t_free } => *t_free = (*t_free).max(t),
            Link::Fixed { t_free, .. } => *t_free = t_free.max(t as f64),
            Link::Trace {
                cur,
                in_transit: None,
                ..
            } => cur.skip_to(t),
            Link::Trace { .. } => {}
        }
    }

    /// One service event at `t` (== next_service): hands departing packets to `out`.
    pub fn serve(
        &mut self,
        t: Nanos,
        q: &mut dyn Qdisc,
        ctx: &mut Ctx,
        out: &mut Vec<(Packet, Nanos)>,
    ) {
        match self {
            Link::Line { t_free } => {
                if let Some(p) = q.dequeue(t, ctx) {
                    out.push((p, t));
                } else if !q.is_empty() {
                    *t_free = q.next_ready(t).unwrap_or(t + 1000).max(t + 1);
                }
            }
            Link::Fixed {
                ns_per_byte,
                t_free,
            } => match q.dequeue(t, ctx) {
                Some(p) => {
                    // Start from the exact virtual time, not from t (rounded down).
                    *t_free = t_free.max(t as f64) + p.len() as f64 * *ns_per_byte;
                    out.push((p, t));
                }
                None if !q.is_empty() => {
                    *t_free = q.next_ready(t).unwrap_or(t + 1000).max(t + 1) as f64;
                }
                None => {}
            },
            Link::Trace {
                cur,
                bytes_per_opp,
                in_transit,
                offered_bytes,
            } => {
                let mut budget = *bytes_per_opp;
                *offered_bytes += budget;
                loop {
                    if in_transit.is_none() {
                        if q.is_empty() {
                            break;
                        }
                        let Some(p) = q.dequeue(t, ctx) else { break };
                        let n = p.l3_len() as f64 + TUN_HEADER_BYTES;
                        *in_transit = Some((p, n));
                    }
                    let (_, left) = in_transit.as_mut().expect("set above");
                    let used = budget.min(*left);
                    *left -= used;
                    budget -= used;
                    if *left <= 1e-9 {
                        let (p, _) = in_transit.take().expect("set above");
                        out.push((p, t));
                    }
                    if budget <= 1e-9 {
                        break;
                    }
                }
                cur.advance();
            }
        }
    }

    /// Capacity offered so far by a trace link, in bytes (for utilisation).
    pub fn offered_bytes(&self) -> Option<f64> {
        match self {
            Link::Trace { offered_bytes, .. } => Some(*offered_bytes),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses_traces() {
        let t = Trace::parse("0\n0\n5\n10\n").unwrap();
        assert_eq!((t.times_ms.len(), t.period_ms), (4, 10));
        assert!(Trace::parse("").unwrap_err().contains("empty"));
        assert!(Trace::parse("0\n0\n")
            .unwrap_err()
            .contains("last timestamp is 0"));
        assert!(Trace::parse("5\n3\n").unwrap_err().contains("line 2"));
        assert!(Trace::parse("1\nx\n").unwrap_err().contains("line 2"));
    }

    #[test]
    fn cursor_wraps_and_skips() {
        let trace = Trace::parse("0\n2\n2\n10\n").unwrap();
        let mut c = TraceCursor {
            trace,
            start: 0,
            idx: 0,
            base_ms: 0,
        };
        let mut times = Vec::new();
        for _ in 0..8 {
            times.push(c.next_time() / NS_PER_MS);
            c.advance();
        }
        assert_eq!(times, vec![0, 2, 2, 10, 10, 12, 12, 20]);
        c.skip_to(33 * NS_PER_MS + 1);
        assert_eq!(c.next_time() / NS_PER_MS, 40);
        c.skip_to(41 * NS_PER_MS);
        assert_eq!(c.next_time() / NS_PER_MS, 42);
    }
}
