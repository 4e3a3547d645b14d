//! One capture read again in the matching pass: chunks read and keyed a chunk ahead on a
//! thread of their own, pushed into the matcher and held in step with the watermarks.

use super::held::Held;
use super::prescan::Scan;
use crate::pcap::{Capture, ChunkReader, ReadError};
use crate::stream::StreamMatcher;
use crate::table::rtp::Streams;
use crate::table::Point;
use crate::wordhash::WordMap;
use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};

/// A chunk read and decoded on its reader's thread: the packets as a capture with every
/// flow, and its point (IP rows, streams, RTP marks) with the identity keys.
pub(super) struct Decoded {
    host: Capture,
    rows: Vec<u32>,
    stream: Vec<u32>,
    rtp_by_row: Vec<bool>,
    keys: Vec<u64>,
}

type Chunks = Receiver<Result<Decoded, ReadError>>;

/// Reads `path` a chunk at a time into `tx` (one chunk ahead of the matching thread).
pub(super) fn read_ahead(
    path: &Path,
    chunk: usize,
    scan: &Scan,
    streams: &Streams,
    ingress: bool,
    tx: &SyncSender<Result<Decoded, ReadError>>,
    bytes: &AtomicUsize,
) {
    let mut reader = match ChunkReader::open(path) {
        Ok(r) => r,
        Err(e) => {
            let _ = tx.send(Err(e));
            return;
        }
    };
    loop {
        let cols = match reader.next_chunk(chunk) {
            Ok(Some(c)) => c,
            Ok(None) => return,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        bytes.store(reader.bytes_read(), Ordering::Relaxed);
        let host = Held::capture(cols, &scan.cap);
        let (p, keys) = Point::new(&host, streams, ingress);
        let (rows, stream, rtp_by_row) = (p.rows, p.stream, p.rtp_by_row);
        let decoded = Decoded {
            host,
            rows,
            stream,
            rtp_by_row,
            keys,
        };
        if tx.send(Ok(decoded)).is_err() {
            return; // the pass stopped
        }
    }
}

/// One capture read again, chunk by chunk, in step with its watermarks.
pub(super) struct Side<'a> {
    chunks: Chunks,
    scan: &'a Scan,
    next: usize,
    /// Rows pushed into the matcher.
    pushed: u64,
    /// IP packets left out (flows that cross the taps the other way).
    pub(super) left_out: u64,
}

impl<'a> Side<'a> {
    pub(super) fn new(chunks: Chunks, scan: &'a Scan) -> Side<'a> {
        Side {
            chunks,
            scan,
            next: 0,
            pushed: 0,
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

    /// The next chunk's IP packets outside `reverse`: pushed into the matcher and held.
    pub(super) fn read(
        &mut self,
        reverse: &HashSet<u64, WordMap>,
        m: &mut StreamMatcher,
        held: &mut Held,
        ingress: bool,
    ) -> Result<(), ReadError> {
        let d = self.chunks.recv().unwrap_or_else(|_| {
            Err(ReadError::Invalid {
                message: "the capture changed while it was read".into(),
                offset: 0,
            })
        })?;
        self.next += 1;
        let p = Point {
            cap: &d.host,
            rows: d.rows,
            stream: d.stream,
            rtp_by_row: d.rtp_by_row,
        };
        let keys = d.keys;
        let kept: Vec<u32> = (0..p.rows.len() as u32)
            .filter(|&k| {
                reverse.is_empty() || !reverse.contains(&p.cap.flow_hash(p.row(k as usize)))
            })
            .collect();
        self.left_out += (p.rows.len() - kept.len()) as u64;
        let key: Vec<u64> = kept.iter().map(|&k| keys[k as usize]).collect();
        let ts: Vec<i64> = kept.iter().map(|&k| p.t(k as usize)).collect();
        if ingress {
            m.push_ingress(&key, &ts);
        } else {
            let c = &p.cap.columns;
            let tos: Vec<u8> = kept
                .iter()
                .map(|&k| {
                    let i = p.row(k as usize);
                    c.dscp[i] * 4 + c.ecn[i]
                })
                .collect();
            m.push_egress(&key, &ts, &tos);
        }
        held.push(&p, &kept, self.pushed);
        self.pushed += kept.len() as u64;
        Ok(())
    }
}
