//! The matcher's buckets of time, and the runs a chunk's packets are sorted into where
//! the chunk is read (see the module documentation of `stream`).

use crate::matcher::{sorted_records, Rec, NO_TIMESTAMP};
use crate::wordhash::WordMap;
use std::collections::HashMap;

/// The packets of one bucket of time, each point's apart.
pub(super) struct Bucket {
    pub(super) id: i64,
    /// Each point's runs, each sorted by (key, time, row), as pushed.
    pub(super) runs: [Vec<Vec<Rec>>; 2],
    /// Each point's packets sorted (the runs merged): the bucket is complete.
    pub(super) recs: [Vec<Rec>; 2],
    pub(super) sorted: bool,
}

impl Bucket {
    pub(super) fn sort(&mut self) {
        if !self.sorted {
            for (recs, runs) in self.recs.iter_mut().zip(&mut self.runs) {
                merge_runs(std::mem::take(runs), recs);
            }
            self.sorted = true;
        }
    }
}

/// A chunk's packets of one point with a time, by bucket, each bucket's sorted by (key,
/// time, row): made where the chunk is read (`bucketed`), so that the matching thread only
/// merges them.
pub struct Runs {
    pub(super) width: i64,
    pub(super) runs: Vec<(i64, Vec<Rec>)>,
}

/// A bucket's span of time for a matcher of `max_delay_ns`: any span of at least
/// `max_delay_ns` keeps the segments apart; one nanosecond at least.
pub(super) fn width(max_delay_ns: i64) -> i64 {
    max_delay_ns.max(1)
}

/// The packets with a time (`key`, `ts`), rows numbered from `first`, bucketed for a
/// matcher of `max_delay_ns`.
pub fn bucketed(key: &[u64], ts: &[i64], first: u64, max_delay_ns: i64) -> Runs {
    assert_eq!(key.len(), ts.len(), "key and time columns differ in length");
    let width = width(max_delay_ns);
    let mut runs: Vec<(i64, Vec<Rec>)> = Vec::new();
    let mut index: HashMap<i64, usize, WordMap> = HashMap::default();
    let mut at = usize::MAX; // the bucket of the record before (packets come nearly in order)
    for (i, (&key, &ts)) in key.iter().zip(ts).enumerate() {
        if ts == NO_TIMESTAMP {
            continue;
        }
        let id = ts.div_euclid(width);
        if at >= runs.len() || runs[at].0 != id {
            // Looked up, not searched: with a tiny max delay nearly every packet starts a
            // bucket of its own.
            at = *index.entry(id).or_insert_with(|| {
                runs.push((id, Vec::new()));
                runs.len() - 1
            });
        }
        let idx = first + i as u64;
        runs[at].1.push(Rec { key, ts, idx });
    }
    for (_, recs) in &mut runs {
        *recs = sorted(std::mem::take(recs));
    }
    Runs { width, runs }
}

/// Records sorted by (key, time, row).
fn sorted(recs: Vec<Rec>) -> Vec<Rec> {
    if recs.len() < 4096 {
        let mut recs = recs;
        recs.sort_unstable_by_key(|r| (r.key, r.ts, r.idx));
        return recs;
    }
    // The whole-capture matcher's radix sort (its rows are positions in `recs`).
    let keys: Vec<u64> = recs.iter().map(|r| r.key).collect();
    let mut out = sorted_records(&keys, |i| recs[i].ts);
    for r in &mut out {
        r.idx = recs[r.idx as usize].idx;
    }
    out
}

/// Runs each sorted by (key, time, row), merged into `out` (emptied first).
fn merge_runs(mut runs: Vec<Vec<Rec>>, out: &mut Vec<Rec>) {
    out.clear();
    runs.retain(|r| !r.is_empty());
    // Pairwise, a round at a time: each packet is copied once a round (a chunk's packets
    // fall into a bucket or two, so most buckets have two or three runs).
    while runs.len() > 2 {
        let mut next = Vec::with_capacity(runs.len() / 2 + 1);
        let mut it = runs.into_iter();
        while let Some(a) = it.next() {
            match it.next() {
                Some(b) => {
                    let mut m = Vec::with_capacity(a.len() + b.len());
                    merge_into(&a, &b, &mut m);
                    next.push(m);
                }
                None => next.push(a),
            }
        }
        runs = next;
    }
    match runs.len() {
        0 => {}
        1 => *out = runs.pop().expect("one run"),
        _ => merge_into(&runs[0], &runs[1], out),
    }
}

/// Two runs sorted by (key, time, row), merged onto the end of `out`.
fn merge_into(a: &[Rec], b: &[Rec], out: &mut Vec<Rec>) {
    let order = |r: &Rec| (r.key, r.ts, r.idx);
    out.reserve(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if order(&a[i]) <= order(&b[j]) {
            out.push(a[i]);
            i += 1;
        } else {
            out.push(b[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
}
