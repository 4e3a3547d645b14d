//! What the writer takes: a column's values (borrowed or owned), its validity, and how
//! its rows come from them (directly, through a row order, or computed a row group at a
//! time on the encoding threads).

use super::encode::kept_values;
use super::{BOOLEAN, BYTE_ARRAY, DOUBLE, INT32, INT64};
use std::borrow::Cow;

/// One column's values; `valid` (one flag per row, None: all valid) marks the non-nulls.
pub enum Values<'a> {
    U8(&'a [u8]),
    U16(&'a [u16]),
    U32(&'a [u32]),
    I64(&'a [i64]),
    F64(&'a [f64]),
    Bool(&'a [bool]),
    /// Per row an index into `dict` (the strings are few: one per address).
    Str {
        index: &'a [u32],
        dict: &'a [String],
    },
    /// Per row an index into `dict`, unsigned integers of `bits` (8, 16 or 32) bits: a
    /// field of a row's flow, written as a dictionary of one entry per flow.
    Indexed {
        index: &'a [u32],
        dict: &'a [u32],
        bits: u8,
    },
}

impl<'a> Values<'a> {
    /// The values in `at`.
    pub fn slice(&self, at: std::ops::Range<usize>) -> Values<'a> {
        match *self {
            Values::U8(v) => Values::U8(&v[at]),
            Values::U16(v) => Values::U16(&v[at]),
            Values::U32(v) => Values::U32(&v[at]),
            Values::I64(v) => Values::I64(&v[at]),
            Values::F64(v) => Values::F64(&v[at]),
            Values::Bool(v) => Values::Bool(&v[at]),
            Values::Str { index, dict } => Values::Str {
                index: &index[at],
                dict,
            },
            Values::Indexed { index, dict, bits } => Values::Indexed {
                index: &index[at],
                dict,
                bits,
            },
        }
    }
}

/// One column's values, owned: a table's computed columns, or a row group of a gathered
/// or computed one. Strings are an index into `dict`, borrowed or owned.
pub enum Owned<'a> {
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    I64(Vec<i64>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
    Str {
        index: Vec<u32>,
        dict: Cow<'a, [String]>,
    },
    Indexed {
        index: Vec<u32>,
        dict: Cow<'a, [u32]>,
        bits: u8,
    },
}

impl<'a> Owned<'a> {
    /// `values[i]` for each `i` of `rows`.
    pub fn gather(values: &Values<'a>, rows: &[u32]) -> Owned<'a> {
        struct Gather<'r>(&'r [u32]);
        impl Pick for Gather<'_> {
            fn pick<T: Copy>(&self, v: &[T]) -> Vec<T> {
                self.0.iter().map(|&i| v[i as usize]).collect()
            }
        }
        Owned::picked(values, &Gather(rows))
    }

    /// The values whose flag in `valid` is set, next to each other.
    pub fn kept(values: &Values<'a>, valid: &[bool]) -> Owned<'a> {
        struct Kept<'v>(&'v [bool]);
        impl Pick for Kept<'_> {
            fn pick<T: Copy>(&self, v: &[T]) -> Vec<T> {
                kept_values(v, self.0)
            }
        }
        Owned::picked(values, &Kept(valid))
    }

    /// The values `how` picks, of whichever type (dictionaries are kept as they are).
    fn picked(values: &Values<'a>, how: &impl Pick) -> Owned<'a> {
        match *values {
            Values::U8(v) => Owned::U8(how.pick(v)),
            Values::U16(v) => Owned::U16(how.pick(v)),
            Values::U32(v) => Owned::U32(how.pick(v)),
            Values::I64(v) => Owned::I64(how.pick(v)),
            Values::F64(v) => Owned::F64(how.pick(v)),
            Values::Bool(v) => Owned::Bool(how.pick(v)),
            Values::Str { index, dict } => Owned::Str {
                index: how.pick(index),
                dict: Cow::Borrowed(dict),
            },
            Values::Indexed { index, dict, bits } => Owned::Indexed {
                index: how.pick(index),
                dict: Cow::Borrowed(dict),
                bits,
            },
        }
    }

    pub fn as_values(&self) -> Values<'_> {
        match self {
            Owned::U8(v) => Values::U8(v),
            Owned::U16(v) => Values::U16(v),
            Owned::U32(v) => Values::U32(v),
            Owned::I64(v) => Values::I64(v),
            Owned::F64(v) => Values::F64(v),
            Owned::Bool(v) => Values::Bool(v),
            Owned::Str { index, dict } => Values::Str { index, dict },
            Owned::Indexed { index, dict, bits } => Values::Indexed {
                index,
                dict,
                bits: *bits,
            },
        }
    }
}

/// Computes rows `start..end` of a column: their values and validity (None: all valid).
pub type Computed<'a> = Box<dyn Fn(usize, usize) -> (Owned<'a>, Option<Vec<bool>>) + Sync + 'a>;

/// Which of a column's values make a new column (`Owned::gather`, `Owned::kept`).
trait Pick {
    fn pick<T: Copy>(&self, values: &[T]) -> Vec<T>;
}

/// How a column's rows come from its values.
pub enum Rows<'a> {
    /// Row `i` is `values[i]` and `valid[i]`.
    Direct,
    /// Row `i` is `values[order[i]]` and `valid[order[i]]`: a column gathered as it is
    /// encoded, a row group at a time on the encoding threads, instead of copied whole
    /// beforehand.
    Order(&'a [u32]),
    /// This many rows, computed a row group at a time on the encoding threads (a table's
    /// derived columns never exist whole); `values` is empty and only gives the type.
    Computed(usize, Computed<'a>),
}

pub struct Column<'a> {
    pub name: &'a str,
    pub values: Values<'a>,
    pub valid: Option<&'a [bool]>,
    pub rows: Rows<'a>,
}

impl<'a> Column<'a> {
    /// A column whose row `i` is `values[i]`.
    pub fn direct(name: &'a str, values: Values<'a>, valid: Option<&'a [bool]>) -> Column<'a> {
        Column {
            name,
            values,
            valid,
            rows: Rows::Direct,
        }
    }

    pub(super) fn rows(&self) -> usize {
        match &self.rows {
            Rows::Direct => self.source_len(),
            Rows::Order(order) => order.len(),
            Rows::Computed(n, _) => *n,
        }
    }

    /// Length of the values (before any order).
    pub(super) fn source_len(&self) -> usize {
        match &self.values {
            Values::U8(v) => v.len(),
            Values::U16(v) => v.len(),
            Values::U32(v) => v.len(),
            Values::I64(v) => v.len(),
            Values::F64(v) => v.len(),
            Values::Bool(v) => v.len(),
            Values::Str { index, .. } | Values::Indexed { index, .. } => index.len(),
        }
    }

    /// (Parquet physical type, unsigned bit width of an INTEGER annotation, is a string).
    pub(super) fn physical(&self) -> (i32, Option<i8>, bool) {
        match self.values {
            Values::U8(_) => (INT32, Some(8), false),
            Values::U16(_) => (INT32, Some(16), false),
            Values::U32(_) => (INT32, Some(32), false),
            Values::I64(_) => (INT64, None, false),
            Values::F64(_) => (DOUBLE, None, false),
            Values::Bool(_) => (BOOLEAN, None, false),
            Values::Str { .. } => (BYTE_ARRAY, None, true),
            Values::Indexed { bits, .. } => (INT32, Some(bits as i8), false),
        }
    }
}
