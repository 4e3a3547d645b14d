//! Which UDP packets are RTP, decided per stream (flow and SSRC) at the ingress point and
//! applied to both points: `cganalysis.capture.rtp` in Python, the same rule.

use crate::decode::FlowTable;
use crate::pcap::{Capture, Columns, NO_TIMESTAMP};
use crate::wordhash::WordMap;
use std::collections::HashMap;
use std::ops::Range;

/// The RTP streams by stream key (already well mixed: hashed as they are), each with a
/// number from 0 (in no particular order).
pub type Streams = HashMap<u64, u32, WordMap>;

/// A stream needs this many packets ...
const MIN_PACKETS: u64 = 8;
/// ... of which this share of consecutive ones (in time order) step forward by
/// 1..=MAX_STEP sequence numbers.
const MIN_IN_ORDER_SHARE: f64 = 0.8;
const MAX_STEP: u32 = 64;

const UDP: u8 = 17;
/// Mixes an SSRC into a flow hash (`cganalysis.capture.rtp.stream_key`).
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// One u64 per (flow, SSRC); `None` (not RTP) keys the flow alone.
pub fn stream_key(flow_hash: u64, ssrc: Option<u32>) -> u64 {
    match ssrc {
        Some(s) => flow_hash ^ (u64::from(s) + 1).wrapping_mul(GOLDEN),
        None => flow_hash,
    }
}

/// RTCP multiplexed on the RTP port (RFC 5761): packet types 200-206 read as marker +
/// payload type 72-78.
pub(crate) fn rtcp_like(c: &Columns, i: usize) -> bool {
    c.rtp_marker[i] && (72..=78).contains(&c.rtp_pt[i])
}

/// An IP UDP packet with an RTP-shaped header that is not RTCP.
fn candidate(cap: &Capture, i: usize) -> bool {
    let c = &cap.columns;
    c.has_rtp[i] && !rtcp_like(c, i) && cap.flow(i).is_some_and(|f| f.proto() == UDP)
}

/// A stream's packets so far (in time order).
#[derive(Clone, Copy)]
struct Run {
    packets: u64,
    /// Steps of 1..=MAX_STEP from one packet's sequence number to the next one's.
    in_order: u64,
    first_seq: u16,
    last_seq: u16,
}

/// The runs of the streams of some packets, by stream key.
type Tally = HashMap<u64, Run, WordMap>;

fn in_order(from: u16, to: u16) -> u64 {
    u64::from((1..=MAX_STEP).contains(&u32::from(to.wrapping_sub(from))))
}

fn tally(streams: &mut Tally, cap: &Capture, i: usize) {
    let c = &cap.columns;
    let key = stream_key(cap.flow_hash(i), Some(c.rtp_ssrc(i)));
    let seq = c.rtp_seq(i);
    streams
        .entry(key)
        .and_modify(|r| {
            r.in_order += in_order(r.last_seq, seq);
            r.packets += 1;
            r.last_seq = seq;
        })
        .or_insert(Run {
            packets: 1,
            in_order: 0,
            first_seq: seq,
            last_seq: seq,
        });
}

/// The times (`order_t`) of the first and last of some packets; None: no packet.
type Span = Option<[(bool, i64); 2]>;

/// The runs of the candidates among `rows`, taken in file order, with their span; None
/// when they are not in time order.
fn tally_in_file_order(cap: &Capture, rows: Range<usize>) -> Option<(Tally, Span)> {
    let mut streams = Tally::default();
    let mut span: Span = None;
    for i in rows.filter(|&i| candidate(cap, i)) {
        let t = order_t(cap.columns.t_ns[i]);
        match &mut span {
            Some([_, last]) if t < *last => return None,
            Some([_, last]) => *last = t,
            None => span = Some([t, t]),
        }
        tally(&mut streams, cap, i);
    }
    Some((streams, span))
}

/// The RTP streams among the capture's packets.
pub fn classify(cap: &Capture) -> Streams {
    let c = &cap.columns;
    // Time order, packets without a time last; ties keep file order. Captures are nearly
    // always in time order already: each half of the capture is then tallied in one pass
    // on its own core, and the halves joined; otherwise the rows are sorted.
    let mid = c.len() / 2;
    let (head, tail) = std::thread::scope(|s| {
        let tail = s.spawn(|| tally_in_file_order(cap, mid..c.len()));
        (
            tally_in_file_order(cap, 0..mid),
            tail.join().expect("RTP tally"),
        )
    });
    let streams = match (head, tail) {
        (Some((head, a)), Some((tail, b))) if a.zip(b).map_or(true, |(a, b)| a[1] <= b[0]) => {
            join_runs(head, tail)
        }
        _ => {
            let mut streams = Tally::default();
            let mut rows: Vec<usize> = (0..c.len()).filter(|&i| candidate(cap, i)).collect();
            rows.sort_by_key(|&i| order_t(c.t_ns[i]));
            for i in rows {
                tally(&mut streams, cap, i);
            }
            streams
        }
    };
    rtp_streams(streams)
}

/// The streams of `streams` that pass the rule, numbered in key order.
fn rtp_streams(streams: Tally) -> Streams {
    let mut rtp: Vec<u64> = streams
        .into_iter()
        .filter(|(_, r)| {
            r.packets >= MIN_PACKETS
                && r.in_order as f64 >= MIN_IN_ORDER_SHARE * (r.packets - 1) as f64
        })
        .map(|(k, _)| k)
        .collect();
    rtp.sort_unstable();
    rtp.into_iter().zip(0..).collect()
}

/// The runs of `head`'s packets followed by `tail`'s.
fn join_runs(mut head: Tally, tail: Tally) -> Tally {
    for (key, t) in tail {
        head.entry(key)
            .and_modify(|h| {
                h.in_order += in_order(h.last_seq, t.first_seq) + t.in_order;
                h.packets += t.packets;
                h.last_seq = t.last_seq;
            })
            .or_insert(t);
    }
    head
}

/// The RTP rule over a capture read a chunk at a time: the candidates' runs, taken in
/// file order, and whether that was time order (else `classify_sorted` decides).
pub(crate) struct Classifier {
    streams: Tally,
    last: Option<(bool, i64)>,
    pub(crate) in_order: bool,
}

impl Default for Classifier {
    fn default() -> Classifier {
        Classifier {
            streams: Tally::default(),
            last: None,
            in_order: true,
        }
    }
}

impl Classifier {
    /// A chunk's packets (`flows`: the capture's flows so far), in file order.
    pub(crate) fn add(&mut self, c: &Columns, flows: &FlowTable) {
        for i in 0..c.len() {
            let Some(key) = candidate_key(c, flows, i) else {
                continue;
            };
            let t = order_t(c.t_ns[i]);
            if self.last.is_some_and(|last| t < last) {
                self.in_order = false;
            }
            self.last = Some(t);
            if self.in_order {
                self.see(key, c.rtp_seq(i));
            }
        }
    }

    fn see(&mut self, key: u64, seq: u16) {
        self.streams
            .entry(key)
            .and_modify(|r| {
                r.in_order += in_order(r.last_seq, seq);
                r.packets += 1;
                r.last_seq = seq;
            })
            .or_insert(Run {
                packets: 1,
                in_order: 0,
                first_seq: seq,
                last_seq: seq,
            });
    }

    /// The RTP streams (the candidates were in time order).
    pub(crate) fn streams(self) -> Streams {
        rtp_streams(self.streams)
    }
}

/// An RTP candidate: (time order key, stream key, sequence number).
pub(crate) type Candidate = ((bool, i64), u64, u16);

/// The candidates' (time order key, stream key, sequence number), in file order, of a
/// chunk: what `classify_sorted` takes when a capture is not in time order.
pub(crate) fn candidates(c: &Columns, flows: &FlowTable, out: &mut Vec<Candidate>) {
    for i in 0..c.len() {
        if let Some(key) = candidate_key(c, flows, i) {
            out.push((order_t(c.t_ns[i]), key, c.rtp_seq(i)));
        }
    }
}

/// The RTP streams of candidates given in file order, taken in time order.
pub(crate) fn classify_sorted(mut cands: Vec<Candidate>) -> Streams {
    cands.sort_by_key(|&(t, _, _)| t); // stable: ties keep file order
    let mut c = Classifier::default();
    for (_, key, seq) in cands {
        c.see(key, seq);
    }
    c.streams()
}

/// The stream key of packet `i` if it is an RTP candidate (`candidate`).
fn candidate_key(c: &Columns, flows: &FlowTable, i: usize) -> Option<u64> {
    let flow = flows.keys.get(c.flow_idx[i] as usize)?;
    (c.has_rtp[i] && !rtcp_like(c, i) && flow.proto() == UDP)
        .then(|| stream_key(flows.hash_of(c.flow_idx[i]), Some(c.rtp_ssrc(i))))
}

/// Sort key of a time: unknown times after every known one.
fn order_t(t: i64) -> (bool, i64) {
    (t == NO_TIMESTAMP, t)
}

/// The number of the stream of `streams` packet `i` is in, if it is RTP (not RTCP).
#[inline]
pub fn stream_number(cap: &Capture, i: usize, streams: &Streams) -> Option<u32> {
    let c = &cap.columns;
    if !c.has_rtp[i] || rtcp_like(c, i) || streams.is_empty() || cap.flow(i).is_none() {
        return None;
    }
    streams
        .get(&stream_key(cap.flow_hash(i), Some(c.rtp_ssrc(i))))
        .copied()
}

/// [`stream_number`] for many packets of one capture: the answer for a (flow, SSRC) is
/// remembered in a direct-mapped slot, so that most packets skip the map (about a third
/// of a capture's packets are RTP-shaped, and each was a lookup of a mixed 64-bit key).
pub struct StreamNumbers<'a> {
    streams: &'a Streams,
    /// Per slot: (flow index + 1, SSRC, stream number + 1 or 0 for none); flow 0: empty.
    recent: Vec<(u32, u32, u32)>,
}

/// Slots of `StreamNumbers::recent` (12 KiB).
const RECENT_BITS: u32 = 10;

impl<'a> StreamNumbers<'a> {
    pub fn new(streams: &'a Streams) -> StreamNumbers<'a> {
        StreamNumbers {
            streams,
            recent: vec![(0, 0, 0); 1 << RECENT_BITS],
        }
    }

    /// `stream_number(cap, i, streams)`.
    #[inline]
    pub fn of(&mut self, cap: &Capture, i: usize) -> Option<u32> {
        let c = &cap.columns;
        let flow = c.flow_idx[i];
        if !c.has_rtp[i] || rtcp_like(c, i) || self.streams.is_empty() || cap.flow(i).is_none() {
            return None;
        }
        let ssrc = c.rtp_ssrc(i);
        let mixed = ((u64::from(flow) << 32) | u64::from(ssrc)).wrapping_mul(GOLDEN);
        let slot = (mixed >> (64 - RECENT_BITS)) as usize;
        let (f, s, number) = self.recent[slot];
        if f == flow + 1 && s == ssrc {
            return number.checked_sub(1);
        }
        let found = self
            .streams
            .get(&stream_key(cap.flow_hash(i), Some(ssrc)))
            .copied();
        self.recent[slot] = (flow + 1, ssrc, found.map_or(0, |n| n + 1));
        found
    }
}

/// Per packet: in one of `streams` (and not RTCP).
#[cfg(test)]
pub fn mark(cap: &Capture, streams: &Streams) -> Vec<bool> {
    (0..cap.columns.len())
        .map(|i| stream_number(cap, i, streams).is_some())
        .collect()
}

#[cfg(test)]
mod tests;
