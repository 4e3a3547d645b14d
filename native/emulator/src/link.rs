//! The link: when the queue may send. A fixed rate, line rate, or a mahimahi trace.
//!
//! Departures are computed on a virtual clock from the configured rate (fixed: the next
//! packet may start when the previous one's transmission time has elapsed; trace: at each
//! delivery opportunity), never from when the emulator happened to wake up. A late wake-up
//! therefore sends everything that became due, and the long-run rate is exact.
//!
//! Trace semantics follow mahimahi's LinkQueue: each line of the trace (trace.rs) is one
//! delivery opportunity of 1504 bytes at that millisecond, counted against each packet's
//! IP bytes plus the 4-byte header mahimahi's TUN device prepends (so one opportunity
//! carries exactly one 1500-byte packet, as in mahimahi: its LinkQueue reads whole TUN
//! frames); a packet may span opportunities and small packets share one; unused bytes of
//! an opportunity are lost; the trace repeats with a period equal to its last timestamp.
//! `scale` multiplies the bytes per opportunity, scaling the capacity while keeping the
//! trace's timing pattern.

use crate::packet::{Nanos, Packet};
use crate::qdisc::{Ctx, Qdisc};
use crate::trace::{Trace, TraceCursor, OPPORTUNITY_BYTES};

/// What mahimahi counts on top of a packet's IP bytes: its TUN device's packet-information
/// header (IFF_TUN without IFF_NO_PI), read with every packet.
pub const TUN_HEADER_BYTES: f64 = 4.0;

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
            cur: TraceCursor::new(trace, now),
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
