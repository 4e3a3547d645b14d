//! The matcher of `matcher.rs` over captures read a chunk at a time, with memory bounded
//! by the packets of the last `max_delay_ns` instead of the whole captures.
//!
//! Packets of one identity key only ever pair within `max_delay_ns`, and the reverse-twin
//! check looks no further ahead, so a key's packets fall into independent segments
//! wherever two consecutive ones (of either point) lie more than `max_delay_ns` apart: the
//! greedy choice and the first-in-first-out pairing of a segment never see another
//! segment. A key's pending packets are therefore paired, exactly as the whole-capture
//! matcher pairs them, once no packet still to come can lie within `max_delay_ns` of the
//! last of them: when the *watermark* (no packet still to be pushed, at either point, is
//! earlier) has passed that packet's time plus `max_delay_ns`.
//!
//! Rows are numbered by the caller, densely from 0 at each point, in the order pushed; per
//! row the matcher keeps what it found until the caller releases it.
//!
//! The pending packets are kept sorted by (key, time, row), as the whole-capture matcher
//! sorts them: each `advance` sorts the packets pushed since the last one, merges them in
//! and walks the keys once, pairing the groups that are ready and moving the rest down in
//! place (the merged buffer becomes the pending one; the old one is kept for its memory,
//! as fresh pages are zeroed by the kernel). A hash map of keys cost a cache miss or more
//! per packet (a third of the streaming match's time); the walk reads memory in order.
//! An `advance` waits until the packets pushed since the last one are half of those
//! pending (or the captures end): every packet is then walked three or four times at
//! most, whatever the chunk size, and a key is paired at most that much later (which
//! changes nothing: see above).

use crate::matcher::{pair_group, sorted_records, Rec, Scratch, Twin, NO_TIMESTAMP};
use std::collections::VecDeque;

/// A walk waits until the packets pushed since the last one are at least
/// 1 / `WALK_AFTER` of those pending (see the module documentation).
const WALK_AFTER: usize = 2;

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
    fn release(&mut self, upto: u64) {
        let n = upto.saturating_sub(self.base).min(self.fates.len() as u64);
        self.fates.drain(..n as usize);
        self.base += n;
    }
}

/// Pairs ingress and egress packets pushed in chunks (see the module documentation).
pub struct StreamMatcher {
    max_delay_ns: i64,
    /// Pending packets of each point, sorted by (key, time, row).
    pending: [Vec<Rec>; 2],
    /// Packets pushed since the last walk, in push order.
    fresh: [Vec<Rec>; 2],
    /// The pending runs before the last walk, kept for their memory.
    spare: [Vec<Rec>; 2],
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
            max_delay_ns,
            pending: Default::default(),
            fresh: Default::default(),
            spare: Default::default(),
            ins: Rows {
                base: 0,
                fates: VecDeque::new(),
            },
            egs: Rows {
                base: 0,
                fates: VecDeque::new(),
            },
            eg_tos: Rows {
                base: 0,
                fates: VecDeque::new(),
            },
            scratch: Scratch::default(),
        }
    }

    /// The next ingress packets (rows continue from the last push).
    pub fn push_ingress(&mut self, key: &[u64], ts: &[i64]) {
        assert_eq!(key.len(), ts.len(), "key and time columns differ in length");
        let first = self.ins.base + self.ins.fates.len() as u64;
        self.ins.fates.extend(ts.iter().map(|&t| InFate {
            // never paired (as in `match_points`)
            resolved: t == NO_TIMESTAMP,
            ..PENDING_IN
        }));
        push_recs(&mut self.fresh[0], key, ts, first);
    }

    /// The next egress packets, with their IP TOS bytes.
    pub fn push_egress(&mut self, key: &[u64], ts: &[i64], tos: &[u8]) {
        assert!(
            key.len() == ts.len() && key.len() == tos.len(),
            "key, time and TOS columns differ in length"
        );
        let first = self.egs.base + self.egs.fates.len() as u64;
        self.egs.fates.extend(ts.iter().map(|&t| EgFate {
            resolved: t == NO_TIMESTAMP,
            ..PENDING_EG
        }));
        self.eg_tos.fates.extend(tos.iter().copied());
        push_recs(&mut self.fresh[1], key, ts, first);
    }

    /// Pairs every key whose packets are all earlier than `watermark - max_delay_ns`:
    /// no packet pushed later is earlier than `watermark`. `i64::MAX`: the end of both.
    /// (Waits for more packets first when few came since the last walk: see the module.)
    pub fn advance(&mut self, watermark: i64) {
        let fresh = self.fresh[0].len() + self.fresh[1].len();
        let pending = self.pending[0].len() + self.pending[1].len();
        if watermark != i64::MAX && (fresh == 0 || fresh * WALK_AFTER < pending) {
            return;
        }
        let mut all = std::mem::take(&mut self.spare);
        for (p, all) in all.iter_mut().enumerate() {
            let fresh = sorted(std::mem::take(&mut self.fresh[p]));
            all.clear();
            merge_into(&self.pending[p], &fresh, all);
            self.fresh[p] = fresh;
            self.fresh[p].clear();
        }
        let max_delay = self.max_delay_ns;
        let ready = |last: i64| watermark == i64::MAX || last.saturating_add(max_delay) < watermark;
        // The keys not ready are moved down in place: `all` becomes the pending runs.
        let [ins, egs] = &mut all;
        let (mut i, mut j) = (0usize, 0usize);
        let (mut ki, mut kj) = (0usize, 0usize);
        while i < ins.len() || j < egs.len() {
            let key = match (ins.get(i), egs.get(j)) {
                (Some(a), Some(b)) => a.key.min(b.key),
                (Some(a), None) => a.key,
                (None, Some(b)) => b.key,
                (None, None) => unreachable!(),
            };
            let gi = run(&ins[i..], key);
            let gj = run(&egs[j..], key);
            // Each side's run is in time order: its last record is its latest.
            let last_in = (gi > 0).then(|| ins[i + gi - 1].ts);
            let last_eg = (gj > 0).then(|| egs[j + gj - 1].ts);
            let last = last_in.max(last_eg).unwrap_or(i64::MIN);
            if ready(last) {
                self.resolve(&ins[i..i + gi], &egs[j..j + gj]);
            } else {
                ins.copy_within(i..i + gi, ki);
                egs.copy_within(j..j + gj, kj);
                ki += gi;
                kj += gj;
            }
            i += gi;
            j += gj;
        }
        ins.truncate(ki);
        egs.truncate(kj);
        self.spare = std::mem::replace(&mut self.pending, all);
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
                    egs.get_mut(b.idx).twin = a as i64;
                    *ins.get_mut(a) = InFate {
                        resolved: true,
                        twin: b.idx as i64,
                        twin_ts: b.ts,
                        twin_tos: eg_tos.get(b.idx).expect("a paired row is kept"),
                    };
                }
                Twin::Reverse => egs.get_mut(a).reverse = true,
            },
        );
        for r in group_in {
            ins.get_mut(r.idx).resolved = true;
        }
        for r in group_eg {
            egs.get_mut(r.idx).resolved = true;
        }
    }

    /// The fate of an ingress row (`None`: released, or never pushed).
    pub fn ingress_fate(&self, row: u64) -> Option<InFate> {
        self.ins.get(row)
    }

    pub fn egress_fate(&self, row: u64) -> Option<EgFate> {
        self.egs.get(row)
    }

    /// Forgets the fates of the ingress rows before `row`.
    pub fn release_ingress(&mut self, row: u64) {
        self.ins.release(row);
    }

    pub fn release_egress(&mut self, row: u64) {
        self.egs.release(row);
        self.eg_tos.release(row);
    }

    /// Packets pushed and not yet paired (what the memory holds).
    pub fn pending(&self) -> usize {
        self.pending.iter().chain(&self.fresh).map(Vec::len).sum()
    }
}

/// Adds the records of the packets with a time, rows numbered from `first`.
fn push_recs(out: &mut Vec<Rec>, key: &[u64], ts: &[i64], first: u64) {
    out.extend(
        key.iter()
            .zip(ts)
            .enumerate()
            .filter(|(_, (_, &t))| t != NO_TIMESTAMP)
            .map(|(i, (&key, &ts))| Rec {
                key,
                ts,
                idx: first + i as u64,
            }),
    );
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

/// Two runs sorted by (key, time, row), merged into `out`.
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

/// Length of the run of records of `key` at the start of `recs` (sorted by key).
fn run(recs: &[Rec], key: u64) -> usize {
    recs.iter().take_while(|r| r.key == key).count()
}

#[cfg(test)]
mod tests;
