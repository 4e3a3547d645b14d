//! Decoding of one captured frame: link layer, IPv4/IPv6, UDP/TCP, RTP candidate fields and
//! the per-packet hashes. No allocation: a frame becomes a [`Packet`] on the stack.
//!
//! Truncation: a frame is parsed as far as its captured bytes go. `truncated` is set when
//! bytes that a field needs and that exist on the wire were not captured: a link, IP,
//! extension or L4 header cut short, or fewer bytes for `l4_hash` than the packet carries
//! (up to 16), which would make the hash depend on the snaplen.
//!
//! This file follows a frame down to the IP layer; the layers are in `link`, `ip` and
//! `transport`, the result in `packet`, flows in `flow`, word reads and hashing in `bytes`.

mod bytes;
mod flow;
mod ip;
mod link;
mod packet;
#[cfg(test)]
mod tests;
mod transport;

pub use bytes::{addr_words, hash_frame_bytes};
pub use flow::{FlowKey, FlowTable};
pub use link::{linktype_name, Link};
pub use packet::{len_source, Packet};

use bytes::be16;
use ip::{ipv4, ipv6};

/// How many payload bytes at most go into `l4_hash`.
pub const L4_HASH_PAYLOAD: usize = 16;

#[inline(always)]
fn is_vlan_tpid(ethertype: u16) -> bool {
    matches!(ethertype, 0x8100 | 0x88a8 | 0x9100)
}

/// Decodes one captured frame of the given link type (`wire_len`: the frame's length on
/// the wire, which may exceed the captured bytes).
pub fn decode(link: Link, frame: &[u8], wire_len: u32) -> Packet {
    let mut p = Packet::default();
    decode_into(link, frame, wire_len, &mut p);
    p
}

/// Decodes one captured frame into `p`, which must be all zeros (`Packet::default()`).
///
/// In place rather than returned: a returned `Packet` is copied with wide loads right after
/// its fields were written byte by byte, which stalls store-to-load forwarding.
#[inline(always)]
pub fn decode_into(link: Link, frame: &[u8], wire_len: u32, p: &mut Packet) {
    // what the IP layer's length fields are checked against when they say 0
    let wire = wire_len.max(frame.len() as u32);
    match link {
        Link::Ethernet => ethertype_payload(frame, wire, 12, 14, p),
        Link::LinuxSll => ethertype_payload(frame, wire, 14, 16, p),
        Link::LinuxSll2 => ethertype_payload(frame, wire, 0, 20, p),
        Link::RawIp => match frame.first() {
            None => p.truncated = true,
            Some(b) if b >> 4 == 4 => ipv4(frame, wire, p),
            Some(b) if b >> 4 == 6 => ipv6(frame, wire, p),
            Some(_) => {}
        },
        Link::Ipv4 => ipv4(frame, wire, p),
        Link::Ipv6 => ipv6(frame, wire, p),
    }
}

/// A link header of `header_len` bytes whose protocol (an EtherType) sits at `type_off`,
/// followed by any number of VLAN tags (4 bytes each: TCI, inner EtherType).
#[inline(always)]
fn ethertype_payload(frame: &[u8], wire: u32, type_off: usize, header_len: usize, p: &mut Packet) {
    if frame.len() < header_len {
        p.truncated = true;
        return;
    }
    let mut ethertype = be16(frame, type_off);
    let mut off = header_len;
    while is_vlan_tpid(ethertype) {
        if frame.len() < off + 4 {
            p.truncated = true;
            return;
        }
        ethertype = be16(frame, off + 2);
        off += 4;
    }
    let ip_wire = wire.saturating_sub(off as u32);
    match ethertype {
        0x0800 => ipv4(&frame[off..], ip_wire, p),
        0x86dd => ipv6(&frame[off..], ip_wire, p),
        _ => {}
    }
}
