//! Clocks. Scheduling runs on CLOCK_MONOTONIC; kernel receive timestamps and every time
//! written to the statistics and event log are CLOCK_REALTIME, converted with an offset
//! that the main loop refreshes (so a slewing wall clock is followed).

use crate::packet::Nanos;

fn now(clock: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; the clock ids are valid.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

pub fn mono_ns() -> Nanos {
    now(libc::CLOCK_MONOTONIC) as Nanos
}

pub fn real_ns() -> i64 {
    now(libc::CLOCK_REALTIME)
}

/// CLOCK_REALTIME minus CLOCK_MONOTONIC, read back to back.
pub fn mono_to_real_offset() -> i64 {
    let r1 = real_ns();
    let m = mono_ns() as i64;
    let r2 = real_ns();
    r1 + (r2 - r1) / 2 - m
}

/// Asks the kernel not to coalesce our timer wake-ups (the default slack is 50 us).
pub fn minimise_timer_slack() {
    // SAFETY: prctl with PR_SET_TIMERSLACK takes a plain integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}
