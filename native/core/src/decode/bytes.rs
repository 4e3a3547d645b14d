//! Reading header words from a frame, and hashing frame bytes without copying them.

use crate::keys::{bytes_seed, mix64};

#[inline(always)]
pub(super) fn be16(b: &[u8], off: usize) -> u16 {
    u16::from_be_bytes([b[off], b[off + 1]])
}

#[inline(always)]
pub(super) fn be32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

/// 4 bytes in memory order as a native-endian word.
#[inline(always)]
pub(super) fn ne32(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

#[inline(always)]
pub(super) fn ne64(b: &[u8], off: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[off..off + 8]);
    u64::from_ne_bytes(w)
}

/// Exactly `keys::hash_bytes` (a test checks it), but the last partial word is read
/// straight from the slice: `hash_bytes` copies it into a stack buffer first, and loading
/// that buffer as a word right after the byte copy stalls store-to-load forwarding, which
/// costs ~10% of the whole read when done for every packet.
#[inline]
pub fn hash_frame_bytes(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    let mut h = bytes_seed(n);
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        h = mix64(
            h,
            u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
        );
    }
    let r = n % 8;
    if r != 0 {
        let tail = if n >= 8 {
            // the last 8 bytes, shifted down to the r that were not hashed yet
            let b = &bytes[n - 8..];
            u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) >> (8 * (8 - r))
        } else if n >= 4 {
            // two overlapping 4-byte reads; the overlap ORs equal bytes
            let lo = u64::from(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]));
            let b = &bytes[n - 4..];
            let hi = u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            lo | (hi << (8 * (n - 4)))
        } else {
            u64::from(bytes[0])
                | (u64::from(bytes[n / 2]) << (8 * (n / 2)))
                | (u64::from(bytes[n - 1]) << (8 * (n - 1)))
        };
        h = mix64(h, tail);
    }
    h
}

/// Packs a 16-byte address into the two words of [`Packet::src`](super::Packet::src).
pub fn addr_words(a: [u8; 16]) -> [u64; 2] {
    [ne64(&a, 0), ne64(&a, 8)]
}
