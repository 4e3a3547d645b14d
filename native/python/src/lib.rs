//! The `cganalysis._native` extension module: thin PyO3 wrappers over `cga-core`.

use pyo3::prelude::*;

/// Large columns on transparent huge pages: far fewer page faults (see `cga_core::hugepages`).
#[global_allocator]
static ALLOCATOR: cga_core::hugepages::HugePages = cga_core::hugepages::HugePages;

mod flows;
mod matching;
mod metrics;
mod pairing;
mod reading;
mod streaming;

/// What `slot` holds, taken out (a value handed over once: a match's options or result, a
/// table's footers); `RuntimeError(taken)` when it was taken before. A poisoned lock still
/// holds a valid slot.
pub(crate) fn take_once<T>(slot: &std::sync::Mutex<Option<T>>, taken: &str) -> PyResult<T> {
    slot.lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err(taken.to_string()))
}

/// See `cga_core::hugepages::keep_freed_blocks`: for the `packets` command's process only.
#[pyfunction]
fn keep_freed_blocks() {
    cga_core::hugepages::keep_freed_blocks();
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(keep_freed_blocks, m)?)?;
    reading::register(m)?;
    matching::register(m)?;
    metrics::register(m)?;
    pairing::register(m)?;
    streaming::register(m)?;
    Ok(())
}
