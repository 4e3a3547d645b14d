//! One queue discipline's settings (`qdisc`): the kind, then its keys with the declared
//! defaults (qdiscs.json, ranges.rs); DualPI2's RTT-derived gains live here too, HTB's
//! classes in htb.rs.

use super::htb::htb;
use super::obj::{limit, opt_int_d, Obj};
use super::types::{
    CodelConfig, DrrConfig, DualPi2Config, FqCodelConfig, PieConfig, QdiscConfig, SfqConfig,
    SqfConfig, StepThresh,
};
use super::{err, Res, MS};
use crate::json::Value;
use crate::ranges;

pub fn qdisc(path: &str, v: &Value, in_htb: bool) -> Res<QdiscConfig> {
    let mut o = Obj::new(path, v)?;
    let kind = o.required_string("kind")?;
    let kpath = format!("{path}.kind");
    let q = match kind {
        "pfifo" => {
            let q = QdiscConfig::Pfifo {
                limit: limit(&mut o, "pfifo")?,
            };
            o.finish(&["kind", "limit"])?;
            q
        }
        "bfifo" => {
            let limit_bytes = o.int_decl("bfifo", "limit")?;
            o.finish(&["kind", "limit"])?;
            QdiscConfig::Bfifo { limit_bytes }
        }
        "sfq" => {
            let c = SfqConfig {
                limit: limit(&mut o, "sfq")?,
                quantum: opt_int_d(&mut o, "sfq", "quantum")?.map(|q| q as u32),
                perturb_s: o.int_decl("sfq", "perturb")? as f64,
                divisor: o.int_decl("sfq", "divisor")? as u32,
                flows: o.int_decl("sfq", "flows")? as usize,
                depth: o.int_decl("sfq", "depth")? as usize,
                headdrop: o.bool_decl("sfq", "headdrop")?,
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
                limit: limit(&mut o, "codel")?,
                target_ns: o.ms_decl("codel", "target_ms")?,
                interval_ns: o.ms_decl("codel", "interval_ms")?,
                ecn: o.bool_decl("codel", "ecn")?,
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
                limit: limit(&mut o, "fq_codel")?,
                flows: o.int_decl("fq_codel", "flows")? as usize,
                quantum: o.int_decl("fq_codel", "quantum")? as u32,
                target_ns: o.ms_decl("fq_codel", "target_ms")?,
                interval_ns: o.ms_decl("fq_codel", "interval_ms")?,
                ecn: o.bool_decl("fq_codel", "ecn")?,
                ce_threshold_ns: o.opt_ms_d("fq_codel", "ce_threshold_ms")?,
                memory_limit_bytes: o.int_decl("fq_codel", "memory_limit")?,
                drop_batch: o.int_decl("fq_codel", "drop_batch")? as usize,
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
                limit: limit(&mut o, "sqf")?,
                flows: o.int_decl("sqf", "flows")? as usize,
            };
            o.finish(&["kind", "limit", "flows"])?;
            QdiscConfig::Sqf(c)
        }
        "drr" => {
            let c = DrrConfig {
                limit: limit(&mut o, "drr")?,
                quantum: opt_int_d(&mut o, "drr", "quantum")?.map(|q| q as u32),
                flows: o.int_decl("drr", "flows")? as usize,
            };
            o.finish(&["kind", "limit", "quantum", "flows"])?;
            QdiscConfig::Drr(c)
        }
        "pie" => {
            if o.bool_decl("pie", "dq_rate_estimator")? {
                return err(
                    &format!("{path}.dq_rate_estimator"),
                    "the departure-rate estimator is not implemented; leave it false (the kernel default)",
                );
            }
            let c = PieConfig {
                limit: limit(&mut o, "pie")?,
                target_ns: o.ms_decl("pie", "target_ms")?,
                tupdate_ns: o.ms_decl("pie", "tupdate_ms")?,
                alpha: o.int_decl("pie", "alpha")? as u32,
                beta: o.int_decl("pie", "beta")? as u32,
                ecn: o.bool_decl("pie", "ecn")?,
                bytemode: o.bool_decl("pie", "bytemode")?,
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
                    ranges::emulator_kinds().join(", ")
                ),
            )
        }
    };
    Ok(q)
}

fn dualpi2(path: &str, o: &mut Obj) -> Res<DualPi2Config> {
    let limit = limit(o, "dualpi2")?;
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
        StepThresh::Time(o.ms_decl("dualpi2", "step_thresh_ms")?)
    };
    // iproute2 derives target, tupdate, alpha and beta from max_rtt / typical_rtt when given
    // (a missing one is the other times or divided by 6).
    let max_rtt = o.opt_ms_d("dualpi2", "max_rtt_ms")?;
    let typical_rtt = o.opt_ms_d("dualpi2", "typical_rtt_ms")?;
    let mut target_ms = ranges::default_num("dualpi2", "target_ms");
    let mut tupdate_ms = ranges::default_num("dualpi2", "tupdate_ms");
    let (mut alpha, mut beta) = (None, None);
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
        coupling_factor: o.int_decl("dualpi2", "coupling_factor")? as u32,
        step_thresh,
        min_qlen_step: o.int_decl("dualpi2", "min_qlen_step")? as usize,
        drop_on_overload: o.bool_decl("dualpi2", "drop_on_overload")?,
        drop_enqueue: o.bool_decl("dualpi2", "drop_enqueue")?,
        l4s_ect: o.bool_decl("dualpi2", "l4s_ect")?,
        classic_protection: o.int_decl("dualpi2", "classic_protection")? as u32,
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
