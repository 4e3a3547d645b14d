//! RTCP packets the receiver sends back: splitting compound packets, and the TFRC receiver
//! report carried in an RTCP APP packet (RFC 3550 6.7).
//!
//! RFC 5348 (6.2) defines what a TFRC receiver reports but not a wire format for RTP, so
//! this generator uses an APP packet named "TFRC":
//!
//! ```text
//!  |V=2|P| subtype=0 |   PT=APP=204  |             length=7          |
//!  |                     SSRC of the receiver                        |
//!  |                          name "TFRC"                            |
//!  |          t_recvdata: sender timestamp echoed, microseconds      |
//!  |                            (64 bits)                            |
//!  |          t_delay: microseconds since t_recvdata arrived         |
//!  |          X_recv: receive rate, bytes per second                 |
//!  |          p: loss event rate, fraction of 2^32 - 1               |
//! ```

/// RTCP APP packet type.
pub const PT_APP: u8 = 204;
const TFRC_NAME: &[u8; 4] = b"TFRC";
const TFRC_LEN: usize = 32;

/// Splits a (possibly compound) RTCP datagram into packets. Returns None when the length
/// fields do not tile the datagram exactly.
pub fn split(datagram: &[u8]) -> Option<Vec<&[u8]>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < datagram.len() {
        if datagram.len() - pos < 4 || datagram[pos] >> 6 != 2 {
            return None;
        }
        let words = u16::from_be_bytes([datagram[pos + 2], datagram[pos + 3]]) as usize;
        let len = (words + 1) * 4;
        if pos + len > datagram.len() {
            return None;
        }
        out.push(&datagram[pos..pos + len]);
        pos += len;
    }
    if out.is_empty() {
        None
    } else {
        Some(out)
    }
}

/// A TFRC receiver report (RFC 5348 3.2.2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TfrcReport {
    pub receiver_ssrc: u32,
    /// Send timestamp (sender's clock, us) of the last data packet received.
    pub t_recvdata_us: u64,
    /// Time between that packet's arrival and this report, us.
    pub t_delay_us: u32,
    /// Rate at which data was received since the last report, bytes/s.
    pub x_recv_bps: u32,
    /// Loss event rate in [0, 1].
    pub p: f64,
}

impl TfrcReport {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(0x80);
        out.push(PT_APP);
        out.extend_from_slice(&((TFRC_LEN / 4 - 1) as u16).to_be_bytes());
        out.extend_from_slice(&self.receiver_ssrc.to_be_bytes());
        out.extend_from_slice(TFRC_NAME);
        out.extend_from_slice(&self.t_recvdata_us.to_be_bytes());
        out.extend_from_slice(&self.t_delay_us.to_be_bytes());
        out.extend_from_slice(&self.x_recv_bps.to_be_bytes());
        let p = (self.p.clamp(0.0, 1.0) * u32::MAX as f64).round() as u32;
        out.extend_from_slice(&p.to_be_bytes());
    }

    /// Decodes one RTCP packet; None when it is not a well-formed TFRC report.
    pub fn decode(buf: &[u8]) -> Option<TfrcReport> {
        if buf.len() != TFRC_LEN || buf[0] >> 6 != 2 || buf[1] != PT_APP || &buf[8..12] != TFRC_NAME
        {
            return None;
        }
        let u32_at = |i: usize| u32::from_be_bytes(buf[i..i + 4].try_into().unwrap());
        Some(TfrcReport {
            receiver_ssrc: u32_at(4),
            t_recvdata_us: u64::from_be_bytes(buf[12..20].try_into().unwrap()),
            t_delay_us: u32_at(20),
            x_recv_bps: u32_at(24),
            p: u32_at(28) as f64 / u32::MAX as f64,
        })
    }
}

/// True when the packet is an APP packet (whatever its name).
pub fn is_app(packet: &[u8]) -> bool {
    packet.len() >= 2 && packet[1] == PT_APP
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tfrc_report_round_trips() {
        let r = TfrcReport {
            receiver_ssrc: 5,
            t_recvdata_us: 1_700_000_000_000_000,
            t_delay_us: 1234,
            x_recv_bps: 2_500_000,
            p: 0.0125,
        };
        let mut out = Vec::new();
        r.encode(&mut out);
        assert_eq!(out.len(), 32);
        let back = TfrcReport::decode(&out).unwrap();
        assert_eq!(back.t_recvdata_us, r.t_recvdata_us);
        assert!((back.p - r.p).abs() < 1e-9);
        assert_eq!(split(&out).unwrap().len(), 1);
    }

    #[test]
    fn compound_split_and_garbage() {
        let r = TfrcReport {
            receiver_ssrc: 5,
            t_recvdata_us: 1,
            t_delay_us: 2,
            x_recv_bps: 3,
            p: 0.0,
        };
        let mut out = Vec::new();
        r.encode(&mut out);
        r.encode(&mut out);
        assert_eq!(split(&out).unwrap().len(), 2);
        assert!(split(&out[..30]).is_none());
        assert!(split(&[0u8; 8]).is_none());
        assert!(split(&[]).is_none());
        assert!(TfrcReport::decode(&out[..31]).is_none());
    }
}
