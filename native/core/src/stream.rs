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

use crate::matcher::{pair_group, Rec, Scratch, Twin, NO_TIMESTAMP};
use crate::wordhash::WordMap;
use std::collections::{HashMap, VecDeque};

/// The packets of one key at one point: nearly always one, kept without an allocation.
#[derive(Default)]
enum Recs {
    #[default]
    None,
    One(Rec),
    Many(Vec<Rec>),
}

impl Recs {
    fn push(&mut self, r: Rec) {
        *self = match std::mem::take(self) {
            Recs::None => Recs::One(r),
            Recs::One(a) => Recs::Many(vec![a, r]),
            Recs::Many(mut v) => {
                v.push(r);
                Recs::Many(v)
            }
        };
    }
    fn len(&self) -> usize {
        match self {
            Recs::None => 0,
            Recs::One(_) => 1,
            Recs::Many(v) => v.len(),
        }
    }
    /// In (time, row) order.
    fn sorted(&mut self) -> &[Rec] {
        match self {
            Recs::None => &[],
            Recs::One(r) => std::slice::from_ref(r),
            Recs::Many(v) => {
                v.sort_unstable_by_key(|r| (r.ts, r.idx));
                v
            }
        }
    }
}

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
    /// Its own time and IP TOS byte (what its ingress twin's fate takes from it).
    ts: i64,
    tos: u8,
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
    ts: 0,
    tos: 0,
};

#[derive(Default)]
struct Group {
    ins: Recs,
    egs: Recs,
    last_ts: i64,
}

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
        while self.base < upto && !self.fates.is_empty() {
            self.fates.pop_front();
            self.base += 1;
        }
    }
}

/// Pairs ingress and egress packets pushed in chunks (see the module documentation).
pub struct StreamMatcher {
    max_delay_ns: i64,
    groups: HashMap<u64, Group, WordMap>,
    /// (time + max_delay_ns, key) of each pushed packet, in push order: a key is looked at
    /// once the watermark passes an entry of it.
    due: VecDeque<(i64, u64)>,
    ins: Rows<InFate>,
    egs: Rows<EgFate>,
    scratch: Scratch,
}

impl StreamMatcher {
    pub fn new(max_delay_ns: i64) -> StreamMatcher {
        assert!(max_delay_ns >= 0, "max_delay_ns must not be negative");
        StreamMatcher {
            max_delay_ns,
            groups: HashMap::default(),
            due: VecDeque::new(),
            ins: Rows {
                base: 0,
                fates: VecDeque::new(),
            },
            egs: Rows {
                base: 0,
                fates: VecDeque::new(),
            },
            scratch: Scratch::default(),
        }
    }

    /// The next ingress packets (rows continue from the last push).
    pub fn push_ingress(&mut self, key: &[u64], ts: &[i64]) {
        assert_eq!(key.len(), ts.len(), "key and time columns differ in length");
        for (&k, &t) in key.iter().zip(ts) {
            let row = self.ins.base + self.ins.fates.len() as u64;
            if t == NO_TIMESTAMP {
                // never paired (as in `match_points`)
                self.ins.fates.push_back(InFate {
                    resolved: true,
                    ..PENDING_IN
                });
                continue;
            }
            self.ins.fates.push_back(PENDING_IN);
            self.add(
                k,
                Rec {
                    key: k,
                    ts: t,
                    idx: row,
                },
                true,
            );
        }
    }

    /// The next egress packets, with their IP TOS bytes.
    pub fn push_egress(&mut self, key: &[u64], ts: &[i64], tos: &[u8]) {
        assert!(
            key.len() == ts.len() && key.len() == tos.len(),
            "key, time and TOS columns differ in length"
        );
        for ((&k, &t), &tos) in key.iter().zip(ts).zip(tos) {
            let row = self.egs.base + self.egs.fates.len() as u64;
            if t == NO_TIMESTAMP {
                self.egs.fates.push_back(EgFate {
                    resolved: true,
                    ..PENDING_EG
                });
                continue;
            }
            self.egs.fates.push_back(EgFate {
                ts: t,
                tos,
                ..PENDING_EG
            });
            self.add(
                k,
                Rec {
                    key: k,
                    ts: t,
                    idx: row,
                },
                false,
            );
        }
    }

    fn add(&mut self, key: u64, rec: Rec, ingress: bool) {
        let g = self.groups.entry(key).or_default();
        if g.ins.len() + g.egs.len() == 0 {
            g.last_ts = rec.ts;
        }
        g.last_ts = g.last_ts.max(rec.ts);
        if ingress {
            g.ins.push(rec);
        } else {
            g.egs.push(rec);
        }
        self.due
            .push_back((rec.ts.saturating_add(self.max_delay_ns), key));
    }

    /// Pairs every key whose packets are all earlier than `watermark - max_delay_ns`:
    /// no packet pushed later is earlier than `watermark`. `i64::MAX`: the end of both.
    pub fn advance(&mut self, watermark: i64) {
        while let Some(&(due, key)) = self.due.front() {
            if due >= watermark && watermark != i64::MAX {
                break;
            }
            self.due.pop_front();
            let ready = match self.groups.get(&key) {
                Some(g) => {
                    watermark == i64::MAX || g.last_ts.saturating_add(self.max_delay_ns) < watermark
                }
                None => false, // paired already, by an earlier entry of the key
            };
            if ready {
                if let Some(g) = self.groups.remove(&key) {
                    self.resolve(g);
                }
            }
        }
    }

    fn resolve(&mut self, mut g: Group) {
        let (ins, egs) = (&mut self.ins, &mut self.egs);
        let (group_in, group_eg) = (g.ins.sorted(), g.egs.sorted());
        pair_group(
            group_in,
            group_eg,
            self.max_delay_ns,
            &mut self.scratch,
            |a, found| match found {
                Twin::Pair(b) => {
                    let e = egs.get_mut(b);
                    e.twin = a as i64;
                    *ins.get_mut(a) = InFate {
                        resolved: true,
                        twin: b as i64,
                        twin_ts: e.ts,
                        twin_tos: e.tos,
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
    }

    /// Packets pushed and not yet paired (what the memory holds).
    pub fn pending(&self) -> usize {
        self.groups
            .values()
            .map(|g| g.ins.len() + g.egs.len())
            .sum()
    }
}

#[cfg(test)]
mod tests;
