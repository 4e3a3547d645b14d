//! Bindings of `cga_core::jitter` (the one per-packet recursion of the metrics).

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

/// The running RFC 3550 jitter after each packet (see `cga_core::jitter::running_jitter`).
#[pyfunction]
fn running_jitter<'py>(
    py: Python<'py>,
    abs_transit_diff: PyReadonlyArray1<'py, f64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let d = abs_transit_diff.as_slice()?;
    Ok(cga_core::jitter::running_jitter(d).into_pyarray(py))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(running_jitter, m)?)?;
    Ok(())
}
