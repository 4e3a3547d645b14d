//! The records of a whole capture, partitioned by their keys' top bits as they are made,
//! and the match that sorts and walks each partition while it is in the core's caches.
//!
//! Keys are hashes (uniform bits), so [`PARTITIONS`] of them by the top bits hold about
//! the same number of records each, and a key's records all fall in one. Each side's
//! records go straight into its partitions as a point makes its identity keys, gathered
//! [`GATHER`] at a time per partition and written as whole cache lines with streaming
//! stores: no key vector, no counting pass, no pass that reads the keys back to place
//! them (a sort of the whole key vector made all three). Then partition by partition, on
//! every core, both sides' records are sorted out of place into buffers of that core (see
//! [`sort_partition`]) and walked while there. From identity keys to verdicts, the
//! benchmark's mix B (2.3 M + 2.0 M packets): 0.092-0.115 s -> 0.078 s, 0.17-0.22 -> 0.15 s
//! of CPU; streaming stores alone took the partitioning from 0.060 to 0.044 s.
//!
//! A partition's room in the slab is its expected share and a margin of many standard
//! deviations; records past it (many packets with one key: duplicates, a flood of one
//! retransmitted packet) go to a vector of their own, joined to the partition when sorted.

use super::{partition, sort_partition, walk, Pairs, Rec, Scratch, Verdicts, GATHER, NONE};
use super::{NO_TIMESTAMP, PARTITIONS, PARTITION_BITS};
use std::mem::MaybeUninit;
use std::sync::Mutex;

/// Records placed in their partitions as they come (see the module documentation).
pub(crate) struct Partitioner {
    /// Partition `p`'s room: `slab[p * room .. (p + 1) * room]`, filled from its start.
    slab: Vec<MaybeUninit<Rec>>,
    room: usize,
    /// Records placed in each partition's room.
    placed: Vec<usize>,
    /// Records past a partition's room.
    spill: Vec<Vec<Rec>>,
    gathered: Vec<[Rec; GATHER]>,
    held: [u8; PARTITIONS],
    total: usize,
}

impl Partitioner {
    /// Room for `n` records with uniform keys (more go to the spill).
    pub(crate) fn with_capacity(n: usize) -> Partitioner {
        let share = n.div_ceil(PARTITIONS);
        // A partition's count is binomial, its standard deviation below sqrt(share): eight
        // of them (and a few lines) make a spill a sign of repeated keys, not of chance.
        // A multiple of GATHER: with the slab aligned, each gathered write fills whole lines.
        let margin = 8 * (share as f64).sqrt() as usize + 4 * GATHER;
        let room = (share + margin).div_ceil(GATHER) * GATHER;
        let mut slab = Vec::with_capacity(room * PARTITIONS);
        // SAFETY: MaybeUninit needs no initialisation.
        unsafe { slab.set_len(room * PARTITIONS) };
        Partitioner {
            slab,
            room,
            placed: vec![0; PARTITIONS],
            spill: vec![Vec::new(); PARTITIONS],
            gathered: vec![[Rec::default(); GATHER]; PARTITIONS],
            held: [0; PARTITIONS],
            total: 0,
        }
    }

    /// Adds a record (those of one partition keep the order they came in).
    #[inline(always)]
    pub(crate) fn push(&mut self, r: Rec) {
        let p = partition(r.key);
        let h = usize::from(self.held[p]);
        self.gathered[p][h] = r;
        if h + 1 == GATHER {
            self.write(p, GATHER);
        } else {
            self.held[p] = (h + 1) as u8;
        }
    }

    /// Writes partition `p`'s first `n` gathered records to its room, or past it to its
    /// spill.
    #[inline(never)]
    fn write(&mut self, p: usize, n: usize) {
        let start = p * self.room + self.placed[p];
        let fits = n.min(self.room - self.placed[p]);
        let recs = &self.gathered[p][..n];
        let dst = &mut self.slab[start..start + fits];
        // A whole gathered line straight to memory: the slab is far larger than the
        // caches, and a plain store first reads each line it fills.
        if fits < GATHER || !stream_line(dst, recs) {
            for (slot, r) in dst.iter_mut().zip(recs) {
                slot.write(*r);
            }
        }
        self.spill[p].extend_from_slice(&recs[fits..]);
        self.placed[p] += fits;
        self.total += n;
        self.held[p] = 0;
    }

    /// Each partition's records, in the order they came. Called on the thread that pushed
    /// them: its streaming stores are fenced there, before other threads read the slab.
    pub(crate) fn finish(mut self) -> Partitions {
        for p in 0..PARTITIONS {
            self.write(p, usize::from(self.held[p]));
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: SSE2 is part of x86_64. Orders the streaming stores before what follows.
        unsafe {
            std::arch::x86_64::_mm_sfence()
        };
        Partitions {
            slab: self.slab,
            room: self.room,
            placed: self.placed,
            spill: self.spill,
            total: self.total,
        }
    }
}

/// Writes `GATHER` records to `dst` with streaming stores (no read of the lines they fill)
/// where `dst` is 16-byte aligned; false where not done.
#[inline(always)]
fn stream_line(dst: &mut [MaybeUninit<Rec>], recs: &[Rec]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        let words = GATHER * std::mem::size_of::<Rec>() / 16;
        let (to, from) = (
            dst.as_mut_ptr() as *mut __m128i,
            recs.as_ptr() as *const __m128i,
        );
        if dst.len() < GATHER || recs.len() < GATHER || to as usize % 16 != 0 {
            return false;
        }
        for w in 0..words {
            // SAFETY: both hold GATHER records (checked), `words` 16-byte words; `to` is
            // 16-byte aligned (checked), `from` is read unaligned.
            unsafe { _mm_stream_si128(to.add(w), _mm_loadu_si128(from.add(w))) };
        }
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (dst, recs);
        false
    }
}

/// A side's records, partitioned and complete.
pub(crate) struct Partitions {
    slab: Vec<MaybeUninit<Rec>>,
    room: usize,
    placed: Vec<usize>,
    spill: Vec<Vec<Rec>>,
    total: usize,
}

/// One partition's records: where they lie in the slab, or copied out to be joined with
/// its spill.
enum Part<'a> {
    Slab(&'a [Rec]),
    Joined(Vec<Rec>),
}

impl Part<'_> {
    fn recs(&self) -> &[Rec] {
        match self {
            Part::Slab(s) => s,
            Part::Joined(v) => v,
        }
    }
}

impl Partitions {
    /// The bits a partition's sort buckets by: about two records a bucket (fewer sorted
    /// faster than four or eight; the counts, 64 KiB for 2 M records, stay in cache).
    fn sort_bits(&self) -> u32 {
        (usize::BITS - (self.total / 2).leading_zeros()).clamp(PARTITION_BITS, 32)
    }

    /// Each partition's records, in partition order.
    fn parts(&mut self) -> Vec<Part<'_>> {
        let mut parts = Vec::with_capacity(PARTITIONS);
        let rooms = self.slab.chunks_exact(self.room);
        for ((room, placed), spill) in rooms.zip(&self.placed).zip(&mut self.spill) {
            let filled = &room[..*placed];
            // SAFETY: a partition's first `placed` slots were written (`Partitioner::write`),
            // and MaybeUninit<Rec> has Rec's layout.
            let filled = unsafe { &*(filled as *const [MaybeUninit<Rec>] as *const [Rec]) };
            parts.push(if spill.is_empty() {
                Part::Slab(filled)
            } else {
                let mut joined = filled.to_vec();
                joined.append(spill);
                Part::Joined(joined)
            });
        }
        parts
    }
}

/// Pairs two points' partitioned records (`n_in`, `n_eg`: their rows; see the parent
/// module). Partitions are taken by whichever core is free, both sides' sorted and walked
/// together.
pub(crate) fn match_partitioned(
    mut ins: Partitions,
    mut egs: Partitions,
    n_in: usize,
    n_eg: usize,
    max_delay_ns: i64,
) -> Pairs {
    assert!(max_delay_ns >= 0, "max_delay_ns must not be negative");
    assert!(
        n_in < NONE as usize && n_eg < NONE as usize,
        "too many packets for one capture"
    );
    let bits = (ins.sort_bits(), egs.sort_bits());
    let mut result = Pairs {
        in_to_eg: vec![NONE; n_in],
        eg_to_in: vec![NONE; n_eg],
        reverse_twin: vec![false; n_eg],
        largest_delay_ns: 0,
    };
    let out = Verdicts::new(&mut result);
    let jobs: Vec<(Part<'_>, Part<'_>)> = ins.parts().into_iter().zip(egs.parts()).collect();
    let jobs = Mutex::new(jobs);
    let work = || {
        let (mut sorted_in, mut sorted_eg) = (Vec::new(), Vec::new());
        let (mut walk_scratch, mut largest) = (Scratch::default(), 0);
        let mut counts = (
            vec![0usize; (1 << (bits.0 - PARTITION_BITS)) + 1],
            vec![0usize; (1 << (bits.1 - PARTITION_BITS)) + 1],
        );
        loop {
            // Nothing panics while the lock is held.
            let job = jobs.lock().unwrap_or_else(|e| e.into_inner()).pop();
            let Some((i, e)) = job else {
                return largest;
            };
            sort_partition(i.recs(), bits.0, &mut sorted_in, &mut counts.0);
            sort_partition(e.recs(), bits.1, &mut sorted_eg, &mut counts.1);
            let found = walk(
                &sorted_in,
                &sorted_eg,
                max_delay_ns,
                &out,
                &mut walk_scratch,
            );
            largest = largest.max(found);
        }
    };
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
    let largest = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..cores).map(|_| s.spawn(work)).collect();
        let mine = work();
        helpers.into_iter().fold(mine, |l, h| {
            l.max(h.join().expect("pairing a partition panicked"))
        })
    });
    result.largest_delay_ns = largest;
    result
}

/// Partitions `key` (with times `ts(row)`; rows without one left out) as a point does.
pub(crate) fn partition_keys(key: &[u64], ts: impl Fn(usize) -> i64) -> Partitions {
    let mut recs = Partitioner::with_capacity(key.len());
    for (i, &key) in key.iter().enumerate() {
        let ts = ts(i);
        if ts != NO_TIMESTAMP {
            recs.push(Rec {
                key,
                ts,
                idx: i as u64,
            });
        }
    }
    recs.finish()
}

/// All records of `recs`, sorted by (key, time, row): what the match walks.
#[cfg(test)]
pub(crate) fn sorted(mut p: Partitions) -> Vec<Rec> {
    let bits = p.sort_bits();
    let (mut sorted, mut counts) = (Vec::new(), vec![0; (1 << (bits - PARTITION_BITS)) + 1]);
    let mut all = Vec::new();
    for part in p.parts() {
        sort_partition(part.recs(), bits, &mut sorted, &mut counts);
        all.extend_from_slice(&sorted);
    }
    all
}
