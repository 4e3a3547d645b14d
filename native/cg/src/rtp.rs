//! RTP (RFC 3550) packets of the video flow, and the small header this generator puts at
//! the start of each payload so the receiver can reassemble frames.
//!
//! A frame of `N` bytes becomes `ceil(N / max_payload)` packets; the marker bit is set on
//! the last one (RFC 3550 5.1, as video payload formats do) and every packet of a frame
//! carries the frame's 90 kHz timestamp. The payload header (32 bytes, counted in the
//! frame's bytes like an encoder's own NAL headers) names the frame, the packet's place in
//! it and the sender's clock, which the TFRC receiver echoes (RFC 5348 3.2.2).

/// RTP fixed header length (no CSRC, no extension).
pub const RTP_HEADER_BYTES: usize = 12;
/// Length of [`PayloadHeader`] on the wire.
pub const PAYLOAD_HEADER_BYTES: usize = 32;
/// "CGA1": marks payloads written by this generator.
pub const PAYLOAD_MAGIC: u32 = 0x4347_4131;
/// RTP clock rate for video.
pub const VIDEO_CLOCK_HZ: i64 = 90_000;

/// The fields of an RTP fixed header this generator uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtpHeader {
    pub marker: bool,
    pub payload_type: u8,
    pub seq: u16,
    pub timestamp: u32,
    pub ssrc: u32,
}

impl RtpHeader {
    pub fn write(&self, out: &mut [u8]) {
        out[0] = 0x80; // V=2, P=0, X=0, CC=0
        out[1] = ((self.marker as u8) << 7) | (self.payload_type & 0x7f);
        out[2..4].copy_from_slice(&self.seq.to_be_bytes());
        out[4..8].copy_from_slice(&self.timestamp.to_be_bytes());
        out[8..12].copy_from_slice(&self.ssrc.to_be_bytes());
    }

    /// Parses an RTP header; returns it and the payload offset (after CSRCs and extension).
    pub fn parse(buf: &[u8]) -> Option<(RtpHeader, usize)> {
        if buf.len() < RTP_HEADER_BYTES || buf[0] >> 6 != 2 {
            return None;
        }
        let cc = (buf[0] & 0x0f) as usize;
        let mut offset = RTP_HEADER_BYTES + 4 * cc;
        if buf[0] & 0x10 != 0 {
            if buf.len() < offset + 4 {
                return None;
            }
            let words = u16::from_be_bytes([buf[offset + 2], buf[offset + 3]]) as usize;
            offset += 4 + 4 * words;
        }
        if buf.len() < offset {
            return None;
        }
        let header = RtpHeader {
            marker: buf[1] & 0x80 != 0,
            payload_type: buf[1] & 0x7f,
            seq: u16::from_be_bytes([buf[2], buf[3]]),
            timestamp: u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]),
            ssrc: u32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]),
        };
        Some((header, offset))
    }
}

/// Flags in [`PayloadHeader::flags`].
pub mod flags {
    /// The frame is an I-frame (key frame).
    pub const KEYFRAME: u8 = 1;
    /// The sender runs TFRC or gTFRC and wants RFC 5348 receiver reports.
    pub const WANT_TFRC: u8 = 2;
    /// The sender wants RFC 8888 reports after every `SPARSE_FEEDBACK_PACKETS` packets
    /// (and at frame ends) instead of the receiver's default, as Ericsson's receiver sends
    /// them (its SCReAM then samples the queue at the end of each frame, not mid-frame).
    pub const SPARSE_FEEDBACK: u8 = 4;
    /// Ericsson's receiver reports 64 packets (scream_receiver.cpp:67) and sends a report
    /// after half as many (ScreamRx.cpp:365, 47).
    pub const SPARSE_FEEDBACK_PACKETS: u32 = 32;
    /// The sender wants a report at least every `FEEDBACK_TIMER_5MS_NS` while packets
    /// arrive, as aca6556's receiver sends them (its RTCP interval is at most 5 ms,
    /// ScreamRx.cpp:244, checked by a thread every 0.5 ms, scream_receiver.cpp:121-132).
    pub const FEEDBACK_TIMER_5MS: u8 = 8;
    pub const FEEDBACK_TIMER_5MS_NS: i64 = 5_000_000;
}

/// This generator's header at the start of each RTP payload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PayloadHeader {
    pub frame_id: u32,
    pub frame_bytes: u32,
    pub packet_index: u16,
    pub packets_in_frame: u16,
    /// Sender's clock at transmission, wall-clock microseconds (written when sent).
    pub send_time_us: u64,
    /// Sender's RTT estimate in microseconds (RFC 5348 3.2.1), 0 when unknown.
    pub rtt_us: u32,
    pub flags: u8,
}

impl PayloadHeader {
    pub fn write(&self, out: &mut [u8]) {
        out[0..4].copy_from_slice(&PAYLOAD_MAGIC.to_be_bytes());
        out[4..8].copy_from_slice(&self.frame_id.to_be_bytes());
        out[8..12].copy_from_slice(&self.frame_bytes.to_be_bytes());
        out[12..14].copy_from_slice(&self.packet_index.to_be_bytes());
        out[14..16].copy_from_slice(&self.packets_in_frame.to_be_bytes());
        out[16..24].copy_from_slice(&self.send_time_us.to_be_bytes());
        out[24..28].copy_from_slice(&self.rtt_us.to_be_bytes());
        out[28] = self.flags;
        out[29..32].fill(0);
    }

    /// Writes only the fields known at transmission time (send time and RTT).
    pub fn stamp(packet: &mut [u8], send_time_us: u64, rtt_us: u32) {
        let at = RTP_HEADER_BYTES;
        packet[at + 16..at + 24].copy_from_slice(&send_time_us.to_be_bytes());
        packet[at + 24..at + 28].copy_from_slice(&rtt_us.to_be_bytes());
    }

    pub fn parse(payload: &[u8]) -> Option<PayloadHeader> {
        if payload.len() < PAYLOAD_HEADER_BYTES {
            return None;
        }
        let u32_at = |i: usize| u32::from_be_bytes(payload[i..i + 4].try_into().unwrap());
        if u32_at(0) != PAYLOAD_MAGIC {
            return None;
        }
        let h = PayloadHeader {
            frame_id: u32_at(4),
            frame_bytes: u32_at(8),
            packet_index: u16::from_be_bytes([payload[12], payload[13]]),
            packets_in_frame: u16::from_be_bytes([payload[14], payload[15]]),
            send_time_us: u64::from_be_bytes(payload[16..24].try_into().unwrap()),
            rtt_us: u32_at(24),
            flags: payload[28],
        };
        if h.packets_in_frame == 0 || h.packet_index >= h.packets_in_frame {
            return None;
        }
        Some(h)
    }
}

/// One packet waiting in the sender's RTP queue.
#[derive(Clone, Debug)]
pub struct QueuedPacket {
    /// Full RTP packet (header + payload), send time still to be stamped.
    pub bytes: Vec<u8>,
    /// Extended (never wrapping) sequence number.
    pub seq: u64,
    pub frame_id: u32,
    pub marker: bool,
    pub rtp_ts: u32,
    /// When the frame entered the queue (monotonic ns).
    pub enqueued_ns: i64,
}

/// Splits frames into RTP packets and numbers them.
#[derive(Clone, Debug)]
pub struct Packetizer {
    pub ssrc: u32,
    pub payload_type: u8,
    /// Largest RTP payload (header of this generator included), bytes.
    pub max_payload: usize,
    next_seq: u64,
    ts_base: u32,
}

impl Packetizer {
    pub fn new(
        ssrc: u32,
        payload_type: u8,
        max_payload: usize,
        first_seq: u16,
        ts_base: u32,
    ) -> Self {
        assert!(
            max_payload >= PAYLOAD_HEADER_BYTES,
            "payload too small for the header"
        );
        Packetizer {
            ssrc,
            payload_type,
            max_payload,
            next_seq: first_seq as u64,
            ts_base,
        }
    }

    /// Packets needed for a frame of `frame_bytes` (at least one).
    pub fn packets_for(&self, frame_bytes: usize) -> usize {
        frame_bytes
            .max(PAYLOAD_HEADER_BYTES)
            .div_ceil(self.max_payload)
    }

    /// The 90 kHz RTP timestamp of a frame captured `elapsed_ns` after the start.
    pub fn rtp_timestamp(&self, elapsed_ns: i64) -> u32 {
        let ticks = (elapsed_ns as i128 * VIDEO_CLOCK_HZ as i128 / 1_000_000_000) as i64;
        self.ts_base.wrapping_add(ticks as u32)
    }

    /// Packetises one frame. Payload bytes after the header are filler (the content of
    /// the video does not matter to the network).
    pub fn packetize(
        &mut self,
        frame_id: u32,
        frame_bytes: usize,
        rtp_ts: u32,
        frame_flags: u8,
        enqueued_ns: i64,
    ) -> Vec<QueuedPacket> {
        let frame_bytes = frame_bytes.max(PAYLOAD_HEADER_BYTES);
        let n = self.packets_for(frame_bytes);
        let n16 = n.min(u16::MAX as usize) as u16;
        let mut out = Vec::with_capacity(n);
        let mut remaining = frame_bytes;
        for i in 0..n {
            // Every packet but the last is full; the last takes the rest, never less than
            // the header.
            let payload = if i + 1 == n {
                remaining.max(PAYLOAD_HEADER_BYTES)
            } else {
                self.max_payload
            };
            remaining = remaining.saturating_sub(payload);
            let mut bytes = vec![0u8; RTP_HEADER_BYTES + payload];
            let marker = i + 1 == n;
            RtpHeader {
                marker,
                payload_type: self.payload_type,
                seq: self.next_seq as u16,
                timestamp: rtp_ts,
                ssrc: self.ssrc,
            }
            .write(&mut bytes);
            PayloadHeader {
                frame_id,
                frame_bytes: frame_bytes as u32,
                packet_index: i.min(u16::MAX as usize - 1) as u16,
                packets_in_frame: n16,
                send_time_us: 0,
                rtt_us: 0,
                flags: frame_flags,
            }
            .write(&mut bytes[RTP_HEADER_BYTES..]);
            out.push(QueuedPacket {
                bytes,
                seq: self.next_seq,
                frame_id,
                marker,
                rtp_ts,
                enqueued_ns,
            });
            self.next_seq += 1;
        }
        out
    }

    /// The extended sequence number the next packet will get.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }
}

/// Unwraps 16-bit sequence numbers into a 64-bit sequence near a reference.
pub fn unwrap_seq(seq16: u16, reference: u64) -> u64 {
    let ref16 = reference as u16;
    let delta = seq16.wrapping_sub(ref16) as i16 as i64;
    (reference as i64 + delta).max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_is_split_with_marker_on_last() {
        let mut p = Packetizer::new(7, 96, 1200, 65_534, 1000);
        let pkts = p.packetize(3, 2500, 1234, flags::KEYFRAME, 0);
        assert_eq!(pkts.len(), 3);
        let sizes: Vec<usize> = pkts
            .iter()
            .map(|q| q.bytes.len() - RTP_HEADER_BYTES)
            .collect();
        assert_eq!(sizes, vec![1200, 1200, 100]);
        let seqs: Vec<u16> = pkts
            .iter()
            .map(|q| RtpHeader::parse(&q.bytes).unwrap().0.seq)
            .collect();
        assert_eq!(seqs, vec![65_534, 65_535, 0]);
        for (i, q) in pkts.iter().enumerate() {
            let (h, off) = RtpHeader::parse(&q.bytes).unwrap();
            assert_eq!(h.marker, i == 2);
            assert_eq!(h.timestamp, 1234);
            assert_eq!(h.ssrc, 7);
            let ph = PayloadHeader::parse(&q.bytes[off..]).unwrap();
            assert_eq!(
                (ph.frame_id, ph.packet_index, ph.packets_in_frame),
                (3, i as u16, 3)
            );
            assert_eq!(ph.frame_bytes, 2500);
            assert_eq!(ph.flags, flags::KEYFRAME);
        }
    }

    #[test]
    fn tiny_frame_still_carries_a_header() {
        let mut p = Packetizer::new(7, 96, 1200, 0, 0);
        let pkts = p.packetize(0, 5, 0, 0, 0);
        assert_eq!(pkts.len(), 1);
        assert_eq!(pkts[0].bytes.len(), RTP_HEADER_BYTES + PAYLOAD_HEADER_BYTES);
    }

    #[test]
    fn timestamps_are_90khz() {
        let p = Packetizer::new(7, 96, 1200, 0, u32::MAX - 10);
        assert_eq!(
            p.rtp_timestamp(1_000_000_000),
            (u32::MAX - 10).wrapping_add(90_000)
        );
    }

    #[test]
    fn unwrap_follows_reference() {
        assert_eq!(unwrap_seq(2, 65_535), 65_538);
        assert_eq!(unwrap_seq(65_535, 65_538), 65_535);
        assert_eq!(unwrap_seq(5, 3), 5);
    }

    #[test]
    fn payload_header_rejects_garbage() {
        assert!(PayloadHeader::parse(&[0u8; 40]).is_none());
        assert!(PayloadHeader::parse(&[0u8; 10]).is_none());
    }
}
