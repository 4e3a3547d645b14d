//! The queue disciplines' parameter ranges, from the project's one declaration
//! (`src/cganalysis/emulator/qdisc_params.json`, embedded at build time): the Python side
//! checks run files against the same file, so a configuration the project writes is one
//! this emulator accepts, and the other way round.

use std::sync::OnceLock;

use crate::json::{self, Value};

const DECLARATION: &str = include_str!("../../../src/cganalysis/emulator/qdisc_params.json");

fn declaration() -> &'static Value {
    static PARSED: OnceLock<Value> = OnceLock::new();
    PARSED.get_or_init(|| {
        json::parse(DECLARATION).expect("qdisc_params.json is valid JSON (checked by tests)")
    })
}

fn member<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    match v {
        Value::Obj(members) => members.iter().find(|(name, _)| name == k).map(|(_, v)| v),
        _ => None,
    }
}

/// `[min, max]` of a declared parameter (max infinite when the declaration has none).
///
/// Panics on a parameter the declaration lacks: that is a mismatch between this crate and
/// the declaration, which the tests catch, not a user's error.
pub fn range(kind: &str, param: &str) -> (f64, f64) {
    let decl = member(declaration(), kind)
        .and_then(|k| member(k, param))
        .unwrap_or_else(|| panic!("qdisc_params.json declares no {kind}.{param}"));
    let num = |k: &str, absent: f64| match member(decl, k) {
        Some(Value::Num(x)) => *x,
        _ => absent,
    };
    (num("min", 0.0), num("max", f64::INFINITY))
}

/// Whether cga-emu implements the parameter (`"emulator": false` marks the kernel's own).
pub fn in_emulator(kind: &str, param: &str) -> bool {
    let decl = member(declaration(), kind).and_then(|k| member(k, param));
    !matches!(
        decl.and_then(|d| member(d, "emulator")),
        Some(Value::Bool(false))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declaration_parses_and_gives_ranges() {
        assert_eq!(range("dualpi2", "coupling_factor"), (1.0, 255.0));
        assert_eq!(range("codel", "target_ms"), (0.001, 10_000.0));
        assert!(in_emulator("codel", "ecn") && !in_emulator("dualpi2", "split_gso"));
    }
}
