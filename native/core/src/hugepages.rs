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
mod tests;
