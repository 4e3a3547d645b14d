//! The matcher's buckets of time, and the runs a chunk's packets are sorted into where
//! the chunk is read (see the module documentation of `stream`).

use crate::matcher::{Rec, NO_TIMESTAMP};
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
///
/// Each bucket's records are sorted by radix straight from the columns: counted by bucket
/// and by their keys' top bits (keys are hashes), placed once, and each slot of a few dozen
/// then sorted where it lies. A chunk's records fit in the caches that one pass writes
/// into; a whole capture's do not, and `matcher::partitioned` spreads them over partitions
/// first.
/// (Gathering each bucket's records first, then copying their keys out, sorting those and
/// looking each record up again cost twice as much: the records went through memory five
/// times instead of once.)
pub fn bucketed(key: &[u64], ts: &[i64], first: u64, max_delay_ns: i64) -> Runs {
    assert_eq!(key.len(), ts.len(), "key and time columns differ in length");
    let width = width(max_delay_ns);
    // Each packet's bucket, as an index into `ids` (u32::MAX: no time). Packets come
    // nearly in time order: a time within the bucket before needs no division.
    let mut ids: Vec<i64> = Vec::new();
    let mut sizes: Vec<usize> = Vec::new();
    let mut index: HashMap<i64, usize, WordMap> = HashMap::default();
    let mut of_packet: Vec<u32> = Vec::with_capacity(ts.len());
    let (mut lo, mut hi, mut at) = (i64::MAX, i64::MIN, 0usize);
    for &t in ts {
        if t == NO_TIMESTAMP {
            of_packet.push(u32::MAX);
            continue;
        }
        if !(lo..hi).contains(&t) {
            let id = t.div_euclid(width);
            lo = id.saturating_mul(width);
            hi = lo.saturating_add(width);
            // Looked up, not searched: with a tiny max delay nearly every packet starts a
            // bucket of its own.
            at = *index.entry(id).or_insert_with(|| {
                ids.push(id);
                sizes.push(0);
                ids.len() - 1
            });
        }
        sizes[at] += 1;
        of_packet.push(at as u32);
    }
    // Per bucket: its slots' bits, and where each slot starts (then: where it is filled to).
    let bits: Vec<u32> = sizes.iter().map(|&n| slot_bits(n)).collect();
    let mut base = Vec::with_capacity(sizes.len() + 1);
    base.push(0usize);
    for &b in &bits {
        base.push(base[base.len() - 1] + (1usize << b));
    }
    let mut fill = vec![0usize; base[base.len() - 1]];
    for (&k, &r) in key.iter().zip(&of_packet) {
        if r != u32::MAX {
            let r = r as usize;
            fill[base[r] + slot(k, bits[r])] += 1;
        }
    }
    for r in 0..sizes.len() {
        let mut sum = 0;
        for f in &mut fill[base[r]..base[r + 1]] {
            (*f, sum) = (sum, sum + *f);
        }
    }
    let mut outs: Vec<Vec<Rec>> = sizes.iter().map(|&n| Vec::with_capacity(n)).collect();
    {
        let mut slots: Vec<&mut [std::mem::MaybeUninit<Rec>]> =
            outs.iter_mut().map(|o| o.spare_capacity_mut()).collect();
        for (i, ((&k, &t), &r)) in key.iter().zip(ts).zip(&of_packet).enumerate() {
            if r != u32::MAX {
                let r = r as usize;
                let f = &mut fill[base[r] + slot(k, bits[r])];
                slots[r][*f].write(Rec {
                    key: k,
                    ts: t,
                    idx: first + i as u64,
                });
                *f += 1;
            }
        }
    }
    let runs = outs
        .into_iter()
        .enumerate()
        .map(|(r, mut out)| {
            // Slot s of bucket r was filled from its start to the next slot's start.
            let ends = &fill[base[r]..base[r + 1]];
            assert_eq!(ends.last().copied(), Some(sizes[r]), "records miscounted");
            // SAFETY: the slots tile 0..sizes[r], each position written once above (the
            // counts said where, and the last slot ends at the bucket's size).
            unsafe { out.set_len(sizes[r]) };
            let mut start = 0;
            for &end in ends {
                out[start..end].sort_unstable_by_key(|r| (r.key, r.ts, r.idx));
                start = end;
            }
            (ids[r], out)
        })
        .collect();
    Runs { width, runs }
}

/// A bucket of `n` records: about 32 a slot, at least 1 and at most 2^20 slots.
fn slot_bits(n: usize) -> u32 {
    (usize::BITS - (n / 32).leading_zeros()).min(20)
}

/// The slot of a key among `2^bits`: its top bits.
fn slot(key: u64, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        (key >> (64 - bits)) as usize
    }
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
