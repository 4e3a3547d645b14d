//! Frame reassembly at the receiver: which frames arrived complete, and when.
//!
//! Each packet's payload header names its frame, its index in the frame and the frame's
//! packet count, so completeness does not depend on the marker bit surviving. A frame is
//! reported when its last missing packet arrives (complete, delivered at that time), or,
//! incomplete, when it has waited `timeout` with a later frame already seen. Frames of
//! which no packet arrived at all are reported too (expected counts unknown), so that the
//! delivered frame rate (complete frames per second, Xu & Claypool Table 6) counts them.

use std::collections::BTreeMap;

use crate::rtp::PayloadHeader;

/// One frame as the receiver saw it (a row of the per-frame log).
#[derive(Clone, Debug, PartialEq)]
pub struct FrameRecord {
    pub frame_id: u32,
    pub rtp_ts: Option<u32>,
    /// Sender's wall clock when the frame's first packet left (ns), when known.
    pub send_t_ns: Option<i64>,
    pub t_first_ns: Option<i64>,
    /// Arrival of the packet that completed the frame (or the last one that arrived).
    pub t_last_ns: Option<i64>,
    pub packets_expected: Option<u32>,
    pub packets_received: u32,
    pub bytes_expected: Option<u32>,
    pub bytes_received: u64,
    pub complete: bool,
    pub keyframe: bool,
}

#[derive(Clone, Debug)]
struct Open {
    record: FrameRecord,
    got: Vec<bool>,
    /// Monotonic time the entry was opened (for the timeout).
    opened_ns: i64,
}

impl Open {
    /// A frame known to exist (by its id) of which nothing has arrived yet.
    fn empty(frame_id: u32, opened_ns: i64) -> Open {
        Open {
            record: FrameRecord {
                frame_id,
                rtp_ts: None,
                send_t_ns: None,
                t_first_ns: None,
                t_last_ns: None,
                packets_expected: None,
                packets_received: 0,
                bytes_expected: None,
                bytes_received: 0,
                complete: false,
                keyframe: false,
            },
            got: Vec::new(),
            opened_ns,
        }
    }
}

pub struct FrameAssembler {
    open: BTreeMap<u32, Open>,
    /// Frames below this id have been reported.
    reported_below: u32,
    highest_seen: Option<u32>,
    timeout_ns: i64,
    pub late_packets: u64,
}

impl FrameAssembler {
    pub fn new(timeout_ns: i64) -> Self {
        FrameAssembler {
            open: BTreeMap::new(),
            reported_below: 0,
            highest_seen: None,
            timeout_ns,
            late_packets: 0,
        }
    }

    /// Records one packet; returns the frame it completed, if any.
    pub fn on_packet(
        &mut self,
        ph: &PayloadHeader,
        rtp_ts: u32,
        payload_bytes: usize,
        arrival_ns: i64,
        now_mono_ns: i64,
    ) -> Option<FrameRecord> {
        let id = ph.frame_id;
        if id < self.reported_below && !self.open.contains_key(&id) {
            self.late_packets += 1;
            return None;
        }
        // Frames skipped entirely between the highest seen and this one.
        let from = self.highest_seen.map_or(id, |h| h.saturating_add(1));
        for missing in from..id {
            if missing >= self.reported_below && id - missing < 10_000 {
                self.open
                    .entry(missing)
                    .or_insert_with(|| Open::empty(missing, now_mono_ns));
            }
        }
        self.highest_seen = Some(self.highest_seen.map_or(id, |h| h.max(id)));
        let entry = self
            .open
            .entry(id)
            .or_insert_with(|| Open::empty(id, now_mono_ns));
        let n = ph.packets_in_frame as usize;
        if entry.got.len() != n {
            entry.got = vec![false; n];
        }
        let r = &mut entry.record;
        r.rtp_ts = Some(rtp_ts);
        r.packets_expected = Some(n as u32);
        r.bytes_expected = Some(ph.frame_bytes);
        r.keyframe |= ph.flags & crate::rtp::flags::KEYFRAME != 0;
        let idx = ph.packet_index as usize;
        if entry.got[idx] {
            self.late_packets += 1; // duplicate
            return None;
        }
        entry.got[idx] = true;
        r.packets_received += 1;
        r.bytes_received += payload_bytes as u64;
        r.t_first_ns = Some(r.t_first_ns.map_or(arrival_ns, |t| t.min(arrival_ns)));
        r.t_last_ns = Some(r.t_last_ns.map_or(arrival_ns, |t| t.max(arrival_ns)));
        if ph.packet_index == 0 && ph.send_time_us > 0 {
            r.send_t_ns = Some(ph.send_time_us as i64 * 1000);
        }
        if r.packets_received as usize == n {
            r.complete = true;
            let done = self.open.remove(&id).unwrap().record;
            self.advance_reported();
            return Some(done);
        }
        None
    }

    fn advance_reported(&mut self) {
        // Everything below the lowest open frame and at most the highest seen is reported.
        let next = self
            .open
            .keys()
            .next()
            .copied()
            .unwrap_or_else(|| self.highest_seen.map_or(0, |h| h.saturating_add(1)));
        self.reported_below = self.reported_below.max(next);
    }

    /// Reports frames that waited too long with a later frame already seen.
    pub fn expire(&mut self, now_mono_ns: i64) -> Vec<FrameRecord> {
        let highest = match self.highest_seen {
            Some(h) => h,
            None => return Vec::new(),
        };
        let stale: Vec<u32> = self
            .open
            .iter()
            .filter(|(&id, o)| id < highest && now_mono_ns - o.opened_ns >= self.timeout_ns)
            .map(|(&id, _)| id)
            .collect();
        let out = stale
            .into_iter()
            .filter_map(|id| self.open.remove(&id).map(|o| o.record))
            .collect();
        self.advance_reported();
        out
    }

    /// Reports every open frame (end of the run, or the sender restarted).
    pub fn flush(&mut self) -> Vec<FrameRecord> {
        let out = std::mem::take(&mut self.open)
            .into_values()
            .map(|o| o.record)
            .collect();
        self.reported_below = self.highest_seen.map_or(0, |h| h.saturating_add(1));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ph(frame: u32, idx: u16, n: u16) -> PayloadHeader {
        PayloadHeader {
            frame_id: frame,
            frame_bytes: n as u32 * 1000,
            packet_index: idx,
            packets_in_frame: n,
            send_time_us: 5,
            rtt_us: 0,
            flags: 0,
        }
    }

    #[test]
    fn complete_incomplete_and_missing_frames() {
        let mut a = FrameAssembler::new(100);
        assert!(a.on_packet(&ph(0, 0, 2), 0, 1000, 10, 0).is_none());
        let done = a.on_packet(&ph(0, 1, 2), 0, 1000, 20, 0).unwrap();
        assert!(done.complete);
        assert_eq!((done.t_first_ns, done.t_last_ns), (Some(10), Some(20)));
        assert_eq!(done.send_t_ns, Some(5000));
        // Frame 1 loses a packet, frame 2 never arrives, frame 3 is complete.
        a.on_packet(&ph(1, 0, 2), 0, 1000, 30, 10);
        let f3 = a.on_packet(&ph(3, 0, 1), 0, 1000, 40, 20).unwrap();
        assert_eq!(f3.frame_id, 3);
        assert!(a.expire(50).is_empty(), "not before the timeout");
        let mut expired = a.expire(200);
        expired.sort_by_key(|f| f.frame_id);
        assert_eq!(expired.len(), 2);
        assert_eq!((expired[0].frame_id, expired[0].packets_received), (1, 1));
        assert!(!expired[0].complete);
        assert_eq!(
            (expired[1].frame_id, expired[1].packets_expected),
            (2, None)
        );
        // A straggler of an expired frame is counted as late, not re-reported.
        assert!(a.on_packet(&ph(1, 1, 2), 0, 1000, 300, 300).is_none());
        assert_eq!(a.late_packets, 1);
    }

    #[test]
    fn duplicates_do_not_complete_frames() {
        let mut a = FrameAssembler::new(100);
        a.on_packet(&ph(0, 0, 2), 0, 1000, 10, 0);
        assert!(a.on_packet(&ph(0, 0, 2), 0, 1000, 11, 0).is_none());
        assert_eq!(a.late_packets, 1);
        let rest = a.flush();
        assert_eq!(rest.len(), 1);
        assert!(!rest[0].complete);
    }
}
