//! Binding of `cga_core::pcap`: `read_capture(path) -> dict`.

use cga_core::decode::{FlowKey, FlowTable};
use cga_core::pcap::{read_file, Capture, ReadError};
use numpy::IntoPyArray;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::path::{Path, PathBuf};

/// `OSError(errno, strerror, filename)`: Python picks the subclass from the errno
/// (`FileNotFoundError`, `PermissionError`, `IsADirectoryError`, ...).
pub(crate) fn os_error(e: std::io::Error, path: &Path) -> PyErr {
    match e.raw_os_error() {
        Some(errno) => {
            let mut msg = e.to_string();
            if let Some(i) = msg.find(" (os error") {
                msg.truncate(i);
            }
            PyOSError::new_err((errno, msg, path.to_string_lossy().into_owned()))
        }
        None => PyOSError::new_err(format!("{}: {e}", path.display())),
    }
}

pub(crate) fn to_py_err(e: ReadError, path: &Path) -> PyErr {
    match e {
        ReadError::Io(e) => os_error(e, path),
        ReadError::Invalid { message, offset } => PyValueError::new_err((message, offset)),
    }
}

fn columns_dict<'py>(py: Python<'py>, cap: &mut Capture) -> PyResult<Bound<'py, PyDict>> {
    columns_to_dict(py, std::mem::take(&mut cap.columns), &cap.flows)
}

/// The columns as numpy arrays (moved, not copied), with the fields each packet's flow
/// determines (`flows`, by `flow_idx`) spelled out per packet.
pub(crate) fn columns_to_dict<'py>(
    py: Python<'py>,
    c: cga_core::pcap::Columns,
    flows: &FlowTable,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    // The TCP and RTP fields, which share columns (`Columns::tcp_seq` ..), each with 0
    // where it does not apply: a select per value, which the compiler vectorises.
    fn masked<T: Copy + Default>(values: &[T], applies: &[bool]) -> Vec<T> {
        let pick = |(&v, &yes): (&T, &bool)| if yes { v } else { T::default() };
        values.iter().zip(applies).map(pick).collect()
    }
    let (tcp, rtp) = (&c.has_tcp, &c.has_rtp);
    let (tcp_seq, tcp_ack, tcp_flags) = (
        masked(&c.tcp_seq_rtp_ssrc, tcp),
        masked(&c.tcp_ack_rtp_ts, tcp),
        masked(&c.tcp_flags_rtp_seq, tcp),
    );
    let (rtp_ssrc, rtp_seq, rtp_ts) = (
        masked(&c.tcp_seq_rtp_ssrc, rtp),
        masked(&c.tcp_flags_rtp_seq, rtp),
        masked(&c.tcp_ack_rtp_ts, rtp),
    );
    // A field of each packet's flow, through a table of it by flow (0 for no flow).
    fn per_packet<'py, T: Copy + Default + numpy::Element>(
        py: Python<'py>,
        idx: &[u32],
        flows: &FlowTable,
        field: fn(&FlowKey) -> T,
    ) -> Bound<'py, numpy::PyArray1<T>> {
        let by_flow: Vec<T> = flows.keys.iter().map(field).collect();
        let of = |&i: &u32| by_flow.get(i as usize).copied().unwrap_or_default();
        idx.iter().map(of).collect::<Vec<T>>().into_pyarray(py)
    }
    d.set_item("interface_id", c.interface_ids().into_pyarray(py))?;
    let idx = &c.flow_idx;
    d.set_item(
        "ip_version",
        per_packet(py, idx, flows, FlowKey::ip_version),
    )?;
    d.set_item("proto", per_packet(py, idx, flows, FlowKey::proto))?;
    d.set_item("sport", per_packet(py, idx, flows, FlowKey::sport))?;
    d.set_item("dport", per_packet(py, idx, flows, FlowKey::dport))?;
    let hash: Vec<u64> = idx
        .iter()
        .map(|&i| flows.hashes.get(i as usize).copied().unwrap_or(0))
        .collect();
    d.set_item("flow_hash", hash.into_pyarray(py))?;
    d.set_item("t_ns", c.t_ns.into_pyarray(py))?;

    d.set_item("wire_len", c.wire_len.into_pyarray(py))?;
    d.set_item("flow_idx", c.flow_idx.into_pyarray(py))?;
    d.set_item("has_ports", c.has_ports.into_pyarray(py))?;
    d.set_item("ip_id", c.ip_id.into_pyarray(py))?;
    d.set_item("has_ip_id", c.has_ip_id.into_pyarray(py))?;
    d.set_item("ip_len", c.ip_len.into_pyarray(py))?;
    d.set_item("dscp", c.dscp.into_pyarray(py))?;
    d.set_item("ecn", c.ecn.into_pyarray(py))?;
    d.set_item("ttl", c.ttl.into_pyarray(py))?;
    d.set_item("tcp_seq", tcp_seq.into_pyarray(py))?;
    d.set_item("tcp_ack", tcp_ack.into_pyarray(py))?;
    d.set_item("tcp_flags", tcp_flags.into_pyarray(py))?;
    d.set_item("tcp_payload_len", c.tcp_payload_len.into_pyarray(py))?;
    d.set_item("has_tcp", c.has_tcp.into_pyarray(py))?;
    d.set_item("has_rtp", c.has_rtp.into_pyarray(py))?;
    d.set_item("rtp_ssrc", rtp_ssrc.into_pyarray(py))?;
    d.set_item("rtp_seq", rtp_seq.into_pyarray(py))?;
    d.set_item("rtp_ts", rtp_ts.into_pyarray(py))?;
    d.set_item("rtp_marker", c.rtp_marker.into_pyarray(py))?;
    d.set_item("rtp_pt", c.rtp_pt.into_pyarray(py))?;
    let l4_hash: Vec<u64> = c.l4_hash.iter().map(|&h| u64::from(h)).collect();
    d.set_item("l4_hash", l4_hash.into_pyarray(py))?;
    d.set_item("truncated", c.truncated.into_pyarray(py))?;
    Ok(d)
}

fn flows_dict<'py>(py: Python<'py>, cap: &Capture) -> PyResult<Bound<'py, PyDict>> {
    flow_keys_dict(py, &cap.flows.keys)
}

/// The flows' 5-tuples as columns.
pub(crate) fn flow_keys_dict<'py>(
    py: Python<'py>,
    keys: &[cga_core::decode::FlowKey],
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let ip_version: Vec<u8> = keys.iter().map(|k| k.ip_version()).collect();
    let proto: Vec<u8> = keys.iter().map(|k| k.proto()).collect();
    let sport: Vec<u16> = keys.iter().map(|k| k.sport()).collect();
    let dport: Vec<u16> = keys.iter().map(|k| k.dport()).collect();
    d.set_item("ip_version", ip_version.into_pyarray(py))?;
    d.set_item("src", PyList::new(py, keys.iter().map(|k| k.src_string()))?)?;
    d.set_item("dst", PyList::new(py, keys.iter().map(|k| k.dst_string()))?)?;
    d.set_item("proto", proto.into_pyarray(py))?;
    d.set_item("sport", sport.into_pyarray(py))?;
    d.set_item("dport", dport.into_pyarray(py))?;
    Ok(d)
}

fn capture_dict<'py>(py: Python<'py>, mut cap: Capture) -> PyResult<Bound<'py, PyDict>> {
    let d = info_dict(py, &cap)?;
    d.set_item("columns", columns_dict(py, &mut cap)?)?;
    d.set_item("flows", flows_dict(py, &cap)?)?;
    Ok(d)
}

/// Everything but the columns and flows: format, interfaces, statistics, warnings, quirks.
pub(crate) fn info_dict<'py>(py: Python<'py>, cap: &Capture) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("format", cap.format.as_str())?;
    d.set_item("big_endian", cap.big_endian)?;
    d.set_item("nanosecond", cap.nanosecond)?;
    d.set_item("snaplen", cap.snaplen)?;

    let interfaces = PyList::empty(py);
    for (i, iface) in cap.interfaces.iter().enumerate() {
        let e = PyDict::new(py);
        e.set_item("interface_id", i)?;
        e.set_item("link_type", iface.link_type)?;
        e.set_item("name", iface.name.as_deref())?;
        e.set_item("snaplen", iface.snaplen)?;
        e.set_item("ts_resolution", iface.ts_resolution.label())?;
        interfaces.append(e)?;
    }
    d.set_item("interfaces", interfaces)?;

    let stats = PyList::empty(py);
    for s in &cap.stats {
        let e = PyDict::new(py);
        e.set_item("interface_id", s.interface_id)?;
        e.set_item("start_ns", s.start_ns)?;
        e.set_item("end_ns", s.end_ns)?;
        e.set_item("ifrecv", s.ifrecv)?;
        e.set_item("ifdrop", s.ifdrop)?;
        e.set_item("filteraccept", s.filteraccept)?;
        e.set_item("osdrop", s.osdrop)?;
        e.set_item("usrdeliv", s.usrdeliv)?;
        stats.append(e)?;
    }
    d.set_item("stats", stats)?;
    d.set_item("warnings", PyList::new(py, &cap.warnings)?)?;
    let q = &cap.quirks;
    let quirks = PyDict::new(py);
    quirks.set_item("len_from_frame", q.len_from_frame)?;
    quirks.set_item("jumbograms", q.jumbograms)?;
    quirks.set_item("bad_timestamps", q.bad_timestamps)?;
    quirks.set_item("first_bad_timestamp_at", q.first_bad_timestamp_at)?;
    quirks.set_item("skipped_packets", q.skipped_packets)?;
    d.set_item("quirks", quirks)?;
    Ok(d)
}

/// Reads a whole pcap or pcapng file into numpy columns (see `_native.pyi`).
///
/// Raises `OSError` (e.g. `FileNotFoundError`) when the file cannot be read and
/// `ValueError(message, byte_offset)` when it is not a readable capture.
#[pyfunction]
fn read_capture<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let cap = py
        .detach(|| {
            let cap = read_file(&path);
            cga_core::hugepages::release_cache();
            cap
        })
        .map_err(|e| to_py_err(e, &path))?;
    capture_dict(py, cap)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_capture, m)?)?;
    Ok(())
}
