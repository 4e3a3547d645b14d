//! One capture read again in the matching pass: chunks read and keyed a chunk ahead on a
//! thread of their own, pushed into the matcher and held in step with the watermarks.
//!
//! The egress capture, when it was not scanned first (`prescan`), is read *live*: its
//! watermark is the earliest time of the next chunk and the one after it (the lookahead),
//! and each chunk that comes later is checked to be no earlier than every watermark given
//! before; one that is means the capture is out of order further than the lookahead, and
//! the pass stops (`SideError::Disordered`) to be made again after a first pass over it.
//! What the first pass would have said of the capture (its flows, span, counts, what the
//! file says about itself) comes with its last chunk (`End`).

use super::held::Held;
use super::prescan::{flows_since, read_each, Scan, NO_WATERMARK};
use super::queue::Queue;
use crate::decode::{FlowKey, FlowTable};
use crate::pcap::{Capture, ReadError, NO_FLOW, NO_TIMESTAMP};
use crate::stream::{bucketed, Runs, StreamMatcher};
use crate::table::rtp::Streams;
use crate::table::Point;
use crate::wordhash::WordMap;
use std::collections::{HashSet, VecDeque};
use std::path::Path;
use std::sync::atomic::AtomicUsize;
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
    /// The earliest and latest known time of an IP packet of the chunk (`NO_WATERMARK`,
    /// `i64::MIN`: none), left out or not.
    first_t: i64,
    last_t: i64,
    /// Read live: the flows that first came in this chunk.
    new_flows: Option<NewFlows>,
}

/// Flows (keys and hashes) numbered on from those known before.
pub(super) type NewFlows = (Vec<FlowKey>, Vec<u64>);

/// What a first pass says of a capture read live, once it is read to its end.
pub(super) struct End {
    /// What the file says about itself (columns empty), and every flow.
    pub(super) cap: Capture,
    /// Packet records, and those that are IP.
    pub(super) rows: u64,
    pub(super) ip_rows: u64,
    /// The first and last known time of an IP packet.
    pub(super) t_span: Option<(i64, i64)>,
}

/// What a reader thread sends: a chunk, then (read live) the capture's end.
pub(super) enum Message {
    Chunk(Box<Decoded>),
    End(Box<End>),
}

type Chunks = Receiver<Result<Message, ReadError>>;

/// Why a side stopped reading.
pub(super) enum SideError {
    Read(ReadError),
    /// A chunk of a capture read live is earlier than a watermark given before.
    Disordered,
}

/// Chunks of a capture read live that its watermark looks at: the next one and this many
/// after it.
const LOOKAHEAD: usize = 1;

/// What a reader thread reads, and how.
pub(super) struct Reading<'a> {
    pub(super) path: &'a Path,
    /// Packets a chunk.
    pub(super) chunk: usize,
    /// Where the pages read start to be dropped from the page cache (`cache`).
    pub(super) uncache_from: Option<usize>,
    /// The capture's first pass; None: it is read live.
    pub(super) scan: Option<&'a Scan>,
    pub(super) streams: &'a Streams,
    /// The flows left out.
    pub(super) reverse: &'a HashSet<u64, WordMap>,
    pub(super) ingress: bool,
    /// The matcher's (its buckets' width).
    pub(super) max_delay_ns: i64,
}

/// Reads a chunk at a time into `tx` (one chunk ahead of the matching thread), leaving
/// out the IP packets of the flows in `reverse`; `bytes`: how far it read. Read live, the
/// capture's end follows its last chunk.
pub(super) fn read_ahead(
    r: &Reading<'_>,
    tx: &SyncSender<Result<Message, ReadError>>,
    bytes: &AtomicUsize,
) {
    let mut pushed = 0u64;
    // Read live: the flows so far (keys and hashes), extended chunk by chunk.
    let mut flows = FlowTable::default();
    let (mut rows, mut ip_rows, mut t_span) = (0u64, 0u64, None::<(i64, i64)>);
    let read = read_each(
        r.path,
        r.chunk,
        r.uncache_from,
        bytes,
        tx,
        |reader, cols| {
            let (first_t, last_t, ips) = ip_times(&cols);
            rows += cols.len() as u64;
            ip_rows += ips;
            if last_t >= first_t {
                t_span = Some(
                    t_span.map_or((first_t, last_t), |(a, b)| (a.min(first_t), b.max(last_t))),
                );
            }
            let (host, new_flows) = match r.scan {
                Some(scan) => (Held::capture(cols, &scan.cap), None),
                None => {
                    let mut known = flows.len();
                    let new: NewFlows = flows_since(reader.flows(), &mut known);
                    flows.keys.extend_from_slice(&new.0);
                    flows.hashes.extend_from_slice(&new.1);
                    (
                        Held::live_capture(cols, std::mem::take(&mut flows)),
                        Some(new),
                    )
                }
            };
            let (p, keys) = Point::new(&host, r.streams, r.ingress);
            let (mut decoded, whole) = decode(&p, &keys, r, pushed);
            drop(p);
            let Capture {
                columns, flows: f, ..
            } = host;
            if r.scan.is_none() {
                flows = f;
            }
            if whole {
                // Every packet kept, in the chunk's order: its columns, moved, not gathered.
                decoded.held.cols = columns;
            }
            (decoded.first_t, decoded.last_t, decoded.new_flows) = (first_t, last_t, new_flows);
            pushed += decoded.ts.len() as u64;
            tx.send(Ok(Message::Chunk(Box::new(decoded)))).is_ok() // or the pass stopped
        },
    );
    if let (Some(reader), None) = (read, r.scan) {
        let end = reader.finish().map(|cap| {
            Message::End(Box::new(End {
                cap,
                rows,
                ip_rows,
                t_span,
            }))
        });
        let _ = tx.send(end);
    }
}

/// The earliest and latest known time of an IP packet of `c` (`NO_WATERMARK` and
/// `i64::MIN` when none), and its IP packets (as the first pass counts them).
fn ip_times(c: &crate::pcap::Columns) -> (i64, i64, u64) {
    let (mut first, mut last, mut ips) = (NO_WATERMARK, i64::MIN, 0u64);
    for (&f, &t) in c.flow_idx.iter().zip(&c.t_ns) {
        if f == NO_FLOW {
            continue;
        }
        ips += 1;
        if t != NO_TIMESTAMP {
            first = first.min(t);
            last = last.max(t);
        }
    }
    (first, last, ips)
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
        first_t: NO_WATERMARK,
        last_t: i64::MIN,
        new_flows: None,
    };
    (decoded, whole)
}

/// One capture read again, chunk by chunk, in step with its watermarks.
pub(super) struct Side<'a> {
    chunks: Chunks,
    /// The capture's first pass; None: read live.
    scan: Option<&'a Scan>,
    next: usize,
    /// IP packets left out (flows that cross the taps the other way).
    pub(super) left_out: u64,
    /// Read live: the chunks received and not yet read (the next and the lookahead), the
    /// capture's end once received, the latest watermark given, the first one, and the
    /// latest IP packet time received.
    ahead: VecDeque<Box<Decoded>>,
    pub(super) end: Option<Box<End>>,
    promised: i64,
    pub(super) first_watermark: Option<i64>,
    pub(super) latest_t: i64,
}

impl<'a> Side<'a> {
    /// A side reading `chunks`; read live, the lookahead is received first.
    pub(super) fn new(chunks: Chunks, scan: Option<&'a Scan>) -> Result<Side<'a>, SideError> {
        let mut side = Side {
            chunks,
            scan,
            next: 0,
            left_out: 0,
            ahead: VecDeque::new(),
            end: None,
            promised: i64::MIN,
            first_watermark: None,
            latest_t: i64::MIN,
        };
        side.fill()?;
        Ok(side)
    }

    fn receive(&self) -> Result<Message, SideError> {
        self.chunks
            .recv()
            .unwrap_or_else(|_| {
                Err(ReadError::Invalid {
                    message: "the capture changed while it was read".into(),
                    offset: 0,
                })
            })
            .map_err(SideError::Read)
    }

    /// Read live: receives chunks until the lookahead is there (or the end), checking each
    /// against the watermarks given, then gives the next watermark.
    fn fill(&mut self) -> Result<(), SideError> {
        if self.scan.is_some() {
            return Ok(());
        }
        while self.ahead.len() <= LOOKAHEAD && self.end.is_none() {
            match self.receive()? {
                Message::Chunk(d) => {
                    if d.first_t < self.promised {
                        return Err(SideError::Disordered);
                    }
                    self.latest_t = self.latest_t.max(d.last_t);
                    self.ahead.push_back(d);
                }
                Message::End(end) => self.end = Some(end),
            }
        }
        let earliest = self.ahead.iter().map(|d| d.first_t).min();
        if let Some(w) = earliest.filter(|&w| w != NO_WATERMARK) {
            // (no earlier than the watermarks before: each chunk was checked on arrival)
            self.promised = self.promised.max(w);
            self.first_watermark.get_or_insert(w);
        }
        Ok(())
    }

    pub(super) fn done(&self) -> bool {
        match self.scan {
            Some(scan) => self.next + 1 >= scan.watermarks.len(),
            None => self.ahead.is_empty() && self.end.is_some(),
        }
    }

    /// No IP packet still to be read is earlier.
    pub(super) fn watermark(&self) -> i64 {
        let Some(scan) = self.scan else {
            // Read live: the lookahead's earliest time (every chunk after it is checked to
            // be no earlier); a lookahead with no time says nothing of the chunks after
            // it, which keep the watermark given before, unless the capture ends there.
            let earliest = self.ahead.iter().map(|d| d.first_t).min();
            return match earliest.unwrap_or(NO_WATERMARK) {
                NO_WATERMARK if self.end.is_none() => self.promised,
                w => w,
            };
        };
        scan.watermarks[self.next]
    }

    /// The next chunk's IP packets (outside the flows left out): pushed into the matcher
    /// and held. Read live: the flows that came first in it.
    pub(super) fn read(
        &mut self,
        m: &mut StreamMatcher,
        held: &mut Queue,
        ingress: bool,
    ) -> Result<Option<NewFlows>, SideError> {
        let d = match self.scan {
            Some(_) => match self.receive()? {
                Message::Chunk(d) => d,
                Message::End(_) => unreachable!("a capture read after a first pass has no end"),
            },
            None => self.ahead.pop_front().expect("a side not done has a chunk"),
        };
        self.next += 1;
        self.left_out += d.left_out;
        if ingress {
            m.push_ingress_runs(&d.ts, d.runs);
        } else {
            m.push_egress_runs(&d.ts, &d.tos, d.runs);
        }
        held.push(d.held);
        self.fill()?;
        Ok(d.new_flows)
    }
}
