//! Which UDP packets are RTP, decided per stream (flow and SSRC) at the ingress point and
//! applied to both points: `cganalysis.capture.rtp` in Python, the same rule.

use crate::pcap::{Columns, NO_TIMESTAMP};
use crate::wordhash::WordMap;
use std::collections::HashMap;

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
fn rtcp_like(c: &Columns, i: usize) -> bool {
    c.rtp_marker[i] && (72..=78).contains(&c.rtp_pt[i])
}

/// An IP UDP packet with an RTP-shaped header that is not RTCP.
fn candidate(c: &Columns, i: usize) -> bool {
    c.ip_version[i] != 0 && c.proto[i] == UDP && c.has_rtp[i] && !rtcp_like(c, i)
}

/// Per stream key: (packets, in-order steps, last sequence number).
type Tally = HashMap<u64, (u64, u64, u16), WordMap>;

fn tally(streams: &mut Tally, c: &Columns, i: usize) {
    let key = stream_key(c.flow_hash[i], Some(c.rtp_ssrc[i]));
    let seq = c.rtp_seq[i];
    streams
        .entry(key)
        .and_modify(|(n, in_order, last)| {
            let step = u32::from(seq.wrapping_sub(*last));
            *in_order += u64::from((1..=MAX_STEP).contains(&step));
            *n += 1;
            *last = seq;
        })
        .or_insert((1, 0, seq));
}

/// The RTP streams among `c`'s packets.
pub fn classify(c: &Columns) -> Streams {
    let mut streams = Tally::default();
    // Time order, packets without a time last; ties keep file order. Captures are
    // nearly always in time order already: one pass then, sorted rows otherwise.
    let mut latest = order_t(i64::MIN + 1);
    let mut sorted = true;
    for i in (0..c.len()).filter(|&i| candidate(c, i)) {
        let t = order_t(c.t_ns[i]);
        if t < latest {
            sorted = false;
            break;
        }
        latest = t;
        tally(&mut streams, c, i);
    }
    if !sorted {
        streams.clear();
        let mut rows: Vec<usize> = (0..c.len()).filter(|&i| candidate(c, i)).collect();
        rows.sort_by_key(|&i| order_t(c.t_ns[i]));
        for i in rows {
            tally(&mut streams, c, i);
        }
    }
    let mut rtp: Vec<u64> = streams
        .into_iter()
        .filter(|&(_, (n, in_order, _))| {
            n >= MIN_PACKETS && in_order as f64 >= MIN_IN_ORDER_SHARE * (n - 1) as f64
        })
        .map(|(k, _)| k)
        .collect();
    rtp.sort_unstable();
    rtp.into_iter().zip(0..).collect()
}

/// Sort key of a time: unknown times after every known one.
fn order_t(t: i64) -> (bool, i64) {
    (t == NO_TIMESTAMP, t)
}

/// The number of the stream of `streams` packet `i` is in, if it is RTP (not RTCP).
#[inline]
pub fn stream_number(c: &Columns, i: usize, streams: &Streams) -> Option<u32> {
    if c.ip_version[i] == 0 || !c.has_rtp[i] || rtcp_like(c, i) || streams.is_empty() {
        return None;
    }
    streams
        .get(&stream_key(c.flow_hash[i], Some(c.rtp_ssrc[i])))
        .copied()
}

/// Per packet: in one of `streams` (and not RTCP).
#[cfg(test)]
pub fn mark(c: &Columns, streams: &Streams) -> Vec<bool> {
    (0..c.len())
        .map(|i| stream_number(c, i, streams).is_some())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp_rtp(seqs: &[u16], ssrc: u32) -> Columns {
        let n = seqs.len();
        Columns {
            t_ns: (0..n as i64).collect(),
            ip_version: vec![4; n],
            proto: vec![UDP; n],
            flow_hash: vec![42; n],
            has_rtp: vec![true; n],
            rtp_ssrc: vec![ssrc; n],
            rtp_seq: seqs.to_vec(),
            rtp_marker: vec![false; n],
            rtp_pt: vec![96; n],
            ..Default::default()
        }
    }

    #[test]
    fn a_stream_of_small_forward_steps_is_rtp_across_a_wrap() {
        let seqs: Vec<u16> = (0..20).map(|i| 65530u16.wrapping_add(i)).collect();
        let c = udp_rtp(&seqs, 7);
        let streams = classify(&c);
        assert!(streams.contains_key(&stream_key(42, Some(7))));
        assert!(mark(&c, &streams).iter().all(|&b| b));
    }

    #[test]
    fn captures_out_of_time_order_are_classified_in_time_order() {
        // In time order the steps are +1; in file order they jump about.
        let seqs: Vec<u16> = (0..40).collect();
        let mut c = udp_rtp(&seqs, 7);
        let file_order: Vec<usize> = (0..40).map(|i| (i * 17) % 40).collect();
        c.t_ns = file_order.iter().map(|&i| i as i64).collect();
        c.rtp_seq = file_order.iter().map(|&i| seqs[i]).collect();
        assert!(classify(&c).contains_key(&stream_key(42, Some(7))));
        // and a stream that is in order in the file but not in time is not RTP
        let mut c = udp_rtp(&seqs, 7);
        c.t_ns = file_order.iter().map(|&i| i as i64).collect();
        assert!(classify(&c).is_empty());
    }

    #[test]
    fn random_payloads_and_short_streams_are_not() {
        let scattered: Vec<u16> = (0..20u32).map(|i| (i * 7919 % 65536) as u16).collect();
        assert!(classify(&udp_rtp(&scattered, 7)).is_empty());
        assert!(classify(&udp_rtp(&[1, 2, 3, 4, 5, 6, 7], 7)).is_empty());
    }

    #[test]
    fn rtcp_on_the_rtp_port_is_left_out() {
        let seqs: Vec<u16> = (0..20).collect();
        let mut c = udp_rtp(&seqs, 7);
        c.rtp_marker[3] = true;
        c.rtp_pt[3] = 72;
        let marked = mark(&c, &classify(&c));
        assert!(!marked[3] && marked[4]);
    }
}
