//! The huge-page allocator's tests: the cache's choices and cuts, the mapped lengths, and
//! the process's own count of huge pages (tests that count it hold one lock).

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
    let mode =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
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
