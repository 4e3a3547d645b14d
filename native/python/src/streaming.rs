//! Bindings of the chunked reader (`cga_core::pcap::ChunkReader`) and the streaming
//! matcher (`cga_core::stream::StreamMatcher`).

use crate::reading::{columns_to_dict, flow_keys_dict, info_dict, to_py_err};
use cga_core::pcap::ChunkReader;
use cga_core::stream::StreamMatcher;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;

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

/// Pairs packets pushed in chunks (see `_native.pyi`).
#[pyclass(module = "cganalysis._native", name = "StreamMatcher")]
struct PyStreamMatcher(StreamMatcher);

type Arr<'py, T> = Bound<'py, PyArray1<T>>;

#[pymethods]
impl PyStreamMatcher {
    #[new]
    fn new(max_delay_ns: i64) -> PyResult<PyStreamMatcher> {
        if max_delay_ns < 0 {
            return Err(PyValueError::new_err("max_delay_ns must not be negative"));
        }
        Ok(PyStreamMatcher(StreamMatcher::new(max_delay_ns)))
    }

    fn push_ingress(
        &mut self,
        key: PyReadonlyArray1<'_, u64>,
        ts: PyReadonlyArray1<'_, i64>,
    ) -> PyResult<()> {
        let (k, t) = (key.as_slice()?, ts.as_slice()?);
        if k.len() != t.len() {
            return Err(PyValueError::new_err("key and ts differ in length"));
        }
        self.0.push_ingress(k, t);
        Ok(())
    }

    fn push_egress(
        &mut self,
        key: PyReadonlyArray1<'_, u64>,
        ts: PyReadonlyArray1<'_, i64>,
        tos: PyReadonlyArray1<'_, u8>,
    ) -> PyResult<()> {
        let (k, t, s) = (key.as_slice()?, ts.as_slice()?, tos.as_slice()?);
        if k.len() != t.len() || k.len() != s.len() {
            return Err(PyValueError::new_err("key, ts and tos differ in length"));
        }
        self.0.push_egress(k, t, s);
        Ok(())
    }

    fn advance(&mut self, py: Python<'_>, watermark: i64) {
        let m = &mut self.0;
        py.detach(|| m.advance(watermark));
    }

    /// For ingress rows: (resolved, matched, twin time, twin TOS byte).
    #[allow(clippy::type_complexity)]
    fn ingress_fates<'py>(
        &self,
        py: Python<'py>,
        rows: PyReadonlyArray1<'py, u64>,
    ) -> PyResult<(Arr<'py, bool>, Arr<'py, bool>, Arr<'py, i64>, Arr<'py, u8>)> {
        let rows = rows.as_slice()?;
        let n = rows.len();
        let (mut resolved, mut matched) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let (mut ts, mut tos) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for &r in rows {
            let f = self
                .0
                .ingress_fate(r)
                .ok_or_else(|| PyValueError::new_err(format!("ingress row {r} is not kept")))?;
            resolved.push(f.resolved);
            matched.push(f.twin >= 0);
            ts.push(f.twin_ts);
            tos.push(f.twin_tos);
        }
        Ok((
            resolved.into_pyarray(py),
            matched.into_pyarray(py),
            ts.into_pyarray(py),
            tos.into_pyarray(py),
        ))
    }

    /// For egress rows: (resolved, matched, reverse).
    #[allow(clippy::type_complexity)]
    fn egress_fates<'py>(
        &self,
        py: Python<'py>,
        rows: PyReadonlyArray1<'py, u64>,
    ) -> PyResult<(Arr<'py, bool>, Arr<'py, bool>, Arr<'py, bool>)> {
        let rows = rows.as_slice()?;
        let n = rows.len();
        let (mut resolved, mut matched) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let mut reverse = Vec::with_capacity(n);
        for &r in rows {
            let f = self
                .0
                .egress_fate(r)
                .ok_or_else(|| PyValueError::new_err(format!("egress row {r} is not kept")))?;
            resolved.push(f.resolved);
            matched.push(f.twin >= 0);
            reverse.push(f.reverse);
        }
        Ok((
            resolved.into_pyarray(py),
            matched.into_pyarray(py),
            reverse.into_pyarray(py),
        ))
    }

    fn release_ingress(&mut self, row: u64) {
        self.0.release_ingress(row);
    }

    fn release_egress(&mut self, row: u64) {
        self.0.release_egress(row);
    }

    fn pending(&self) -> usize {
        self.0.pending()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CaptureChunks>()?;
    m.add_class::<PyStreamMatcher>()?;
    Ok(())
}
