//! The second pass: both captures read again side by side in time (whichever's next chunk
//! may hold the earlier packets), each chunk's identity keys pushed into the streaming
//! matcher, and each packet-table row handed to the writer once its fate and its place in
//! time order are final. Rows of the last `max_delay_ns` of the egress capture wait for
//! the end guard (the largest delay), unless every egress packet's fate is known first.

use super::groups::{Tables, Twin, WriteError};
use super::held::Held;
use super::prescan::{Scan, NO_WATERMARK};
use super::queue::Queue;
use super::side::{read_ahead, Reading, Side};
use super::{CachePlan, Progress};
use crate::pcap::{ReadError, NO_TIMESTAMP};
use crate::stream::StreamMatcher;
use crate::table::PairOptions;
use crate::wordhash::WordMap;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::mpsc::sync_channel;

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
}

pub(crate) struct Pass<'a> {
    pub(crate) paths: [&'a Path; 2],
    pub(crate) scans: [&'a Scan; 2],
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
        let streams = &self.scans[0].streams;
        std::thread::scope(|s| {
            let mut sides = Vec::new();
            for which in 0..2 {
                let (tx, rx) = sync_channel(1);
                let reading = Reading {
                    path: self.paths[which],
                    chunk: self.chunk,
                    uncache_from: self.uncache[which],
                    scan: self.scans[which],
                    streams,
                    reverse: self.reverse,
                    ingress: which == 0,
                    max_delay_ns: self.opts.max_delay_ns,
                };
                let bytes = &self.progress.bytes[which];
                s.spawn(move || read_ahead(&reading, &tx, bytes));
                sides.push(Side::new(rx, self.scans[which]));
            }
            let eg = sides.pop().expect("two sides");
            let ing = sides.pop().expect("two sides");
            self.matching(tables, ing, eg)
        })
    }

    fn matching(
        &self,
        mut tables: Tables,
        mut ing: Side<'_>,
        mut eg: Side<'_>,
    ) -> Result<Passed, PassError> {
        let read_err = |which: usize| move |e| PassError::Read(which, e);
        let max_delay = self.opts.max_delay_ns;
        let mut m = StreamMatcher::new(max_delay);
        let (mut ing_buf, mut eg_buf) = (Queue::default(), Queue::default());
        let mut by_flow = ByFlow::default();
        let span = tables.span_ns;
        let given = self.opts.end_guard_ns;
        // Rows that entered in the last max-delay of the egress capture wait for the end
        // guard: their verdict may depend on it; no other's does (any guard up to
        // max-delay gives them the same).
        let mut hold = match (given, span) {
            (None, Some((_, end))) => Some((end.saturating_sub(max_delay), end)),
            _ => None,
        };
        let mut guard = given.unwrap_or(max_delay);
        let file_order = self.scans[0].in_order;
        let mut most_held = 0;
        while !(ing.done() && eg.done()) {
            if !ing.done() && (eg.done() || ing.watermark() <= eg.watermark()) {
                ing.read(&mut m, &mut ing_buf, true).map_err(read_err(0))?;
                if !file_order {
                    ing_buf.sort_by_time();
                }
            } else {
                eg.read(&mut m, &mut eg_buf, false).map_err(read_err(1))?;
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
            let wm = ing.watermark();
            let k = ready_len(&m, &ing_buf, file_order, wm, hold);
            if k > 0 {
                emit(&mut m, &mut ing_buf, k, &mut by_flow, &mut tables, guard)
                    .map_err(PassError::Write)?;
            }
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
        })
    }
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
