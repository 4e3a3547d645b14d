//! Bindings of the chunked reader (`cga_core::pcap::ChunkReader`) and the streaming match
//! (`cga_core::streaming`).

use crate::flows::flow_table_dict;
use crate::pairing::{counts_dict, read_error, set_error};
use crate::reading::{columns_to_dict, flow_keys_dict, info_dict, to_py_err};
use crate::take_once;
use cga_core::pcap::ChunkReader;
use cga_core::streaming::{
    cache_budget, reads_egress_live, stream_pair, Progress, Reads, StreamError, Streamed, Tables,
};
use cga_core::table::{PairOptions, KEEP_DELAYS};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// A capture read a chunk at a time (see `_native.pyi`).
#[pyclass(module = "cganalysis._native")]
struct CaptureChunks {
    path: PathBuf,
    reader: Option<ChunkReader>,
    /// Flows already handed out with a chunk.
    flows_given: usize,
}

#[pymethods]
impl CaptureChunks {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<CaptureChunks> {
        let reader = py
            .detach(|| ChunkReader::open(&path))
            .map_err(|e| to_py_err(e, &path))?;
        Ok(CaptureChunks {
            path,
            reader: Some(reader),
            flows_given: 0,
        })
    }

    /// The next chunk as `{"columns": ..., "flows": ...}` (the flows first seen in it,
    /// numbered on from the previous chunks'), or None at the end.
    fn next_chunk<'py>(
        &mut self,
        py: Python<'py>,
        max_packets: usize,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        if max_packets == 0 {
            return Err(PyValueError::new_err("max_packets must be positive"));
        }
        let path = &self.path;
        let reader = self
            .reader
            .as_mut()
            .ok_or_else(|| PyValueError::new_err("the capture was already finished"))?;
        let chunk = py
            .detach(|| reader.next_chunk(max_packets))
            .map_err(|e| to_py_err(e, path))?;
        let Some(columns) = chunk else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item("columns", columns_to_dict(py, columns, reader.flows())?)?;
        let keys = &reader.flows().keys;
        d.set_item("flows", flow_keys_dict(py, &keys[self.flows_given..])?)?;
        self.flows_given = keys.len();
        Ok(Some(d))
    }

    /// Bytes of the file decoded so far (the progress of a long read); 0 once finished.
    fn bytes_read(&self) -> usize {
        self.reader.as_ref().map_or(0, ChunkReader::bytes_read)
    }

    /// What the file says about itself, once every chunk was read (the dict of
    /// `read_capture` without "columns" and "flows").
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let reader = self
            .reader
            .take()
            .ok_or_else(|| PyValueError::new_err("the capture was already finished"))?;
        let cap = reader.finish().map_err(|e| to_py_err(e, &self.path))?;
        info_dict(py, &cap)
    }
}

/// A streaming match running on its own threads, started by `start_stream`.
#[pyclass(module = "cganalysis._native")]
struct PendingStream {
    thread: Mutex<Option<JoinHandle<Result<Streamed, StreamError>>>>,
    progress: Arc<Progress>,
    paths: (PathBuf, PathBuf),
}

/// The tables of a streaming match: every row written, the footers not yet.
#[pyclass(module = "cganalysis._native")]
struct StreamedTables {
    inner: Mutex<Option<Tables>>,
}

#[pymethods]
impl StreamedTables {
    /// The flow table (started with `flows=True`), as columns (`cganalysis.schemas.FLOWS`).
    fn flow_table<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let stats = inner
            .as_mut()
            .and_then(|t| t.flows.take())
            .ok_or_else(|| PyRuntimeError::new_err("no flow table: not asked for, or taken"))?;
        flow_table_dict(py, stats)
    }

    /// Writes both footers, each with `metadata` (JSON) under the key `cganalysis`.
    fn finish(&self, py: Python<'_>, metadata: String) -> PyResult<()> {
        let tables = take_once(&self.inner, "the tables were already finished")?;
        py.detach(|| tables.finish(&metadata))
            .map_err(|(p, e)| PyOSError::new_err(format!("{}: {e}", p.display())))
    }
}

#[pymethods]
impl PendingStream {
    /// (pass: 1 or 2, bytes of the ingress capture read, bytes of the egress one, whether
    /// the first pass reads the egress capture too).
    fn progress(&self) -> (usize, usize, usize, bool) {
        let p = &self.progress;
        (
            p.pass.load(Ordering::Relaxed),
            p.bytes[0].load(Ordering::Relaxed),
            p.bytes[1].load(Ordering::Relaxed),
            p.egress_in_first_pass.load(Ordering::Relaxed),
        )
    }

    /// Whether the match has ended (`result` then returns at once).
    fn done(&self) -> bool {
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner());
        thread.as_ref().map_or(true, JoinHandle::is_finished)
    }

    /// Waits for the match; returns `(tables, result)` as `match_pair` does (once only).
    fn result<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Option<StreamedTables>, Bound<'py, PyDict>)> {
        let thread = take_once(&self.thread, "the match's result was already taken")?;
        let outcome = py
            .detach(|| thread.join())
            .map_err(|_| PyRuntimeError::new_err("the matching thread panicked"))?;
        let d = PyDict::new(py);
        let s = match outcome {
            Ok(s) => s,
            Err(StreamError::Read(which, e)) => {
                let path = if which == 0 {
                    &self.paths.0
                } else {
                    &self.paths.1
                };
                return Err(read_error(e, path));
            }
            Err(StreamError::Pair(e)) => {
                set_error(&d, e)?;
                return Ok((None, d));
            }
            Err(StreamError::Write(p, e)) => {
                return Err(PyOSError::new_err(format!("{}: {e}", p.display())));
            }
        };
        d.set_item("ingress", info_dict(py, &s.ingress)?)?;
        d.set_item("egress", info_dict(py, &s.egress)?)?;
        d.set_item("counts", counts_dict(py, &s.counts)?)?;
        d.set_item("span_ns", s.span_ns)?;
        d.set_item("guard_ns", s.guard_ns)?;
        let stages = PyDict::new(py);
        for (name, secs) in &s.stages {
            stages.set_item(*name, secs)?;
        }
        d.set_item("stages_s", stages)?;
        d.set_item("most_held", s.most_held)?;
        d.set_item("egress_first_pass", s.egress_first_pass)?;
        let tables = StreamedTables {
            inner: Mutex::new(Some(s.tables)),
        };
        Ok((Some(tables), d))
    }
}

/// Starts matching `ingress` and `egress` streaming into the tables at `packets` and
/// `egress_only` (their rows; `StreamedTables.finish` writes the footers), reading
/// `chunk_packets` packets at a time, and returns at once.
#[pyfunction]
#[pyo3(signature = (ingress, egress, packets, egress_only, max_delay_ns, end_guard_ns=None, chunk_packets=131072, flows=false, keep_delays=KEEP_DELAYS, page_cache_bytes=None))]
#[allow(clippy::too_many_arguments)]
fn start_stream(
    ingress: PathBuf,
    egress: PathBuf,
    packets: PathBuf,
    egress_only: PathBuf,
    max_delay_ns: i64,
    end_guard_ns: Option<i64>,
    chunk_packets: usize,
    flows: bool,
    keep_delays: usize,
    page_cache_bytes: Option<u64>,
) -> PyResult<PendingStream> {
    if max_delay_ns < 0 || end_guard_ns.is_some_and(|g| g < 0) {
        return Err(PyValueError::new_err(
            "max_delay_ns and end_guard_ns must not be negative",
        ));
    }
    if chunk_packets == 0 {
        return Err(PyValueError::new_err("chunk_packets must be positive"));
    }
    let opts = PairOptions {
        max_delay_ns,
        end_guard_ns,
    };
    let reads = Reads {
        chunk: chunk_packets,
        cache_budget: page_cache_bytes.or_else(cache_budget),
    };
    let progress = Arc::new(Progress::default());
    // Known before the match starts: the first look at the progress shows the right pass.
    progress
        .egress_in_first_pass
        .store(!reads_egress_live(&egress), Ordering::Relaxed);
    let shared = Arc::clone(&progress);
    let paths = (ingress.clone(), egress.clone());
    let thread = std::thread::Builder::new()
        .name("cga-stream".into())
        .spawn(move || {
            stream_pair(
                &ingress,
                &egress,
                opts,
                reads,
                [&packets, &egress_only],
                flows.then_some(keep_delays),
                &shared,
            )
        })
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the matching thread: {e}")))?;
    Ok(PendingStream {
        thread: Mutex::new(Some(thread)),
        progress,
        paths,
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CaptureChunks>()?;
    m.add_class::<PendingStream>()?;
    m.add_class::<StreamedTables>()?;
    m.add_function(wrap_pyfunction!(start_stream, m)?)?;
    Ok(())
}
