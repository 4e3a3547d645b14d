//! The packet table's columns derived from a row's ingress packet and its egress twin:
//! computed a row group at a time by the Parquet writer's threads, never whole.

use super::columns::Sources;
use super::NO_TIMESTAMP;
use crate::matcher::NONE;
use crate::parquet::{Owned, Values};

/// The columns computed from a row's ingress packet and its egress twin.
#[derive(Clone, Copy)]
pub(super) enum Derived {
    TIngress,
    TEgress,
    Delay,
    Lost,
    EcnEgress,
    CeMarked,
    DscpEgress,
}

impl Derived {
    /// An empty slice of the column's type.
    pub(super) fn prototype(self) -> Values<'static> {
        match self {
            Derived::TIngress | Derived::TEgress => Values::I64(&[]),
            Derived::Delay => Values::F64(&[]),
            Derived::Lost | Derived::CeMarked => Values::Bool(&[]),
            Derived::EcnEgress | Derived::DscpEgress => Values::U8(&[]),
        }
    }

    /// Rows `start..end`: values and validity.
    pub(super) fn compute(
        self,
        s: &Sources,
        start: usize,
        end: usize,
    ) -> (Owned<'static>, Option<Vec<bool>>) {
        let (c, e) = (&s.caps.ingress.columns, &s.caps.egress.columns);
        let rows = &s.rows[start..end];
        let twins = &s.twins[start..end];
        let t_in = |i: usize| c.t_ns[rows[i] as usize];
        let twin = |i: usize| (twins[i] != NONE).then_some(twins[i] as usize);
        let t_eg = |i: usize| twin(i).map_or(NO_TIMESTAMP, |j| e.t_ns[j]);
        let n = end - start;
        // (value, valid) of each row
        fn split<T>(pairs: impl Iterator<Item = (T, bool)>) -> (Vec<T>, Option<Vec<bool>>) {
            let (v, ok): (Vec<T>, Vec<bool>) = pairs.unzip();
            (v, Some(ok))
        }
        let at_twin = |f: &dyn Fn(usize, usize) -> u8| {
            split((0..n).map(|i| twin(i).map_or((0, false), |j| (f(i, j), true))))
        };
        match self {
            Derived::TIngress | Derived::TEgress => {
                let t = |i| {
                    if matches!(self, Derived::TIngress) {
                        t_in(i)
                    } else {
                        t_eg(i)
                    }
                };
                let (v, ok) = split((0..n).map(|i| (t(i), t(i) != NO_TIMESTAMP)));
                (Owned::I64(v), ok)
            }
            Derived::Delay => {
                let (v, ok) = split((0..n).map(|i| {
                    let (a, b) = (t_in(i), t_eg(i));
                    if a != NO_TIMESTAMP && b != NO_TIMESTAMP {
                        ((b - a) as f64 / 1e6, true)
                    } else {
                        (0.0, false)
                    }
                }));
                (Owned::F64(v), ok)
            }
            Derived::Lost => {
                let verdicts = (0..n).map(|i| verdict(s, twins[i] != NONE, t_in(i)));
                let (v, ok) = split(verdicts.map(|v| (v.unwrap_or(false), v.is_some())));
                (Owned::Bool(v), ok)
            }
            Derived::CeMarked => {
                let ce = |i: usize, j: usize| e.ecn[j] == 3 && c.ecn[rows[i] as usize] != 3;
                let (v, ok) =
                    split((0..n).map(|i| twin(i).map_or((false, false), |j| (ce(i, j), true))));
                (Owned::Bool(v), ok)
            }
            Derived::EcnEgress => {
                let (v, ok) = at_twin(&|_, j| e.ecn[j]);
                (Owned::U8(v), ok)
            }
            Derived::DscpEgress => {
                let (v, ok) = at_twin(&|_, j| e.dscp[j]);
                (Owned::U8(v), ok)
            }
        }
    }
}

/// Lost: no twin, and entered while the egress capture ran, early enough to have left
/// before it stopped; unknown otherwise (`cganalysis.matching.table.loss_verdict`).
pub(super) fn verdict(s: &Sources, matched: bool, t: i64) -> Option<bool> {
    if matched {
        return Some(false);
    }
    let (start, end) = s.span_ns?;
    (t != NO_TIMESTAMP && t >= start && t <= end - s.guard_ns).then_some(true)
}
