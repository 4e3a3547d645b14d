//! The typed settings EMU.json is read into: what each direction's pipeline and each
//! discipline runs with once every key has been checked.

use std::net::IpAddr;
use std::path::PathBuf;

use crate::trace::Trace;

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
