//! Deterministic 64-bit hashing for packet identity.
//!
//! The same packet must get the same key at both capture points and in every process, so
//! nothing here is seeded at random (unlike `std`'s `RandomState`). Words are mixed in by
//! one 64 x 64 -> 128-bit multiply each, the product's halves xored (wyhash's "mum"),
//! which takes a third of the SplitMix64 finaliser's dependent chain (two multiplies and
//! three shifts): a packet's hashes take a dozen such steps (reading and keying the 4 M
//! packet benchmark pair: 4 ms less). Collisions among a few million keys are negligible
//! (about n^2 / 2^65) and are further guarded by the time window of the matcher. The
//! matcher buckets keys by their top bits, which a test checks are spread evenly.

/// What a packet's identity is made of (the matcher's key kinds, see `identity_keys`).
pub const KIND_RTP: u8 = 0;
pub const KIND_TCP: u8 = 1;
pub const KIND_OTHER: u8 = 2;

#[inline]
pub fn finalize(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Combines a running hash with one more 64-bit word (order matters): their product, each
/// xored with a constant first, its high and low halves xored.
#[inline(always)]
pub fn mix64(h: u64, word: u64) -> u64 {
    let p = u128::from(h ^ 0xa076_1d64_78bd_642f) * u128::from(word ^ 0xe703_7ed1_a0b4_28db);
    (p as u64) ^ ((p >> 64) as u64)
}

/// A 64-bit hash in 32 bits, its halves xored: what the capture columns keep of a packet's
/// `l4_hash` (it tells apart packets that already share flow, IP ID, length and TCP
/// sequence numbers, within the matcher's time window: 32 bits are plenty, and 4 bytes a
/// packet less to hold).
#[inline(always)]
pub fn fold32(h: u64) -> u32 {
    (h ^ (h >> 32)) as u32
}

/// Where [`hash_bytes`] starts for `len` bytes.
#[inline(always)]
pub(crate) fn bytes_seed(len: usize) -> u64 {
    len as u64 ^ 0x6a09_e667_f3bc_c909
}

/// Hashes a byte string, its length included (so "ab" and "ab\0" differ).
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h = bytes_seed(bytes.len());
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        h = mix64(
            h,
            u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
        );
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut buf = [0u8; 8];
        buf[..rest.len()].copy_from_slice(rest);
        h = mix64(h, u64::from_le_bytes(buf));
    }
    h
}

/// Per-packet identity fields, column by column (one slice per field, all the same length).
pub struct IdentityColumns<'a> {
    pub kind: &'a [u8],
    pub flow_hash: &'a [u64],
    pub ip_id: &'a [u32],
    pub ip_len: &'a [u32],
    pub tcp_seq: &'a [u32],
    pub tcp_ack: &'a [u32],
    pub rtp_ssrc: &'a [u32],
    pub rtp_seq: &'a [u16],
    pub l4_hash: &'a [u64],
}

/// One identity key per packet, from the fields that survive a router unchanged
/// (never TTL, checksums, ECN or DSCP):
/// - RTP: directional 5-tuple, SSRC, 16-bit sequence number (wraps are told apart by the
///   matcher's time window, not by unwrapping each capture on its own, which would disagree
///   when one capture starts later than the other);
/// - TCP: 5-tuple, seq, ack, IP ID, IP length and `l4_hash` (options and first payload bytes);
/// - anything else: 5-tuple, IP ID, IP length and `l4_hash` (first payload bytes).
pub fn identity_keys(c: &IdentityColumns<'_>) -> Vec<u64> {
    let n = c.kind.len();
    for len in [
        c.flow_hash.len(),
        c.ip_id.len(),
        c.ip_len.len(),
        c.tcp_seq.len(),
        c.tcp_ack.len(),
        c.rtp_ssrc.len(),
        c.rtp_seq.len(),
        c.l4_hash.len(),
    ] {
        assert_eq!(len, n, "identity columns must have equal lengths");
    }
    (0..n)
        .map(|i| {
            identity_key(
                c.kind[i],
                c.flow_hash[i],
                c.ip_id[i],
                c.ip_len[i],
                c.tcp_seq[i],
                c.tcp_ack[i],
                c.rtp_ssrc[i],
                c.rtp_seq[i],
                c.l4_hash[i],
            )
        })
        .collect()
}

/// One packet's identity key (see [`identity_keys`]).
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn identity_key(
    kind: u8,
    flow_hash: u64,
    ip_id: u32,
    ip_len: u32,
    tcp_seq: u32,
    tcp_ack: u32,
    rtp_ssrc: u32,
    rtp_seq: u16,
    l4_hash: u64,
) -> u64 {
    let h = mix64(flow_hash, u64::from(kind));
    match kind {
        KIND_RTP => mix64(h, (u64::from(rtp_ssrc) << 16) | u64::from(rtp_seq)),
        KIND_TCP => {
            let h = mix64(h, (u64::from(tcp_seq) << 32) | u64::from(tcp_ack));
            let h = mix64(h, (u64::from(ip_id) << 32) | u64::from(ip_len));
            mix64(h, l4_hash)
        }
        _ => {
            let h = mix64(h, (u64::from(ip_id) << 32) | u64::from(ip_len));
            mix64(h, l4_hash)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_bytes_is_deterministic_and_length_sensitive() {
        assert_eq!(hash_bytes(b"abc"), hash_bytes(b"abc"));
        assert_ne!(hash_bytes(b"ab"), hash_bytes(b"ab\0"));
        assert_ne!(hash_bytes(b""), hash_bytes(b"\0"));
        assert_ne!(hash_bytes(b"0123456789"), hash_bytes(b"0123456788"));
    }

    #[test]
    fn keys_ignore_fields_outside_the_kind() {
        let cols = |seq: u32, ip_id: u32| IdentityColumns {
            kind: &[KIND_RTP],
            flow_hash: &[7],
            ip_id: Box::leak(Box::new([ip_id])),
            ip_len: &[100],
            tcp_seq: Box::leak(Box::new([seq])),
            tcp_ack: &[0],
            rtp_ssrc: &[1],
            rtp_seq: &[5],
            l4_hash: &[9],
        };
        // An RTP key does not depend on IP ID (random per packet for unconnected sockets).
        assert_eq!(identity_keys(&cols(1, 1)), identity_keys(&cols(1, 2)));
    }

    #[test]
    fn keys_of_packets_alike_but_for_one_field_spread_over_the_top_bits() {
        // The matcher's buckets: 256 by the top 8 bits, ~400 keys each.
        let n = 100_000u32;
        let cols = |seq: Vec<u32>, ssrc_seq: Vec<u16>| {
            let k = |v: u64| vec![v; n as usize];
            let (flow, zero) = (k(7), vec![0u32; n as usize]);
            identity_keys(&IdentityColumns {
                kind: &vec![if ssrc_seq[1] > 0 { KIND_RTP } else { KIND_TCP }; n as usize],
                flow_hash: &flow,
                ip_id: &zero,
                ip_len: &vec![1500; n as usize],
                tcp_seq: &seq,
                tcp_ack: &zero,
                rtp_ssrc: &zero,
                rtp_seq: &ssrc_seq,
                l4_hash: &k(3),
            })
        };
        let tcp = cols((0..n).map(|i| i * 1448).collect(), vec![0; n as usize]);
        let rtp = cols(vec![0; n as usize], (0..n).map(|i| i as u16).collect());
        for keys in [tcp, rtp] {
            let mut buckets = [0u32; 256];
            for k in &keys {
                buckets[(k >> 56) as usize] += 1;
            }
            let (lo, hi) = (buckets.iter().min(), buckets.iter().max());
            assert!(lo > Some(&300) && hi < Some(&500), "{lo:?}..{hi:?}");
        }
    }

    #[test]
    fn tcp_keys_differ_by_ip_id() {
        let k = |ip_id: u32| {
            identity_keys(&IdentityColumns {
                kind: &[KIND_TCP],
                flow_hash: &[7],
                ip_id: &[ip_id],
                ip_len: &[1500],
                tcp_seq: &[1000],
                tcp_ack: &[1],
                rtp_ssrc: &[0],
                rtp_seq: &[0],
                l4_hash: &[3],
            })[0]
        };
        assert_ne!(k(1), k(2));
    }
}
