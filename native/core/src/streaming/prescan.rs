//! The first pass: what must be known of a whole capture before any row is final, read a
//! chunk at a time with memory that grows only with its flows and streams.
//!
//! - **Watermarks**: per chunk, the earliest time of an IP packet in it or after it: the
//!   matcher then knows when a packet can get no twin any more, and the table when a
//!   row's place in time order is final, whatever the capture's disorder.
//! - **Order**: whether the IP packets are in time order (then the table keeps the file's
//!   order); the IP packets' first and last times (the egress span without statistics).
//! - At ingress, the **RTP streams** (decided on the whole capture) and each stream's
//!   first packet (flow ids are numbered by it).

use crate::pcap::{Capture, ChunkReader, ReadError, NO_FLOW, NO_TIMESTAMP};
use crate::table::rtp::{self, Classifier, Streams};
use crate::table::{see_first, First, FIRST_NONE};
use crate::wordhash::WordMap;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// No IP packet is still to come.
pub const NO_WATERMARK: i64 = i64::MAX;

/// One capture, scanned.
pub(crate) struct Scan {
    /// What the file says about itself (columns empty) and every flow, numbered as the
    /// chunks of a second read number them.
    pub(crate) cap: Capture,
    /// Packet records, and those that are IP.
    pub(crate) rows: u64,
    pub(crate) ip_rows: u64,
    pub(crate) truncated_ip_rows: u64,
    /// `watermarks[c]`: the earliest IP packet time in chunk `c` or later.
    pub(crate) watermarks: Vec<i64>,
    /// The IP packets are in time order (unknown times last).
    pub(crate) in_order: bool,
    /// The first and last known time of an IP packet.
    pub(crate) t_span: Option<(i64, i64)>,
    /// Ingress: each (flow, RTP candidate SSRC)'s first packet; the RTP streams.
    pub(crate) firsts: HashMap<(u32, Option<u32>), First, WordMap>,
    pub(crate) streams: Streams,
}

/// Reads `path` a chunk of `chunk` packets at a time; `rtp`: classify the RTP streams
/// and note first packets (ingress); `uncache_from`: the pages from this offset on are
/// dropped from the page cache once read (`cache`). `bytes` counts the bytes read
/// (progress).
pub(crate) fn scan(
    path: &Path,
    chunk: usize,
    ingress: bool,
    uncache_from: Option<usize>,
    bytes: &AtomicUsize,
) -> Result<Scan, ReadError> {
    let mut reader = ChunkReader::open(path)?;
    reader.uncache_from(uncache_from);
    let mut minima = Vec::new();
    let mut classifier = Classifier::default();
    let (mut rows, mut ip_rows, mut truncated, mut in_order) = (0u64, 0u64, 0u64, true);
    let mut last = (false, i64::MIN);
    let mut t_span: Option<(i64, i64)> = None;
    let mut firsts: HashMap<(u32, Option<u32>), First, WordMap> = HashMap::default();
    while let Some(c) = reader.next_chunk(chunk)? {
        let mut lo = NO_WATERMARK;
        for i in 0..c.len() {
            if c.flow_idx[i] == NO_FLOW {
                continue;
            }
            let t = c.t_ns[i];
            let key = (t == NO_TIMESTAMP, t);
            in_order &= key >= last;
            last = key;
            if t != NO_TIMESTAMP {
                lo = lo.min(t);
                t_span = Some(t_span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
            }
            truncated += u64::from(c.truncated[i]);
            if ingress {
                let ssrc = (c.has_rtp[i] && !rtp::rtcp_like(&c, i)).then(|| c.rtp_ssrc(i));
                let e = firsts.entry((c.flow_idx[i], ssrc)).or_insert(FIRST_NONE);
                see_first(e, t, ip_rows as usize);
            }
            ip_rows += 1;
        }
        if ingress && classifier.in_order {
            classifier.add(&c, reader.flows());
        }
        minima.push(lo);
        rows += c.len() as u64;
        bytes.store(reader.bytes_read(), Ordering::Relaxed);
        reader.recycle(c);
    }
    let mut watermarks = vec![NO_WATERMARK; minima.len() + 1];
    for c in (0..minima.len()).rev() {
        watermarks[c] = minima[c].min(watermarks[c + 1]);
    }
    let streams = match (ingress, classifier.in_order) {
        (false, _) => Streams::default(),
        (true, true) => classifier.streams(),
        // The rule reads each stream in time order: the candidates once more, sorted.
        (true, false) => rtp::classify_sorted(candidates(path, chunk, uncache_from)?),
    };
    Ok(Scan {
        cap: reader.finish()?,
        rows,
        ip_rows,
        truncated_ip_rows: truncated,
        watermarks,
        in_order,
        t_span,
        firsts,
        streams,
    })
}

/// Every RTP candidate of the capture (see `rtp::candidates`), in file order.
fn candidates(
    path: &Path,
    chunk: usize,
    uncache_from: Option<usize>,
) -> Result<Vec<rtp::Candidate>, ReadError> {
    let mut reader = ChunkReader::open(path)?;
    reader.uncache_from(uncache_from);
    let mut out = Vec::new();
    while let Some(c) = reader.next_chunk(chunk)? {
        rtp::candidates(&c, reader.flows(), &mut out);
        reader.recycle(c);
    }
    Ok(out)
}
