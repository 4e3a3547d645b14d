//! An allocator that maps large blocks on transparent huge pages.
//!
//! Matching a few million packets fills about a gigabyte of fresh columns. Through the C
//! allocator that cost more kernel time than the matcher's own work: a quarter of a million
//! 4 KiB page faults, each charged and zeroed and later unmapped one by one, and every
//! doubling of a growing column copied (the C allocator serves blocks below its adaptive
//! threshold, up to 32 MiB, from its heap, where `realloc` copies). Blocks of at least
//! [`LARGE_BYTES`] are therefore mapped here on their own:
//! - aligned to 2 MiB, in whole 2 MiB pages unless the last would hold little of the block
//!   (`mapped_len`), and marked `MADV_HUGEPAGE`, so the kernel backs them with 2 MiB pages
//!   (512 times fewer faults) where the system allows it (`transparent_hugepage/enabled`
//!   set to `madvise` or `always`; elsewhere the advice is ignored);
//! - grown with `mremap`, which moves page tables instead of copying bytes;
//! - when freed, kept for reuse up to [`CACHE_BYTES`] in all (the rest is unmapped): a
//!   fresh mapping is zeroed page by page by the kernel, and the matcher's and the Parquet
//!   writer's temporaries (sort buffers, dictionary indices, pages) come and go by the
//!   hundred megabytes; zeroing them again took a third of the writer's time. A request
//!   takes the smallest kept block that holds it, and a large rest stays kept.
//!
//! Smaller blocks go to the system allocator untouched.

use std::alloc::{GlobalAlloc, Layout, System};

/// Blocks this large or larger are mapped on their own (see [`mapped_len`]: from 256 KiB
/// past a huge page boundary, on a whole huge page). Blocks of half a MiB to 2 MiB come and
/// go by the hundred: the Parquet writer's per-chunk buffers (a row group's 4-byte values,
/// 1 MiB) and a streaming match's chunk columns (0.5-1 MiB each), which the C allocator
/// served from fresh 4 KiB pages time and again. With the threshold at 2 MiB the in-memory
/// match of the benchmark's mix B took 8 k page faults and the forced streaming one 55 k;
/// at 512 KiB, 4 k and 13 k (0.357 -> 0.332 s and 0.70 -> 0.58 s; a streaming match holds
/// ~100 MB more, its columns on whole huge pages).
pub const LARGE_BYTES: usize = 512 << 10;
const HUGE_PAGE: usize = 2 << 20;
const PAGE: usize = 4096;

/// Freed large blocks kept for reuse, at most this many bytes in all (none where blocks
/// cannot be trimmed).
pub const CACHE_BYTES: usize = if cfg!(target_os = "linux") {
    256 << 20
} else {
    0
};
const CACHE_SLOTS: usize = 32;

/// The system allocator, with large blocks mapped on huge pages.
pub struct HugePages;

/// Freed mappings: (address, mapped length); a length of 0 marks a free slot.
struct Cache {
    blocks: [(usize, usize); CACHE_SLOTS],
    bytes: usize,
}

static CACHE: std::sync::Mutex<Cache> = std::sync::Mutex::new(Cache::EMPTY);

fn cache() -> std::sync::MutexGuard<'static, Cache> {
    // Nothing panics while the lock is held; a poisoned lock still holds a valid cache.
    CACHE.lock().unwrap_or_else(|e| e.into_inner())
}

impl Cache {
    /// No block kept.
    const EMPTY: Cache = Cache {
        blocks: [(0, 0); CACHE_SLOTS],
        bytes: 0,
    };

    /// Takes the smallest kept block of at least `len` bytes.
    fn take(&mut self, len: usize) -> Option<(usize, usize)> {
        let fits = |&(_, l): &(usize, usize)| l >= len;
        let slot = (0..CACHE_SLOTS)
            .filter(|&k| fits(&self.blocks[k]))
            .min_by_key(|&k| self.blocks[k].1)?;
        let block = std::mem::take(&mut self.blocks[slot]);
        self.bytes -= block.1;
        Some(block)
    }

    /// Empties the cache; returns the blocks it held (free slots have length 0).
    fn drain(&mut self) -> [(usize, usize); CACHE_SLOTS] {
        self.bytes = 0;
        std::mem::replace(&mut self.blocks, [(0, 0); CACHE_SLOTS])
    }

    /// Takes the largest kept block (for a request none holds).
    fn take_largest(&mut self) -> Option<(usize, usize)> {
        let slot = (0..CACHE_SLOTS)
            .filter(|&k| self.blocks[k].1 > 0)
            .max_by_key(|&k| self.blocks[k].1)?;
        let block = std::mem::take(&mut self.blocks[slot]);
        self.bytes -= block.1;
        Some(block)
    }

    /// Keeps a block if there is room, or makes room by giving back a smaller kept block
    /// (the caller unmaps it and asks again): a request is served from the front of a
    /// larger block, so the larger ones are worth their slots. Requests cut blocks into
    /// fronts and rests, and with the slots full of rests of a few MiB, each freed
    /// 10 MiB row-group buffer was unmapped and the next one mapped afresh: 1.7 GB of
    /// fresh pages, zeroed by the kernel, in a 38 M-packet streaming match.
    fn keep(&mut self, addr: usize, len: usize) -> Keep {
        let free_slot = self.blocks.iter().position(|&(_, l)| l == 0);
        if let Some(slot) = free_slot.filter(|_| self.bytes + len <= CACHE_BYTES) {
            self.blocks[slot] = (addr, len);
            self.bytes += len;
            return Keep::Kept;
        }
        let smallest = (0..CACHE_SLOTS)
            .filter(|&k| self.blocks[k].1 > 0)
            .min_by_key(|&k| self.blocks[k].1);
        match smallest {
            Some(k) if self.blocks[k].1 < len && len <= CACHE_BYTES => {
                let block = std::mem::take(&mut self.blocks[k]);
                self.bytes -= block.1;
                Keep::Evicted(block)
            }
            _ => Keep::Refused,
        }
    }
}

/// What `Cache::keep` did with a block.
#[derive(Debug, PartialEq, Eq)]
enum Keep {
    Kept,
    /// Not kept: the caller unmaps it.
    Refused,
    /// Not yet kept: this smaller block was taken out to make room (the caller unmaps
    /// it and asks again).
    Evicted((usize, usize)),
}

/// A block of `size` bytes: a kept one (its pages already faulted in, its bytes stale), the
/// largest kept one grown, or a fresh mapping.
unsafe fn take_or_map(size: usize) -> *mut u8 {
    let len = mapped_len(size);
    let kept = cache().take(len);
    match kept {
        Some((addr, had)) => {
            // The block's length must be what `dealloc` will be told. A large rest, from
            // the next huge page on, is kept as a block of its own (the matcher's freed
            // sort buffers then serve the Parquet writer's pages); anything else is given
            // back.
            let cut = len.next_multiple_of(HUGE_PAGE).min(had);
            let rest_kept = had - cut >= LARGE_BYTES && keep_block(addr + cut, had - cut);
            let end = if rest_kept { cut } else { had };
            if end > len {
                sys::unmap((addr + len) as *mut u8, end - len);
            }
            addr as *mut u8
        }
        // None holds it: the largest grows into it (its pages moved, not zeroed again).
        None => {
            let largest = cache().take_largest();
            match largest {
                Some((addr, had)) => {
                    let grown = sys::remap(addr as *mut u8, had, len);
                    if grown.is_null() {
                        sys::unmap(addr as *mut u8, had);
                        sys::map(len)
                    } else {
                        grown
                    }
                }
                None => sys::map(len),
            }
        }
    }
}

/// For a process that matches captures and then exits (the `packets` command), not for a
/// long-lived one: the C allocator keeps the blocks below [`LARGE_BYTES`] that are freed
/// for reuse, instead of mapping each block above its threshold on its own and trimming
/// its heaps at every large free. A match's chunks come and go by the megabyte (each
/// chunk's columns, keys, sort buffers and row groups), and every block given back was
/// a page fault, a zeroed page and a TLB flush on both cores again: 0.15-0.35 s of
/// system time of a 4 M-packet match (a fifth of its CPU time in memory, a tenth
/// streaming). The heaps keep at most `TRIM_BYTES` free at their top.
pub fn keep_freed_blocks() {
    /// glibc's largest mmap threshold (`DEFAULT_MMAP_THRESHOLD_MAX` on 64-bit).
    const MMAP_THRESHOLD: i32 = 32 << 20;
    const TRIM_BYTES: i32 = 256 << 20;
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: sets two of glibc's allocator parameters; no memory is touched.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_BYTES);
    }
}

/// Unmaps every kept block: called when a whole operation ends, so that a long-lived
/// process (a notebook) holds nothing between operations.
pub fn release_cache() {
    let blocks = cache().drain();
    for (addr, len) in blocks {
        if len > 0 {
            // SAFETY: a kept block is a whole mapping no one else holds.
            unsafe { sys::unmap(addr as *mut u8, len) };
        }
    }
}

/// Keeps a mapped block in the cache if it earns a slot (see `Cache::keep`).
unsafe fn keep_block(addr: usize, len: usize) -> bool {
    loop {
        // the lock is released before unmapping
        let kept = cache().keep(addr, len);
        match kept {
            Keep::Kept => return true,
            Keep::Refused => return false,
            Keep::Evicted((addr, len)) => sys::unmap(addr as *mut u8, len),
        }
    }
}

unsafe fn keep_or_unmap(ptr: *mut u8, size: usize) {
    let len = mapped_len(size);
    if !keep_block(ptr as usize, len) {
        sys::unmap(ptr, len);
    }
}

fn is_large(layout: &Layout) -> bool {
    layout.size() >= LARGE_BYTES && layout.align() <= PAGE
}

/// What a block of `size` bytes maps: whole huge pages, unless the last would hold less
/// than [`SMALL_TAIL_BYTES`] of it (those are left on 4 KiB pages). The kernel backs only
/// the whole huge pages of a mapping with huge pages, and per byte 4 KiB pages cost nine
/// times as much to fault in, zero and unmap (1.6 us a page against 95 us a huge page on
/// the machine of 2026-11-28): the tails of a capture's columns, 4 KiB pages through 40 MB,
/// were most of a 4 M-packet match's page faults.
fn mapped_len(size: usize) -> usize {
    // Only where blocks are mapped on huge pages (`sys`): elsewhere it would cost memory.
    if cfg!(target_os = "linux") && size % HUGE_PAGE >= SMALL_TAIL_BYTES {
        size.next_multiple_of(HUGE_PAGE)
    } else {
        size.next_multiple_of(PAGE)
    }
}

/// A block's last bytes past its whole huge pages are mapped on a huge page of their own
/// from this many on: a huge page costs as much as this many bytes of 4 KiB pages.
const SMALL_TAIL_BYTES: usize = 256 << 10;

/// The mappings themselves. Every length here is a mapped length (`mapped_len` of a block's
/// size, or a part of such a block cut at a page): a block is unmapped or remapped with the
/// length it was mapped with.
#[cfg(target_os = "linux")]
mod sys {
    use super::HUGE_PAGE;
    use std::ptr::null_mut;

    /// Maps `len` bytes at a 2 MiB boundary, advised to use huge pages (null on failure).
    pub(super) unsafe fn map(len: usize) -> *mut u8 {
        let padded = len + HUGE_PAGE;
        let raw = libc::mmap(
            null_mut(),
            padded,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if raw == libc::MAP_FAILED {
            return null_mut();
        }
        // Trim the padding so that the block starts on a huge page.
        let raw = raw as usize;
        let start = raw.next_multiple_of(HUGE_PAGE);
        if start > raw {
            libc::munmap(raw as *mut libc::c_void, start - raw);
        }
        let tail = raw + padded - (start + len);
        if tail > 0 {
            libc::munmap((start + len) as *mut libc::c_void, tail);
        }
        advise(start as *mut u8, len);
        start as *mut u8
    }

    pub(super) unsafe fn advise(ptr: *mut u8, len: usize) {
        // A failure (no THP in this kernel) only leaves the block on small pages.
        libc::madvise(ptr as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }

    pub(super) unsafe fn unmap(ptr: *mut u8, len: usize) {
        libc::munmap(ptr as *mut libc::c_void, len);
    }

    /// Grows or shrinks a mapped block, moving it if need be (null on failure).
    pub(super) unsafe fn remap(ptr: *mut u8, old: usize, new: usize) -> *mut u8 {
        let q = libc::mremap(ptr as *mut libc::c_void, old, new, libc::MREMAP_MAYMOVE);
        if q == libc::MAP_FAILED {
            return null_mut();
        }
        advise(q as *mut u8, new);
        q as *mut u8
    }
}

#[cfg(not(target_os = "linux"))]
mod sys {
    use std::alloc::{GlobalAlloc, Layout, System};

    fn layout(size: usize) -> Layout {
        Layout::from_size_align(size, super::PAGE).expect("block size")
    }
    pub(super) unsafe fn map(size: usize) -> *mut u8 {
        System.alloc_zeroed(layout(size))
    }
    pub(super) unsafe fn unmap(ptr: *mut u8, size: usize) {
        System.dealloc(ptr, layout(size))
    }
    pub(super) unsafe fn remap(ptr: *mut u8, old: usize, new: usize) -> *mut u8 {
        System.realloc(ptr, layout(old), new)
    }
}

// SAFETY: large blocks are whole private mappings of at least the layout's size, aligned
// to 2 MiB (more than any layout this path accepts); each is unmapped or remapped only with
// the size it was given, as `GlobalAlloc` guarantees. Everything else is `System`'s.
unsafe impl GlobalAlloc for HugePages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_large(&layout) {
            take_or_map(layout.size())
        } else {
            System.alloc(layout)
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if is_large(&layout) {
            // Fresh anonymous pages read as zeros.
            sys::map(mapped_len(layout.size()))
        } else {
            System.alloc_zeroed(layout)
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_large(&layout) {
            keep_or_unmap(ptr, layout.size())
        } else {
            System.dealloc(ptr, layout)
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
        match (is_large(&layout), is_large(&new_layout)) {
            (false, false) => System.realloc(ptr, layout, new_size),
            (true, true) => sys::remap(ptr, mapped_len(layout.size()), mapped_len(new_size)),
            _ => {
                // Crossing the threshold: a new block of the other kind, and a copy.
                let new = self.alloc(new_layout);
                if !new.is_null() {
                    std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
                new
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Held by the tests that free many huge pages and by the one that counts them (the
    /// process's count): run together, the count missed what the other freed meanwhile.
    static HUGE_PAGES_COUNTED: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn counting() -> std::sync::MutexGuard<'static, ()> {
        HUGE_PAGES_COUNTED.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[test]
    fn the_cache_gives_the_smallest_block_of_the_request_or_more() {
        let mut c = Cache::EMPTY;
        let mb = 1 << 20;
        for (addr, len) in [(0x1000, 40 * mb), (0x2000, 12 * mb), (0x3000, 9 * mb)] {
            assert_eq!(c.keep(addr, len), Keep::Kept);
        }
        assert_eq!(c.take(41 * mb), None);
        assert_eq!(c.take(8 * mb), Some((0x3000, 9 * mb)));
        assert_eq!(c.take(8 * mb), Some((0x2000, 12 * mb)));
        assert_eq!(c.bytes, 40 * mb);
        // What would take the cache past CACHE_BYTES first makes room by evicting a
        // smaller block; a block larger than CACHE_BYTES is refused.
        assert_eq!(
            c.keep(0x4000, CACHE_BYTES),
            Keep::Evicted((0x1000, 40 * mb))
        );
        assert_eq!(c.keep(0x5000, CACHE_BYTES + 1), Keep::Refused);
        assert_eq!((c.bytes, c.take(mb)), (0, None));
    }

    #[test]
    fn a_freed_block_takes_the_slot_of_a_smaller_one_when_all_are_full() {
        let mut c = Cache::EMPTY;
        let mb = 1 << 20;
        for k in 0..CACHE_SLOTS {
            assert_eq!(c.keep(0x1000 * (k + 1), (2 + k % 3) * mb), Keep::Kept);
        }
        // A smaller or equal block than every kept one is refused; a larger one evicts
        // the smallest, then is kept once asked again.
        assert_eq!(c.keep(0xf000_0000, 2 * mb), Keep::Refused);
        assert_eq!(
            c.keep(0xf000_0000, 10 * mb),
            Keep::Evicted((0x1000, 2 * mb))
        );
        assert_eq!(c.keep(0xf000_0000, 10 * mb), Keep::Kept);
        // A request no block holds takes the largest (which then grows into it).
        assert_eq!(c.take(11 * mb), None);
        assert_eq!(c.take_largest(), Some((0xf000_0000, 10 * mb)));
    }

    #[test]
    fn a_kept_block_grown_for_a_larger_request_keeps_its_pages_and_maps_the_rest() {
        // What `take_or_map` does with the largest kept block when none holds a request
        // (which block it takes is `Cache::take_largest`'s, tested above; the cache itself
        // is shared with the other tests, so the growth is tested on a block of its own).
        let (small, big) = (4 << 20, 24 << 20);
        unsafe {
            let p = sys::map(small);
            assert!(!p.is_null());
            p.write_bytes(5, small);
            let q = sys::remap(p, small, big);
            assert!(!q.is_null());
            // its pages moved, not zeroed (a fresh mapping would read as zeros)
            assert!(std::slice::from_raw_parts(q, small).iter().all(|&b| b == 5));
            // and all of it mapped, to its last byte
            q.write_bytes(6, big);
            assert!(std::slice::from_raw_parts(q, big).iter().all(|&b| b == 6));
            sys::unmap(q, big);
        }
    }

    #[test]
    fn a_large_kept_block_serves_smaller_ones_from_its_front_and_keeps_the_rest() {
        let _counting = counting();
        let a = HugePages;
        release_cache();
        let big = Layout::from_size_align(64 << 20, 64).unwrap();
        let small = Layout::from_size_align(5 << 20, 64).unwrap();
        unsafe {
            let p = a.alloc(big);
            p.write_bytes(3, big.size());
            a.dealloc(p, big);
            // cut from the freed block (other tests may share the cache: look for it)
            let q = a.alloc(small);
            let r = a.alloc(small);
            for x in [q, r] {
                assert!(!x.is_null());
                x.write_bytes(4, small.size());
            }
            if q == p {
                // the second one came from what was left of the first block
                assert_eq!(r as usize, p as usize + (6 << 20));
            }
            a.dealloc(q, small);
            a.dealloc(r, small);
        }
    }

    #[test]
    fn a_drained_cache_holds_nothing_and_hands_back_every_block() {
        let mut c = Cache::EMPTY;
        assert_eq!(c.keep(0x1000, 8 << 20), Keep::Kept);
        assert_eq!(c.keep(0x2000, 6 << 20), Keep::Kept);
        let mut held: Vec<_> = c.drain().into_iter().filter(|&(_, l)| l > 0).collect();
        held.sort_unstable();
        assert_eq!(held, [(0x1000, 8 << 20), (0x2000, 6 << 20)]);
        assert_eq!((c.bytes, c.take(1 << 20)), (0, None));
    }

    #[test]
    fn blocks_stay_usable_through_alloc_realloc_and_free() {
        let a = HugePages;
        // Sizes on both sides of the threshold, grown and shrunk across it.
        let sizes = [16, LARGE_BYTES - 1, LARGE_BYTES, 3 * LARGE_BYTES + 12345];
        for size in sizes {
            for new_size in [size / 3 + 1, size * 2, LARGE_BYTES + 1] {
                let layout = Layout::from_size_align(size, 64).unwrap();
                unsafe {
                    let p = a.alloc_zeroed(layout);
                    assert!(!p.is_null());
                    assert!(std::slice::from_raw_parts(p, size).iter().all(|&b| b == 0));
                    p.write_bytes(7, size);
                    let q = a.realloc(p, layout, new_size);
                    assert!(!q.is_null());
                    let kept = size.min(new_size);
                    assert!(std::slice::from_raw_parts(q, kept).iter().all(|&b| b == 7));
                    q.write_bytes(9, new_size);
                    a.dealloc(q, Layout::from_size_align(new_size, 64).unwrap());
                }
            }
        }
        // A vector grown one element at a time (this crate's tests run on `HugePages`)
        // keeps its contents across every move.
        let mut v: Vec<u64> = Vec::new();
        for i in 0..(3 * LARGE_BYTES as u64 / 8) {
            v.push(i);
        }
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_block_maps_whole_huge_pages_unless_its_tail_is_small() {
        let (mb, kb) = (1usize << 20, 1usize << 10);
        assert_eq!(mapped_len(2 * mb), 2 * mb);
        assert_eq!(mapped_len(2 * mb + 300 * kb), 4 * mb);
        assert_eq!(mapped_len(5 * mb), 6 * mb);
        assert_eq!(mapped_len(4 * mb + 100 * kb), 4 * mb + 100 * kb);
        // a small tail is rounded to a page, which may take it to the threshold
        assert_eq!(mapped_len(4 * mb + 254 * kb), 4 * mb + 256 * kb);
        assert_eq!(mapped_len(4 * mb + 1), 4 * mb + PAGE);
    }

    #[test]
    fn blocks_of_every_tail_survive_reuse_from_the_cache() {
        // Freed blocks are kept and then cut or grown for other sizes: each keeps the
        // length it was mapped with (a length taken for a size, and rounded again, once
        // unmapped another mapping's pages).
        let _counting = counting();
        let a = HugePages;
        let (mb, kb) = (1usize << 20, 1usize << 10);
        let sizes = [
            4 * mb + 254 * kb,
            4 * mb + 256 * kb,
            2 * mb + 300 * kb,
            9 * mb + 100 * kb,
            3 * mb + 1,
            6 * mb,
        ];
        for round in 0..3 {
            let blocks: Vec<(*mut u8, Layout)> = sizes
                .iter()
                .map(|&size| {
                    let grown = size + round * (mb + 300 * kb);
                    let layout = Layout::from_size_align(size, 64).unwrap();
                    unsafe {
                        let p = a.alloc(layout);
                        assert!(!p.is_null());
                        p.write_bytes(1, size);
                        let q = a.realloc(p, layout, grown);
                        assert!(!q.is_null());
                        assert!(std::slice::from_raw_parts(q, size).iter().all(|&b| b == 1));
                        q.write_bytes(2, grown);
                        (q, Layout::from_size_align(grown, 64).unwrap())
                    }
                })
                .collect();
            for (p, layout) in blocks {
                unsafe {
                    assert!(std::slice::from_raw_parts(p, layout.size())
                        .iter()
                        .all(|&b| b == 2));
                    a.dealloc(p, layout);
                }
            }
        }
        release_cache();
    }

    /// AnonHugePages of this process, in KiB.
    fn huge_kib() -> u64 {
        let text = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix("AnonHugePages:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    #[test]
    fn large_blocks_get_huge_pages_where_the_system_allows_it() {
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        if !mode.contains("[madvise]") {
            // `always` backs blocks with huge pages without advice, `never` refuses them:
            // only under `madvise` does the advice make the difference tested here.
            return;
        }
        let _counting = counting();
        let size = 64 << 20;
        let layout = Layout::from_size_align(size, 64).unwrap();
        let before = huge_kib();
        unsafe {
            // zeroed: a fresh mapping, never a block another test left in the cache
            let p = HugePages.alloc_zeroed(layout);
            p.write_bytes(1, size);
            let gained = huge_kib().saturating_sub(before);
            HugePages.dealloc(p, layout);
            // All but the partial huge pages at both ends, allowing for fragmentation.
            assert!(gained >= 32 << 10, "only {gained} KiB on huge pages");
        }
    }
}
