//! The packet table's columns derived from a row's ingress packet and its egress twin:
//! computed a row group at a time by the Parquet writer's threads, never whole.

use super::sources::Sources;
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

    /// Rows `start..end`: values and validity. Each is one pass over the rows, without a
    /// branch per row (a lost packet's twin is missing at random: a branch on it
    /// mispredicts).
    pub(super) fn compute(
        self,
        s: &Sources,
        start: usize,
        end: usize,
    ) -> (Owned<'static>, Option<Vec<bool>>) {
        let (c, e) = (&s.caps.ingress.columns, &s.caps.egress.columns);
        let rows = &s.rows[start..end];
        let twins = &s.twins[start..end];
        let t_in = || rows.iter().map(|&r| c.t_ns[r as usize]);
        // A field of each row's twin: `none` where it has none.
        fn at_twin<'t, T: Copy>(
            twins: &'t [u32],
            field: &'t [T],
            none: T,
        ) -> impl Iterator<Item = T> + 't {
            twins.iter().map(move |&j| {
                // Row 0 stands in for a missing twin, then its value is replaced: a select,
                // not a branch.
                let at = if j == NONE { 0 } else { j as usize };
                let v = field.get(at).copied().unwrap_or(none);
                if j == NONE {
                    none
                } else {
                    v
                }
            })
        }
        let matched = || Some(twins.iter().map(|&j| j != NONE).collect());
        let known = |t: &[i64]| Some(t.iter().map(|&t| t != NO_TIMESTAMP).collect());
        match self {
            Derived::TIngress => {
                let t: Vec<i64> = t_in().collect();
                let ok = known(&t);
                (Owned::I64(t), ok)
            }
            Derived::TEgress => {
                let t: Vec<i64> = at_twin(twins, &e.t_ns, NO_TIMESTAMP).collect();
                let ok = known(&t);
                (Owned::I64(t), ok)
            }
            Derived::Delay => {
                let (mut delay, mut ok) = (Vec::with_capacity(rows.len()), Vec::new());
                ok.reserve(rows.len());
                for (a, b) in t_in().zip(at_twin(twins, &e.t_ns, NO_TIMESTAMP)) {
                    delay.push(b.wrapping_sub(a) as f64 / 1e6);
                    ok.push(a != NO_TIMESTAMP && b != NO_TIMESTAMP);
                }
                (Owned::F64(delay), Some(ok))
            }
            Derived::Lost => {
                let verdicts: Vec<Option<bool>> = twins
                    .iter()
                    .zip(t_in())
                    .map(|(&j, t)| verdict(s, j != NONE, t))
                    .collect();
                let lost = verdicts.iter().map(|v| v.unwrap_or(false)).collect();
                let ok = verdicts.iter().map(Option::is_some).collect();
                (Owned::Bool(lost), Some(ok))
            }
            Derived::CeMarked => {
                let ecn_in = rows.iter().map(|&r| c.ecn[r as usize]);
                let ce = at_twin(twins, &e.ecn, 0)
                    .zip(ecn_in)
                    .map(|(out, inn)| out == 3 && inn != 3)
                    .collect();
                (Owned::Bool(ce), matched())
            }
            Derived::EcnEgress => (Owned::U8(at_twin(twins, &e.ecn, 0).collect()), matched()),
            Derived::DscpEgress => (Owned::U8(at_twin(twins, &e.dscp, 0).collect()), matched()),
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
