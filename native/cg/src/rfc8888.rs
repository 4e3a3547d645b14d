//! RTCP congestion control feedback (RFC 8888): encoding and decoding.
//!
//! ```text
//!  |V=2|P| FMT=11  |   PT = 205    |          length               |
//!  |                 SSRC of RTCP packet sender                    |
//!  |                   SSRC of 1st RTP Stream                      |
//!  |          begin_seq            |          num_reports          |
//!  |R|ECN|  Arrival time offset    | ...                           .
//!  ...  (padding to 32 bits after each stream's metric blocks)
//!  |                 Report Timestamp (32 bits)                    |
//! ```
//!
//! The report timestamp (RTS) is the middle 32 bits of an NTP timestamp; each metric
//! block's arrival time offset (ATO) counts 1/1024 s before the RTS. 0x1FFE means "at
//! least 8190/1024 s before", 0x1FFF "unavailable or after the RTS".
//!
//! `num_reports` was defined in RFC 8888 as published as the number of metric blocks
//! minus one ("count - 1", what Ericsson's SCReAM code sends); erratum 8166 redefines it as
//! the number of blocks ("count", what libwebrtc sends). Both are supported and must be
//! chosen alike on both ends ([`NumReports`]).

/// RTCP packet type of transport-layer feedback (RTPFB).
pub const PT_RTPFB: u8 = 205;
/// Feedback message type of congestion control feedback.
pub const FMT_CCFB: u8 = 11;
/// ATO value: over range (arrived 8190/1024 s or more before the RTS).
pub const ATO_OVERRANGE: u16 = 0x1FFE;
/// ATO value: unavailable (or arrived after the RTS).
pub const ATO_UNAVAILABLE: u16 = 0x1FFF;
/// RFC 8888 3.1: a report block covers at most a quarter of the sequence space.
pub const MAX_BLOCKS_PER_STREAM: usize = 16_384;

/// How the `num_reports` field counts metric blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumReports {
    /// `num_reports` = number of blocks (erratum 8166, libwebrtc).
    Count,
    /// `num_reports` = number of blocks - 1 (RFC 8888 as published, Ericsson SCReAM).
    CountMinusOne,
}

impl NumReports {
    pub fn parse(name: &str) -> Option<NumReports> {
        match name {
            "count" => Some(NumReports::Count),
            "count-minus-one" => Some(NumReports::CountMinusOne),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            NumReports::Count => "count",
            NumReports::CountMinusOne => "count-minus-one",
        }
    }
}

/// One packet metric block: whether sequence number `begin_seq + i` arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetricBlock {
    pub received: bool,
    /// ECN field of the received packet: 0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE.
    pub ecn: u8,
    /// Arrival time offset in 1/1024 s (13 bits).
    pub ato: u16,
}

impl MetricBlock {
    pub const MISSING: MetricBlock = MetricBlock {
        received: false,
        ecn: 0,
        ato: 0,
    };

    fn to_u16(self) -> u16 {
        if !self.received {
            return 0;
        }
        0x8000 | ((self.ecn as u16 & 3) << 13) | (self.ato & 0x1FFF)
    }

    fn from_u16(v: u16) -> MetricBlock {
        MetricBlock {
            received: v & 0x8000 != 0,
            ecn: ((v >> 13) & 3) as u8,
            ato: v & 0x1FFF,
        }
    }
}

/// The metric blocks of one RTP stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamReport {
    pub ssrc: u32,
    pub begin_seq: u16,
    /// Block `i` is about sequence number `begin_seq + i` (wrapping).
    pub blocks: Vec<MetricBlock>,
}

/// One RFC 8888 feedback packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Feedback {
    pub sender_ssrc: u32,
    pub streams: Vec<StreamReport>,
    /// Report timestamp: middle 32 bits of NTP.
    pub report_ts: u32,
}

/// Why a feedback packet was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    TooShort,
    NotRtcp,
    NotCcfb,
    BadLength,
    TooManyBlocks,
    Truncated,
    TrailingBytes,
}

/// The ATO of a packet that arrived `before_rts_ns` before the report timestamp,
/// truncated to whole 1/1024 s (as Ericsson's receiver, ScreamRx.cpp:193): the arrival
/// time the sender recovers is then never earlier than the true one, so the minimum over
/// many one-way delays (SCReAM's base delay) is not pulled low by the quantisation, as it
/// is by rounding to nearest (half a unit, 0.49 ms, on every later queue-delay sample).
pub fn ato_from_ns(before_rts_ns: i64) -> u16 {
    if before_rts_ns < 0 {
        return ATO_UNAVAILABLE;
    }
    let units = before_rts_ns as i128 * 1024 / 1_000_000_000;
    if units > 0x1FFD {
        ATO_OVERRANGE
    } else {
        units as u16
    }
}

/// Nanoseconds before the RTS that an ATO stands for; None when over range or unavailable.
pub fn ato_to_ns(ato: u16) -> Option<i64> {
    if ato >= ATO_OVERRANGE {
        None
    } else {
        Some(ato as i64 * 1_000_000_000 / 1024)
    }
}

impl Feedback {
    /// Bytes on the wire.
    pub fn encoded_len(&self) -> usize {
        let mut n = 4 + 4 + 4; // header, sender SSRC, RTS
        for s in &self.streams {
            n += 8 + 2 * s.blocks.len() + if s.blocks.len() % 2 == 1 { 2 } else { 0 };
        }
        n
    }

    /// Appends the packet to `out`. Streams without blocks are left out (count - 1 cannot
    /// express zero blocks).
    pub fn encode(&self, mode: NumReports, out: &mut Vec<u8>) {
        let len = self.encoded_len();
        let start = out.len();
        out.push(0x80 | FMT_CCFB);
        out.push(PT_RTPFB);
        out.extend_from_slice(&0u16.to_be_bytes()); // length, written below
        out.extend_from_slice(&self.sender_ssrc.to_be_bytes());
        for s in &self.streams {
            let n = s.blocks.len().min(MAX_BLOCKS_PER_STREAM);
            if n == 0 {
                continue;
            }
            out.extend_from_slice(&s.ssrc.to_be_bytes());
            out.extend_from_slice(&s.begin_seq.to_be_bytes());
            let field = match mode {
                NumReports::Count => n,
                NumReports::CountMinusOne => n - 1,
            };
            out.extend_from_slice(&(field as u16).to_be_bytes());
            for b in &s.blocks[..n] {
                out.extend_from_slice(&b.to_u16().to_be_bytes());
            }
            if n % 2 == 1 {
                out.extend_from_slice(&[0, 0]);
            }
        }
        out.extend_from_slice(&self.report_ts.to_be_bytes());
        let words = (out.len() - start) / 4 - 1;
        out[start + 2..start + 4].copy_from_slice(&(words as u16).to_be_bytes());
        debug_assert!(out.len() - start <= len);
    }

    /// Decodes one RTCP packet (exactly `buf`, as split by [`crate::rtcp::split`]).
    pub fn decode(buf: &[u8], mode: NumReports) -> Result<Feedback, DecodeError> {
        if buf.len() < 12 {
            return Err(DecodeError::TooShort);
        }
        if buf[0] >> 6 != 2 {
            return Err(DecodeError::NotRtcp);
        }
        if buf[1] != PT_RTPFB || buf[0] & 0x1f != FMT_CCFB {
            return Err(DecodeError::NotCcfb);
        }
        let words = u16::from_be_bytes([buf[2], buf[3]]) as usize;
        if (words + 1) * 4 != buf.len() {
            return Err(DecodeError::BadLength);
        }
        let sender_ssrc = u32::from_be_bytes(buf[4..8].try_into().unwrap());
        let end = buf.len() - 4;
        let report_ts = u32::from_be_bytes(buf[end..].try_into().unwrap());
        let mut pos = 8;
        let mut streams = Vec::new();
        while pos < end {
            if pos + 8 > end {
                return Err(DecodeError::Truncated);
            }
            let ssrc = u32::from_be_bytes(buf[pos..pos + 4].try_into().unwrap());
            let begin_seq = u16::from_be_bytes([buf[pos + 4], buf[pos + 5]]);
            let field = u16::from_be_bytes([buf[pos + 6], buf[pos + 7]]) as usize;
            pos += 8;
            let n = match mode {
                NumReports::Count => field,
                NumReports::CountMinusOne => field + 1,
            };
            if n > MAX_BLOCKS_PER_STREAM {
                return Err(DecodeError::TooManyBlocks);
            }
            let padded = 2 * n + if n % 2 == 1 { 2 } else { 0 };
            if pos + padded > end {
                return Err(DecodeError::Truncated);
            }
            let blocks = (0..n)
                .map(|i| {
                    let at = pos + 2 * i;
                    MetricBlock::from_u16(u16::from_be_bytes([buf[at], buf[at + 1]]))
                })
                .collect();
            pos += padded;
            streams.push(StreamReport {
                ssrc,
                begin_seq,
                blocks,
            });
        }
        if pos != end {
            return Err(DecodeError::TrailingBytes);
        }
        Ok(Feedback {
            sender_ssrc,
            streams,
            report_ts,
        })
    }
}

#[cfg(test)]
mod tests;
