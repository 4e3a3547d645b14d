//! What of the captures the passes leave in the page cache.
//!
//! Both passes read the ingress capture from its beginning, and the egress capture when it
//! needs a first pass (otherwise the matching pass reads it once: `side`). When the page
//! cache holds them whole, the second pass reads them from memory. When it cannot, the
//! kernel evicts the pages read longest ago, which are the ones the second pass needs
//! first: each of its reads misses and evicts the next page it needs, and both passes read
//! everything from the disk (measured: a 27 GB pair on a machine with 23 GB of memory, each
//! pass a cold read of both captures). So when the captures exceed what the cache may
//! hold, each capture keeps its beginning there (a share of what the cache may hold: in
//! proportion to their sizes, or as much of the ingress capture as fits when the egress
//! capture is read once) and the passes drop every later page from the cache once read:
//! the second pass (and the next command on the same captures) reads the beginnings from
//! memory and only the rest from the disk.

/// Per capture (ingress, egress): the offset from which the passes drop the pages they
/// read from the page cache (`None`: they keep them all).
pub type CachePlan = [Option<usize>; 2];

/// The plan for captures of `sizes` bytes when the page cache may hold `budget` bytes of
/// them (`None`: unknown, keep everything): each keeps a share of the budget in
/// proportion to its size (the passes read them side by side, in step).
pub fn plan(sizes: [u64; 2], budget: Option<u64>) -> CachePlan {
    let total = sizes[0].saturating_add(sizes[1]);
    match budget {
        Some(budget) if total > budget => {
            let share = |size: u64| u128::from(size) * u128::from(budget) / u128::from(total);
            sizes.map(|s| Some(usize::try_from(share(s)).unwrap_or(usize::MAX)))
        }
        _ => [None, None],
    }
}

/// The plan when the egress capture is read once, in the matching pass (`side`): the
/// ingress capture, read by both passes, keeps as much of its beginning as the cache may
/// hold, and the egress capture the rest of it (for the next command on the same pair).
/// Read cold, each capture then comes from the disk once, where shares in proportion made
/// the ingress capture's end come from it twice.
pub fn plan_egress_read_once(sizes: [u64; 2], budget: Option<u64>) -> CachePlan {
    let total = sizes[0].saturating_add(sizes[1]);
    match budget {
        Some(budget) if total > budget => {
            let ingress = sizes[0].min(budget);
            let offset = |b: u64| Some(usize::try_from(b).unwrap_or(usize::MAX));
            [offset(ingress), offset(budget - ingress)]
        }
        _ => [None, None],
    }
}

/// How far ahead of its reader the matching pass has the kernel read a capture, and in
/// steps of how much.
const AHEAD_BYTES: usize = 256 << 20;
const AHEAD_STEP_BYTES: usize = 16 << 20;

/// Has the kernel read the file at `path` into the page cache up to [`AHEAD_BYTES`] ahead
/// of `consumed` (how far its reader got), until the file's end or `stop`: for captures
/// the page cache holds (`Pass::run`). Read cold by page faults alone, each fault the
/// matching pass's reader took waited for the disk, on its critical path, while the pass's
/// own work could have covered the reads (the 38 M pair cold 12.2-13.7 -> 10.3-10.9 s; so
/// far the kernel was asked to read the whole egress capture in beside the first pass,
/// which then shared the disk: no faster than this, 10.6-10.9 s). Not for pairs larger
/// than the cache: the 190 M pair's cold command took 83-85 s with it, 66-80 s without
/// (its system time 14 s against 5: pages read ahead evicted others still to be read).
/// Pages already cached cost a look-up. Elsewhere than on Linux, nothing.
pub fn keep_ahead(
    path: &std::path::Path,
    consumed: &std::sync::atomic::AtomicUsize,
    stop: &std::sync::atomic::AtomicBool,
) {
    #[cfg(target_os = "linux")]
    if let Ok(file) = std::fs::File::open(path) {
        use std::os::fd::AsRawFd;
        use std::sync::atomic::Ordering::Relaxed;
        let len = file.metadata().map_or(0, |m| m.len());
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        let mut asked = 0usize;
        while asked < len && !stop.load(Relaxed) {
            let want = consumed.load(Relaxed).saturating_add(AHEAD_BYTES).min(len);
            if asked < want {
                let n = AHEAD_STEP_BYTES.min(want - asked);
                // SAFETY: a plain system call on an open descriptor; failure only reads
                // nothing ahead.
                unsafe {
                    libc::posix_fadvise(
                        file.as_raw_fd(),
                        asked as libc::off_t,
                        n as libc::off_t,
                        libc::POSIX_FADV_WILLNEED,
                    );
                }
                asked += n;
            } else {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (path, consumed, stop);
}

/// What the page cache may hold of the captures: the memory the system reports available
/// (`MemAvailable`, which counts reclaimable cache) less a reserve for the match itself
/// and everything else (an eighth, at least 1 GiB). `None` where it is not known.
pub fn budget() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    budget_of(&meminfo)
}

fn budget_of(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    let available = kib.checked_mul(1024)?;
    let reserve = (available / 8).max(1 << 30);
    Some(available.saturating_sub(reserve))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_that_fit_are_kept_whole() {
        assert_eq!(plan([10, 20], Some(30)), [None, None]);
        assert_eq!(plan([10, 20], None), [None, None]);
    }

    #[test]
    fn captures_too_big_keep_shares_of_the_budget_in_proportion() {
        assert_eq!(plan([300, 100], Some(200)), [Some(150), Some(50)]);
        assert_eq!(plan([1, 1], Some(0)), [Some(0), Some(0)]);
    }

    #[test]
    fn an_egress_capture_read_once_leaves_the_cache_to_the_ingress_one() {
        assert_eq!(plan_egress_read_once([10, 20], Some(30)), [None, None]);
        assert_eq!(
            plan_egress_read_once([300, 100], Some(350)),
            [Some(300), Some(50)]
        );
        assert_eq!(
            plan_egress_read_once([300, 100], Some(200)),
            [Some(200), Some(0)]
        );
        assert_eq!(plan_egress_read_once([1, 1], Some(0)), [Some(0), Some(0)]);
    }

    #[test]
    fn budget_is_available_memory_less_a_reserve() {
        let gib = 1u64 << 30;
        let info = |kib: u64| format!("MemTotal: 999 kB\nMemAvailable: {kib} kB\n");
        // 16 GiB available: an eighth (2 GiB) kept back
        assert_eq!(budget_of(&info(16 << 20)), Some(14 * gib));
        // 4 GiB: at least 1 GiB kept back
        assert_eq!(budget_of(&info(4 << 20)), Some(3 * gib));
        assert_eq!(budget_of(&info(1 << 19)), Some(0));
        assert_eq!(budget_of("MemTotal: 1 kB\n"), None);
    }
}
