//! One capture read again in the matching pass: chunks read and keyed a chunk ahead on a
//! thread of their own, pushed into the matcher and held in step with the watermarks.

use super::held::Held;
use super::prescan::Scan;
use super::queue::Queue;
use crate::pcap::{ChunkReader, ReadError};
use crate::stream::{bucketed, Runs, StreamMatcher};
use crate::table::rtp::Streams;
use crate::table::Point;
use crate::wordhash::WordMap;
use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};

/// A chunk read and decoded on its reader's thread: its IP packets outside the flows left
/// out, held (columns gathered, rows numbered on from the chunk before) and as the
/// matcher takes them (time, bucketed records and, at egress, IP TOS byte).
pub(super) struct Decoded {
    held: Held,
    runs: Runs,
    ts: Vec<i64>,
    tos: Vec<u8>,
    left_out: u64,
}

type Chunks = Receiver<Result<Decoded, ReadError>>;

/// What a reader thread reads, and how.
pub(super) struct Reading<'a> {
    pub(super) path: &'a Path,
    /// Packets a chunk.
    pub(super) chunk: usize,
    /// Where the pages read start to be dropped from the page cache (`cache`).
    pub(super) uncache_from: Option<usize>,
    pub(super) scan: &'a Scan,
    pub(super) streams: &'a Streams,
    /// The flows left out.
    pub(super) reverse: &'a HashSet<u64, WordMap>,
    pub(super) ingress: bool,
    /// The matcher's (its buckets' width).
    pub(super) max_delay_ns: i64,
}

/// Reads a chunk at a time into `tx` (one chunk ahead of the matching thread), leaving
/// out the IP packets of the flows in `reverse`; `bytes`: how far it read.
pub(super) fn read_ahead(
    r: &Reading<'_>,
    tx: &SyncSender<Result<Decoded, ReadError>>,
    bytes: &AtomicUsize,
) {
    let mut reader = match ChunkReader::open(r.path) {
        Ok(r) => r,
        Err(e) => {
            let _ = tx.send(Err(e));
            return;
        }
    };
    reader.uncache_from(r.uncache_from);
    let mut pushed = 0u64;
    loop {
        let cols = match reader.next_chunk(r.chunk) {
            Ok(Some(c)) => c,
            Ok(None) => return,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        bytes.store(reader.bytes_read(), Ordering::Relaxed);
        let host = Held::capture(cols, &r.scan.cap);
        let (p, keys) = Point::new(&host, r.streams, r.ingress);
        let (mut decoded, whole) = decode(&p, &keys, r, pushed);
        if whole {
            // Every packet kept, in the chunk's order: its columns, moved, not gathered.
            decoded.held.cols = host.columns;
        }
        pushed += decoded.ts.len() as u64;
        if tx.send(Ok(decoded)).is_err() {
            return; // the pass stopped
        }
    }
}

/// A chunk's IP packets outside `reverse`, rows numbered on from `first_row`; true: they
/// are all of the chunk's packets, and the held packets' columns are left for the caller
/// to move in.
fn decode(p: &Point<'_>, keys: &[u64], r: &Reading<'_>, first_row: u64) -> (Decoded, bool) {
    let (reverse, ingress) = (r.reverse, r.ingress);
    let kept: Vec<u32> = (0..p.rows.len() as u32)
        .filter(|&k| reverse.is_empty() || !reverse.contains(&p.cap.flow_hash(p.row(k as usize))))
        .collect();
    let key: Vec<u64> = kept.iter().map(|&k| keys[k as usize]).collect();
    let ts: Vec<i64> = kept.iter().map(|&k| p.t(k as usize)).collect();
    let tos: Vec<u8> = if ingress {
        Vec::new()
    } else {
        let c = &p.cap.columns;
        kept.iter()
            .map(|&k| {
                let i = p.row(k as usize);
                c.dscp[i] * 4 + c.ecn[i]
            })
            .collect()
    };
    let mut held = Held::default();
    let whole = kept.len() == p.cap.columns.len();
    if whole {
        held.number(p, first_row);
    } else {
        held.push(p, &kept, first_row);
    }
    let decoded = Decoded {
        held,
        runs: bucketed(&key, &ts, first_row, r.max_delay_ns),
        ts,
        tos,
        left_out: (p.rows.len() - kept.len()) as u64,
    };
    (decoded, whole)
}

/// One capture read again, chunk by chunk, in step with its watermarks.
pub(super) struct Side<'a> {
    chunks: Chunks,
    scan: &'a Scan,
    next: usize,
    /// IP packets left out (flows that cross the taps the other way).
    pub(super) left_out: u64,
}

impl<'a> Side<'a> {
    pub(super) fn new(chunks: Chunks, scan: &'a Scan) -> Side<'a> {
        Side {
            chunks,
            scan,
            next: 0,
            left_out: 0,
        }
    }

    pub(super) fn done(&self) -> bool {
        self.next + 1 >= self.scan.watermarks.len()
    }

    /// No IP packet still to be read is earlier.
    pub(super) fn watermark(&self) -> i64 {
        self.scan.watermarks[self.next]
    }

    /// The next chunk's IP packets (outside the flows left out): pushed into the matcher
    /// and held.
    pub(super) fn read(
        &mut self,
        m: &mut StreamMatcher,
        held: &mut Queue,
        ingress: bool,
    ) -> Result<(), ReadError> {
        let d = self.chunks.recv().unwrap_or_else(|_| {
            Err(ReadError::Invalid {
                message: "the capture changed while it was read".into(),
                offset: 0,
            })
        })?;
        self.next += 1;
        self.left_out += d.left_out;
        if ingress {
            m.push_ingress_runs(&d.ts, d.runs);
        } else {
            m.push_egress_runs(&d.ts, &d.tos, d.runs);
        }
        held.push(d.held);
        Ok(())
    }
}
