//! The whole dual-point match of `cganalysis packets` with memory that does not grow with
//! the captures: both read a chunk at a time, the ingress capture twice (`prescan`, then
//! `pass`), the egress capture once when it is a classic pcap file in time order (read live
//! in the pass, `side`; otherwise twice too), the tables written a row group at a time as
//! their rows become final (`groups`). The tables and counts are those of
//! `table::match_pair` on the whole captures (tests check it, and that the files are the
//! same bytes).
//!
//! A pair larger than the page cache may hold keeps each capture's beginning there for the
//! second pass, and drops the rest as it reads (`cache`).
//!
//! Memory holds the packets of one to two `max_delay_ns` (the matcher's buckets) plus a few
//! chunks (plus a capture's disorder), a row group of each table, and a few words per
//! flow. Flows found at the end to cross the taps the other way are left out by a second
//! matching pass that leaves them out from the start (only when there are any).

mod cache;
mod groups;
mod held;
mod pass;
mod prescan;
mod queue;
mod side;

pub use cache::{budget as cache_budget, CachePlan};
pub use groups::Tables;
pub use prescan::NO_WATERMARK;

use crate::pcap::{Capture, Columns, ReadError};
use crate::table::rtp::stream_key;
use crate::table::{stats_span, Counts, FlowIds, PairError, PairOptions, Stages, FIRST_NONE};
use crate::wordhash::WordMap;
use held::Held;
use pass::{largest_delay, reverse_of, Pass, PassError};
use prescan::Scan;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// How far a streaming match is: its pass (1 or 2), the bytes of each capture read, and
/// whether the first pass reads the egress capture too (`reads_egress_live`).
#[derive(Default)]
pub struct Progress {
    pub pass: AtomicUsize,
    pub bytes: [AtomicUsize; 2],
    pub egress_in_first_pass: AtomicBool,
}

#[derive(Debug)]
pub enum StreamError {
    /// Reading a capture (0 ingress, 1 egress) failed.
    Read(usize, ReadError),
    Pair(PairError),
    /// Writing a table failed.
    Write(PathBuf, std::io::Error),
}

/// A streaming match done: the tables' rows are written, their footers are not (they hold
/// the summary, which the caller makes from the rest).
pub struct Streamed {
    pub tables: Tables,
    pub counts: Counts,
    /// What each file says about itself (columns empty).
    pub ingress: Capture,
    pub egress: Capture,
    pub span_ns: Option<(i64, i64)>,
    pub guard_ns: i64,
    pub stages: Vec<(&'static str, f64)>,
    /// The most packets held at once (memory's measure, for tests).
    pub most_held: usize,
    /// Whether the egress capture had a first pass (a pcapng file, or one out of order
    /// further than the lookahead), or was read only once (for tests).
    pub egress_first_pass: bool,
}

/// How the captures are read.
#[derive(Debug, Clone, Copy)]
pub struct Reads {
    /// Packets read at a time from each capture.
    pub chunk: usize,
    /// Bytes of the captures the page cache may hold between the passes (`cache_budget`;
    /// `None`: unknown, nothing is dropped from the cache).
    pub cache_budget: Option<u64>,
}

/// Matches `ingress` and `egress` into the packet table at `outputs[0]` and the
/// egress-only table at `outputs[1]`, reading them as `reads` says.
/// `flows`: also the flow table (`Tables::flows`), keeping at most this many delays in
/// memory (the rest go to a file next to the packet table).
pub fn stream_pair(
    ingress: &Path,
    egress: &Path,
    opts: PairOptions,
    reads: Reads,
    outputs: [&Path; 2],
    flows: Option<usize>,
    progress: &Progress,
) -> Result<Streamed, StreamError> {
    let chunk = reads.chunk;
    assert!(chunk > 0, "a chunk must hold at least one packet");
    let mut clock = Stages::start();
    progress.pass.store(1, Ordering::Relaxed);
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    // A classic pcap egress capture is read live in the matching pass: the first pass
    // reads only the ingress capture (see `side`). A pcapng one may end with interface
    // statistics that set its span, which rows written before its end would need.
    let live = reads_egress_live(egress);
    progress
        .egress_in_first_pass
        .store(!live, Ordering::Relaxed);
    let sizes = [size(ingress), size(egress)];
    let cache = if live {
        cache::plan_egress_read_once(sizes, reads.cache_budget)
    } else {
        cache::plan(sizes, reads.cache_budget)
    };
    let [uncache_in, uncache_eg] = cache;
    let scan_egress = || prescan::scan(egress, chunk, false, uncache_eg, &progress.bytes[1]);
    let (ing, eg) = std::thread::scope(|s| {
        let eg = (!live).then(|| s.spawn(scan_egress));
        let ing = prescan::scan(ingress, chunk, true, uncache_in, &progress.bytes[0]);
        (ing, eg.map(|t| t.join().expect("prescan thread")))
    });
    let ing = ing.map_err(|e| StreamError::Read(0, e))?;
    let mut eg = eg.transpose().map_err(|e| StreamError::Read(1, e))?;
    if ing.ip_rows == 0 {
        return Err(StreamError::Pair(PairError::NoIpPackets(0)));
    }
    if eg.as_ref().is_some_and(|eg| eg.ip_rows == 0) {
        return Err(StreamError::Pair(PairError::NoIpPackets(1)));
    }
    clock.lap("prescan");
    let mut reverse = HashSet::default();
    loop {
        progress.pass.store(2, Ordering::Relaxed);
        let pass = Pass {
            paths: [ingress, egress],
            ingress: &ing,
            egress: eg.as_ref(),
            opts,
            chunk,
            uncache: cache,
            reverse: &reverse,
            progress,
        };
        let template = Held::live_capture(Columns::default(), Default::default());
        let eg_cap = eg.as_ref().map_or(&template, |eg| &eg.cap);
        let span_ns = eg.as_ref().and_then(|eg| stats_span(&eg.cap).or(eg.t_span));
        let tables = Tables::create(
            outputs,
            &ing.cap,
            eg_cap,
            &ing.streams,
            flow_ids(&ing, &reverse),
            span_ns,
            flows,
        )
        .map_err(|(p, e)| StreamError::Write(p, e))?;
        let mut done = match pass.run(tables) {
            Ok(done) => done,
            Err(PassError::Disordered) => {
                // Out of order further than the lookahead: the first pass over it, and the
                // matching pass again.
                eg = Some(scan_egress().map_err(|e| StreamError::Read(1, e))?);
                clock.lap("matching (the egress capture out of order: read first)");
                continue;
            }
            Err(PassError::Read(which, e)) => return Err(StreamError::Read(which, e)),
            Err(PassError::Write((p, e))) => return Err(StreamError::Write(p, e)),
        };
        let egress_info = match (&eg, done.egress_end.take()) {
            (Some(eg), _) => EgressInfo {
                cap: None,
                rows: eg.rows,
                ip_rows: eg.ip_rows,
                span_ns: stats_span(&eg.cap).or(eg.t_span),
            },
            (None, Some(end)) => EgressInfo {
                span_ns: stats_span(&end.cap).or(end.t_span),
                rows: end.rows,
                ip_rows: end.ip_rows,
                cap: Some(end.cap),
            },
            (None, None) => unreachable!("a capture read live ends with its end"),
        };
        if egress_info.ip_rows == 0 {
            return Err(StreamError::Pair(PairError::NoIpPackets(1)));
        }
        let by_flow = &done.by_flow;
        let (fwd_bytes, rev_bytes) = by_flow
            .values()
            .fold((0, 0), |(f, r), c| (f + c.fwd_bytes, r + c.rev_bytes));
        if rev_bytes > fwd_bytes {
            return Err(StreamError::Pair(PairError::Swapped {
                reverse_egress: by_flow.values().map(|c| c.rev).sum(),
                matched_ingress: by_flow.values().map(|c| c.fwd).sum(),
            }));
        }
        let found = reverse_of(by_flow);
        if !found.is_empty() {
            // Flows that cross the taps the other way: the pass again, without them.
            reverse.extend(found);
            clock.lap("matching (with the flows that cross the other way)");
            continue;
        }
        let guard_ns = opts
            .end_guard_ns
            .unwrap_or_else(|| largest_delay(by_flow, &reverse));
        let (mut rest, twins) = std::mem::take(&mut done.rest);
        let mut tables = done.tables;
        let n = rest.len();
        tables
            .add_packets(&mut rest, n, &twins, guard_ns)
            .and_then(|()| tables.flush(guard_ns))
            .map_err(|(p, e)| StreamError::Write(p, e))?;
        clock.lap("matching");
        let [packets_delivered, packets_lost, packets_unknown] = tables.tally;
        let [packets_in, egress_only_packets] = tables.written();
        let counts = Counts {
            packets_in,
            packets_delivered,
            packets_lost,
            packets_unknown,
            egress_only_packets,
            reverse_packets_in: done.left_out[0],
            reverse_packets_out: done.left_out[1],
            non_ip_packets_in: ing.rows - ing.ip_rows,
            non_ip_packets_out: egress_info.rows - egress_info.ip_rows,
            truncated_packets_in: ing.truncated_ip_rows,
        };
        crate::hugepages::release_cache();
        let egress_first_pass = egress_info.cap.is_none();
        let egress = match (egress_info.cap, eg) {
            (Some(cap), _) => cap,
            (None, Some(eg)) => eg.cap,
            (None, None) => unreachable!("an egress capture read live or first"),
        };
        return Ok(Streamed {
            tables,
            counts,
            ingress: ing.cap,
            egress,
            span_ns: egress_info.span_ns,
            guard_ns,
            stages: clock.done,
            most_held: done.most_held,
            egress_first_pass,
        });
    }
}

/// What the matching needs to say of the egress capture at the end.
struct EgressInfo {
    /// Read live: what the file says about itself (else the first pass's).
    cap: Option<Capture>,
    rows: u64,
    ip_rows: u64,
    span_ns: Option<(i64, i64)>,
}

/// Whether the egress capture at `path` is read only in the matching pass: a classic pcap
/// file (any byte order and timestamp unit). A pcapng file, or one that cannot be read
/// (the first pass then says why), is read in the first pass too.
pub fn reads_egress_live(path: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut magic));
    read.is_ok()
        && matches!(
            u32::from_be_bytes(magic),
            0xd4c3_b2a1 | 0xa1b2_c3d4 | 0x4d3c_b2a1 | 0xa1b2_3c4d
        )
}

/// Flow ids numbered by each stream's first packet, flows in `reverse` left out.
fn flow_ids(ing: &Scan, reverse: &HashSet<u64, WordMap>) -> FlowIds {
    let flows = &ing.cap.flows;
    let mut first = vec![FIRST_NONE; flows.len() + ing.streams.len()];
    for (&(flow_idx, ssrc), f) in &ing.firsts {
        let hash = flows.hash_of(flow_idx);
        if reverse.contains(&hash) {
            continue;
        }
        let rtp = ssrc.and_then(|s| ing.streams.get(&stream_key(hash, Some(s))));
        let e = &mut first[rtp.map_or(flow_idx as usize, |&n| flows.len() + n as usize)];
        if !f.0 && (e.0 || f.1 < e.1) {
            (e.0, e.1) = (false, f.1);
        }
        e.2 = e.2.min(f.2);
    }
    FlowIds::of_firsts(first, &flows.hashes, &ing.streams)
}
