//! The second pass: both captures read again side by side in time (whichever's next chunk
//! may hold the earlier packets), each chunk's identity keys pushed into the streaming
//! matcher, and each packet-table row handed to the writer once its fate and its place in
//! time order are final. Rows of the last `max_delay_ns` of the egress capture wait for
//! the end guard (the largest delay), unless every egress packet's fate is known first.

use super::groups::{Tables, Twin, WriteError};
use super::held::Held;
use super::prescan::{Scan, NO_WATERMARK};
use super::queue::Queue;
use super::side::{read_ahead, End, Reading, Side, SideError};
use super::{cache, CachePlan, Progress};
use crate::pcap::{ReadError, NO_TIMESTAMP};
use crate::stream::StreamMatcher;
use crate::table::{stats_span, PairOptions};
use crate::wordhash::WordMap;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::sync_channel;

/// Sets its flag when dropped.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Per flow hash: matched ingress packets and their bytes, the largest delay; egress
/// packets with a reverse twin and their bytes (which flows cross the taps the other way).
#[derive(Default, Clone, Copy)]
pub(crate) struct FlowCounts {
    pub(crate) fwd: u64,
    pub(crate) fwd_bytes: u64,
    pub(crate) max_delay_ns: Option<i64>,
    pub(crate) rev: u64,
    pub(crate) rev_bytes: u64,
}

pub(crate) type ByFlow = HashMap<u64, FlowCounts, WordMap>;

/// The flows whose packets reach the egress tap first.
pub(crate) fn reverse_of(by_flow: &ByFlow) -> HashSet<u64, WordMap> {
    by_flow
        .iter()
        .filter(|(_, c)| c.rev > c.fwd)
        .map(|(&f, _)| f)
        .collect()
}

/// The largest delay of a matched packet outside `reverse` (0: none).
pub(crate) fn largest_delay(by_flow: &ByFlow, reverse: &HashSet<u64, WordMap>) -> i64 {
    by_flow
        .iter()
        .filter(|(f, _)| !reverse.contains(f))
        .filter_map(|(_, c)| c.max_delay_ns)
        .max()
        .unwrap_or(0)
}

/// Why a pass stopped.
pub(crate) enum PassError {
    Read(usize, ReadError),
    Write(WriteError),
    /// The egress capture, read live, is out of order further than the lookahead: the
    /// pass is to be made again after a first pass over it.
    Disordered,
}

fn side_error(which: usize) -> impl Fn(SideError) -> PassError {
    move |e| match e {
        SideError::Read(e) => PassError::Read(which, e),
        SideError::Disordered => PassError::Disordered,
    }
}

/// What a pass leaves: the tables with every row handed over (not yet flushed) and the
/// counts per flow.
pub(crate) struct Passed {
    pub(crate) tables: Tables,
    pub(crate) by_flow: ByFlow,
    /// Ingress rows still held (their end guard was not decided).
    pub(crate) rest: (Queue, Vec<Twin>),
    pub(crate) left_out: [u64; 2],
    /// The most packets held at once (both points; memory's measure).
    pub(crate) most_held: usize,
    /// The egress capture read live: what a first pass would have said of it.
    pub(crate) egress_end: Option<Box<End>>,
}

pub(crate) struct Pass<'a> {
    pub(crate) paths: [&'a Path; 2],
    /// The captures' first passes; the egress capture's None: it is read live (see `side`).
    pub(crate) ingress: &'a Scan,
    pub(crate) egress: Option<&'a Scan>,
    pub(crate) opts: PairOptions,
    pub(crate) chunk: usize,
    /// Per capture, where the pages read start to be dropped from the page cache.
    pub(crate) uncache: CachePlan,
    pub(crate) reverse: &'a HashSet<u64, WordMap>,
    pub(crate) progress: &'a Progress,
}

impl Pass<'_> {
    /// Reads both captures to their end, handing rows to `tables`.
    pub(crate) fn run(&self, tables: Tables) -> Result<Passed, PassError> {
        let streams = &self.ingress.streams;
        let scans = [Some(self.ingress), self.egress];
        let stop_ahead = AtomicBool::new(false);
        // Read ahead only when the page cache holds both captures (see `keep_ahead`).
        let ahead = self.uncache == [None, None];
        std::thread::scope(|s| {
            // Set when this closure returns or unwinds, before the scope waits for the
            // threads that read ahead (which would otherwise wait for a reader gone).
            let _stop = StopOnDrop(&stop_ahead);
            for which in 0..2 {
                let (path, bytes) = (self.paths[which], &self.progress.bytes[which]);
                bytes.store(0, Ordering::Relaxed); // this pass reads from the start
                if ahead {
                    s.spawn(|| cache::keep_ahead(path, bytes, &stop_ahead));
                }
            }
            (|| {
                let mut sides = Vec::new();
                for (which, &scan) in scans.iter().enumerate() {
                    let (tx, rx) = sync_channel(1);
                    let reading = Reading {
                        path: self.paths[which],
                        chunk: self.chunk,
                        uncache_from: self.uncache[which],
                        scan,
                        streams,
                        reverse: self.reverse,
                        ingress: which == 0,
                        max_delay_ns: self.opts.max_delay_ns,
                    };
                    let bytes = &self.progress.bytes[which];
                    s.spawn(move || read_ahead(&reading, &tx, bytes));
                    sides.push(Side::new(rx, scan).map_err(side_error(which))?);
                }
                let eg = sides.pop().expect("two sides");
                let ing = sides.pop().expect("two sides");
                self.matching(tables, ing, eg)
            })()
        })
    }

    fn matching(
        &self,
        mut tables: Tables,
        mut ing: Side<'_>,
        mut eg: Side<'_>,
    ) -> Result<Passed, PassError> {
        let max_delay = self.opts.max_delay_ns;
        let mut m = StreamMatcher::new(max_delay);
        let (mut ing_buf, mut eg_buf) = (Queue::default(), Queue::default());
        let mut by_flow = ByFlow::default();
        let given = self.opts.end_guard_ns;
        let live = self.egress.is_none();
        // Rows that entered in the last max-delay of the egress capture wait for the end
        // guard: their verdict may depend on it; no other's does (any guard up to
        // max-delay gives them the same). Read live, the capture's end is not known before
        // it is read: rows wait while they are within the guard (max-delay when none is
        // given) of its latest packet so far, and the table's span ends there.
        let mut hold = match (given, tables.span_ns) {
            (None, Some((_, end))) if !live => Some((end.saturating_sub(max_delay), end)),
            _ => None,
        };
        let mut guard = given.unwrap_or(max_delay);
        let mut live_end_pending = live;
        let file_order = self.ingress.in_order;
        let mut most_held = 0;
        while !(ing.done() && eg.done()) {
            if !ing.done() && (eg.done() || ing.watermark() <= eg.watermark()) {
                ing.read(&mut m, &mut ing_buf, true)
                    .map_err(side_error(0))?;
                if !file_order {
                    ing_buf.sort_by_time();
                }
            } else if let Some((keys, hashes)) =
                eg.read(&mut m, &mut eg_buf, false).map_err(side_error(1))?
            {
                tables.add_egress_flows(keys, hashes);
            }
            most_held = most_held.max(ing_buf.len() + eg_buf.len());
            let both = ing.done() && eg.done();
            m.advance(if both {
                NO_WATERMARK
            } else {
                ing.watermark().min(eg.watermark())
            });
            drain_egress(&mut m, &mut eg_buf, &mut by_flow, &mut tables)
                .map_err(PassError::Write)?;
            if ing_buf.is_empty() || both {
                continue;
            }
            if live_end_pending && eg.done() && eg_buf.is_empty() {
                // Read live to its end: the capture's span is known, and so is every
                // egress packet's fate (as below).
                tables.span_ns = live_span(&eg);
                live_end_pending = false;
                hold = given.is_none().then_some((i64::MIN, i64::MAX));
            }
            if hold.is_some() && eg.done() && eg_buf.is_empty() {
                // Every egress packet's fate is known: so are every pair and reverse twin,
                // and with them the end guard.
                let mut known = by_flow.clone();
                let n = ready_len(&m, &ing_buf, true, NO_WATERMARK, None);
                count_ingress(&ing_buf, &twins_of(&m, &ing_buf, n), &mut known);
                let reverse = reverse_of(&known);
                guard = given.unwrap_or_else(|| largest_delay(&known, &reverse));
                hold = None;
            }
            let waiting = if live_end_pending {
                tables.span_ns = eg.first_watermark.map(|start| (start, eg.latest_t));
                let within = given.unwrap_or(max_delay);
                Some((eg.latest_t.saturating_sub(within), i64::MAX))
            } else {
                hold
            };
            let wm = ing.watermark();
            let k = ready_len(&m, &ing_buf, file_order, wm, waiting);
            if k > 0 {
                emit(&mut m, &mut ing_buf, k, &mut by_flow, &mut tables, guard)
                    .map_err(PassError::Write)?;
            }
        }
        if live_end_pending {
            tables.span_ns = live_span(&eg);
        }
        m.advance(NO_WATERMARK);
        drain_egress(&mut m, &mut eg_buf, &mut by_flow, &mut tables).map_err(PassError::Write)?;
        let twins = twins_of(&m, &ing_buf, ing_buf.len());
        count_ingress(&ing_buf, &twins, &mut by_flow);
        Ok(Passed {
            tables,
            by_flow,
            rest: (ing_buf, twins),
            left_out: [ing.left_out, eg.left_out],
            most_held,
            egress_end: eg.end.take(),
        })
    }
}

/// The span of an egress capture read live to its end: its interface statistics' (pcapng),
/// or its IP packets' first and last times.
fn live_span(eg: &Side<'_>) -> Option<(i64, i64)> {
    let end = eg.end.as_ref().expect("a capture read to its end");
    stats_span(&end.cap).or(end.t_span)
}

/// How many of the first held ingress rows are ready: fate known, place in time order
/// final (no ingress packet still to be read is earlier than `watermark`), not waiting
/// for the end guard (entered in `hold`, `(start, end]`); and so are the rows before.
fn ready_len(
    m: &StreamMatcher,
    buf: &Queue,
    file_order: bool,
    watermark: i64,
    hold: Option<(i64, i64)>,
) -> usize {
    let ordered = file_order || watermark == NO_WATERMARK;
    buf.packets()
        .position(|(h, i)| {
            let t = h.cols.t_ns[i];
            let known = t != NO_TIMESTAMP;
            let resolved = m.ingress_fate(h.row[i]).is_some_and(|f| f.resolved);
            let placed = ordered || (known && t <= watermark);
            let held = hold.is_some_and(|(a, b)| known && t > a && t <= b);
            !(resolved && placed && !held)
        })
        .unwrap_or(buf.len())
}

fn twins_of(m: &StreamMatcher, buf: &Queue, k: usize) -> Vec<Twin> {
    buf.packets()
        .take(k)
        .map(|(h, i)| {
            let f = m
                .ingress_fate(h.row[i])
                .expect("a held row is kept by the matcher");
            (f.twin >= 0).then_some((f.twin_ts, f.twin_tos))
        })
        .collect()
}

/// Adds the matches of the first held ingress rows (their `twins`) to the counts per flow.
fn count_ingress(buf: &Queue, twins: &[Twin], by_flow: &mut ByFlow) {
    for ((h, i), twin) in buf.packets().zip(twins) {
        let Some((t_out, _)) = twin else { continue };
        let e = by_flow.entry(h.hash[i]).or_default();
        e.fwd += 1;
        e.fwd_bytes += u64::from(h.cols.ip_len[i]);
        let d = t_out - h.cols.t_ns[i];
        e.max_delay_ns = Some(e.max_delay_ns.map_or(d, |x| x.max(d)));
    }
}

/// Hands the first `k` held ingress rows to the tables.
fn emit(
    m: &mut StreamMatcher,
    buf: &mut Queue,
    k: usize,
    by_flow: &mut ByFlow,
    tables: &mut Tables,
    guard_ns: i64,
) -> Result<(), WriteError> {
    let twins = twins_of(m, buf, k);
    count_ingress(buf, &twins, by_flow);
    let after_taken = buf.packets().take(k).map(|(h, i)| h.row[i] + 1).max();
    tables.add_packets(buf, k, &twins, guard_ns)?;
    // The first row whose fate is still needed.
    let first = buf.least_row().or(after_taken).unwrap_or(0);
    m.release_ingress(first);
    Ok(())
}

/// Hands the egress rows whose fate is known (in file order) to the egress-only table if
/// they have no twin.
fn drain_egress(
    m: &mut StreamMatcher,
    buf: &mut Queue,
    by_flow: &mut ByFlow,
    tables: &mut Tables,
) -> Result<(), WriteError> {
    let fate = |row: u64| {
        m.egress_fate(row)
            .expect("a held row is kept by the matcher")
    };
    let k = buf
        .packets()
        .position(|(h, i)| !m.egress_fate(h.row[i]).is_some_and(|f| f.resolved))
        .unwrap_or(buf.len());
    if k == 0 {
        return Ok(());
    }
    let mut alone = Held::default();
    let mut last = 0;
    buf.take_front(k, |h, r| {
        let mut at = Vec::new();
        for i in r {
            let f = fate(h.row[i]);
            if f.reverse {
                let e = by_flow.entry(h.hash[i]).or_default();
                e.rev += 1;
                e.rev_bytes += u64::from(h.cols.ip_len[i]);
            }
            if f.twin < 0 {
                at.push(i);
            }
            last = h.row[i];
        }
        alone.append(h.select(&at));
    });
    m.release_egress(last + 1);
    tables.add_egress_only(alone)
}
