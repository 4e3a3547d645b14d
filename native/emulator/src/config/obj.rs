//! Reading one JSON object of EMU.json: typed, range-checked getters whose errors name the
//! full key, and a final check that refuses the keys nobody asked for.

use super::{err, Res, MS};
use crate::json::Value;
use crate::ranges;

/// A JSON object being read: remembers which keys were used so the rest can be refused.
pub(super) struct Obj<'a> {
    path: String,
    members: &'a [(String, Value)],
    used: Vec<bool>,
}

impl<'a> Obj<'a> {
    pub(super) fn new(path: &str, v: &'a Value) -> Res<Self> {
        match v {
            Value::Obj(m) => Ok(Obj {
                path: path.to_string(),
                members: m,
                used: vec![false; m.len()],
            }),
            other => err(
                path,
                format!("must be an object, got {}", other.type_name()),
            ),
        }
    }

    pub(super) fn key(&self, k: &str) -> String {
        if self.path.is_empty() {
            k.to_string()
        } else {
            format!("{}.{k}", self.path)
        }
    }

    /// The value of `k`; JSON null counts as absent (use the default).
    pub(super) fn get(&mut self, k: &str) -> Option<&'a Value> {
        let i = self.members.iter().position(|(name, _)| name == k)?;
        self.used[i] = true;
        match &self.members[i].1 {
            Value::Null => None,
            v => Some(v),
        }
    }

    pub(super) fn has(&self, k: &str) -> bool {
        self.members
            .iter()
            .any(|(name, v)| name == k && *v != Value::Null)
    }

    pub(super) fn num(&mut self, k: &str) -> Res<Option<f64>> {
        match self.get(k) {
            None => Ok(None),
            Some(Value::Num(x)) => Ok(Some(*x)),
            Some(v) => err(
                &self.key(k),
                format!("must be a number, got {}", v.type_name()),
            ),
        }
    }

    pub(super) fn num_in(
        &mut self,
        k: &str,
        default: f64,
        lo: f64,
        hi: f64,
        what: &str,
    ) -> Res<f64> {
        let x = self.num(k)?.unwrap_or(default);
        if !(lo..=hi).contains(&x) {
            return err(&self.key(k), format!("must be {what}, got {x}"));
        }
        Ok(x)
    }

    pub(super) fn int_in(&mut self, k: &str, default: u64, lo: u64, hi: u64) -> Res<u64> {
        let Some(x) = self.num(k)? else {
            return Ok(default);
        };
        if x.fract() != 0.0 || x < lo as f64 || x > hi as f64 {
            return err(
                &self.key(k),
                format!("must be an integer in [{lo}, {hi}], got {x}"),
            );
        }
        Ok(x as u64)
    }

    /// A duration given in milliseconds, returned in nanoseconds.
    pub(super) fn ms(&mut self, k: &str, default_ms: f64, lo_ms: f64, hi_ms: f64) -> Res<u64> {
        let what = format!("a duration in milliseconds in [{lo_ms}, {hi_ms}]");
        Ok((self.num_in(k, default_ms, lo_ms, hi_ms, &what)? * MS).round() as u64)
    }

    pub(super) fn opt_ms(&mut self, k: &str, lo_ms: f64, hi_ms: f64) -> Res<Option<u64>> {
        if !self.has(k) {
            self.get(k);
            return Ok(None);
        }
        Ok(Some(self.ms(k, 0.0, lo_ms, hi_ms)?))
    }

    /// An integer in the declared range of `kind`.`k` (ranges.rs).
    pub(super) fn int_d(&mut self, kind: &str, k: &str, default: u64) -> Res<u64> {
        let (lo, hi) = ranges::range(kind, k);
        let hi = if hi.is_finite() { hi as u64 } else { u64::MAX };
        self.int_in(k, default, lo as u64, hi)
    }

    /// A duration in the declared range of `kind`.`k`, in ns.
    pub(super) fn ms_d(&mut self, kind: &str, k: &str, default_ms: f64) -> Res<u64> {
        let (lo, hi) = ranges::range(kind, k);
        self.ms(k, default_ms, lo, hi)
    }

    /// An integer in the declared range of `kind`.`k`, its declared default when absent.
    pub(super) fn int_decl(&mut self, kind: &str, k: &str) -> Res<u64> {
        self.int_d(kind, k, ranges::default_num(kind, k) as u64)
    }

    /// A duration in the declared range of `kind`.`k`, its declared default when absent.
    pub(super) fn ms_decl(&mut self, kind: &str, k: &str) -> Res<u64> {
        self.ms_d(kind, k, ranges::default_num(kind, k))
    }

    /// A boolean, its declared default (`kind`.`k`) when absent.
    pub(super) fn bool_decl(&mut self, kind: &str, k: &str) -> Res<bool> {
        self.boolean(k, ranges::default_bool(kind, k))
    }

    pub(super) fn opt_ms_d(&mut self, kind: &str, k: &str) -> Res<Option<u64>> {
        let (lo, hi) = ranges::range(kind, k);
        self.opt_ms(k, lo, hi)
    }

    pub(super) fn boolean(&mut self, k: &str, default: bool) -> Res<bool> {
        match self.get(k) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => err(
                &self.key(k),
                format!("must be true or false, got {}", v.type_name()),
            ),
        }
    }

    pub(super) fn string(&mut self, k: &str) -> Res<Option<&'a str>> {
        match self.get(k) {
            None => Ok(None),
            Some(Value::Str(s)) => Ok(Some(s.as_str())),
            Some(v) => err(
                &self.key(k),
                format!("must be a string, got {}", v.type_name()),
            ),
        }
    }

    pub(super) fn required_string(&mut self, k: &str) -> Res<&'a str> {
        match self.string(k)? {
            Some(s) if !s.is_empty() => Ok(s),
            Some(_) => err(&self.key(k), "must not be empty"),
            None => err(&self.key(k), "is required"),
        }
    }

    pub(super) fn finish(&self, allowed: &[&str]) -> Res<()> {
        for (i, (k, _)) in self.members.iter().enumerate() {
            if !self.used[i] {
                return err(
                    &self.key(k),
                    format!("unknown key; expected one of: {}", allowed.join(", ")),
                );
            }
        }
        Ok(())
    }
}

pub(super) fn opt_int(o: &mut Obj, k: &str, lo: u64, hi: u64) -> Res<Option<u64>> {
    if o.has(k) {
        Ok(Some(o.int_in(k, lo, lo, hi)?))
    } else {
        o.get(k);
        Ok(None)
    }
}

/// An optional integer in the declared range of `kind`.`k` (ranges.rs).
pub(super) fn opt_int_d(o: &mut Obj, kind: &str, k: &str) -> Res<Option<u64>> {
    if o.has(k) {
        Ok(Some(o.int_d(kind, k, 0)?))
    } else {
        o.get(k);
        Ok(None)
    }
}

pub(super) fn limit(o: &mut Obj, kind: &str) -> Res<usize> {
    Ok(o.int_decl(kind, "limit")? as usize)
}
