//! Bindings of `cga_core::keys` and `cga_core::matcher`.

use cga_core::keys::{identity_keys as core_identity_keys, IdentityColumns};
use cga_core::matcher::match_points as core_match_points;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

/// One identity key per packet (see `cga_core::keys::identity_keys`).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn identity_keys<'py>(
    py: Python<'py>,
    kind: PyReadonlyArray1<'py, u8>,
    flow_hash: PyReadonlyArray1<'py, u64>,
    ip_id: PyReadonlyArray1<'py, u32>,
    ip_len: PyReadonlyArray1<'py, u32>,
    tcp_seq: PyReadonlyArray1<'py, u32>,
    tcp_ack: PyReadonlyArray1<'py, u32>,
    rtp_ssrc: PyReadonlyArray1<'py, u32>,
    rtp_seq: PyReadonlyArray1<'py, u16>,
    l4_hash: PyReadonlyArray1<'py, u64>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let cols = IdentityColumns {
        kind: kind.as_slice()?,
        flow_hash: flow_hash.as_slice()?,
        ip_id: ip_id.as_slice()?,
        ip_len: ip_len.as_slice()?,
        tcp_seq: tcp_seq.as_slice()?,
        tcp_ack: tcp_ack.as_slice()?,
        rtp_ssrc: rtp_ssrc.as_slice()?,
        rtp_seq: rtp_seq.as_slice()?,
        l4_hash: l4_hash.as_slice()?,
    };
    let n = cols.kind.len();
    if [
        cols.flow_hash.len(),
        cols.ip_id.len(),
        cols.ip_len.len(),
        cols.tcp_seq.len(),
        cols.tcp_ack.len(),
        cols.rtp_ssrc.len(),
        cols.rtp_seq.len(),
        cols.l4_hash.len(),
    ]
    .iter()
    .any(|&l| l != n)
    {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "identity columns must have equal lengths",
        ));
    }
    let keys = py.detach(|| core_identity_keys(&cols));
    Ok(keys.into_pyarray(py))
}

/// Pairs ingress and egress packets; returns (in_to_eg, eg_to_in, reverse_twin).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn match_points<'py>(
    py: Python<'py>,
    in_key: PyReadonlyArray1<'py, u64>,
    in_ts: PyReadonlyArray1<'py, i64>,
    eg_key: PyReadonlyArray1<'py, u64>,
    eg_ts: PyReadonlyArray1<'py, i64>,
    max_delay_ns: i64,
) -> PyResult<(
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<i64>>,
    Bound<'py, PyArray1<bool>>,
)> {
    let (ik, it, ek, et) = (
        in_key.as_slice()?,
        in_ts.as_slice()?,
        eg_key.as_slice()?,
        eg_ts.as_slice()?,
    );
    if ik.len() != it.len() || ek.len() != et.len() {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "key and timestamp columns must have equal lengths",
        ));
    }
    if max_delay_ns < 0 {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "max_delay_ns must not be negative",
        ));
    }
    let r = py.detach(|| {
        let r = core_match_points(ik, it, ek, et, max_delay_ns);
        cga_core::hugepages::release_cache();
        r
    });
    Ok((
        r.in_to_eg.into_pyarray(py),
        r.eg_to_in.into_pyarray(py),
        r.reverse_twin.into_pyarray(py),
    ))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(identity_keys, m)?)?;
    m.add_function(wrap_pyfunction!(match_points, m)?)?;
    Ok(())
}
