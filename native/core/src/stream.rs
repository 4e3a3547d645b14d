//! The matcher of `matcher.rs` over captures read a chunk at a time, with memory bounded
//! by the packets of the last `max_delay_ns` instead of the whole captures.
//!
//! Packets of one identity key only ever pair within `max_delay_ns`, and the reverse-twin
//! check looks no further ahead, so a key's packets fall into independent segments
//! wherever two consecutive ones (of either point) lie more than `max_delay_ns` apart: the
//! greedy choice and the first-in-first-out pairing of a segment never see another
//! segment. A key's packets can therefore be paired, exactly as the whole-capture matcher
//! pairs them, a segment at a time, once no packet still to come can join the segment.
//!
//! Packets are kept in *buckets* of time `max_delay_ns` wide (bucket `b` holds the times in
//! `[b * width, (b + 1) * width)`). Two packets of a key more than a bucket apart (one in
//! `b`, the next in `b + 2` or later) are more than `max_delay_ns` apart, in different
//! segments. So once bucket `b + 1` is complete (the *watermark*, the time no packet still
//! to be pushed at either point is earlier than, has reached `(b + 2) * width`), the keys
//! of bucket `b` that bucket `b + 1` lacks are paired; a key that bucket `b + 1` has too is
//! carried into it with its packets, and paired with it (or carried on). Each bucket is
//! sorted once by (key, time, row), as the whole-capture matcher sorts all packets, and
//! walked twice in key order: as the next bucket of its predecessor (keys only) and when
//! its own keys are paired. (The matcher before walked the whole pending set each time,
//! three or four times a packet, with a merge each time.)
//!
//! Rows are numbered by the caller, densely from 0 at each point, in the order pushed; per
//! row the matcher keeps what it found until the caller releases it.

mod buckets;

use crate::matcher::{pair_group, Rec, Scratch, Twin, NO_TIMESTAMP};
use buckets::Bucket;
pub use buckets::{bucketed, Runs};
use std::collections::VecDeque;

/// What became of an ingress packet (kept per row until released).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InFate {
    pub resolved: bool,
    /// The twin's egress row, or -1.
    pub twin: i64,
    /// The twin's time and its IP TOS byte (DSCP and ECN) at egress.
    pub twin_ts: i64,
    pub twin_tos: u8,
}

/// What became of an egress packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EgFate {
    pub resolved: bool,
    /// The twin's ingress row, or -1.
    pub twin: i64,
    /// Unmatched, with an ingress packet of its key just after it (see `MatchResult`).
    pub reverse: bool,
}

const PENDING_IN: InFate = InFate {
    resolved: false,
    twin: -1,
    twin_ts: 0,
    twin_tos: 0,
};
const PENDING_EG: EgFate = EgFate {
    resolved: false,
    twin: -1,
    reverse: false,
};

/// Per-row records of one point, from row `base` on.
struct Rows<T> {
    base: u64,
    fates: VecDeque<T>,
}

impl<T> Default for Rows<T> {
    fn default() -> Self {
        Rows {
            base: 0,
            fates: VecDeque::new(),
        }
    }
}

impl<T: Copy> Rows<T> {
    fn get_mut(&mut self, row: u64) -> &mut T {
        let i = row
            .checked_sub(self.base)
            .expect("a row was released before it was paired");
        &mut self.fates[i as usize]
    }
    fn get(&self, row: u64) -> Option<T> {
        let i = row.checked_sub(self.base)?;
        self.fates.get(i as usize).copied()
    }
    fn next_row(&self) -> u64 {
        self.base + self.fates.len() as u64
    }
    fn release(&mut self, upto: u64) {
        let n = upto.saturating_sub(self.base).min(self.fates.len() as u64);
        self.fates.drain(..n as usize);
        self.base += n;
    }
}

/// Pairs ingress and egress packets pushed in chunks (see the module documentation).
pub struct StreamMatcher {
    /// A bucket's span of time: `max_delay_ns` (at least 1 ns).
    width: i64,
    /// The buckets not yet paired, by increasing id.
    buckets: VecDeque<Bucket>,
    /// Packets of earlier buckets whose keys the first bucket has too, sorted by (key,
    /// time, row): they are paired with it.
    carry: [Vec<Rec>; 2],
    /// Emptied record vectors, kept for their memory (fresh pages are zeroed by the kernel).
    spare: Vec<Vec<Rec>>,
    fates: Fates,
    /// A key's group when it spans the carry and the bucket (both points).
    joined: [Vec<Rec>; 2],
}

/// Spare vectors kept at most (a bucket's two and the carry's, twice over).
const SPARE_VECS: usize = 8;

/// What the matcher found, per row of each point, and what pairing needs to find it.
struct Fates {
    max_delay_ns: i64,
    ins: Rows<InFate>,
    egs: Rows<EgFate>,
    /// Each egress row's IP TOS byte, what its ingress twin's fate takes from it: apart
    /// from the fates, one byte a row, so that the walk's lookups, in key order and thus
    /// at random rows, stay in cache (in the fates they were a third of the walk's time).
    eg_tos: Rows<u8>,
    scratch: Scratch,
}

impl StreamMatcher {
    pub fn new(max_delay_ns: i64) -> StreamMatcher {
        assert!(max_delay_ns >= 0, "max_delay_ns must not be negative");
        StreamMatcher {
            width: buckets::width(max_delay_ns),
            buckets: VecDeque::new(),
            carry: Default::default(),
            spare: Vec::new(),
            fates: Fates {
                max_delay_ns,
                ins: Rows::default(),
                egs: Rows::default(),
                eg_tos: Rows::default(),
                scratch: Scratch::default(),
            },
            joined: Default::default(),
        }
    }

    /// The next ingress packets (rows continue from the last push).
    pub fn push_ingress(&mut self, key: &[u64], ts: &[i64]) {
        let first = self.fates.ins.next_row();
        self.push_ingress_runs(ts, bucketed(key, ts, first, self.width));
    }

    /// The next egress packets, with their IP TOS bytes.
    pub fn push_egress(&mut self, key: &[u64], ts: &[i64], tos: &[u8]) {
        let first = self.fates.egs.next_row();
        self.push_egress_runs(ts, tos, bucketed(key, ts, first, self.width));
    }

    /// The next ingress packets (times `ts`), bucketed (`bucketed`, from the next row).
    pub fn push_ingress_runs(&mut self, ts: &[i64], runs: Runs) {
        self.fates.ins.fates.extend(ts.iter().map(|&t| InFate {
            // never paired (as in `match_points`)
            resolved: t == NO_TIMESTAMP,
            ..PENDING_IN
        }));
        self.push_runs(0, runs);
    }

    /// The next egress packets (times `ts`, IP TOS bytes `tos`), bucketed.
    pub fn push_egress_runs(&mut self, ts: &[i64], tos: &[u8], runs: Runs) {
        assert_eq!(ts.len(), tos.len(), "time and TOS columns differ in length");
        self.fates.egs.fates.extend(ts.iter().map(|&t| EgFate {
            resolved: t == NO_TIMESTAMP,
            ..PENDING_EG
        }));
        self.fates.eg_tos.fates.extend(tos.iter().copied());
        self.push_runs(1, runs);
    }

    fn push_runs(&mut self, p: usize, runs: Runs) {
        assert_eq!(
            runs.width, self.width,
            "runs bucketed for another max delay"
        );
        for (id, recs) in runs.runs {
            let at = self.bucket(id);
            self.buckets[at].runs[p].push(recs);
        }
    }

    /// The position of bucket `id`, made if there is none (packets come nearly in time
    /// order: the latest bucket is tried first, the others searched by halves).
    fn bucket(&mut self, id: i64) -> usize {
        let late = "a packet came earlier than a watermark promised";
        let found = match self.buckets.back() {
            Some(b) if b.id < id => Err(self.buckets.len()),
            None => Err(0),
            _ => self.buckets.binary_search_by_key(&id, |b| b.id),
        };
        let pos = match found {
            Ok(at) => {
                assert!(!self.buckets[at].sorted, "{late}");
                return at;
            }
            Err(pos) => pos,
        };
        assert!(pos > 0 || self.carry.iter().all(Vec::is_empty), "{late}");
        let recs = [self.spare.pop(), self.spare.pop()].map(Option::unwrap_or_default);
        let (runs, sorted) = (Default::default(), false);
        self.buckets.insert(
            pos,
            Bucket {
                id,
                runs,
                recs,
                sorted,
            },
        );
        pos
    }

    /// Pairs every segment no packet still to come can join: no packet pushed later is
    /// earlier than `watermark`. `i64::MAX`: the end of both.
    pub fn advance(&mut self, watermark: i64) {
        // Bucket b is paired once bucket b + 1 is complete: watermark >= (b + 2) * width.
        let reached = watermark.div_euclid(self.width);
        while let Some(front) = self.buckets.front() {
            if watermark != i64::MAX && front.id >= reached.saturating_sub(1) {
                break;
            }
            let mut bucket = self.buckets.pop_front().expect("a front bucket");
            bucket.sort();
            let next = match self.buckets.front_mut() {
                Some(n) if n.id == bucket.id + 1 => {
                    n.sort();
                    Some(&n.recs)
                }
                _ => None,
            };
            let mut carried = [self.spare.pop(), self.spare.pop()].map(Option::unwrap_or_default);
            self.fates.walk(
                &bucket.recs,
                &self.carry,
                next,
                &mut carried,
                &mut self.joined,
            );
            let old = std::mem::replace(&mut self.carry, carried);
            for mut v in old.into_iter().chain(bucket.recs) {
                if self.spare.len() < SPARE_VECS {
                    v.clear();
                    self.spare.push(v);
                }
            }
        }
    }

    /// The fate of an ingress row (`None`: released, or never pushed).
    pub fn ingress_fate(&self, row: u64) -> Option<InFate> {
        self.fates.ins.get(row)
    }

    pub fn egress_fate(&self, row: u64) -> Option<EgFate> {
        self.fates.egs.get(row)
    }

    /// Forgets the fates of the ingress rows before `row`.
    pub fn release_ingress(&mut self, row: u64) {
        self.fates.ins.release(row);
    }

    pub fn release_egress(&mut self, row: u64) {
        self.fates.egs.release(row);
        self.fates.eg_tos.release(row);
    }

    /// Packets pushed and not yet paired (what the memory holds).
    pub fn pending(&self) -> usize {
        let runs = self.buckets.iter().flat_map(|b| b.runs.iter().flatten());
        let buckets = self.buckets.iter().flat_map(|b| &b.recs);
        runs.chain(buckets).chain(&self.carry).map(Vec::len).sum()
    }
}

impl Fates {
    /// Walks the keys of `bucket` and `carry` (each point's sorted) in order: a key that
    /// `next` (the following bucket, sorted) has too goes to `carried` with its packets,
    /// the others are paired. `joined`: room for a group found in both.
    fn walk(
        &mut self,
        bucket: &[Vec<Rec>; 2],
        carry: &[Vec<Rec>; 2],
        next: Option<&[Vec<Rec>; 2]>,
        carried: &mut [Vec<Rec>; 2],
        joined: &mut [Vec<Rec>; 2],
    ) {
        let mut at = [0usize; 2]; // per point, in the bucket
        let mut at_carry = [0usize; 2];
        let mut at_next = [0usize; 2];
        // The least key at the head of the four runs (u64::MAX past a run's end: a real
        // key of that value is still found, as the loop ends only when all are done).
        let head = |run: &[Rec], i: usize| run.get(i).map_or(u64::MAX, |r| r.key);
        loop {
            let done = (0..2).all(|p| at[p] == bucket[p].len() && at_carry[p] == carry[p].len());
            if done {
                break;
            }
            let key = (head(&bucket[0], at[0]).min(head(&bucket[1], at[1])))
                .min(head(&carry[0], at_carry[0]).min(head(&carry[1], at_carry[1])));
            let mut later = false;
            for (p, n) in next.into_iter().flatten().enumerate() {
                let k = &mut at_next[p];
                while *k < n.len() && n[*k].key < key {
                    *k += 1;
                }
                later |= *k < n.len() && n[*k].key == key;
            }
            // Each point's group: the carried packets (all earlier) then the bucket's.
            let mut parts: [(&[Rec], &[Rec]); 2] = [(&[], &[]); 2];
            for p in 0..2 {
                let c = &carry[p][at_carry[p]..];
                let c = &c[..run(c, key)];
                let b = &bucket[p][at[p]..];
                let b = &b[..run(b, key)];
                at_carry[p] += c.len();
                at[p] += b.len();
                parts[p] = (c, b);
            }
            if later {
                for (out, (c, b)) in carried.iter_mut().zip(parts) {
                    out.extend_from_slice(c);
                    out.extend_from_slice(b);
                }
                continue;
            }
            for (j, &(c, b)) in joined.iter_mut().zip(&parts) {
                if !c.is_empty() && !b.is_empty() {
                    j.clear();
                    j.extend_from_slice(c);
                    j.extend_from_slice(b);
                }
            }
            let group = |p: usize| -> &[Rec] {
                match parts[p] {
                    ([], b) => b,
                    (c, []) => c,
                    _ => &joined[p],
                }
            };
            self.resolve(group(0), group(1));
        }
    }

    fn resolve(&mut self, group_in: &[Rec], group_eg: &[Rec]) {
        let (ins, egs, eg_tos) = (&mut self.ins, &mut self.egs, &self.eg_tos);
        pair_group(
            group_in,
            group_eg,
            self.max_delay_ns,
            &mut self.scratch,
            |a, found| match found {
                // The fates are only stored to (at random rows, so no load waits on
                // memory); the twin's time comes with its record, its TOS byte from an
                // array of one byte a row, small enough to stay in cache.
                Twin::Pair(b) => {
                    egs.get_mut(b.idx).twin = a.idx as i64;
                    *ins.get_mut(a.idx) = InFate {
                        resolved: true,
                        twin: b.idx as i64,
                        twin_ts: b.ts,
                        twin_tos: eg_tos.get(b.idx).expect("a paired row is kept"),
                    };
                }
                Twin::Reverse => egs.get_mut(a.idx).reverse = true,
            },
        );
        for r in group_in {
            ins.get_mut(r.idx).resolved = true;
        }
        for r in group_eg {
            egs.get_mut(r.idx).resolved = true;
        }
    }
}

/// Length of the run of records of `key` at the start of `recs` (sorted by key).
fn run(recs: &[Rec], key: u64) -> usize {
    recs.iter().take_while(|r| r.key == key).count()
}

#[cfg(test)]
mod tests;
