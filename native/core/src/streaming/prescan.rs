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

use crate::decode::{FlowKey, FlowTable};
use crate::pcap::{Capture, ChunkReader, Columns, ReadError, NO_FLOW, NO_TIMESTAMP};
use crate::table::rtp::{self, Classifier, Streams};
use crate::table::{see_first, First, FIRST_NONE};
use crate::wordhash::WordMap;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};

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

/// What the reading thread of a scan sends: a chunk's columns with the flows that first
/// came in it (keys and hashes), then what the file says about itself.
enum Read {
    Chunk(Box<Columns>, Vec<FlowKey>, Vec<u64>),
    End(Box<Capture>),
}

/// Reads `path` a chunk of `chunk` packets at a time; `rtp`: classify the RTP streams
/// and note first packets (ingress); `uncache_from`: the pages from this offset on are
/// dropped from the page cache once read (`cache`). `bytes` counts the bytes read
/// (progress).
///
/// The chunks are read and decoded on a thread of their own, a chunk or two ahead of this
/// one, which looks at them (and gives their memory back for the next chunks): decoding is
/// two thirds of a scan, and the egress capture no longer has one beside it to keep the
/// other core busy (`side`).
pub(crate) fn scan(
    path: &Path,
    chunk: usize,
    ingress: bool,
    uncache_from: Option<usize>,
    bytes: &AtomicUsize,
) -> Result<Scan, ReadError> {
    std::thread::scope(|s| {
        let (tx, rx) = sync_channel(2);
        let (give_back, given) = channel();
        s.spawn(move || read_chunks(path, chunk, uncache_from, bytes, &tx, &given));
        look(path, chunk, ingress, uncache_from, &rx, &give_back)
    })
}

/// The reading thread of `scan`.
fn read_chunks(
    path: &Path,
    chunk: usize,
    uncache_from: Option<usize>,
    bytes: &AtomicUsize,
    tx: &SyncSender<Result<Read, ReadError>>,
    given: &Receiver<Columns>,
) {
    let mut sent_flows = 0;
    let read = read_each(path, chunk, uncache_from, bytes, tx, |reader, c| {
        let (keys, hashes) = flows_since(reader.flows(), &mut sent_flows);
        let sent = tx.send(Ok(Read::Chunk(Box::new(c), keys, hashes)));
        if let Ok(c) = given.try_recv() {
            reader.recycle(c);
        }
        sent.is_ok() // or the scan stopped
    });
    if let Some(reader) = read {
        let _ = tx.send(reader.finish().map(|cap| Read::End(Box::new(cap))));
    }
}

/// What a reader thread does (`scan`'s and the pass's, `side`): opens `path` and hands
/// each chunk of `chunk` packets to `each` while it says go on, `bytes` telling how far
/// it read; returns the reader once read to its end. A failure to open or read is sent to
/// `tx` (the thread that waits for the chunks then stops), and gives `None`, as does
/// `each` saying stop.
pub(super) fn read_each<T>(
    path: &Path,
    chunk: usize,
    uncache_from: Option<usize>,
    bytes: &AtomicUsize,
    tx: &SyncSender<Result<T, ReadError>>,
    mut each: impl FnMut(&mut ChunkReader, Columns) -> bool,
) -> Option<ChunkReader> {
    let mut reader = ChunkReader::open(path).map_err(|e| tx.send(Err(e))).ok()?;
    reader.uncache_from(uncache_from);
    loop {
        match reader.next_chunk(chunk) {
            Ok(Some(c)) => {
                bytes.store(reader.bytes_read(), Ordering::Relaxed);
                if !each(&mut reader, c) {
                    return None;
                }
            }
            Ok(None) => return Some(reader),
            Err(e) => {
                let _ = tx.send(Err(e));
                return None;
            }
        }
    }
}

/// The flows of `flows` from the `sent`-th on (keys and hashes), and `sent` moved past
/// them: what a thread that reads chunks sends along with each.
pub(super) fn flows_since(flows: &FlowTable, sent: &mut usize) -> (Vec<FlowKey>, Vec<u64>) {
    let new = (flows.keys[*sent..].to_vec(), flows.hashes[*sent..].to_vec());
    *sent = flows.len();
    new
}

/// The looking half of `scan`: each chunk from `rx` in turn.
fn look(
    path: &Path,
    chunk: usize,
    ingress: bool,
    uncache_from: Option<usize>,
    rx: &Receiver<Result<Read, ReadError>>,
    give_back: &Sender<Columns>,
) -> Result<Scan, ReadError> {
    let mut minima = Vec::new();
    let mut classifier = Classifier::default();
    let (mut rows, mut ip_rows, mut truncated, mut in_order) = (0u64, 0u64, 0u64, true);
    let mut last = (false, i64::MIN);
    let mut t_span: Option<(i64, i64)> = None;
    let mut firsts: HashMap<(u32, Option<u32>), First, WordMap> = HashMap::default();
    let mut flows = FlowTable::default();
    let cap = loop {
        let read = rx.recv().unwrap_or_else(|_| {
            Err(ReadError::Invalid {
                message: "the capture's reading stopped".into(),
                offset: 0,
            })
        })?;
        let c = match read {
            Read::Chunk(c, keys, hashes) => {
                flows.keys.extend(keys);
                flows.hashes.extend(hashes);
                *c
            }
            Read::End(cap) => break *cap,
        };
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
            classifier.add(&c, &flows);
        }
        minima.push(lo);
        rows += c.len() as u64;
        let _ = give_back.send(c);
    };
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
        cap,
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
