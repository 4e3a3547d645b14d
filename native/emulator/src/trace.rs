//! A mahimahi trace: the delivery opportunities of a trace-driven link, read from the file
//! EMU.json names, and a cursor that walks them as the trace repeats.
//!
//! Each line is one delivery opportunity at that millisecond (mahimahi's LinkQueue; what an
//! opportunity carries is the link's business, see link.rs); the trace repeats with a period
//! equal to its last timestamp.
//!
//! The configuration holds a parsed `Trace` and the link walks it, so this module sits below
//! both and depends on neither.

use std::path::Path;
use std::sync::Arc;

use crate::packet::Nanos;

/// Bytes delivered per trace opportunity (mahimahi's PACKET_SIZE).
pub const OPPORTUNITY_BYTES: f64 = 1504.0;
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
    /// A cursor at the trace's first opportunity, with the trace's time 0 at `start`.
    pub fn new(trace: Trace, start: Nanos) -> Self {
        TraceCursor {
            trace,
            start,
            idx: 0,
            base_ms: 0,
        }
    }

    pub fn next_time(&self) -> Nanos {
        self.start + (self.base_ms + self.trace.times_ms[self.idx]) * NS_PER_MS
    }

    pub fn advance(&mut self) {
        self.idx += 1;
        if self.idx == self.trace.times_ms.len() {
            self.idx = 0;
            self.base_ms += self.trace.period_ms;
        }
    }

    /// Moves to the first opportunity at or after `t` (used when the link was idle).
    pub fn skip_to(&mut self, t: Nanos) {
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
        let mut c = TraceCursor::new(trace, 0);
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
