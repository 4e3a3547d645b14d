//! A hasher for keys that are already one well-mixed 64-bit word (flow keys, identity
//! hashes): the maps use the word as it is, since SipHash cost more than the rest of the
//! matcher.

use std::hash::{BuildHasherDefault, Hasher};

/// Takes the one word a key hands it; other input (not used by this crate's keys) is
/// folded in byte by byte.
#[derive(Default)]
pub(crate) struct WordHasher(u64);

impl Hasher for WordHasher {
    #[inline(always)]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline(always)]
    fn write_u64(&mut self, w: u64) {
        self.0 = w;
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }
}

/// The `BuildHasher` for maps keyed by one word.
pub(crate) type WordMap = BuildHasherDefault<WordHasher>;
