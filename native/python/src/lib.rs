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

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    reading::register(m)?;
    matching::register(m)?;
    metrics::register(m)?;
    pairing::register(m)?;
    streaming::register(m)?;
    Ok(())
}
