//! A seeded `getrandom(2)` for the sim testbed's user-mode Linux kernel.
//!
//! A UML kernel asks its host for randomness through the C library's `getrandom`: 32
//! bytes to seed its random generator at boot, and more whenever it reseeds
//! (`arch_get_random_longs`). The host's answer differs on every boot, so a kernel run on
//! simulated time still picks different TCP initial sequence numbers, ephemeral ports,
//! SFQ hash perturbations and DualPI2 marking draws in two runs of one run file. Loaded
//! with `LD_PRELOAD` into the kernel's process (and nothing else), this library answers
//! `getrandom` from a generator seeded by `CGA_SIM_SEED` (a decimal u64), so the guest's
//! randomness follows the run file's seed and nothing of the host.
//!
//! The generator is SplitMix64 over a shared counter: each 8-byte block is a pure
//! function of (seed, block number), so the bytes depend only on the order of the calls,
//! which a kernel on simulated time makes the same in every run. Not cryptographic, and
//! not meant to be: it exists to make experiments repeatable.

use std::ffi::{c_char, c_uint, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The variable that carries the seed; unset or unreadable, the seed is 0.
const SEED_ENV: &CStr = c"CGA_SIM_SEED";

static SEED: AtomicU64 = AtomicU64::new(0);
static SEEDED: AtomicBool = AtomicBool::new(false);
static BLOCK: AtomicU64 = AtomicU64::new(0);

extern "C" {
    fn getenv(name: *const c_char) -> *const c_char;
}

/// The seed, read once. No allocation and no lock anywhere on this path: the caller is
/// the UML kernel, which calls in from its own threads' stacks, and a first version that
/// read the variable through `std::env` (allocating, locking) made runs differ.
fn seed() -> u64 {
    if !SEEDED.load(Ordering::Acquire) {
        // SAFETY: getenv with a NUL-terminated name; the result is NULL or a C string that
        // stays valid while nobody changes the environment (the kernel never does).
        let value = unsafe { getenv(SEED_ENV.as_ptr()) };
        let parsed = if value.is_null() {
            0
        } else {
            // SAFETY: non-null result of getenv, a NUL-terminated string.
            parse_u64(unsafe { CStr::from_ptr(value) }.to_bytes())
        };
        SEED.store(parsed, Ordering::Relaxed);
        SEEDED.store(true, Ordering::Release);
    }
    SEED.load(Ordering::Relaxed)
}

/// Decimal digits to u64 (wrapping; anything else is 0): no allocation.
fn parse_u64(digits: &[u8]) -> u64 {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return 0;
    }
    digits.iter().fold(0u64, |n, d| {
        n.wrapping_mul(10).wrapping_add(u64::from(d - b'0'))
    })
}

/// SplitMix64's output function (Steele, Lea, Flood 2014) of one counter value.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Fills `out` from the seeded stream, 8 bytes per block, blocks taken in call order.
pub fn fill(out: &mut [u8]) {
    let base = seed();
    for chunk in out.chunks_mut(8) {
        let n = BLOCK.fetch_add(1, Ordering::Relaxed);
        let word = mix(base.wrapping_add(n.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15)));
        chunk.copy_from_slice(&word.to_le_bytes()[..chunk.len()]);
    }
}

/// `ssize_t getrandom(void *buf, size_t buflen, unsigned int flags)`: always the whole
/// request (the seeded stream never blocks and never runs dry); `flags` are ignored.
///
/// # Safety
/// `buf` must be valid for writes of `buflen` bytes, as getrandom(2) requires.
#[no_mangle]
pub unsafe extern "C" fn getrandom(buf: *mut c_void, buflen: usize, _flags: c_uint) -> isize {
    if buf.is_null() || buflen == 0 {
        return 0;
    }
    // SAFETY: the caller guarantees `buf` holds `buflen` writable bytes (getrandom's contract).
    let out = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), buflen) };
    fill(out);
    isize::try_from(buflen).unwrap_or(isize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_parse_without_allocating() {
        assert_eq!(parse_u64(b"12345"), 12345);
        assert_eq!(parse_u64(b""), 0);
        assert_eq!(parse_u64(b"12a"), 0);
    }

    #[test]
    fn blocks_are_a_function_of_seed_and_position() {
        let a = mix(7u64.wrapping_add(0x9e37_79b9_7f4a_7c15));
        let b = mix(8u64.wrapping_add(0x9e37_79b9_7f4a_7c15));
        assert_ne!(a, b, "another seed gives another first block");
        assert_eq!(a, mix(7u64.wrapping_add(0x9e37_79b9_7f4a_7c15)));
    }

    #[test]
    fn a_request_is_filled_whole_and_the_stream_moves_on() {
        let mut first = [0u8; 13];
        let mut second = [0u8; 13];
        fill(&mut first);
        fill(&mut second);
        assert_ne!(first, [0u8; 13]);
        assert_ne!(first, second);
    }
}
