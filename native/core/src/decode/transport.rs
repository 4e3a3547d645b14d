//! The transport layer: UDP (with RTP candidate fields) and TCP, and the `l4_hash` of the
//! bytes a router never changes.

use super::bytes::{be16, be32, hash_frame_bytes};
use super::packet::Packet;
use super::L4_HASH_PAYLOAD;
use crate::keys::mix64;

/// `b`: the captured bytes after the IP header(s); `wire`: how many bytes follow the IP
/// header(s) on the wire (by the IP length fields), which excludes link-layer padding.
#[inline(always)]
pub(super) fn transport(b: &[u8], wire: u32, first_fragment: bool, p: &mut Packet) {
    if first_fragment {
        match p.proto {
            17 => return udp(b, wire, p),
            6 => return tcp(b, wire, p),
            _ => {}
        }
    }
    let want = L4_HASH_PAYLOAD.min(wire as usize);
    let k = want.min(b.len());
    p.truncated |= k < want;
    p.l4_hash = hash_frame_bytes(&b[..k]);
}

fn udp(b: &[u8], wire: u32, p: &mut Packet) {
    if b.len() < 4 {
        p.truncated = true;
        return;
    }
    p.ports = be32(b, 0);
    p.has_ports = true;
    if b.len() < 8 {
        p.truncated = true;
        return;
    }
    let udp_len = match u32::from(be16(b, 4)) {
        0 => wire, // a UDP jumbogram's length field is 0 (RFC 2675)
        n => n,
    };
    let payload_wire = udp_len.saturating_sub(8).min(wire.saturating_sub(8)) as usize;
    let payload = &b[8..];
    let want = L4_HASH_PAYLOAD.min(payload_wire);
    let k = want.min(payload.len());
    p.truncated |= k < want;
    p.l4_hash = hash_frame_bytes(&payload[..k]);
    if payload.len().min(payload_wire) >= 12 && payload[0] >> 6 == 2 {
        p.has_rtp = true;
        p.rtp_marker = payload[1] & 0x80 != 0;
        p.rtp_pt = payload[1] & 0x7f;
        p.rtp_seq = be16(payload, 2);
        p.rtp_ts = be32(payload, 4);
        p.rtp_ssrc = be32(payload, 8);
    }
}

fn tcp(b: &[u8], wire: u32, p: &mut Packet) {
    if b.len() < 4 {
        p.truncated = true;
        return;
    }
    p.ports = be32(b, 0);
    p.has_ports = true;
    if b.len() < 20 {
        p.truncated = true;
        return;
    }
    let header_len = usize::from(b[12] >> 4) * 4;
    if header_len < 20 {
        return; // malformed data offset: only the ports are trusted
    }
    p.has_tcp = true;
    p.tcp_seq = be32(b, 4);
    p.tcp_ack = be32(b, 8);
    p.tcp_flags = (u16::from(b[12] & 1) << 8) | u16::from(b[13]);
    p.tcp_payload_len = wire.saturating_sub(header_len as u32);

    // window + urgent pointer (not the checksum), the options, the first payload bytes;
    // hashed straight from the frame (a copy into one buffer stalls store forwarding)
    let window_urgent = (u64::from(be16(b, 14)) << 16) | u64::from(be16(b, 18));
    let options_end = header_len.min(b.len());
    let options = hash_frame_bytes(&b[20..options_end]);
    let want = L4_HASH_PAYLOAD.min(p.tcp_payload_len as usize);
    let payload = if options_end < header_len {
        p.truncated = true;
        &[][..]
    } else {
        let k = want.min(b.len() - header_len);
        p.truncated |= k < want;
        &b[header_len..header_len + k]
    };
    p.l4_hash = mix64(mix64(options, window_urgent), hash_frame_bytes(payload));
}
