//! The IP layer: IPv4 and IPv6 headers (extension headers, fragments, jumbograms and
//! segments captured before TSO), then the transport layer on what follows.

use super::bytes::{be16, be32, ne32, ne64};
use super::packet::{len_source, Packet};
use super::transport::transport;

/// `b`: the captured bytes from the IP header on; `wire`: how many there were on the wire.
pub(super) fn ipv4(b: &[u8], wire: u32, p: &mut Packet) {
    if b.len() < 20 {
        p.truncated = true;
        return;
    }
    let ihl = usize::from(b[0] & 0x0f) * 4;
    if b[0] >> 4 != 4 || ihl < 20 {
        return; // not a readable IPv4 header
    }
    p.ip_version = 4;
    p.dscp = b[1] >> 2;
    p.ecn = b[1] & 3;
    p.ip_len = u32::from(be16(b, 2));
    if p.ip_len == 0 && wire > ihl as u32 {
        p.ip_len = wire;
        p.len_source = len_source::FRAME;
    }
    p.ip_id = u32::from(be16(b, 4));
    p.has_ip_id = true;
    let first_fragment = be16(b, 6) & 0x1fff == 0;
    p.ttl = b[8];
    p.proto = b[9];
    p.src = [u64::from(ne32(b, 12)), 0];
    p.dst = [u64::from(ne32(b, 16)), 0];
    if b.len() < ihl {
        p.truncated = true; // options cut: the L4 header is out of reach
        return;
    }
    let wire = p.ip_len.saturating_sub(ihl as u32);
    transport(&b[ihl..], wire, first_fragment, p);
}

/// The Jumbo Payload length (RFC 2675) in the hop-by-hop options `opts`, if any.
fn jumbo_payload_len(opts: &[u8]) -> Option<u32> {
    let mut o = 0usize;
    while o < opts.len() {
        match opts[o] {
            0 => o += 1, // Pad1
            0xc2 if o + 6 <= opts.len() && opts[o + 1] == 4 => return Some(be32(opts, o + 2)),
            _ if o + 2 <= opts.len() => o += 2 + usize::from(opts[o + 1]),
            _ => break,
        }
    }
    None
}

/// `b`: the captured bytes from the IP header on; `wire`: how many there were on the wire.
pub(super) fn ipv6(b: &[u8], wire: u32, p: &mut Packet) {
    if b.len() < 40 {
        p.truncated = true;
        return;
    }
    if b[0] >> 4 != 6 {
        return;
    }
    p.ip_version = 6;
    let tclass = (be16(b, 0) >> 4) as u8;
    p.dscp = tclass >> 2;
    p.ecn = tclass & 3;
    p.ip_len = u32::from(be16(b, 4)) + 40;
    p.ttl = b[7];
    p.src = [ne64(b, 8), ne64(b, 16)];
    p.dst = [ne64(b, 24), ne64(b, 32)];
    let mut next = b[6];
    if p.ip_len == 40 {
        // payload length 0: a jumbogram, or a BIG TCP segment without the jumbo option
        let hbh_len = if next == 0 && b.len() >= 42 {
            (usize::from(b[41]) + 1) * 8
        } else {
            0
        };
        if let Some(jumbo) = (hbh_len > 0)
            .then(|| jumbo_payload_len(&b[42..(40 + hbh_len).min(b.len())]))
            .flatten()
        {
            p.ip_len = jumbo.saturating_add(40);
            p.len_source = len_source::JUMBO;
        } else if wire > 40 {
            p.ip_len = wire;
            p.len_source = len_source::FRAME;
        }
    }
    let mut off = 40usize;
    let mut first_fragment = true;
    loop {
        match next {
            // hop-by-hop, routing, destination options: length in 8-octet units, minus one
            0 | 43 | 60 => {
                if b.len() < off + 2 {
                    p.proto = next;
                    p.truncated = true;
                    return;
                }
                next = b[off];
                off += (usize::from(b[off + 1]) + 1) * 8;
            }
            // authentication header: length in 4-octet units, minus two
            51 => {
                if b.len() < off + 2 {
                    p.proto = next;
                    p.truncated = true;
                    return;
                }
                next = b[off];
                off += (usize::from(b[off + 1]) + 2) * 4;
            }
            44 => {
                if b.len() < off + 8 {
                    p.proto = next;
                    p.truncated = true;
                    return;
                }
                p.ip_id = be32(b, off + 4);
                p.has_ip_id = true;
                next = b[off];
                off += 8;
                if be16(b, off - 6) >> 3 != 0 {
                    // a later fragment: what follows is raw payload, not headers
                    first_fragment = false;
                    break;
                }
            }
            _ => break,
        }
    }
    p.proto = next;
    if b.len() < off {
        p.truncated = true;
        return;
    }
    let wire = p.ip_len.saturating_sub(off as u32);
    transport(&b[off..], wire, first_fragment, p);
}
