//! Flows: the 5-tuple key of a decoded packet, its directional hash, and the table that
//! numbers flows in order of first appearance.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use crate::wordhash::WordMap;
use std::net::{Ipv4Addr, Ipv6Addr};

use super::packet::Packet;
use crate::keys::hash_bytes;

/// A flow: (ip_version, src, dst, proto, sport, dport), packed into 5 words for fast
/// comparison and hashing.
#[derive(Clone, Copy, Debug)]
pub struct FlowKey([u64; 5]);

impl PartialEq for FlowKey {
    #[inline(always)]
    fn eq(&self, o: &FlowKey) -> bool {
        // word by word: the derived comparison of the array calls memcmp
        let (a, b) = (&self.0, &o.0);
        ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3]) | (a[4] ^ b[4])) == 0
    }
}

impl Eq for FlowKey {}

impl FlowKey {
    #[inline(always)]
    pub fn of(p: &Packet) -> FlowKey {
        FlowKey([
            p.src[0],
            p.src[1],
            p.dst[0],
            p.dst[1],
            (u64::from(p.ip_version) << 40) | (u64::from(p.proto) << 32) | u64::from(p.ports),
        ])
    }

    pub fn ip_version(&self) -> u8 {
        (self.0[4] >> 40) as u8
    }
    pub fn proto(&self) -> u8 {
        (self.0[4] >> 32) as u8
    }
    pub fn sport(&self) -> u16 {
        (self.0[4] >> 16) as u16
    }
    pub fn dport(&self) -> u16 {
        self.0[4] as u16
    }
    fn addr_bytes(&self, first_word: usize) -> [u8; 16] {
        let mut a = [0u8; 16];
        a[..8].copy_from_slice(&self.0[first_word].to_ne_bytes());
        a[8..].copy_from_slice(&self.0[first_word + 1].to_ne_bytes());
        a
    }
    fn addr_len(&self) -> usize {
        if self.ip_version() == 6 {
            16
        } else {
            4
        }
    }
    fn format_addr(&self, first_word: usize) -> String {
        let a = self.addr_bytes(first_word);
        if self.ip_version() == 6 {
            Ipv6Addr::from(a).to_string()
        } else {
            Ipv4Addr::new(a[0], a[1], a[2], a[3]).to_string()
        }
    }
    /// The source address as `std::net` displays it.
    pub fn src_string(&self) -> String {
        self.format_addr(0)
    }
    pub fn dst_string(&self) -> String {
        self.format_addr(2)
    }

    /// The directional flow hash: `hash_bytes` of ip_version (1 byte), source and
    /// destination address (4 or 16 bytes each), proto (1 byte), sport and dport (2 bytes
    /// each, big endian).
    pub fn flow_hash(&self) -> u64 {
        let n = self.addr_len();
        let (src, dst) = (self.addr_bytes(0), self.addr_bytes(2));
        let mut buf = [0u8; 1 + 16 + 16 + 1 + 2 + 2];
        buf[0] = self.ip_version();
        buf[1..1 + n].copy_from_slice(&src[..n]);
        buf[1 + n..1 + 2 * n].copy_from_slice(&dst[..n]);
        let o = 1 + 2 * n;
        buf[o] = self.proto();
        buf[o + 1..o + 3].copy_from_slice(&self.sport().to_be_bytes());
        buf[o + 3..o + 5].copy_from_slice(&self.dport().to_be_bytes());
        hash_bytes(&buf[..o + 5])
    }
}

impl FlowKey {
    /// A slot among `2^bits` for a cache of flows: two multiplies that run side by side
    /// (the map's hash chains five), the product's top bits.
    #[inline(always)]
    fn slot(&self, bits: u32) -> usize {
        const K1: u64 = 0x9E37_79B9_7F4A_7C15;
        const K2: u64 = 0xC2B2_AE3D_27D4_EB4F;
        let w = &self.0;
        let a = (w[0] ^ w[4]).wrapping_mul(K1);
        let b = (w[2] ^ w[1].rotate_left(21) ^ w[3].rotate_left(42)).wrapping_mul(K2);
        ((a ^ b.rotate_left(32)) >> (64 - bits)) as usize
    }
}

impl Hash for FlowKey {
    #[inline(always)]
    fn hash<H: Hasher>(&self, state: &mut H) {
        // FxHash-style word mixing; the final multiply spreads entropy into the top bits
        // that the hash table uses for its control bytes.
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut h = 0u64;
        for w in self.0 {
            h = (h.rotate_left(5) ^ w).wrapping_mul(K);
        }
        state.write_u64(h ^ (h >> 29));
    }
}

/// Flows interned in order of first appearance.
#[derive(Default)]
pub struct FlowTable {
    pub keys: Vec<FlowKey>,
    pub hashes: Vec<u64>,
    index: HashMap<FlowKey, u32, WordMap>,
    /// A direct-mapped cache in front of `index`: slot [`FlowKey::slot`] holds the index
    /// of the last flow seen there, plus one (0: none yet). Interning is a sixth of reading
    /// a capture, and most of it was the hash map's own path (hashing five words, probing
    /// a group, comparing) even with three flows, whose packets interleave so that
    /// "the same flow as the previous packet" missed most of the time. A slot costs one
    /// multiply and one comparison; a flow that shares its slot with another busy one
    /// only falls back to the map.
    recent: Vec<u32>,
}

/// Slots of `FlowTable::recent` (a power of two: 16 KiB, in the core's first-level cache
/// with the keys of a few hundred flows).
const RECENT_BITS: u32 = 12;

impl FlowTable {
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The flows and their hashes, without the index that interns new ones (a table's
    /// copy of a capture's flows).
    pub fn copy_keys(&self) -> FlowTable {
        FlowTable {
            keys: self.keys.clone(),
            hashes: self.hashes.clone(),
            ..FlowTable::default()
        }
    }

    /// The directional hash of flow `idx`; 0 for `NO_FLOW` (a packet that is not IP).
    #[inline]
    pub fn hash_of(&self, idx: u32) -> u64 {
        self.hashes.get(idx as usize).copied().unwrap_or(0)
    }

    /// The index of the packet's flow (which must be IP).
    #[inline]
    pub fn intern(&mut self, p: &Packet) -> u32 {
        let key = FlowKey::of(p);
        if self.recent.is_empty() {
            self.recent = vec![0; 1 << RECENT_BITS];
        }
        let slot = key.slot(RECENT_BITS);
        let cached = self.recent[slot];
        if cached != 0 && self.keys[cached as usize - 1] == key {
            return cached - 1;
        }
        let idx = match self.index.get(&key) {
            Some(&idx) => idx,
            None => {
                let idx = u32::try_from(self.keys.len())
                    .ok()
                    .filter(|&i| i != u32::MAX)
                    .expect("more than 2^32 - 1 flows");
                self.keys.push(key);
                self.hashes.push(key.flow_hash());
                self.index.insert(key, idx);
                idx
            }
        };
        self.recent[slot] = idx + 1;
        idx
    }
}
