//! Time: one monotonic clock for every decision, mapped once to the wall clock for logs.
//!
//! Pacing and congestion control must not jump when NTP steps the wall clock, so all
//! internal times are `CLOCK_MONOTONIC` nanoseconds. Logs must line up with packet
//! captures, whose timestamps are wall-clock (`CLOCK_REALTIME`), so [`Clock`] records the
//! offset between the two once at start-up and every logged time is `mono + offset`.
//! RFC 8888 report timestamps are the middle 32 bits of an NTP timestamp (RFC 3550 4).

/// Nanoseconds per second.
pub const NS_PER_S: i64 = 1_000_000_000;
/// Seconds between the NTP epoch (1900) and the Unix epoch (1970).
const NTP_UNIX_OFFSET_S: i64 = 2_208_988_800;

fn clock_ns(id: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; both clock ids exist on Linux.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec * NS_PER_S + ts.tv_nsec
}

/// Monotonic nanoseconds (arbitrary origin).
pub fn mono_ns() -> i64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// Wall-clock nanoseconds since the Unix epoch.
pub fn realtime_ns() -> i64 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// The run's clock: monotonic time plus a fixed offset to the wall clock.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    offset_ns: i64,
}

impl Clock {
    /// Samples the offset between the wall clock and the monotonic clock now.
    pub fn new() -> Self {
        // Read realtime between two monotonic reads and take the midpoint, so the offset
        // error is at most half of the (tiny) time between the reads.
        let a = mono_ns();
        let r = realtime_ns();
        let b = mono_ns();
        Clock {
            offset_ns: r - (a + (b - a) / 2),
        }
    }

    /// A clock whose wall time equals its monotonic time (tests).
    pub fn identity() -> Self {
        Clock { offset_ns: 0 }
    }

    pub fn now(&self) -> i64 {
        mono_ns()
    }

    /// Wall-clock nanoseconds for a monotonic time.
    pub fn wall(&self, mono: i64) -> i64 {
        mono + self.offset_ns
    }

    /// Monotonic time for a wall-clock time.
    pub fn mono(&self, wall: i64) -> i64 {
        wall - self.offset_ns
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

/// The middle 32 bits of the NTP timestamp of a wall-clock time (units of 1/65536 s),
/// rounded up so that a report stamped now is never before a packet that arrived now.
pub fn ntp32_ceil(wall_ns: i64) -> u32 {
    let secs = wall_ns.div_euclid(NS_PER_S) + NTP_UNIX_OFFSET_S;
    let frac_ns = wall_ns.rem_euclid(NS_PER_S);
    let frac16 = (frac_ns * 65_536 + NS_PER_S - 1) / NS_PER_S; // 0..=65536
    ((secs << 16) + frac16) as u32
}

/// The middle 32 bits of the NTP timestamp of a wall-clock time, rounded to nearest.
pub fn ntp32_round(wall_ns: i64) -> u32 {
    let secs = wall_ns.div_euclid(NS_PER_S) + NTP_UNIX_OFFSET_S;
    let frac_ns = wall_ns.rem_euclid(NS_PER_S);
    let frac16 = (frac_ns * 65_536 + NS_PER_S / 2) / NS_PER_S;
    ((secs << 16) + frac16) as u32
}

/// Nanoseconds from NTP-32 time `a` to `b` (wrapping; valid for |b - a| < 9 hours).
pub fn ntp32_diff_ns(a: u32, b: u32) -> i64 {
    let d = b.wrapping_sub(a) as i32 as i64;
    d * NS_PER_S / 65_536
}

/// The wall-clock time (ns) of an NTP-32 value, taking the candidate nearest `near_wall_ns`.
pub fn ntp32_to_wall_ns(ntp: u32, near_wall_ns: i64) -> i64 {
    near_wall_ns + ntp32_diff_ns(ntp32_round(near_wall_ns), ntp)
}

/// Asks the kernel to wake this thread's timers without the default 50 us slack.
pub fn reduce_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long argument and has no other effect.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Sleeps until monotonic time `deadline_ns` (absolute, so a late wake-up never
/// accumulates into the next one). Returns early on a signal.
pub fn sleep_until(deadline_ns: i64) {
    let ts = libc::timespec {
        tv_sec: deadline_ns.div_euclid(NS_PER_S),
        tv_nsec: deadline_ns.rem_euclid(NS_PER_S),
    };
    // SAFETY: valid timespec; a null remainder is allowed with TIMER_ABSTIME.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        );
    }
}

/// CPU time (user + system) this process has used, in nanoseconds.
pub fn process_cpu_ns() -> i64 {
    clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ntp_round_trip_is_within_one_unit() {
        let wall = 1_700_000_000_123_456_789;
        let ntp = ntp32_round(wall);
        let back = ntp32_to_wall_ns(ntp, wall + 3 * NS_PER_S);
        assert!((back - wall).abs() <= NS_PER_S / 65_536);
    }

    #[test]
    fn ntp_ceil_is_never_before() {
        for wall in [
            0i64,
            1,
            15_258,
            15_259,
            999_999_999,
            1_700_000_000_000_000_001,
        ] {
            let back = ntp32_to_wall_ns(ntp32_ceil(wall), wall);
            assert!(back >= wall - 1, "{wall}: {back}");
        }
    }

    #[test]
    fn diff_wraps() {
        assert_eq!(ntp32_diff_ns(u32::MAX, 0), NS_PER_S / 65_536);
        assert_eq!(ntp32_diff_ns(0, u32::MAX), -NS_PER_S / 65_536);
    }
}
