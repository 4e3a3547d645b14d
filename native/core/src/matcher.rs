//! Pairs the packets of two capture points by identity key and time.
//!
//! Among packets that share a key (duplicates, retransmissions that look alike, IP ID or
//! RTP sequence wraps), an egress packet can only be the twin of an ingress packet that
//! entered before it left (`t_in <= t_out`) and at most `max_delay_ns` earlier. Within that:
//! 1. which ingress packets got through is decided greedily in egress time order, each
//!    egress packet taking the *latest* plausible ingress twin: a dropped original followed
//!    by its identical retransmission is then counted as the original lost and the
//!    retransmission delivered, not as one packet delayed by a whole RTO;
//! 2. the chosen ingress packets and their egress twins are then paired in time order
//!    (first in, first out), which is what a queue does with exact duplicates. Sorted
//!    pairing keeps every pair causal and minimises the largest delay, so it never breaks
//!    the window either.

mod partitioned;

use partitioned::partition_keys;
pub(crate) use partitioned::{match_partitioned, Partitioner, Partitions};
use std::borrow::Cow;

/// Timestamp of a packet whose block carries none (pcapng simple packet block).
pub const NO_TIMESTAMP: i64 = i64::MIN;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchResult {
    /// For each ingress packet, the index of its egress twin, or -1.
    pub in_to_eg: Vec<i64>,
    /// For each egress packet, the index of its ingress twin, or -1.
    pub eg_to_in: Vec<i64>,
    /// For each egress packet: unmatched, but an ingress packet with the same key follows it
    /// within `max_delay_ns`. Whole flows of these travel the other way (a tap that sees
    /// both directions); most packets like this mean the captures were given swapped.
    pub reverse_twin: Vec<bool>,
}

/// One packet as the matcher sees it: identity key, capture time, row in its capture.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Rec {
    pub(crate) key: u64,
    pub(crate) ts: i64,
    pub(crate) idx: u64,
}

// How records are sorted by (key, time, row) sets the matcher's speed: a comparison sort
// of indices was several times slower, sorting the records in place, cycle by cycle,
// three times slower (each move waits for the load before it). Records carry their time,
// so the walk over groups reads memory in order instead of jumping around the columns.
// Keys are hashes (uniform bits), so records are first spread by their top bits into
// [`PARTITIONS`] (`partitioned`), gathered a few at a time per partition so that each
// write fills cache lines (one pass straight into ~2^16 buckets wrote each record to a
// line of its own, missing the cache each time: three quarters of the sort); each
// partition (~10,000 records, held in the core's second-level cache) is then sorted into
// buckets of about two records by the next bits, whose sort is a comparison or two.
const PARTITION_BITS: u32 = 8;
/// The partitions (by a key's top bits).
const PARTITIONS: usize = 1 << PARTITION_BITS;
/// Records gathered per partition before they are written together (192 bytes, three
/// cache lines; all partitions' 48 KiB stay in the core's caches).
const GATHER: usize = 8;

fn partition(key: u64) -> usize {
    (key >> (64 - PARTITION_BITS)) as usize
}

/// One partition's records sorted by (key, time, row) into `out`: counted into buckets by
/// the key's `bits` top bits below the partition's, placed, then each bucket sorted.
/// `counts` has a slot per bucket and one more.
fn sort_partition(part: &[Rec], bits: u32, out: &mut Vec<Rec>, counts: &mut [usize]) {
    let mask = (1usize << (bits - PARTITION_BITS)) - 1;
    let bucket = |r: &Rec| (r.key >> (64 - bits)) as usize & mask;
    counts.fill(0);
    for r in part {
        counts[bucket(r) + 1] += 1;
    }
    for b in 1..counts.len() {
        counts[b] += counts[b - 1];
    }
    out.clear();
    out.reserve(part.len());
    let slots = &mut out.spare_capacity_mut()[..part.len()];
    // counts[b] is bucket b's next slot while placing, then its end (= bucket b + 1's start)
    for r in part {
        let b = bucket(r);
        slots[counts[b]].write(*r);
        counts[b] += 1;
    }
    assert_eq!(counts[counts.len() - 2], part.len(), "buckets miscounted");
    // SAFETY: the buckets tile 0..part.len() (counted from the same records, the last one
    // ends at part.len(): checked), and each record went to the next slot of its bucket,
    // so every slot was written once.
    unsafe { out.set_len(part.len()) };
    let mut begin = 0;
    for &end in &counts[..counts.len() - 1] {
        if end - begin > 1 {
            out[begin..end].sort_unstable_by_key(|r| (r.key, r.ts, r.idx));
        }
        begin = end;
    }
}

/// A row with no twin in [`Pairs`].
pub const NONE: u32 = u32::MAX;

/// What pairing two points found, by row (`NONE`: no twin); see [`MatchResult`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pairs {
    pub in_to_eg: Vec<u32>,
    pub eg_to_in: Vec<u32>,
    pub reverse_twin: Vec<bool>,
    /// The largest time through the bottleneck of a pair (0 when none).
    pub largest_delay_ns: i64,
}

pub fn match_points(
    in_key: &[u64],
    in_ts: &[i64],
    eg_key: &[u64],
    eg_ts: &[i64],
    max_delay_ns: i64,
) -> MatchResult {
    assert_eq!(
        in_key.len(),
        in_ts.len(),
        "key and timestamp columns must have equal lengths"
    );
    assert_eq!(
        eg_key.len(),
        eg_ts.len(),
        "key and timestamp columns must have equal lengths"
    );
    let p = match_keys(
        Cow::Borrowed(in_key),
        |i| in_ts[i],
        Cow::Borrowed(eg_key),
        |i| eg_ts[i],
        max_delay_ns,
    );
    let wide = |v: Vec<u32>| {
        v.into_iter()
            .map(|j| if j == NONE { -1 } else { i64::from(j) })
            .collect()
    };
    MatchResult {
        in_to_eg: wide(p.in_to_eg),
        eg_to_in: wide(p.eg_to_in),
        reverse_twin: p.reverse_twin,
    }
}

/// Pairs two points' packets given their identity keys and times (by row). Keys handed
/// over (`Cow::Owned`) are freed as soon as the records hold them.
pub(crate) fn match_keys(
    in_key: Cow<'_, [u64]>,
    in_ts: impl Fn(usize) -> i64 + Sync,
    eg_key: Cow<'_, [u64]>,
    eg_ts: impl Fn(usize) -> i64 + Send,
    max_delay_ns: i64,
) -> Pairs {
    let (n_in, n_eg) = (in_key.len(), eg_key.len());
    // The two sides are independent: one on another core.
    let (ins, egs) = std::thread::scope(|scope| {
        let egs = scope.spawn(|| partition_keys(&eg_key, eg_ts));
        let ins = partition_keys(&in_key, in_ts);
        (
            ins,
            egs.join()
                .expect("partitioning the egress records panicked"),
        )
    });
    // The records hold the keys now: keys handed over are freed before the verdicts'
    // arrays are made, which then take their memory instead of fresh pages.
    drop((in_key, eg_key));
    match_partitioned(ins, egs, n_in, n_eg, max_delay_ns)
}

/// Where the walks write: `Pairs`' arrays, shared by the walks of all partitions.
struct Verdicts {
    in_to_eg: *mut u32,
    eg_to_in: *mut u32,
    reverse_twin: *mut bool,
    n_in: usize,
    n_eg: usize,
}

// SAFETY: the walks write disjoint elements (see `Verdicts::set`); nothing reads the
// arrays until all have ended.
unsafe impl Sync for Verdicts {}

impl Verdicts {
    fn new(r: &mut Pairs) -> Verdicts {
        Verdicts {
            in_to_eg: r.in_to_eg.as_mut_ptr(),
            eg_to_in: r.eg_to_in.as_mut_ptr(),
            reverse_twin: r.reverse_twin.as_mut_ptr(),
            n_in: r.in_to_eg.len(),
            n_eg: r.eg_to_in.len(),
        }
    }

    /// Records what `pair_group` found for ingress row `a` (a pair) or egress row `a`
    /// (a reverse twin).
    fn set(&self, a: u64, twin: Twin) {
        let a = a as usize;
        // SAFETY: rows are checked against the arrays' lengths. Each ingress and each
        // egress record belongs to one key, so to one walk, and a walk writes a record's
        // row once (a pair, or for an unpaired egress record a reverse twin): no element
        // is written by both walks, and the arrays outlive them (`match_records` holds
        // them).
        match twin {
            Twin::Pair(b) => {
                let b = b.idx as usize;
                assert!(a < self.n_in && b < self.n_eg, "record row out of range");
                unsafe {
                    *self.in_to_eg.add(a) = b as u32;
                    *self.eg_to_in.add(b) = a as u32;
                }
            }
            Twin::Reverse => {
                assert!(a < self.n_eg, "record row out of range");
                unsafe { *self.reverse_twin.add(a) = true };
            }
        }
    }
}

/// Length of the run of equal keys at the start of `recs`.
fn run_len(recs: &[Rec]) -> usize {
    let k = recs[0].key;
    recs.iter().take_while(|r| r.key == k).count()
}

/// Walks two runs of records sorted by key, pairing the groups of equal keys; returns the
/// largest delay of a pair (0 when none).
fn walk(ins: &[Rec], egs: &[Rec], max_delay_ns: i64, out: &Verdicts, scratch: &mut Scratch) -> i64 {
    let mut largest = 0;
    let (mut i, mut j) = (0usize, 0usize);
    while i < ins.len() && j < egs.len() {
        let (ki, kj) = (ins[i].key, egs[j].key);
        if ki < kj {
            i += run_len(&ins[i..]);
            continue;
        }
        if kj < ki {
            j += run_len(&egs[j..]);
            continue;
        }
        let group_in = &ins[i..i + run_len(&ins[i..])];
        let group_eg = &egs[j..j + run_len(&egs[j..])];
        i += group_in.len();
        j += group_eg.len();
        pair_group(group_in, group_eg, max_delay_ns, scratch, |a, twin| {
            if let Twin::Pair(b) = twin {
                largest = largest.max(b.ts - a.ts);
            }
            out.set(a.idx, twin)
        });
    }
    largest
}

/// What `pair_group` found: an (ingress, egress) pair, or an egress packet whose only
/// twin at ingress comes after it.
pub(crate) enum Twin {
    /// The egress record paired with it.
    Pair(Rec),
    Reverse,
}

/// Reusable buffers of `pair_group`.
#[derive(Default)]
pub(crate) struct Scratch {
    stack: Vec<Rec>,
    chosen_in: Vec<Rec>,
    chosen_eg: Vec<Rec>,
}

/// Pairs the packets of one identity key, each side in (time, row) order: calls
/// `found(in_rec, Twin::Pair(eg_rec))` for each pair and `found(eg_rec, Twin::Reverse)`
/// for each egress packet with a reverse twin (see the module documentation).
pub(crate) fn pair_group(
    group_in: &[Rec],
    group_eg: &[Rec],
    max_delay_ns: i64,
    scratch: &mut Scratch,
    mut found: impl FnMut(&Rec, Twin),
) {
    if group_in.len() == 1 && group_eg.len() == 1 {
        // The common case: one packet in, one out.
        let (a, b) = (group_in[0], group_eg[0]);
        let delay = b.ts - a.ts;
        if (0..=max_delay_ns).contains(&delay) {
            found(&a, Twin::Pair(b));
        } else if delay < 0 && -delay <= max_delay_ns {
            found(&b, Twin::Reverse);
        }
        return;
    }
    let Scratch {
        stack,
        chosen_in,
        chosen_eg,
    } = scratch;
    stack.clear();
    chosen_in.clear();
    chosen_eg.clear();
    let mut next = 0usize;
    for e in group_eg {
        while next < group_in.len() && group_in[next].ts <= e.ts {
            stack.push(group_in[next]);
            next += 1;
        }
        match stack.last() {
            // The stack is in time order: if its latest entry is too old, all are.
            Some(top) if e.ts - top.ts > max_delay_ns => stack.clear(),
            Some(_) => {
                chosen_in.push(stack.pop().unwrap_or_default());
                chosen_eg.push(*e);
                continue;
            }
            None => {}
        }
        // No causal twin: is there one just after it (a sign of swapped captures)?
        let later = group_in.partition_point(|x| x.ts <= e.ts);
        if later < group_in.len() && group_in[later].ts - e.ts <= max_delay_ns {
            found(e, Twin::Reverse);
        }
    }
    // Pair the chosen ones first in, first out (`chosen_eg` is already in time order).
    chosen_in.sort_unstable_by_key(|r| (r.ts, r.idx));
    for (a, &b) in chosen_in.iter().zip(chosen_eg.iter()) {
        found(a, Twin::Pair(b));
    }
}

#[cfg(test)]
mod tests;
