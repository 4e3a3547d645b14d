//! EMU.json: parsing and validation into typed settings.
//!
//! Every error names the key it is about (`a_to_b.qdisc.limit`) and what is expected, and
//! unknown keys are refused, so a typo never silently falls back to a default. Defaults are
//! the Linux kernel's (tc spelling), see docs/emulator.md for the table.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use crate::json::{self, Value};
use crate::link::Trace;
use crate::ranges;

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

#[derive(Debug, Clone)]
pub struct Config {
    pub iface_a: String,
    pub iface_b: String,
    pub a_to_b: Option<PipelineConfig>,
    pub b_to_a: Option<PipelineConfig>,
    pub stats: Option<StatsConfig>,
    pub events: Option<PathBuf>,
    pub busy_poll: bool,
    pub seed: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct StatsConfig {
    pub path: PathBuf,
    pub interval_ns: u64,
}

#[derive(Debug, Clone)]
pub struct PipelineConfig {
    pub rate: RateConfig,
    pub qdisc: QdiscConfig,
    pub delay_ns: u64,
    pub jitter_ns: u64,
    pub loss: f64,
}

impl PipelineConfig {
    /// What a missing direction means: forward at line rate through pfifo 1000, no delay.
    pub fn passthrough() -> Self {
        PipelineConfig {
            rate: RateConfig::Line,
            qdisc: QdiscConfig::Pfifo { limit: 1000 },
            delay_ns: 0,
            jitter_ns: 0,
            loss: 0.0,
        }
    }
}

#[derive(Debug, Clone)]
pub enum RateConfig {
    /// No shaping: packets leave as soon as the queue gives them.
    Line,
    Fixed {
        bit_per_s: f64,
    },
    Trace {
        path: PathBuf,
        scale: f64,
        trace: Trace,
    },
}

#[derive(Debug, Clone)]
pub enum QdiscConfig {
    Pfifo { limit: usize },
    Bfifo { limit_bytes: u64 },
    Sfq(SfqConfig),
    DualPi2(DualPi2Config),
    Codel(CodelConfig),
    FqCodel(FqCodelConfig),
    Sqf(SqfConfig),
    Drr(DrrConfig),
    Pie(PieConfig),
    Htb(HtbConfig),
}

impl QdiscConfig {
    pub fn kind(&self) -> &'static str {
        match self {
            QdiscConfig::Pfifo { .. } => "pfifo",
            QdiscConfig::Bfifo { .. } => "bfifo",
            QdiscConfig::Sfq(_) => "sfq",
            QdiscConfig::DualPi2(_) => "dualpi2",
            QdiscConfig::Codel(_) => "codel",
            QdiscConfig::FqCodel(_) => "fq_codel",
            QdiscConfig::Sqf(_) => "sqf",
            QdiscConfig::Drr(_) => "drr",
            QdiscConfig::Pie(_) => "pie",
            QdiscConfig::Htb(_) => "htb",
        }
    }
}

pub const QDISC_KINDS: &[&str] = &[
    "pfifo", "bfifo", "sfq", "dualpi2", "codel", "fq_codel", "sqf", "drr", "pie", "htb",
];

#[derive(Debug, Clone)]
pub struct SfqConfig {
    pub limit: usize,
    pub quantum: Option<u32>,
    pub perturb_s: f64,
    pub divisor: u32,
    pub flows: usize,
    pub depth: usize,
    pub headdrop: bool,
}

#[derive(Debug, Clone)]
pub struct DualPi2Config {
    pub limit: usize,
    pub memlimit_bytes: Option<u64>,
    pub target_ns: u64,
    pub tupdate_ns: u64,
    /// PI gains in Hz; None: the kernel's defaults (41/256 and 819/256 Hz).
    pub alpha: Option<f64>,
    pub beta: Option<f64>,
    pub coupling_factor: u32,
    pub step_thresh: StepThresh,
    pub min_qlen_step: usize,
    pub drop_on_overload: bool,
    pub drop_enqueue: bool,
    pub l4s_ect: bool,
    pub classic_protection: u32,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepThresh {
    Time(u64),
    Packets(usize),
}

#[derive(Debug, Clone)]
pub struct CodelConfig {
    pub limit: usize,
    pub target_ns: u64,
    pub interval_ns: u64,
    pub ecn: bool,
    pub ce_threshold_ns: Option<u64>,
}

#[derive(Debug, Clone)]
pub struct FqCodelConfig {
    pub limit: usize,
    pub flows: usize,
    pub quantum: u32,
    pub target_ns: u64,
    pub interval_ns: u64,
    pub ecn: bool,
    pub ce_threshold_ns: Option<u64>,
    pub memory_limit_bytes: u64,
    pub drop_batch: usize,
}

#[derive(Debug, Clone)]
pub struct SqfConfig {
    pub limit: usize,
    pub flows: usize,
}

#[derive(Debug, Clone)]
pub struct DrrConfig {
    pub limit: usize,
    pub quantum: Option<u32>,
    pub flows: usize,
}

#[derive(Debug, Clone)]
pub struct PieConfig {
    pub limit: usize,
    pub target_ns: u64,
    pub tupdate_ns: u64,
    pub alpha: u32,
    pub beta: u32,
    pub ecn: bool,
    pub bytemode: bool,
}

#[derive(Debug, Clone)]
pub struct HtbConfig {
    pub default: u32,
    pub classes: Vec<HtbClassConfig>,
}

#[derive(Debug, Clone)]
pub struct HtbClassConfig {
    pub classid: u32,
    pub rate_bit_per_s: f64,
    pub ceil_bit_per_s: f64,
    pub prio: u8,
    pub quantum: u32,
    pub burst_bytes: u64,
    pub cburst_bytes: u64,
    pub leaf: QdiscConfig,
    pub matcher: Option<Match>,
}

/// A classifier: every given field must match (logical AND).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Match {
    pub proto: Option<u8>,
    pub port: Option<u16>,
    pub sport: Option<u16>,
    pub dport: Option<u16>,
    pub dscp: Option<u8>,
    pub ecn: Option<u8>,
    pub src: Option<(IpAddr, u8)>,
    pub dst: Option<(IpAddr, u8)>,
}

/// A JSON object being read: remembers which keys were used so the rest can be refused.
struct Obj<'a> {
    path: String,
    members: &'a [(String, Value)],
    used: Vec<bool>,
}

impl<'a> Obj<'a> {
    fn new(path: &str, v: &'a Value) -> Res<Self> {
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

    fn key(&self, k: &str) -> String {
        if self.path.is_empty() {
            k.to_string()
        } else {
            format!("{}.{k}", self.path)
        }
    }

    /// The value of `k`; JSON null counts as absent (use the default).
    fn get(&mut self, k: &str) -> Option<&'a Value> {
        let i = self.members.iter().position(|(name, _)| name == k)?;
        self.used[i] = true;
        match &self.members[i].1 {
            Value::Null => None,
            v => Some(v),
        }
    }

    fn has(&self, k: &str) -> bool {
        self.members
            .iter()
            .any(|(name, v)| name == k && *v != Value::Null)
    }

    fn num(&mut self, k: &str) -> Res<Option<f64>> {
        match self.get(k) {
            None => Ok(None),
            Some(Value::Num(x)) => Ok(Some(*x)),
            Some(v) => err(
                &self.key(k),
                format!("must be a number, got {}", v.type_name()),
            ),
        }
    }

    fn num_in(&mut self, k: &str, default: f64, lo: f64, hi: f64, what: &str) -> Res<f64> {
        let x = self.num(k)?.unwrap_or(default);
        if !(lo..=hi).contains(&x) {
            return err(&self.key(k), format!("must be {what}, got {x}"));
        }
        Ok(x)
    }

    fn int_in(&mut self, k: &str, default: u64, lo: u64, hi: u64) -> Res<u64> {
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
    fn ms(&mut self, k: &str, default_ms: f64, lo_ms: f64, hi_ms: f64) -> Res<u64> {
        let what = format!("a duration in milliseconds in [{lo_ms}, {hi_ms}]");
        Ok((self.num_in(k, default_ms, lo_ms, hi_ms, &what)? * MS).round() as u64)
    }

    fn opt_ms(&mut self, k: &str, lo_ms: f64, hi_ms: f64) -> Res<Option<u64>> {
        if !self.has(k) {
            self.get(k);
            return Ok(None);
        }
        Ok(Some(self.ms(k, 0.0, lo_ms, hi_ms)?))
    }

    /// An integer in the declared range of `kind`.`k` (ranges.rs).
    fn int_d(&mut self, kind: &str, k: &str, default: u64) -> Res<u64> {
        let (lo, hi) = ranges::range(kind, k);
        let hi = if hi.is_finite() { hi as u64 } else { u64::MAX };
        self.int_in(k, default, lo as u64, hi)
    }

    /// A duration in the declared range of `kind`.`k`, in ns.
    fn ms_d(&mut self, kind: &str, k: &str, default_ms: f64) -> Res<u64> {
        let (lo, hi) = ranges::range(kind, k);
        self.ms(k, default_ms, lo, hi)
    }

    fn opt_ms_d(&mut self, kind: &str, k: &str) -> Res<Option<u64>> {
        let (lo, hi) = ranges::range(kind, k);
        self.opt_ms(k, lo, hi)
    }

    fn boolean(&mut self, k: &str, default: bool) -> Res<bool> {
        match self.get(k) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => err(
                &self.key(k),
                format!("must be true or false, got {}", v.type_name()),
            ),
        }
    }

    fn string(&mut self, k: &str) -> Res<Option<&'a str>> {
        match self.get(k) {
            None => Ok(None),
            Some(Value::Str(s)) => Ok(Some(s.as_str())),
            Some(v) => err(
                &self.key(k),
                format!("must be a string, got {}", v.type_name()),
            ),
        }
    }

    fn required_string(&mut self, k: &str) -> Res<&'a str> {
        match self.string(k)? {
            Some(s) if !s.is_empty() => Ok(s),
            Some(_) => err(&self.key(k), "must not be empty"),
            None => err(&self.key(k), "is required"),
        }
    }

    fn finish(&self, allowed: &[&str]) -> Res<()> {
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

fn opt_int(o: &mut Obj, k: &str, lo: u64, hi: u64) -> Res<Option<u64>> {
    if o.has(k) {
        Ok(Some(o.int_in(k, lo, lo, hi)?))
    } else {
        o.get(k);
        Ok(None)
    }
}

/// An optional integer in the declared range of `kind`.`k` (ranges.rs).
fn opt_int_d(o: &mut Obj, kind: &str, k: &str) -> Res<Option<u64>> {
    if o.has(k) {
        Ok(Some(o.int_d(kind, k, 0)?))
    } else {
        o.get(k);
        Ok(None)
    }
}

fn limit(o: &mut Obj, kind: &str, default: u64) -> Res<usize> {
    Ok(o.int_d(kind, "limit", default)? as usize)
}

pub fn qdisc(path: &str, v: &Value, in_htb: bool) -> Res<QdiscConfig> {
    let mut o = Obj::new(path, v)?;
    let kind = o.required_string("kind")?;
    let kpath = format!("{path}.kind");
    let q = match kind {
        "pfifo" => {
            let q = QdiscConfig::Pfifo {
                limit: limit(&mut o, "pfifo", 1000)?,
            };
            o.finish(&["kind", "limit"])?;
            q
        }
        "bfifo" => {
            let limit_bytes = o.int_d("bfifo", "limit", 1000 * 1514)?;
            o.finish(&["kind", "limit"])?;
            QdiscConfig::Bfifo { limit_bytes }
        }
        "sfq" => {
            let c = SfqConfig {
                limit: limit(&mut o, "sfq", 127)?,
                quantum: opt_int_d(&mut o, "sfq", "quantum")?.map(|q| q as u32),
                perturb_s: o.int_d("sfq", "perturb", 0)? as f64,
                divisor: o.int_d("sfq", "divisor", 1024)? as u32,
                flows: o.int_d("sfq", "flows", 128)? as usize,
                depth: o.int_d("sfq", "depth", 127)? as usize,
                headdrop: o.boolean("headdrop", false)?,
            };
            if !c.divisor.is_power_of_two() {
                return err(&format!("{path}.divisor"), "must be a power of two");
            }
            o.finish(&[
                "kind", "limit", "quantum", "perturb", "divisor", "flows", "depth", "headdrop",
            ])?;
            QdiscConfig::Sfq(c)
        }
        "dualpi2" => QdiscConfig::DualPi2(dualpi2(path, &mut o)?),
        "codel" => {
            let c = CodelConfig {
                limit: limit(&mut o, "codel", 1000)?,
                target_ns: o.ms_d("codel", "target_ms", 5.0)?,
                interval_ns: o.ms_d("codel", "interval_ms", 100.0)?,
                ecn: o.boolean("ecn", false)?,
                ce_threshold_ns: o.opt_ms_d("codel", "ce_threshold_ms")?,
            };
            o.finish(&[
                "kind",
                "limit",
                "target_ms",
                "interval_ms",
                "ecn",
                "ce_threshold_ms",
            ])?;
            QdiscConfig::Codel(c)
        }
        "fq_codel" => {
            let c = FqCodelConfig {
                limit: limit(&mut o, "fq_codel", 10240)?,
                flows: o.int_d("fq_codel", "flows", 1024)? as usize,
                quantum: o.int_d("fq_codel", "quantum", 1514)? as u32,
                target_ns: o.ms_d("fq_codel", "target_ms", 5.0)?,
                interval_ns: o.ms_d("fq_codel", "interval_ms", 100.0)?,
                ecn: o.boolean("ecn", true)?,
                ce_threshold_ns: o.opt_ms_d("fq_codel", "ce_threshold_ms")?,
                memory_limit_bytes: o.int_d("fq_codel", "memory_limit", 32 << 20)?,
                drop_batch: o.int_d("fq_codel", "drop_batch", 64)? as usize,
            };
            o.finish(&[
                "kind",
                "limit",
                "flows",
                "quantum",
                "target_ms",
                "interval_ms",
                "ecn",
                "ce_threshold_ms",
                "memory_limit",
                "drop_batch",
            ])?;
            QdiscConfig::FqCodel(c)
        }
        "sqf" => {
            let c = SqfConfig {
                limit: limit(&mut o, "sqf", 1000)?,
                flows: o.int_d("sqf", "flows", 128)? as usize,
            };
            o.finish(&["kind", "limit", "flows"])?;
            QdiscConfig::Sqf(c)
        }
        "drr" => {
            let c = DrrConfig {
                limit: limit(&mut o, "drr", 1000)?,
                quantum: opt_int_d(&mut o, "drr", "quantum")?.map(|q| q as u32),
                flows: o.int_d("drr", "flows", 1024)? as usize,
            };
            o.finish(&["kind", "limit", "quantum", "flows"])?;
            QdiscConfig::Drr(c)
        }
        "pie" => {
            if o.boolean("dq_rate_estimator", false)? {
                return err(
                    &format!("{path}.dq_rate_estimator"),
                    "the departure-rate estimator is not implemented; leave it false (the kernel default)",
                );
            }
            let c = PieConfig {
                limit: limit(&mut o, "pie", 1000)?,
                target_ns: o.ms_d("pie", "target_ms", 15.0)?,
                tupdate_ns: o.ms_d("pie", "tupdate_ms", 15.0)?,
                alpha: o.int_d("pie", "alpha", 2)? as u32,
                beta: o.int_d("pie", "beta", 20)? as u32,
                ecn: o.boolean("ecn", false)?,
                bytemode: o.boolean("bytemode", false)?,
            };
            o.finish(&[
                "kind",
                "limit",
                "target_ms",
                "tupdate_ms",
                "alpha",
                "beta",
                "ecn",
                "bytemode",
                "dq_rate_estimator",
            ])?;
            QdiscConfig::Pie(c)
        }
        "htb" => {
            if in_htb {
                return err(
                    &kpath,
                    "htb cannot be the leaf of an htb class (one level of classes only)",
                );
            }
            QdiscConfig::Htb(htb(path, &mut o)?)
        }
        other => {
            return err(
                &kpath,
                format!(
                    "unknown discipline '{other}'; expected one of: {}",
                    QDISC_KINDS.join(", ")
                ),
            )
        }
    };
    Ok(q)
}

fn dualpi2(path: &str, o: &mut Obj) -> Res<DualPi2Config> {
    let limit = limit(o, "dualpi2", 10000)?;
    let memlimit_bytes = opt_int_d(o, "dualpi2", "memlimit")?;
    if o.has("step_thresh_ms") && o.has("step_thresh_packets") {
        return err(
            &format!("{path}.step_thresh_ms"),
            "give step_thresh_ms or step_thresh_packets, not both",
        );
    }
    let step_thresh = if o.has("step_thresh_packets") {
        StepThresh::Packets(o.int_d("dualpi2", "step_thresh_packets", 0)? as usize)
    } else {
        StepThresh::Time(o.ms_d("dualpi2", "step_thresh_ms", 1.0)?)
    };
    // iproute2 derives target, tupdate, alpha and beta from max_rtt / typical_rtt when given
    // (a missing one is the other times or divided by 6).
    let max_rtt = o.opt_ms_d("dualpi2", "max_rtt_ms")?;
    let typical_rtt = o.opt_ms_d("dualpi2", "typical_rtt_ms")?;
    let (mut target_ms, mut tupdate_ms, mut alpha, mut beta) = (15.0, 16.0, None, None);
    if max_rtt.is_some() || typical_rtt.is_some() {
        if ["target_ms", "tupdate_ms", "alpha", "beta"]
            .iter()
            .any(|k| o.has(k))
        {
            return err(
                &format!("{path}.max_rtt_ms"),
                "max_rtt_ms/typical_rtt_ms derive target, tupdate, alpha and beta; give one or the other",
            );
        }
        let max = max_rtt.unwrap_or_else(|| typical_rtt.unwrap_or(0) * 6) as f64;
        let typ = typical_rtt.map_or((max / 6.0).max(1.0), |t| t as f64);
        if typ > max {
            return err(&format!("{path}.typical_rtt_ms"), "must be <= max_rtt_ms");
        }
        let tupdate = typ.min(max / 3.0).max(1.0);
        target_ms = typ / MS;
        tupdate_ms = tupdate / MS;
        alpha = Some(0.1 * (tupdate / 1e9) / (max / 1e9).powi(2));
        beta = Some(0.3 / (max / 1e9));
    }
    let gain = |o: &mut Obj, k: &str, derived: Option<f64>| -> Res<Option<f64>> {
        let what = "a gain in Hz in [1/256, 8388607] (tc sends 1/256 Hz units; 0 is refused)";
        match o.num(k)? {
            Some(_) => {
                let (lo, hi) = ranges::range("dualpi2", k);
                Ok(Some(o.num_in(k, 0.0, lo, hi, what)?))
            }
            None => Ok(derived),
        }
    };
    let alpha = gain(o, "alpha", alpha)?;
    let beta = gain(o, "beta", beta)?;
    let c = DualPi2Config {
        limit,
        memlimit_bytes,
        target_ns: o.ms_d("dualpi2", "target_ms", target_ms)?,
        tupdate_ns: o.ms_d("dualpi2", "tupdate_ms", tupdate_ms)?,
        alpha,
        beta,
        coupling_factor: o.int_d("dualpi2", "coupling_factor", 2)? as u32,
        step_thresh,
        min_qlen_step: o.int_d("dualpi2", "min_qlen_step", 0)? as usize,
        drop_on_overload: o.boolean("drop_on_overload", true)?,
        drop_enqueue: o.boolean("drop_enqueue", false)?,
        l4s_ect: o.boolean("l4s_ect", true)?,
        classic_protection: o.int_d("dualpi2", "classic_protection", 10)? as u32,
    };
    o.finish(&[
        "kind",
        "limit",
        "memlimit",
        "target_ms",
        "tupdate_ms",
        "alpha",
        "beta",
        "coupling_factor",
        "step_thresh_ms",
        "step_thresh_packets",
        "min_qlen_step",
        "drop_on_overload",
        "drop_enqueue",
        "l4s_ect",
        "classic_protection",
        "max_rtt_ms",
        "typical_rtt_ms",
    ])?;
    Ok(c)
}

/// An HTB class id: the minor number in hex, as tc spells it ("10", "1:10", or 10 meaning 0x10).
fn classid(path: &str, v: &Value) -> Res<u32> {
    let text = match v {
        Value::Str(s) => s.clone(),
        Value::Num(x) if x.fract() == 0.0 && *x >= 0.0 => format!("{}", *x as u64),
        other => {
            return err(
                path,
                format!(
                    "must be a class id string such as \"10\", got {}",
                    other.type_name()
                ),
            )
        }
    };
    let minor = text.rsplit(':').next().unwrap_or("");
    u32::from_str_radix(minor, 16)
        .ok()
        .filter(|&m| m > 0 && m <= 0xffff)
        .map_or_else(
            || {
                err(
                    path,
                    format!(
                        "'{text}' is not a class id (hex minor 1..ffff, e.g. \"10\" or \"1:10\")"
                    ),
                )
            },
            Ok,
        )
}

fn htb(path: &str, o: &mut Obj) -> Res<HtbConfig> {
    let default_v = o.get("default").map_or_else(
        || {
            err(
                &format!("{path}.default"),
                "is required (the class id of unclassified traffic)",
            )
        },
        Ok,
    )?;
    let default = classid(&format!("{path}.default"), default_v)?;
    let classes_v = match o.get("classes") {
        Some(Value::Arr(a)) if !a.is_empty() => a,
        Some(Value::Arr(_)) | None => {
            return err(
                &format!("{path}.classes"),
                "must be a non-empty array of classes",
            )
        }
        Some(v) => {
            return err(
                &format!("{path}.classes"),
                format!("must be an array, got {}", v.type_name()),
            )
        }
    };
    let mut classes: Vec<HtbClassConfig> = Vec::new();
    for (i, cv) in classes_v.iter().enumerate() {
        let cp = format!("{path}.classes[{i}]");
        let mut c = Obj::new(&cp, cv)?;
        let id_v = c
            .get("classid")
            .map_or_else(|| err(&format!("{cp}.classid"), "is required"), Ok)?;
        let id = classid(&format!("{cp}.classid"), id_v)?;
        if classes.iter().any(|x| x.classid == id) {
            return err(
                &format!("{cp}.classid"),
                format!("duplicate class id {id:x}"),
            );
        }
        let rate_mbit = c.num_in(
            "rate_mbit",
            -1.0,
            -1.0,
            1e5,
            "a rate in Mbit/s in (0, 100000]",
        )?;
        if rate_mbit <= 0.0 {
            return err(&format!("{cp}.rate_mbit"), "is required and must be > 0");
        }
        let ceil_mbit = c.num_in("ceil_mbit", rate_mbit, 1e-3, 1e5, "a rate in Mbit/s")?;
        if ceil_mbit < rate_mbit {
            return err(
                &format!("{cp}.ceil_mbit"),
                format!("must be >= rate_mbit ({rate_mbit}), got {ceil_mbit}"),
            );
        }
        let prio = c.int_in("prio", 0, 0, 7)? as u8;
        let quantum = c.int_in("quantum", 1514, 64, 1 << 24)? as u32;
        // tc's default burst is rate/HZ + mtu with HZ = 1e9 on hrtimer kernels: about one
        // 1600-byte packet.
        let burst_default = (rate_mbit * 1e6 / 8.0 / 1e9 + 1600.0).ceil() as u64;
        let cburst_default = (ceil_mbit * 1e6 / 8.0 / 1e9 + 1600.0).ceil() as u64;
        let burst_bytes = c.int_in("burst_bytes", burst_default, 1, 1 << 32)?;
        let cburst_bytes = c.int_in("cburst_bytes", cburst_default, 1, 1 << 32)?;
        let leaf = match c.get("leaf") {
            None => QdiscConfig::Pfifo { limit: 1000 },
            Some(l) => qdisc(&format!("{cp}.leaf"), l, true)?,
        };
        let matcher = match c.get("match") {
            None => None,
            Some(m) => Some(parse_match(&format!("{cp}.match"), m)?),
        };
        c.finish(&[
            "classid",
            "rate_mbit",
            "ceil_mbit",
            "prio",
            "quantum",
            "burst_bytes",
            "cburst_bytes",
            "leaf",
            "match",
        ])?;
        classes.push(HtbClassConfig {
            classid: id,
            rate_bit_per_s: rate_mbit * 1e6,
            ceil_bit_per_s: ceil_mbit * 1e6,
            prio,
            quantum,
            burst_bytes,
            cburst_bytes,
            leaf,
            matcher,
        });
    }
    if !classes.iter().any(|c| c.classid == default) {
        return err(
            &format!("{path}.default"),
            format!("no class has id {default:x}"),
        );
    }
    o.finish(&["kind", "default", "classes"])?;
    Ok(HtbConfig { default, classes })
}

fn parse_prefix(path: &str, s: &str) -> Res<(IpAddr, u8)> {
    let (addr, len) = match s.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (s, None),
    };
    let ip: IpAddr = addr
        .parse()
        .or_else(|_| err(path, format!("'{s}' is not an IP address or prefix")))?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let len = match len {
        None => max,
        Some(l) => l
            .parse::<u8>()
            .ok()
            .filter(|&l| l <= max)
            .map_or_else(|| err(path, format!("bad prefix length in '{s}'")), Ok)?,
    };
    Ok((ip, len))
}

fn parse_match(path: &str, v: &Value) -> Res<Match> {
    let mut o = Obj::new(path, v)?;
    let proto = match o.get("proto") {
        None => None,
        Some(Value::Str(s)) => Some(match s.as_str() {
            "tcp" => 6,
            "udp" => 17,
            "icmp" => 1,
            "icmpv6" => 58,
            other => {
                return err(
                    &format!("{path}.proto"),
                    format!("unknown protocol '{other}'; use tcp, udp, icmp, icmpv6 or a number"),
                )
            }
        }),
        Some(Value::Num(x)) if x.fract() == 0.0 && (0.0..=255.0).contains(x) => Some(*x as u8),
        Some(_) => {
            return err(
                &format!("{path}.proto"),
                "must be tcp, udp, icmp, icmpv6 or a protocol number",
            )
        }
    };
    let port = |o: &mut Obj, k: &str| -> Res<Option<u16>> {
        Ok(opt_int(o, k, 0, 65535)?.map(|p| p as u16))
    };
    let m = Match {
        proto,
        port: port(&mut o, "port")?,
        sport: port(&mut o, "sport")?,
        dport: port(&mut o, "dport")?,
        dscp: opt_int(&mut o, "dscp", 0, 63)?.map(|d| d as u8),
        ecn: opt_int(&mut o, "ecn", 0, 3)?.map(|e| e as u8),
        src: o
            .string("src")?
            .map(|s| parse_prefix(&format!("{path}.src"), s))
            .transpose()?,
        dst: o
            .string("dst")?
            .map(|s| parse_prefix(&format!("{path}.dst"), s))
            .transpose()?,
    };
    o.finish(&[
        "proto", "port", "sport", "dport", "dscp", "ecn", "src", "dst",
    ])?;
    if m == Match::default() {
        return err(
            path,
            "must name at least one field (proto, port, sport, dport, dscp, ecn, src, dst)",
        );
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> Res<Config> {
        from_value(&json::parse(text).unwrap())
    }

    fn with_pipeline(p: &str) -> String {
        format!(r#"{{"interfaces": {{"a": "e0", "b": "e1"}}, "a_to_b": {p}}}"#)
    }

    #[test]
    fn minimal_config_is_passthrough() {
        let c = cfg(r#"{"interfaces": {"a": "e0", "b": "e1"}, "b_to_a": null}"#).unwrap();
        assert!(c.a_to_b.is_none() && c.b_to_a.is_none() && !c.busy_poll);
    }

    #[test]
    fn kernel_defaults_for_dualpi2() {
        let c = cfg(&with_pipeline(
            r#"{"rate": {"mbit": 50}, "qdisc": {"kind": "dualpi2"}}"#,
        ))
        .unwrap();
        let p = c.a_to_b.unwrap();
        let QdiscConfig::DualPi2(d) = p.qdisc else {
            panic!()
        };
        assert_eq!(d.limit, 10000);
        assert_eq!(d.target_ns, 15_000_000);
        assert_eq!(d.tupdate_ns, 16_000_000);
        assert_eq!(d.step_thresh, StepThresh::Time(1_000_000));
        assert_eq!(d.coupling_factor, 2);
        assert!(d.drop_on_overload && !d.drop_enqueue && d.l4s_ect);
        assert_eq!(d.classic_protection, 10);
    }

    #[test]
    fn dualpi2_gains_from_rtts_like_iproute2() {
        let c = cfg(&with_pipeline(
            r#"{"qdisc": {"kind": "dualpi2", "max_rtt_ms": 100}}"#,
        ))
        .unwrap();
        let QdiscConfig::DualPi2(d) = c.a_to_b.unwrap().qdisc else {
            panic!()
        };
        // typical = max / 6; tupdate = min(typical, max / 3); alpha = 0.1 tupdate / max^2.
        assert_eq!(d.target_ns, 16_666_667);
        assert_eq!(d.tupdate_ns, 16_666_667);
        assert!((d.alpha.unwrap() - 0.1 * 0.016_666_667 / 0.01).abs() < 1e-6);
        assert!((d.beta.unwrap() - 3.0).abs() < 1e-9);
        let e = cfg(&with_pipeline(
            r#"{"qdisc": {"kind": "dualpi2", "max_rtt_ms": 10, "typical_rtt_ms": 20}}"#,
        ))
        .unwrap_err();
        assert_eq!(e.key, "a_to_b.qdisc.typical_rtt_ms");
        let e = cfg(&with_pipeline(
            r#"{"qdisc": {"kind": "dualpi2", "max_rtt_ms": 10, "alpha": 0.2}}"#,
        ))
        .unwrap_err();
        assert_eq!(e.key, "a_to_b.qdisc.max_rtt_ms");
    }

    #[test]
    fn errors_name_the_key() {
        let e = cfg(&with_pipeline(r#"{"qdisc": {"kind": "nosuch"}}"#)).unwrap_err();
        assert_eq!(e.key, "a_to_b.qdisc.kind");
        assert!(e.message.contains("unknown discipline 'nosuch'"));
        let e = cfg(&with_pipeline(
            r#"{"qdisc": {"kind": "pfifo", "limit": 0}}"#,
        ))
        .unwrap_err();
        assert_eq!(e.key, "a_to_b.qdisc.limit");
        let e = cfg(&with_pipeline(r#"{"qdisc": {"kind": "pfifo", "limt": 5}}"#)).unwrap_err();
        assert_eq!(e.key, "a_to_b.qdisc.limt");
        assert!(e.message.contains("unknown key"));
        let e = cfg(&with_pipeline(r#"{"rate": {"mbit": -1}}"#)).unwrap_err();
        assert_eq!(e.key, "a_to_b.rate.mbit");
        let e = cfg(&with_pipeline(
            r#"{"rate": {"trace": "/nonexistent/trace"}}"#,
        ))
        .unwrap_err();
        assert_eq!(e.key, "a_to_b.rate.trace");
        let e = cfg(&with_pipeline(r#"{"delay_ms": 5, "jitter_ms": 6}"#)).unwrap_err();
        assert_eq!(e.key, "a_to_b.jitter_ms");
        let e = cfg(r#"{"interfaces": {"a": "e0", "b": "e0"}}"#).unwrap_err();
        assert_eq!(e.key, "interfaces.b");
        let e = cfg(r#"{"interfaces": {"a": "e0"}}"#).unwrap_err();
        assert_eq!(e.key, "interfaces.b");
    }

    #[test]
    fn htb_classes_and_matches() {
        let c = cfg(&with_pipeline(
            r#"{"rate": {"mbit": 50}, "qdisc": {"kind": "htb", "default": "20", "classes": [
                {"classid": "10", "rate_mbit": 10, "ceil_mbit": 50, "prio": 0,
                 "leaf": {"kind": "sfq", "limit": 63}, "match": {"proto": "udp", "port": 30002}},
                {"classid": "1:20", "rate_mbit": 40, "ceil_mbit": 50, "prio": 1,
                 "leaf": {"kind": "pfifo", "limit": 250}}]}}"#,
        ))
        .unwrap();
        let QdiscConfig::Htb(h) = c.a_to_b.unwrap().qdisc else {
            panic!()
        };
        assert_eq!(h.default, 0x20);
        assert_eq!(h.classes[0].classid, 0x10);
        assert_eq!(h.classes[0].matcher.as_ref().unwrap().proto, Some(17));
        assert_eq!(h.classes[0].matcher.as_ref().unwrap().port, Some(30002));
        let e = cfg(&with_pipeline(
            r#"{"qdisc": {"kind": "htb", "default": "30", "classes": [{"classid": "10", "rate_mbit": 1}]}}"#,
        ))
        .unwrap_err();
        assert_eq!(e.key, "a_to_b.qdisc.default");
        let e = cfg(&with_pipeline(
            r#"{"qdisc": {"kind": "htb", "default": "10", "classes": [{"classid": "10", "rate_mbit": 5, "ceil_mbit": 1}]}}"#,
        ))
        .unwrap_err();
        assert_eq!(e.key, "a_to_b.qdisc.classes[0].ceil_mbit");
    }
}
