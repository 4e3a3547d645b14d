//! EMU.json: parsing and validation into typed settings.
//!
//! Every error names the key it is about (`a_to_b.qdisc.limit`) and what is expected, and
//! unknown keys are refused, so a typo never silently falls back to a default. Defaults are
//! the Linux kernel's (tc spelling), see docs/emulator.md for the table.
//!
//! This file reads the top level and each direction's pipeline; the typed settings are in
//! `types`, the object reader in `obj`, the disciplines in `discipline` and `htb`.

use std::path::{Path, PathBuf};

use crate::json::{self, Value};
use crate::trace::Trace;

mod discipline;
mod htb;
mod obj;
#[cfg(test)]
mod tests;
mod types;

pub use discipline::qdisc;
pub use types::{
    CodelConfig, Config, DrrConfig, DualPi2Config, FqCodelConfig, HtbClassConfig, HtbConfig, Match,
    PieConfig, PipelineConfig, QdiscConfig, RateConfig, SfqConfig, SqfConfig, StatsConfig,
    StepThresh,
};

use obj::Obj;

pub const MS: f64 = 1e6; // nanoseconds per millisecond

#[derive(Debug)]
pub struct ConfigError {
    pub key: String,
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.key, self.message)
        }
    }
}

type Res<T> = Result<T, ConfigError>;

fn err<T>(key: &str, message: impl Into<String>) -> Res<T> {
    Err(ConfigError {
        key: key.to_string(),
        message: message.into(),
    })
}

/// Reads and validates EMU.json. Relative paths (trace, stats, events) are taken relative to
/// the current directory, like any command-line path.
pub fn load(path: &Path) -> Res<Config> {
    let text = std::fs::read_to_string(path)
        .or_else(|e| err("", format!("cannot read {}: {e}", path.display())))?;
    let v = json::parse(&text)
        .or_else(|e| err("", format!("{} is not valid JSON: {e}", path.display())))?;
    from_value(&v)
}

pub fn from_value(v: &Value) -> Res<Config> {
    let mut o = Obj::new("", v)?;
    let ifaces_v = o
        .get("interfaces")
        .map_or_else(|| err("interfaces", "is required"), Ok)?;
    let mut ifaces = Obj::new("interfaces", ifaces_v)?;
    let iface_a = ifaces.required_string("a")?.to_string();
    let iface_b = ifaces.required_string("b")?.to_string();
    ifaces.finish(&["a", "b"])?;
    if iface_a == iface_b {
        return err("interfaces.b", "must differ from interfaces.a");
    }
    for (k, name) in [("interfaces.a", &iface_a), ("interfaces.b", &iface_b)] {
        if name.len() >= libc::IFNAMSIZ || name.contains('/') || name.contains(char::is_whitespace)
        {
            return err(k, format!("'{name}' is not a valid interface name"));
        }
    }
    let a_to_b = o.get("a_to_b").map(|p| pipeline("a_to_b", p)).transpose()?;
    let b_to_a = o.get("b_to_a").map(|p| pipeline("b_to_a", p)).transpose()?;
    let stats = match o.get("stats") {
        None => None,
        Some(s) => {
            let mut so = Obj::new("stats", s)?;
            let path = PathBuf::from(so.required_string("path")?);
            let interval_ns = so.ms("interval_ms", 100.0, 1.0, 3_600_000.0)?;
            so.finish(&["path", "interval_ms"])?;
            Some(StatsConfig { path, interval_ns })
        }
    };
    let events = match o.get("events") {
        None => None,
        Some(e) => {
            let mut eo = Obj::new("events", e)?;
            let path = PathBuf::from(eo.required_string("path")?);
            eo.finish(&["path"])?;
            Some(path)
        }
    };
    let busy_poll = o.boolean("busy_poll", false)?;
    let seed = o.num("seed")?;
    let seed = match seed {
        Some(s) if s >= 0.0 && s.fract() == 0.0 && s < 9.0e15 => Some(s as u64),
        Some(s) => return err("seed", format!("must be a non-negative integer, got {s}")),
        None => None,
    };
    o.finish(&[
        "interfaces",
        "a_to_b",
        "b_to_a",
        "stats",
        "events",
        "busy_poll",
        "seed",
    ])?;
    Ok(Config {
        iface_a,
        iface_b,
        a_to_b,
        b_to_a,
        stats,
        events,
        busy_poll,
        seed,
    })
}

fn pipeline(path: &str, v: &Value) -> Res<PipelineConfig> {
    let mut o = Obj::new(path, v)?;
    let rate = match o.get("rate") {
        None => RateConfig::Line,
        Some(r) => rate(&format!("{path}.rate"), r)?,
    };
    let qdisc = match o.get("qdisc") {
        None => QdiscConfig::Pfifo { limit: 1000 },
        Some(q) => qdisc(&format!("{path}.qdisc"), q, false)?,
    };
    let delay_ns = o.ms("delay_ms", 0.0, 0.0, 60_000.0)?;
    let jitter_ns = o.ms("jitter_ms", 0.0, 0.0, 60_000.0)?;
    if jitter_ns > delay_ns {
        return err(&format!("{path}.jitter_ms"), "must not exceed delay_ms");
    }
    let loss = o.num_in("loss", 0.0, 0.0, 1.0, "a probability in [0, 1]")?;
    if let (RateConfig::Line, QdiscConfig::Htb(_)) = (&rate, &qdisc) {
        // Allowed (classes are then limited by their ceil only), but usually a mistake.
        eprintln!("cga-emu: note: {path}: htb without a pipeline rate; the link runs at line rate");
    }
    o.finish(&["rate", "qdisc", "delay_ms", "jitter_ms", "loss"])?;
    Ok(PipelineConfig {
        rate,
        qdisc,
        delay_ns,
        jitter_ns,
        loss,
    })
}

fn rate(path: &str, v: &Value) -> Res<RateConfig> {
    let mut o = Obj::new(path, v)?;
    if o.has("mbit") && o.has("trace") {
        return err(path, "give either \"mbit\" or \"trace\", not both");
    }
    let out = if o.has("mbit") {
        let mbit = o.num_in(
            "mbit",
            0.0,
            1e-3,
            1e5,
            "a rate in Mbit/s in [0.001, 100000]",
        )?;
        RateConfig::Fixed {
            bit_per_s: mbit * 1e6,
        }
    } else if o.has("trace") {
        let p = PathBuf::from(o.required_string("trace")?);
        let scale = o.num_in("scale", 1.0, 1e-3, 1e3, "a factor in [0.001, 1000]")?;
        let trace = Trace::load(&p).or_else(|m| err(&format!("{path}.trace"), m))?;
        RateConfig::Trace {
            path: p,
            scale,
            trace,
        }
    } else {
        return err(
            path,
            "must have \"mbit\" (fixed rate) or \"trace\" (mahimahi trace), or be null",
        );
    };
    o.finish(&["mbit", "trace", "scale"])?;
    Ok(out)
}
