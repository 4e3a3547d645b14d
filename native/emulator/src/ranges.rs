//! The queue disciplines' declaration (`src/cganalysis/testbed/spec/qdiscs.json`, embedded
//! at build time): which kinds run here, each parameter's range and default. The Python
//! side checks run files against the same file, so a configuration the project writes is
//! one this emulator accepts, and the other way round.

use std::sync::OnceLock;

use crate::json::{self, Value};

const DECLARATION: &str = include_str!("../../../src/cganalysis/testbed/spec/qdiscs.json");

fn declaration() -> &'static Value {
    static PARSED: OnceLock<Value> = OnceLock::new();
    PARSED.get_or_init(|| {
        json::parse(DECLARATION).expect("qdiscs.json is valid JSON (checked by tests)")
    })
}

fn member<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    match v {
        Value::Obj(members) => members.iter().find(|(name, _)| name == k).map(|(_, v)| v),
        _ => None,
    }
}

fn param(kind: &str, param: &str) -> Option<&'static Value> {
    member(declaration(), kind)
        .and_then(|k| member(k, "params"))
        .and_then(|p| member(p, param))
}

/// Panics on a parameter the declaration lacks: that is a mismatch between this crate and
/// the declaration, which the tests catch, not a user's error.
fn declared(kind: &str, name: &str) -> &'static Value {
    param(kind, name).unwrap_or_else(|| panic!("qdiscs.json declares no {kind}.{name}"))
}

/// `[min, max]` of a declared parameter (max infinite when the declaration has none).
pub fn range(kind: &str, name: &str) -> (f64, f64) {
    let decl = declared(kind, name);
    let num = |k: &str, absent: f64| match member(decl, k) {
        Some(Value::Num(x)) => *x,
        _ => absent,
    };
    (num("min", 0.0), num("max", f64::INFINITY))
}

/// The declared default of a numeric parameter. Panics where the declaration gives none or
/// a text (a value derived at run time): the caller derives it.
pub fn default_num(kind: &str, name: &str) -> f64 {
    match member(declared(kind, name), "default") {
        Some(Value::Num(x)) => *x,
        _ => panic!("qdiscs.json declares no numeric default for {kind}.{name}"),
    }
}

/// The declared default of a boolean parameter (panics as [`default_num`]).
pub fn default_bool(kind: &str, name: &str) -> bool {
    match member(declared(kind, name), "default") {
        Some(Value::Bool(b)) => *b,
        _ => panic!("qdiscs.json declares no boolean default for {kind}.{name}"),
    }
}

/// Whether cga-emu implements the parameter (`"emulator": false` marks the kernel's own).
pub fn in_emulator(kind: &str, name: &str) -> bool {
    !matches!(
        param(kind, name).and_then(|d| member(d, "emulator")),
        Some(Value::Bool(false))
    )
}

/// The kinds declared as running in the emulator (`runs_in`), in declaration order, then
/// the classful `htb`, which the declaration leaves to its own parser: what EMU.json may name.
pub fn emulator_kinds() -> Vec<&'static str> {
    let Value::Obj(kinds) = declaration() else {
        panic!("qdiscs.json is an object");
    };
    let runs_here = |entry: &Value| match member(entry, "runs_in") {
        Some(Value::Arr(places)) => places
            .iter()
            .any(|p| matches!(p, Value::Str(s) if s == "emulator")),
        _ => false,
    };
    kinds
        .iter()
        .filter(|(name, entry)| !name.starts_with('_') && runs_here(entry))
        .map(|(name, _)| name.as_str())
        .chain(["htb"])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declaration_parses_and_gives_ranges_and_defaults() {
        assert_eq!(range("dualpi2", "coupling_factor"), (1.0, 255.0));
        assert_eq!(range("codel", "target_ms"), (0.001, 10_000.0));
        assert!(in_emulator("codel", "ecn") && !in_emulator("dualpi2", "split_gso"));
        assert_eq!(default_num("fq_codel", "drop_batch"), 64.0);
        assert!(default_bool("fq_codel", "ecn") && !default_bool("codel", "ecn"));
    }

    #[test]
    fn the_emulator_kinds_are_those_declared_to_run_here() {
        let kinds = emulator_kinds();
        assert_eq!(kinds.first(), Some(&"pfifo"));
        assert!(kinds.contains(&"sqf") && kinds.contains(&"pie") && kinds.contains(&"htb"));
    }
}
