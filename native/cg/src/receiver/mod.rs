//! The receiver's logic, without sockets: per-packet bookkeeping, RFC 8888 feedback, TFRC
//! reports, and frame reassembly.
//!
//! Feedback is sent when 16 packets have arrived since the last report, when a packet
//! with the marker bit (end of a frame) arrives, or 40 ms after the last report if any
//! packet arrived since (SCReAM v2 draft section 5); after 32 instead of 16 when the
//! sender's packets carry `flags::SPARSE_FEEDBACK` (SCReAM's Ericsson profile, whose
//! reference receiver reports that often), and at least every 5 ms when they carry
//! `flags::FEEDBACK_TIMER_5MS` (its aca6556 receiver). Each report covers what is new since
//! the previous report plus that report's last 64 sequence numbers, so reports overlap and
//! a lost report costs the sender nothing (the draft's discussion of feedback loss), even
//! across a gap the sender left by discarding its RTP queue. A new SSRC, or a sequence number far from
//! the current one, means the sender restarted: the receiver starts over with it.

pub mod frames;
pub mod tfrc;

use crate::clock::{ntp32_ceil, ntp32_to_wall_ns, Clock};
use crate::rfc8888::{ato_from_ns, Feedback, MetricBlock, NumReports, StreamReport};
use crate::rtcp::TfrcReport;
use crate::rtp::{flags, unwrap_seq, PayloadHeader, RtpHeader, RTP_HEADER_BYTES};
use frames::{FrameAssembler, FrameRecord};
use tfrc::TfrcReceiver;

const RING: usize = 1 << 14;
/// A sequence number this far from the highest one means a new sender.
const RESTART_DISTANCE: u64 = 3000;

#[derive(Clone, Debug)]
pub struct ReceiverConfig {
    pub num_reports: NumReports,
    /// Report after this many packets.
    pub feedback_packets: u32,
    /// Report at least this often while packets arrive (ns).
    pub feedback_interval_ns: i64,
    /// Each report covers at least this many sequence numbers.
    pub report_span: u64,
    /// SSRC of this receiver's RTCP packets.
    pub ssrc: u32,
    /// An incomplete frame is given up this long after it was first seen (ns).
    pub frame_timeout_ns: i64,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            num_reports: NumReports::Count,
            feedback_packets: 16,
            feedback_interval_ns: 40_000_000,
            report_span: 64,
            ssrc: 0x5EED_0001,
            frame_timeout_ns: 1_000_000_000,
        }
    }
}

/// One received packet (a row of the per-packet log).
#[derive(Clone, Debug)]
pub struct PacketRecord {
    pub t_ns: i64,
    pub ssrc: u32,
    pub rtp_seq: u16,
    /// Extended sequence number (the first packet's RTP sequence number, then counting).
    pub seq: i64,
    pub rtp_ts: u32,
    pub marker: bool,
    pub payload_type: u8,
    pub size_bytes: usize,
    pub ecn: u8,
    pub frame_id: Option<u32>,
    pub send_t_ns: Option<i64>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    seq: u64,
    arrival_wall_ns: i64,
    ecn: u8,
    used: bool,
}

struct Stream {
    ssrc: u32,
    highest: u64,
    first: u64,
    ring: Vec<Slot>,
    packets_since_report: u32,
    last_reported_highest: Option<u64>,
    last_report_ns: i64,
    /// The newest packet asked for a report at least every 5 ms (`flags::FEEDBACK_TIMER_5MS`).
    timer_5ms: bool,
    tfrc: Option<TfrcReceiver>,
}

/// Counters over the whole run.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReceiverCounters {
    pub packets: u64,
    pub bytes: u64,
    pub not_rtp: u64,
    pub duplicates: u64,
    pub ecn_not_ect: u64,
    pub ecn_ect1: u64,
    pub ecn_ect0: u64,
    pub ecn_ce: u64,
    pub feedback_sent: u64,
    pub tfrc_reports_sent: u64,
    pub sender_restarts: u64,
    pub frames_complete: u64,
    pub frames_incomplete: u64,
}

/// What the receiver wants to happen after an event.
#[derive(Default)]
pub struct Output {
    /// Datagrams to send back to the sender.
    pub datagrams: Vec<Vec<u8>>,
    pub packet: Option<PacketRecord>,
    pub frames: Vec<FrameRecord>,
}

pub struct Receiver {
    cfg: ReceiverConfig,
    clock: Clock,
    stream: Option<Stream>,
    frames: FrameAssembler,
    pub counters: ReceiverCounters,
}

impl Receiver {
    pub fn new(cfg: ReceiverConfig, clock: Clock) -> Self {
        let frames = FrameAssembler::new(cfg.frame_timeout_ns);
        Receiver {
            cfg,
            clock,
            stream: None,
            frames,
            counters: ReceiverCounters::default(),
        }
    }

    /// Handles one datagram that arrived at wall time `arrival_wall_ns` with ECN `ecn`.
    pub fn on_datagram(
        &mut self,
        buf: &[u8],
        ecn: u8,
        arrival_wall_ns: i64,
        now_ns: i64,
    ) -> Output {
        let mut out = Output::default();
        let Some((rtp, offset)) = RtpHeader::parse(buf) else {
            self.counters.not_rtp += 1;
            return out;
        };
        // RTCP multiplexed on the port (RFC 5761) reads as PT 72..=76 with the marker set.
        if (72..=76).contains(&rtp.payload_type) && rtp.marker {
            self.counters.not_rtp += 1;
            return out;
        }
        let restart = match &self.stream {
            None => true,
            Some(s) => {
                let seq = unwrap_seq(rtp.seq, s.highest);
                s.ssrc != rtp.ssrc || seq.abs_diff(s.highest) > RESTART_DISTANCE
            }
        };
        if restart {
            if self.stream.is_some() {
                self.counters.sender_restarts += 1;
                out.frames.extend(self.frames.flush());
                self.frames = FrameAssembler::new(self.cfg.frame_timeout_ns);
            }
            // Start extended numbering high enough that unwrapping never goes below zero.
            let base = (1u64 << 32) + rtp.seq as u64;
            self.stream = Some(Stream {
                ssrc: rtp.ssrc,
                highest: base,
                first: base,
                ring: vec![Slot::default(); RING],
                packets_since_report: 0,
                last_reported_highest: None,
                last_report_ns: now_ns,
                timer_5ms: false,
                tfrc: None,
            });
        }
        let s = self.stream.as_mut().unwrap();
        let seq = unwrap_seq(rtp.seq, s.highest);
        let slot = &mut s.ring[(seq as usize) & (RING - 1)];
        if slot.used && slot.seq == seq {
            self.counters.duplicates += 1;
            return out;
        }
        *slot = Slot {
            seq,
            arrival_wall_ns,
            ecn,
            used: true,
        };
        s.highest = s.highest.max(seq);
        if seq < s.first {
            s.first = seq;
        }
        s.packets_since_report += 1;
        self.counters.packets += 1;
        self.counters.bytes += buf.len() as u64;
        match ecn {
            0 => self.counters.ecn_not_ect += 1,
            1 => self.counters.ecn_ect1 += 1,
            2 => self.counters.ecn_ect0 += 1,
            _ => self.counters.ecn_ce += 1,
        }

        let payload = &buf[offset..];
        let ph = PayloadHeader::parse(payload);
        s.timer_5ms = ph.is_some_and(|p| p.flags & flags::FEEDBACK_TIMER_5MS != 0);
        if let Some(ph) = &ph {
            if ph.flags & flags::WANT_TFRC != 0 {
                let t = s.tfrc.get_or_insert_with(TfrcReceiver::new);
                t.on_packet(seq, buf.len(), ph.send_time_us, ph.rtt_us, now_ns);
            }
            if let Some(done) =
                self.frames
                    .on_packet(ph, rtp.timestamp, payload.len(), arrival_wall_ns, now_ns)
            {
                out.frames.push(done);
            }
        }
        out.packet = Some(PacketRecord {
            t_ns: arrival_wall_ns,
            ssrc: rtp.ssrc,
            rtp_seq: rtp.seq,
            seq: seq as i64 - (1i64 << 32),
            rtp_ts: rtp.timestamp,
            marker: rtp.marker,
            payload_type: rtp.payload_type,
            size_bytes: buf.len(),
            ecn,
            frame_id: ph.map(|p| p.frame_id),
            send_t_ns: ph
                .filter(|p| p.send_time_us > 0)
                .map(|p| p.send_time_us as i64 * 1000),
        });
        let s = self.stream.as_ref().unwrap();
        let every = match ph {
            Some(p) if p.flags & flags::SPARSE_FEEDBACK != 0 => self
                .cfg
                .feedback_packets
                .max(flags::SPARSE_FEEDBACK_PACKETS),
            _ => self.cfg.feedback_packets,
        };
        if rtp.marker || s.packets_since_report >= every {
            self.feedback(now_ns, &mut out);
        }
        self.tfrc_report(now_ns, &mut out);
        self.count_frames(&out);
        out
    }

    /// Timers: the 40 ms feedback, TFRC's per-RTT report, frame timeouts.
    pub fn on_tick(&mut self, now_ns: i64) -> Output {
        let mut out = Output::default();
        if let Some(s) = &self.stream {
            if s.packets_since_report > 0
                && now_ns - s.last_report_ns >= self.feedback_interval_ns(s)
            {
                self.feedback(now_ns, &mut out);
            }
        }
        self.tfrc_report(now_ns, &mut out);
        out.frames.extend(self.frames.expire(now_ns));
        self.count_frames(&out);
        out
    }

    /// Frames still open at the end of the run.
    pub fn finish(&mut self) -> Vec<FrameRecord> {
        let rest = self.frames.flush();
        for f in &rest {
            if f.complete {
                self.counters.frames_complete += 1;
            } else {
                self.counters.frames_incomplete += 1;
            }
        }
        rest
    }

    /// The longest a packet waits for its report: the configured timer, or 5 ms when the
    /// sender asks for it.
    fn feedback_interval_ns(&self, s: &Stream) -> i64 {
        if s.timer_5ms {
            self.cfg
                .feedback_interval_ns
                .min(flags::FEEDBACK_TIMER_5MS_NS)
        } else {
            self.cfg.feedback_interval_ns
        }
    }

    /// Earliest time `on_tick` has something to do (ns), if anything is pending.
    pub fn next_timer_ns(&self) -> Option<i64> {
        let s = self.stream.as_ref()?;
        let fb =
            (s.packets_since_report > 0).then(|| s.last_report_ns + self.feedback_interval_ns(s));
        let tfrc = s.tfrc.as_ref().map(|_| s.last_report_ns + 5_000_000);
        match (fb, tfrc) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn count_frames(&mut self, out: &Output) {
        for f in &out.frames {
            if f.complete {
                self.counters.frames_complete += 1;
            } else {
                self.counters.frames_incomplete += 1;
            }
        }
    }

    /// Builds the RFC 8888 report of the current stream.
    pub fn make_feedback(&self, now_ns: i64) -> Option<Feedback> {
        let s = self.stream.as_ref()?;
        let new = s
            .last_reported_highest
            .map_or(u64::MAX, |h| s.highest.saturating_sub(h));
        // What is new since the last report plus the last `report_span` numbers of that
        // report: a lost report is repeated by the next one even when the sender skipped
        // many sequence numbers (an RTP queue discard) in between.
        let span = new
            .saturating_add(self.cfg.report_span)
            .min(crate::rfc8888::MAX_BLOCKS_PER_STREAM as u64);
        let begin = s.first.max(s.highest + 1 - span.min(s.highest + 1));
        let now_wall = self.clock.wall(now_ns);
        let rts = ntp32_ceil(now_wall);
        let rts_wall = ntp32_to_wall_ns(rts, now_wall);
        let blocks = (begin..=s.highest)
            .map(|seq| {
                let slot = &s.ring[(seq as usize) & (RING - 1)];
                if slot.used && slot.seq == seq {
                    MetricBlock {
                        received: true,
                        ecn: slot.ecn,
                        ato: ato_from_ns(rts_wall - slot.arrival_wall_ns),
                    }
                } else {
                    MetricBlock::MISSING
                }
            })
            .collect();
        Some(Feedback {
            sender_ssrc: self.cfg.ssrc,
            streams: vec![StreamReport {
                ssrc: s.ssrc,
                begin_seq: begin as u16,
                blocks,
            }],
            report_ts: rts,
        })
    }

    fn feedback(&mut self, now_ns: i64, out: &mut Output) {
        let Some(fb) = self.make_feedback(now_ns) else {
            return;
        };
        let mut bytes = Vec::with_capacity(fb.encoded_len());
        fb.encode(self.cfg.num_reports, &mut bytes);
        out.datagrams.push(bytes);
        self.counters.feedback_sent += 1;
        let s = self.stream.as_mut().unwrap();
        s.packets_since_report = 0;
        s.last_reported_highest = Some(s.highest);
        s.last_report_ns = now_ns;
    }

    fn tfrc_report(&mut self, now_ns: i64, out: &mut Output) {
        let ssrc = self.cfg.ssrc;
        let Some(t) = self.stream.as_mut().and_then(|s| s.tfrc.as_mut()) else {
            return;
        };
        if !t.report_due(now_ns) {
            return;
        }
        if let Some(r) = t.make_report(now_ns) {
            let report = TfrcReport {
                receiver_ssrc: ssrc,
                t_recvdata_us: r.t_recvdata_us,
                t_delay_us: (r.t_delay_ns / 1000).clamp(0, u32::MAX as i64) as u32,
                x_recv_bps: r.x_recv_bytes_s.clamp(0.0, u32::MAX as f64) as u32,
                p: r.p,
            };
            let mut bytes = Vec::with_capacity(32);
            report.encode(&mut bytes);
            out.datagrams.push(bytes);
            self.counters.tfrc_reports_sent += 1;
        }
    }
}

/// Payload length of an RTP packet of `len` bytes (for logs).
pub fn payload_len(len: usize) -> usize {
    len.saturating_sub(RTP_HEADER_BYTES)
}

#[cfg(test)]
mod tests;
