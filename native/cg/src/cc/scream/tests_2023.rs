//! `Profile::Ericsson2023` (aca6556, v2023.rs) against the default (c8f84c3): each test
//! checks a rule the two revisions do not share, so it fails if the profile is a copy of
//! the default.

use super::sim::*;
use super::tests::{fb, limits};
use super::*;

fn profile(p: Profile, l4s: bool, max_mbps: f64) -> Scream {
    Scream::new(ScreamConfig::with_profile(
        l4s,
        limits(max_mbps),
        1.0 / 60.0,
        p,
    ))
}

#[test]
fn the_profile_takes_aca6556s_constants() {
    let (old, new) = (Profile::Ericsson2023.params(), Profile::Ericsson.params());
    assert_eq!(old.l4s_alpha_gain, Some(1.0 / 16.0)); // E23:40
    assert_eq!(new.l4s_alpha_gain, None);
    assert_eq!(
        (old.l4s_alpha_interval_s, new.l4s_alpha_interval_s),
        (0.03, 0.01)
    );
    assert!(!old.reduce_jitter && new.reduce_jitter);
    assert!(!old.conditional_loss_backoff && new.conditional_loss_backoff);
    // Their receivers: a report every 16 packets in 2023, every 32 from 2024.
    assert!(!old.sparse_feedback && new.sparse_feedback);
    assert!(!profile(Profile::Ericsson2023, true, 30.0).wants_sparse_feedback());
    assert_eq!((old.pacing_interval_s, new.pacing_interval_s), (0.05, 0.1));
    assert_eq!((old.pacing_history, new.pacing_history), (8, 4));
    assert_eq!(old.window_rule, WindowRule::Ledbat2023);
    assert_eq!(new.window_rule, WindowRule::VirtualCe);
    assert_eq!((old.min_ref_wnd, new.min_ref_wnd), (5000.0, MIN_REF_WND));
    assert_eq!(old.start.map(|s| s.s_rtt_s), Some(0.02)); // E23:97
    assert_eq!(new.start.map(|s| s.s_rtt_s), Some(0.05));
    assert_eq!(old.rate_adjust_gain, 0.0);
    assert!(!old.srtt_slow_when_app_limited && new.srtt_slow_when_app_limited);
    // The configuration carries the profile's gain unless an option replaces it.
    let cfg = ScreamConfig::with_profile(true, limits(50.0), 1.0 / 60.0, Profile::Ericsson2023);
    assert_eq!(cfg.l4s_alpha_gain, Some(1.0 / 16.0));
    assert!(!cfg.reduce_jitter);
    assert!(ScreamConfig::new(true, limits(50.0), 1.0 / 60.0)
        .l4s_alpha_gain
        .is_none());
}

#[test]
fn l4s_alpha_falls_with_one_sixteenth_not_one_128th() {
    // From the initial 0.1, all marked for one update then none for one: 1/16 up and down
    // in aca6556; 1/8 up and 1/128 down in c8f84c3.
    let step = |p: Profile| {
        let mut s = profile(p, true, 50.0);
        s.update_l4s_alpha(0.1, 0.05, 20, 20);
        let up = s.l4s_alpha();
        s.update_l4s_alpha(0.2, 0.05, 20, 0);
        (up, s.l4s_alpha())
    };
    let (up, down) = step(Profile::Ericsson2023);
    assert!((up - (0.1 + 0.9 / 16.0)).abs() < 1e-12, "{up}");
    assert!((down - up * 15.0 / 16.0).abs() < 1e-12, "{down}");
    let (up, down) = step(Profile::Ericsson);
    assert!((up - (0.1 + 0.9 / 8.0)).abs() < 1e-12, "{up}");
    assert!((down - up * 127.0 / 128.0).abs() < 1e-12, "{down}");
}

#[test]
fn l4s_alpha_waits_30_ms_between_updates() {
    let mut old = profile(Profile::Ericsson2023, true, 50.0);
    let mut new = profile(Profile::Ericsson, true, 50.0);
    for s in [&mut old, &mut new] {
        s.update_l4s_alpha(0.1, 0.05, 20, 20);
        s.update_l4s_alpha(0.12, 0.05, 20, 20); // 20 ms later
    }
    assert!(
        (old.l4s_alpha() - (0.1 + 0.9 / 16.0)).abs() < 1e-12,
        "one update only"
    );
    assert!(new.l4s_alpha() > 0.1 + 0.9 / 8.0 + 0.05, "two updates");
}

/// A classic controller after 5 s of reports every 5 ms at no queue (a 10 ms one-way delay,
/// taken as the base), sRTT and the start-up scale settled; and the next report's time, ms.
fn settled(p: Profile) -> (Scream, f64) {
    let mut s = profile(p, false, 1000.0);
    s.on_feedback(&fb(0.0, 1000, 20.0, 10.0));
    let mut t = 5.0;
    while t < 5000.0 {
        s.on_sent((t * 1e6) as i64, 1000, 100_000);
        s.on_feedback(&fb(t, 5000, 20.0, 10.0));
        t += 5.0;
    }
    (s, t)
}

/// Feeds 20 reports every 5 ms at a fixed queue delay after `settled`; returns the window
/// before and after.
fn windows_at(p: Profile, qdelay_ms: f64) -> (f64, f64) {
    let (mut s, mut t) = settled(p);
    let before = s.ref_wnd;
    for _ in 0..20 {
        s.on_feedback(&fb(t, 5000, 20.0, 10.0 + qdelay_ms));
        t += 5.0;
    }
    (before, s.ref_wnd)
}

#[test]
fn queue_delay_moves_the_window_by_its_distance_from_the_target() {
    // 45 ms of queue (three quarters of the 60 ms target): c8f84c3's virtual CE cuts the
    // window; aca6556 has none and still grows it, by a quarter of its gain.
    let (before, after) = windows_at(Profile::Ericsson2023, 45.0);
    assert!(after > before, "aca6556 grows: {before} -> {after}");
    let (before, after) = windows_at(Profile::Ericsson, 45.0);
    assert!(after < before, "c8f84c3 cuts: {before} -> {after}");
    // Over the target, aca6556 shrinks by twice the acknowledged bytes' share of the
    // distance: at 90 ms (off target -0.5) by about 5000 x 1 x mss/cwnd per report.
    let (before, after) = windows_at(Profile::Ericsson2023, 90.0);
    assert!(after < before, "{before} -> {after}");
}

#[test]
fn the_target_is_the_window_over_srtt_over_half_the_pacing_headroom() {
    // St23:346-377: 8 cwnd / sRTT / 1.25 while L4S marks (the first 10 s count), and
    // / 1.25 again without L4S. c8f84c3 divides by 1.1 and the packet overhead.
    let mut l4s = profile(Profile::Ericsson2023, true, 1000.0);
    let mut classic = profile(Profile::Ericsson2023, false, 1000.0);
    for s in [&mut l4s, &mut classic] {
        s.on_feedback(&fb(0.0, 0, 20.0, 10.0));
    }
    let rtt = l4s.s_rtt().unwrap();
    let expect = 8.0 * l4s.ref_wnd / rtt / 1.25;
    assert!((l4s.target_bitrate() / expect - 1.0).abs() < 1e-9);
    let expect = 8.0 * classic.ref_wnd / rtt / 1.25 / 1.25;
    assert!((classic.target_bitrate() / expect - 1.0).abs() < 1e-9);
    let mut new = profile(Profile::Ericsson, true, 1000.0);
    new.on_feedback(&fb(0.0, 0, 20.0, 10.0));
    let rtt = new.s_rtt().unwrap();
    let ratio = new.target_bitrate() / (8.0 * new.ref_wnd / rtt / 1.25);
    assert!(
        ratio > 1.02,
        "c8f84c3's is 1/1.1 x 1000/1020 x sRTT/(sRTT + 1 ms): {ratio}"
    );
}

#[test]
fn the_send_window_doubles_while_l4s_marks() {
    // E23:413-417: cwnd x 2 + MSS with L4S active, cwnd + MSS otherwise.
    let l4s = profile(Profile::Ericsson2023, true, 1000.0);
    let classic = profile(Profile::Ericsson2023, false, 1000.0);
    let w = l4s.ref_wnd;
    assert!((l4s.send_window(0).unwrap() - (2.0 * w + MSS)).abs() < 1e-9);
    assert!((classic.send_window(0).unwrap() - (w + MSS)).abs() < 1e-9);
}

#[test]
fn with_steady_marks_the_flow_holds_a_rate_and_backs_off_on_ce() {
    // Closed loop: 50 Mbit/s, 20 ms RTT, every 25th packet CE-marked. The window settles
    // (no runaway to the maximum) and CE reactions happen.
    let cc = profile(Profile::Ericsson2023, true, 100.0);
    let r = simulate(cc, 50.0, 10.0, 1_000_000, Marking::Fraction(0.04), 20.0);
    let delivered = mean_after(&r, 10.0, |s| s.1);
    assert!(delivered > 2.0 && delivered < 50.0, "delivered {delivered}");
    let target = mean_after(&r, 10.0, |s| s.3);
    assert!(target < 99.0, "target {target}");
}

#[test]
fn the_window_moves_every_30_ms_or_after_a_frame_not_at_every_report() {
    // E23:734: a report updates the window 30 ms after the last update, at a loss or CE
    // event, or after a new frame; c8f84c3 updates it at every report.
    let changes = |p: Profile, frame_every: Option<usize>| {
        let (mut s, mut t) = settled(p);
        let mut changed = 0;
        for k in 0..60 {
            if frame_every.is_some_and(|n| k % n == 0) {
                s.on_frame((t * 1e6) as i64 - 1, 20_000, 0.0, 0);
            }
            // 90 ms of queue, over the 60 ms target: each update shrinks the window.
            let before = s.ref_wnd;
            s.on_sent((t * 1e6) as i64, 1000, 100_000);
            s.on_feedback(&fb(t, 5000, 20.0, 100.0));
            changed += usize::from(s.ref_wnd != before);
            t += 5.0;
        }
        changed
    };
    // 60 reports 5 ms apart: an update at every sixth (30 ms is past 1966/65536 s).
    assert_eq!(changes(Profile::Ericsson2023, None), 10);
    // A frame before every third report: that report updates it.
    assert_eq!(changes(Profile::Ericsson2023, Some(3)), 20);
    // c8f84c3 has no gate: most of its reports move the window (52 of 60 here; a report
    // may leave it where it was), far more than the 10 the gate allows.
    let every_report = changes(Profile::Ericsson, None);
    assert!(every_report > 40, "c8f84c3: {every_report} of 60");
}
