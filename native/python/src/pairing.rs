//! Binding of `cga_core::table`: both captures read, matched and written as Parquet
//! without a Python table in between (`cganalysis packets`, in memory).

use crate::flows::flow_table_dict;
use crate::reading::{info_dict, os_error};
use crate::take_once;
use cga_core::parquet;
use cga_core::pcap::{read_file, Capture, ReadError};
use cga_core::table::{
    match_pair as core_match_pair, Counts, FlowStats, PairError, PairOptions, Paired,
};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// A read error naming its file: `OSError` with the file name, or
/// `ValueError(message, byte_offset, path)`.
pub(crate) fn read_error(e: ReadError, path: &Path) -> PyErr {
    match e {
        ReadError::Io(e) => os_error(e, path),
        ReadError::Invalid { message, offset } => {
            PyValueError::new_err((message, offset, path.to_string_lossy().into_owned()))
        }
    }
}

/// The matched tables, held natively until written.
#[pyclass(module = "cganalysis._native")]
pub struct PairedTables {
    inner: Paired,
}

impl Drop for PairedTables {
    fn drop(&mut self) {
        cga_core::hugepages::release_cache();
    }
}

fn write_table(
    path: &Path,
    table: &cga_core::table::PacketTable,
    metadata: &str,
) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let meta = [("cganalysis", metadata)];
    let meta: &[(&str, &str)] = if metadata.is_empty() { &[] } else { &meta };
    parquet::write(
        &mut out,
        &table.parquet_columns(),
        meta,
        "cganalysis (native)",
    )
}

#[pymethods]
impl PairedTables {
    /// The flow table of the packet table, as columns (`cganalysis.schemas.FLOWS`).
    fn flow_table<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut stats = FlowStats::default();
        py.detach(|| stats.add(&self.inner.packets));
        flow_table_dict(py, stats)
    }

    /// Writes the packet table and the egress-only table, each with `metadata` (JSON)
    /// under the key `cganalysis`.
    fn write(
        &self,
        py: Python<'_>,
        packets: PathBuf,
        egress_only: PathBuf,
        metadata: String,
    ) -> PyResult<()> {
        py.detach(|| {
            let written = write_table(&packets, &self.inner.packets, &metadata)
                .map_err(|e| (e, packets.clone()))
                .and_then(|()| {
                    write_table(&egress_only, &self.inner.egress_only, &metadata)
                        .map_err(|e| (e, egress_only.clone()))
                });
            cga_core::hugepages::release_cache();
            written
        })
        .map_err(|(e, p)| PyOSError::new_err(format!("{}: {e}", p.display())))
    }
}

/// `result["error"]`: `("no_ip", 0|1)` or `("swapped", reverse_egress, matched_ingress)`.
pub(crate) fn set_error(d: &Bound<'_, PyDict>, e: PairError) -> PyResult<()> {
    match e {
        PairError::NoIpPackets(which) => d.set_item("error", ("no_ip", which)),
        PairError::Swapped {
            reverse_egress,
            matched_ingress,
        } => d.set_item("error", ("swapped", reverse_egress, matched_ingress)),
    }
}

/// The summary's counts as a dict (`cganalysis.matching.summary.SummaryCounts`).
pub(crate) fn counts_dict<'py>(py: Python<'py>, c: &Counts) -> PyResult<Bound<'py, PyDict>> {
    let counts = PyDict::new(py);
    counts.set_item("packets_in", c.packets_in)?;
    counts.set_item("packets_delivered", c.packets_delivered)?;
    counts.set_item("packets_lost", c.packets_lost)?;
    counts.set_item("packets_unknown", c.packets_unknown)?;
    counts.set_item("egress_only_packets", c.egress_only_packets)?;
    counts.set_item("reverse_packets_in", c.reverse_packets_in)?;
    counts.set_item("reverse_packets_out", c.reverse_packets_out)?;
    counts.set_item("non_ip_packets_in", c.non_ip_packets_in)?;
    counts.set_item("non_ip_packets_out", c.non_ip_packets_out)?;
    counts.set_item("truncated_packets_in", c.truncated_packets_in)?;
    Ok(counts)
}

/// What the matching thread leaves: each capture (or why it could not be read), and the
/// match once both were read.
struct Outcome {
    ingress: Result<Arc<Capture>, ReadError>,
    egress: Result<Arc<Capture>, ReadError>,
    paired: Option<Result<Paired, PairError>>,
    read_s: f64,
}

/// Reads both captures (on two threads) and matches them with the options `opts` gives
/// (which may come while the captures are read); nothing more if none come (the
/// `PendingMatch` was dropped unused).
fn read_and_match(ingress: &Path, egress: &Path, opts: Receiver<PairOptions>) -> Outcome {
    let started = std::time::Instant::now();
    let (ing, eg) = std::thread::scope(|s| {
        let eg = s.spawn(|| read_file(egress));
        (read_file(ingress), eg.join().expect("reader thread"))
    });
    // The packet table keeps both captures: it reads their columns when written.
    let (ingress, egress) = (ing.map(Arc::new), eg.map(Arc::new));
    let read_s = started.elapsed().as_secs_f64();
    let paired = match (&ingress, &egress, opts.recv()) {
        (Ok(ing), Ok(eg), Ok(opts)) => Some(core_match_pair(ing, eg, opts)),
        _ => None,
    };
    if !matches!(paired, Some(Ok(_))) {
        cga_core::hugepages::release_cache();
    }
    // else the blocks the match freed stay kept for the tables' writer, until the tables
    // are written or dropped
    Outcome {
        ingress,
        egress,
        paired,
        read_s,
    }
}

/// A match running on its own threads, started by `start_read` or `start_match`.
#[pyclass(module = "cganalysis._native")]
pub struct PendingMatch {
    thread: Mutex<Option<JoinHandle<Outcome>>>,
    /// Where the match's options go (taken once they are sent).
    options: Mutex<Option<Sender<PairOptions>>>,
    paths: (PathBuf, PathBuf),
}

fn pair_options(max_delay_ns: i64, end_guard_ns: Option<i64>) -> PyResult<PairOptions> {
    if max_delay_ns < 0 {
        return Err(PyValueError::new_err("max_delay_ns must not be negative"));
    }
    Ok(PairOptions {
        max_delay_ns,
        end_guard_ns,
    })
}

#[pymethods]
impl PendingMatch {
    /// Gives the match its options (once): it starts as soon as both captures are read.
    #[pyo3(signature = (max_delay_ns, end_guard_ns=None))]
    fn match_with(&self, max_delay_ns: i64, end_guard_ns: Option<i64>) -> PyResult<()> {
        let opts = pair_options(max_delay_ns, end_guard_ns)?;
        let sender = take_once(&self.options, "the match was already given its options")?;
        // The thread waits for them even when a read failed (`result` then reports the
        // error); it has gone only if it panicked, which `result` reports too.
        let _ = sender.send(opts);
        Ok(())
    }

    /// Waits for the match; returns `(tables, result)` as `match_pair` does (once only).
    fn result<'py>(&self, py: Python<'py>) -> PyResult<(Option<PairedTables>, Bound<'py, PyDict>)> {
        if self
            .options
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
        {
            return Err(PyRuntimeError::new_err(
                "the match has no options yet: call match_with first",
            ));
        }
        let thread = take_once(&self.thread, "the match's result was already taken")?;
        let outcome = py
            .detach(|| thread.join())
            .map_err(|_| PyRuntimeError::new_err("the matching thread panicked"))?;
        let (ingress, egress) = &self.paths;
        let ing = outcome.ingress.map_err(|e| read_error(e, ingress))?;
        let eg = outcome.egress.map_err(|e| read_error(e, egress))?;
        let d = PyDict::new(py);
        d.set_item("ingress", info_dict(py, &ing)?)?;
        d.set_item("egress", info_dict(py, &eg)?)?;
        let paired = match outcome.paired.expect("both captures were read") {
            Ok(p) => p,
            Err(e) => {
                set_error(&d, e)?;
                return Ok((None, d));
            }
        };
        d.set_item("counts", counts_dict(py, &paired.counts)?)?;
        d.set_item("span_ns", paired.span_ns)?;
        d.set_item("guard_ns", paired.guard_ns)?;
        let stages = PyDict::new(py);
        stages.set_item("read both captures", outcome.read_s)?;
        for (name, s) in &paired.stages {
            stages.set_item(*name, s)?;
        }
        d.set_item("stages_s", stages)?;
        Ok((Some(PairedTables { inner: paired }), d))
    }
}

/// Starts reading `ingress` and `egress` (on two threads of their own) and returns at
/// once: the match follows once it has its options (`PendingMatch::match_with`). The
/// `packets` command starts reading before it has parsed its options.
#[pyfunction]
fn start_read(ingress: PathBuf, egress: PathBuf) -> PyResult<PendingMatch> {
    let (sender, options) = channel();
    let paths = (ingress.clone(), egress.clone());
    let thread = std::thread::Builder::new()
        .name("cga-match".into())
        .spawn(move || read_and_match(&ingress, &egress, options))
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the matching thread: {e}")))?;
    Ok(PendingMatch {
        thread: Mutex::new(Some(thread)),
        options: Mutex::new(Some(sender)),
        paths,
    })
}

/// Starts reading `ingress` and `egress` (on two threads of their own) and matching them,
/// and returns at once: the caller goes on (importing what it needs next) meanwhile.
#[pyfunction]
#[pyo3(signature = (ingress, egress, max_delay_ns, end_guard_ns=None))]
fn start_match(
    ingress: PathBuf,
    egress: PathBuf,
    max_delay_ns: i64,
    end_guard_ns: Option<i64>,
) -> PyResult<PendingMatch> {
    pair_options(max_delay_ns, end_guard_ns)?;
    let pending = start_read(ingress, egress)?;
    pending.match_with(max_delay_ns, end_guard_ns)?;
    Ok(pending)
}

/// Reads `ingress` and `egress` (on two threads), matches them and returns
/// `(tables, result)`: `result` holds `ingress` and `egress` (as `read_capture`'s dict
/// without columns), `counts`, `span_ns` and `guard_ns`, or `error`: `("no_ip", 0|1)` or
/// `("swapped", reverse_egress, matched_ingress)`, with `tables` None.
#[pyfunction]
#[pyo3(signature = (ingress, egress, max_delay_ns, end_guard_ns=None))]
fn match_pair<'py>(
    py: Python<'py>,
    ingress: PathBuf,
    egress: PathBuf,
    max_delay_ns: i64,
    end_guard_ns: Option<i64>,
) -> PyResult<(Option<PairedTables>, Bound<'py, PyDict>)> {
    start_match(ingress, egress, max_delay_ns, end_guard_ns)?.result(py)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PairedTables>()?;
    m.add_class::<PendingMatch>()?;
    m.add_function(wrap_pyfunction!(match_pair, m)?)?;
    m.add_function(wrap_pyfunction!(start_match, m)?)?;
    m.add_function(wrap_pyfunction!(start_read, m)?)?;
    Ok(())
}
