//! The whole dual-point match in native code: from two captures read into columns to the
//! packet table (one row per ingress packet, its egress twin, delay, loss verdict, ECN),
//! the egress-only table and the counts of the summary. It follows the Python pipeline
//! (`cganalysis.matching.pipeline`) step for step, and a test checks that both give equal
//! tables; the Python pipeline stays the reference and serves the other readers.

mod columns;
mod derived;
mod egress;
mod flowids;
mod flowspill;
mod flowstats;
pub(crate) mod rtp;
mod sources;

pub(crate) use columns::{packet_table, SeqCarry};
pub use columns::{EgressOnly, PacketTable};
pub(crate) use egress::egress_only;
pub(crate) use flowids::{see_first, First, FlowIds, FIRST_NONE};
pub use flowstats::{Delays, Flow, FlowStats, KEEP_DELAYS, QUANTILES};
pub(crate) use sources::Captures;

use crate::keys::{identity_key, KIND_OTHER, KIND_RTP, KIND_TCP};
use crate::matcher::{match_partitioned, Pairs, Partitioner, Partitions, Rec, NONE};
use crate::pcap::{Capture, NO_FLOW, NO_TIMESTAMP};
use crate::wordhash::WordMap;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// What the Python side's `MatchOptions` says, in nanoseconds.
#[derive(Clone, Copy, Debug)]
pub struct PairOptions {
    pub max_delay_ns: i64,
    /// None: the largest delay measured.
    pub end_guard_ns: Option<i64>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum PairError {
    /// A capture (0 ingress, 1 egress) holds no IP packet.
    NoIpPackets(usize),
    /// Most bytes reach the egress tap first: the captures were given the wrong way round.
    Swapped {
        reverse_egress: u64,
        matched_ingress: u64,
    },
}

/// The summary's counts (`cganalysis.matching.summary.SummaryCounts`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub packets_in: u64,
    pub packets_delivered: u64,
    pub packets_lost: u64,
    pub packets_unknown: u64,
    pub egress_only_packets: u64,
    pub reverse_packets_in: u64,
    pub reverse_packets_out: u64,
    pub non_ip_packets_in: u64,
    pub non_ip_packets_out: u64,
    pub truncated_packets_in: u64,
}

pub struct Paired {
    pub packets: PacketTable,
    pub egress_only: EgressOnly,
    pub counts: Counts,
    /// When the egress capture ran (statistics blocks, else its first and last packet).
    pub span_ns: Option<(i64, i64)>,
    pub guard_ns: i64,
    /// Seconds each step took, in order (for the benchmark's per-stage figures).
    pub stages: Vec<(&'static str, f64)>,
}

/// Times consecutive steps.
pub struct Stages {
    last: std::time::Instant,
    pub done: Vec<(&'static str, f64)>,
}

impl Stages {
    pub fn start() -> Stages {
        Stages {
            last: std::time::Instant::now(),
            done: Vec::new(),
        }
    }

    /// The step `name` ends now.
    pub fn lap(&mut self, name: &'static str) {
        let now = std::time::Instant::now();
        self.done.push((name, (now - self.last).as_secs_f64()));
        self.last = now;
    }
}

/// One capture's IP packets: their rows in the capture, and at ingress the stream each
/// belongs to and the RTP marks.
pub(crate) struct Point<'a> {
    pub(crate) cap: &'a Capture,
    /// The capture row of each IP packet ("IP row" `k` below is an index into this).
    pub(crate) rows: Vec<u32>,
    /// Ingress only (egress: empty): each IP row's stream, a dense index (a flow's
    /// `flow_idx`, or past the capture's flows an RTP stream's number).
    pub(crate) stream: Vec<u32>,
    /// Ingress only: the RTP marks of every capture row (the packet table reads them).
    pub(crate) rtp_by_row: Vec<bool>,
}

impl<'a> Point<'a> {
    /// The point's IP rows (with, at ingress, their streams and RTP marks) and their
    /// identity keys, in one pass over the capture instead of one per vector.
    pub(crate) fn new(
        cap: &'a Capture,
        streams: &rtp::Streams,
        ingress: bool,
    ) -> (Point<'a>, Vec<u64>) {
        let mut keys = Vec::with_capacity(cap.columns.len());
        let p = Point::build(cap, streams, ingress, |_, _, key| keys.push(key));
        (p, keys)
    }

    /// The point as [`Point::new`] makes it, with the matcher's records (each IP row's
    /// key and time, rows without a time left out) placed in their partitions as they are
    /// made instead of its keys.
    pub(crate) fn with_records(
        cap: &'a Capture,
        streams: &rtp::Streams,
        ingress: bool,
    ) -> (Point<'a>, Partitions) {
        let t_ns = &cap.columns.t_ns;
        let mut recs = Partitioner::with_capacity(t_ns.len());
        let p = Point::build(cap, streams, ingress, |k, row, key| {
            let ts = t_ns[row];
            if ts != NO_TIMESTAMP {
                recs.push(Rec { key, ts, idx: k });
            }
        });
        (p, recs.finish())
    }

    /// The point, each IP row's identity key given to `key(ip_row, capture_row, key)`.
    #[inline(always)]
    fn build(
        cap: &'a Capture,
        streams: &rtp::Streams,
        ingress: bool,
        mut key: impl FnMut(u64, usize, u64),
    ) -> Point<'a> {
        let c = &cap.columns;
        let n = c.len();
        let flows = cap.flows.len() as u32;
        let mut p = Point {
            cap,
            rows: Vec::with_capacity(n),
            stream: Vec::with_capacity(if ingress { n } else { 0 }),
            rtp_by_row: Vec::with_capacity(if ingress { n } else { 0 }),
        };
        let or0 = |has: bool, v: u32| if has { v } else { 0 };
        let mut numbers = rtp::StreamNumbers::new(streams);
        for i in 0..n {
            let number = numbers.of(cap, i);
            if ingress {
                p.rtp_by_row.push(number.is_some());
            }
            if c.flow_idx[i] == NO_FLOW {
                continue; // not IP
            }
            let k = p.rows.len() as u64;
            p.rows.push(i as u32);
            if ingress {
                p.stream.push(number.map_or(c.flow_idx[i], |s| flows + s));
            }
            let kind = if number.is_some() {
                KIND_RTP
            } else if c.has_tcp[i] {
                KIND_TCP
            } else {
                KIND_OTHER
            };
            let id = identity_key(
                kind,
                cap.flows.hashes[c.flow_idx[i] as usize],
                or0(c.has_ip_id[i], c.ip_id[i]),
                c.ip_len[i],
                c.tcp_seq(i),
                c.tcp_ack(i),
                c.rtp_ssrc(i),
                c.rtp_seq(i),
                u64::from(c.l4_hash[i]),
            );
            key(k, i, id);
        }
        p
    }

    /// The capture time of IP row `k`.
    pub(crate) fn t(&self, k: usize) -> i64 {
        self.cap.columns.t_ns[self.rows[k] as usize]
    }

    /// The capture row of IP row `k`.
    pub(crate) fn row(&self, k: usize) -> usize {
        self.rows[k] as usize
    }
}

/// Matches `ingress` and `egress` (both read whole). The tables keep both captures: the
/// packet table reads their columns when written.
pub fn match_pair(
    ingress: &Arc<Capture>,
    egress: &Arc<Capture>,
    opts: PairOptions,
) -> Result<Paired, PairError> {
    let mut clock = Stages::start();
    // Both sides must agree on which streams are RTP: the ingress point decides.
    let streams = rtp::classify(ingress);
    clock.lap("RTP streams");
    // Each point's IP rows and records (identity keys), one point per core.
    let ((ing, ing_recs), (eg, eg_recs)) = std::thread::scope(|s| {
        let eg = s.spawn(|| Point::with_records(egress, &streams, false));
        (
            Point::with_records(ingress, &streams, true),
            eg.join().expect("identity keys"),
        )
    });
    for (which, p) in [&ing, &eg].into_iter().enumerate() {
        if p.rows.is_empty() {
            return Err(PairError::NoIpPackets(which));
        }
    }
    clock.lap("identity keys");
    let m = match_partitioned(
        ing_recs,
        eg_recs,
        ing.rows.len(),
        eg.rows.len(),
        opts.max_delay_ns,
    );
    clock.lap("pairing");
    let reverse = reverse_flows(&ing, &eg, &m)?;
    let in_flow = |p: &Point<'_>, k: usize| {
        !reverse.is_empty() && reverse.contains(&p.cap.flow_hash(p.row(k)))
    };
    // Every row when no flow crosses the other way (the usual case), made at its known
    // length: filtered and collected row by row, growing as it went, it took 20 ms of one
    // core for the benchmark's 2.2 M-packet ingress capture.
    let ing_kept: Vec<u32> = if reverse.is_empty() {
        (0..ing.rows.len() as u32).collect()
    } else {
        (0..ing.rows.len() as u32)
            .filter(|&k| !in_flow(&ing, k as usize))
            .collect()
    };
    // Flow ids on another core, while this one measures the rest.
    let (flow_ids, guard_ns, span_ns, truncated_packets_in, eg_alone) = std::thread::scope(|s| {
        let ids = s.spawn(|| FlowIds::number(&ing, &ing_kept, &streams));
        // The walks measured it over every pair; only pairs of flows that cross the other
        // way (rare) call for measuring the kept ones again.
        let guard_ns = opts.end_guard_ns.unwrap_or_else(|| {
            if reverse.is_empty() {
                m.largest_delay_ns
            } else {
                largest_delay_ns(&ing, &eg, &ing_kept, &m.in_to_eg)
            }
        });
        let span_ns = stats_span(egress).or_else(|| packet_span(&eg));
        let truncated = ing
            .rows
            .iter()
            .filter(|&&i| ingress.columns.truncated[i as usize])
            .count() as u64;
        let eg_alone: Vec<usize> = (0..eg.rows.len())
            .filter(|&k| !in_flow(&eg, k) && m.eg_to_in[k] == NONE)
            .collect();
        let ids = ids.join().expect("flow ids");
        (ids, guard_ns, span_ns, truncated, eg_alone)
    });
    let egress_only = egress::egress_only(&eg, &eg_alone, &flow_ids, &streams);
    let reverse_count = |p: &Point<'_>| (0..p.rows.len()).filter(|&k| in_flow(p, k)).count() as u64;
    let (reverse_packets_in, reverse_packets_out) = (reverse_count(&ing), reverse_count(&eg));
    let (ip_in, ip_out) = (ing.rows.len() as u64, eg.rows.len() as u64);
    let (packets, [delivered, lost, unknown]) = columns::packet_table(
        ing,
        &mut SeqCarry::default(),
        &eg,
        sources::Captures {
            ingress: Arc::clone(ingress),
            egress: Arc::clone(egress),
        },
        &ing_kept,
        &flow_ids,
        &m.in_to_eg,
        span_ns,
        guard_ns,
    );
    clock.lap("packet table");
    let counts = Counts {
        packets_in: packets.len() as u64,
        packets_delivered: delivered,
        packets_lost: lost,
        packets_unknown: unknown,
        egress_only_packets: eg_alone.len() as u64,
        reverse_packets_in,
        reverse_packets_out,
        non_ip_packets_in: ingress.columns.len() as u64 - ip_in,
        non_ip_packets_out: egress.columns.len() as u64 - ip_out,
        truncated_packets_in,
    };
    Ok(Paired {
        stages: clock.done,
        packets,
        egress_only,
        counts,
        span_ns,
        guard_ns,
    })
}

/// Flows whose packets reach the egress tap before the ingress tap (a tap that sees both
/// directions shows, say, TCP ACKs this way): they do not cross the bottleneck. Most
/// bytes that way means the captures were swapped.
fn reverse_flows(
    ing: &Point<'_>,
    eg: &Point<'_>,
    m: &Pairs,
) -> Result<HashSet<u64, WordMap>, PairError> {
    if !m.reverse_twin.iter().any(|&r| r) {
        return Ok(HashSet::default());
    }
    let (ic, ec) = (&ing.cap.columns, &eg.cap.columns);
    // Keyed by flow hashes (already mixed): looked up once per packet of both captures.
    let mut forward: HashMap<u64, u64, WordMap> = HashMap::default();
    let (mut fwd_bytes, mut matched_in) = (0u64, 0u64);
    for (k, &i) in ing.rows.iter().enumerate() {
        if m.in_to_eg[k] != NONE {
            let i = i as usize;
            *forward.entry(ing.cap.flow_hash(i)).or_default() += 1;
            fwd_bytes += u64::from(ic.ip_len[i]);
            matched_in += 1;
        }
    }
    let mut backward: HashMap<u64, u64, WordMap> = HashMap::default();
    let (mut rev_bytes, mut reverse_egress) = (0u64, 0u64);
    for (k, &i) in eg.rows.iter().enumerate() {
        if m.reverse_twin[k] {
            let i = i as usize;
            *backward.entry(eg.cap.flow_hash(i)).or_default() += 1;
            rev_bytes += u64::from(ec.ip_len[i]);
            reverse_egress += 1;
        }
    }
    if rev_bytes > fwd_bytes {
        return Err(PairError::Swapped {
            reverse_egress,
            matched_ingress: matched_in,
        });
    }
    Ok(backward
        .into_iter()
        .filter(|(f, rev)| *rev > forward.get(f).copied().unwrap_or(0))
        .map(|(f, _)| f)
        .collect())
}

/// The largest time through the bottleneck of a matched packet (0 when none matched).
fn largest_delay_ns(ing: &Point<'_>, eg: &Point<'_>, kept: &[u32], in_to_eg: &[u32]) -> i64 {
    let known = |t: i64| if t == NO_TIMESTAMP { 0 } else { t };
    kept.iter()
        .map(|&k| k as usize)
        .filter(|&k| in_to_eg[k] != NONE)
        .map(|k| known(eg.t(in_to_eg[k] as usize)) - known(ing.t(k)))
        .max()
        .unwrap_or(0)
}

pub(crate) fn stats_span(cap: &Capture) -> Option<(i64, i64)> {
    let start = cap.stats.iter().filter_map(|s| s.start_ns).min()?;
    let end = cap.stats.iter().filter_map(|s| s.end_ns).max()?;
    Some((start, end))
}

fn packet_span(p: &Point<'_>) -> Option<(i64, i64)> {
    let known = (0..p.rows.len())
        .map(|k| p.t(k))
        .filter(|&t| t != NO_TIMESTAMP);
    let (lo, hi) = known.fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
    (lo <= hi).then_some((lo, hi))
}
