//! The flow table (`cga_core::table::FlowStats`) as a dict of columns for Python
//! (`cganalysis.matching.native.flow_frame` makes it a polars table of the FLOWS schema).

use cga_core::table::{FlowStats, QUANTILES};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The flow table's columns (`cganalysis.schemas.FLOWS`), one row per flow id in order.
pub(crate) fn flow_table_dict(py: Python<'_>, stats: FlowStats) -> PyResult<Bound<'_, PyDict>> {
    let finished = py
        .detach(|| stats.finish())
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))?;
    let mut flows = Vec::with_capacity(finished.len());
    let mut delays = Vec::with_capacity(finished.len());
    for (id, flow, d) in finished {
        flows.push((id, flow));
        delays.push(d);
    }
    let d = PyDict::new(py);
    macro_rules! column {
        ($name:expr, $f:expr) => {
            d.set_item($name, flows.iter().map($f).collect::<Vec<_>>())?;
        };
    }
    column!("flow_id", |(id, _)| *id);
    column!("proto", |(_, f)| u32::from(f.proto)); // (a Vec<u8> would be bytes)
    column!("ip_version", |(_, f)| u32::from(f.ip_version));
    column!("src", |(_, f)| f.src.clone());
    column!("dst", |(_, f)| f.dst.clone());
    column!("sport", |(_, f)| f.sport);
    column!("dport", |(_, f)| f.dport);
    column!("rtp_ssrc", |(_, f)| f.rtp_ssrc);
    column!("packets_in", |(_, f)| f.packets_in);
    column!("packets_out", |(_, f)| f.packets_out);
    column!("bytes_in", |(_, f)| f.bytes_in);
    column!("bytes_out", |(_, f)| f.bytes_out);
    column!("packets_lost", |(_, f)| f.packets_lost);
    column!("packets_unknown", |(_, f)| f.packets_unknown);
    column!("loss_rate", |(_, f)| {
        let known = f.packets_in - f.packets_unknown;
        (known > 0).then(|| f.packets_lost as f64 / known as f64)
    });
    d.set_item(
        "delay_mean_ms",
        delays.iter().map(|x| x.map(|x| x.mean)).collect::<Vec<_>>(),
    )?;
    d.set_item(
        "delay_min_ms",
        delays.iter().map(|x| x.map(|x| x.min)).collect::<Vec<_>>(),
    )?;
    for (k, (name, _)) in QUANTILES.iter().enumerate() {
        let q: Vec<Option<f64>> = delays.iter().map(|x| x.map(|x| x.quantiles[k])).collect();
        d.set_item(*name, q)?;
    }
    d.set_item(
        "delay_max_ms",
        delays.iter().map(|x| x.map(|x| x.max)).collect::<Vec<_>>(),
    )?;
    column!("ecn_not_ect_in", |(_, f)| f.ecn_in[0]);
    column!("ecn_ect1_in", |(_, f)| f.ecn_in[1]);
    column!("ecn_ect0_in", |(_, f)| f.ecn_in[2]);
    column!("ecn_ce_in", |(_, f)| f.ecn_in[3]);
    column!("ce_marked", |(_, f)| f.ce_marked);
    column!("t_first_ns", |(_, f)| f.t_first_ns);
    column!("t_last_ns", |(_, f)| f.t_last_ns);
    column!("rate_in_mbps", |(_, f)| {
        let span_s = f
            .t_first_ns
            .zip(f.t_last_ns)
            .map(|(a, b)| (b - a) as f64 / 1e9)?;
        (span_s > 0.0).then(|| f.bytes_in as f64 * 8.0 / span_s / 1e6)
    });
    Ok(d)
}
