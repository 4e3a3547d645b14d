//! Ericsson's rules for the start and for low rates, each checked against the draft
//! profile (which keeps the draft's behaviour): they fail when the rule is switched off.

use super::tests::{draft, fb, scream};
use super::*;

#[test]
fn before_any_report_ericssons_window_is_100_ms_of_the_start_rate() {
    // Their test program starts the window at the start bitrate x 100 ms and sRTT at
    // 50 ms (S:592, E:142-145): a 60 frame/s encoder's first frames can leave at once.
    let (e, d) = (scream(false, 30.0), draft(false, 30.0));
    assert_eq!(e.ref_wnd, 10e6 * 0.1 / 8.0);
    assert!(
        e.may_send(100_000, 1200),
        "125 kB x the headroom lets 100 kB go"
    );
    assert!(
        !d.may_send(100_000, 1200),
        "the draft's 3000 B window does not"
    );
    // The first target: 8 x 125 kB / 51 ms / 1.1 x the overhead factor = 1.75 x start.
    let mut e = e;
    e.on_frame(0, 20_000, 0.0, 20_000);
    assert!(
        (e.target_bitrate() / 10e6 - 1.75).abs() < 0.03,
        "{}",
        e.target_bitrate()
    );
}

#[test]
fn ericssons_multiplicative_increase_comes_in_over_200_srtt_after_the_start() {
    // Their start counts as a congestion event (E:1385, 1439-1443): the window grows
    // additively at first, where the draft's grows multiplicatively from the start.
    let grow = |mut s: Scream| {
        s.on_feedback(&fb(0.0, 5000, 30.0, 10.0));
        let before = s.ref_wnd;
        for i in 1..=20 {
            s.on_sent(i * 5_000_000, 1200, 20_000);
            s.on_feedback(&fb(i as f64 * 5.0, 5000, 30.0, 10.0));
        }
        s.ref_wnd - before
    };
    let (e, d) = (grow(scream(false, 1000.0)), grow(draft(false, 1000.0)));
    assert!(
        e > 0.0 && e * 3.0 < d,
        "growth in 100 ms: ericsson {e} B, draft {d} B"
    );
}

#[test]
fn ericssons_mss_is_the_largest_packet_sent_lately() {
    // One short packet per frame (E:439-456, 550): the window's steps follow it.
    let mut s = scream(false, 30.0);
    let mut d = draft(false, 30.0);
    for (i, c) in [&mut s, &mut d].into_iter().enumerate() {
        c.on_sent(i as i64, 1053, 1053);
    }
    assert_eq!(s.mss(), 1053.0);
    assert_eq!(d.mss(), d.cfg.mss);
    // a second later, the older maximum still counts; two seconds later, no longer
    s.on_sent(1_100_000_000, 500, 500);
    assert_eq!(s.mss(), 1053.0);
    s.on_sent(2_300_000_000, 500, 500);
    assert_eq!(s.mss(), 500.0);
}

#[test]
fn ericssons_largest_bytes_in_flight_is_taken_before_the_reports_acknowledgements() {
    // E:705: the maximum that bounds the window's growth counts what a report acknowledges.
    let report = |s: &mut Scream| {
        let mut f = fb(0.0, 3000, 30.0, 10.0);
        f.bytes_in_flight = 1000;
        s.on_feedback(&f);
        s.max_bytes_in_flight
    };
    assert_eq!(report(&mut scream(false, 30.0)), 4000.0);
    assert_eq!(report(&mut draft(false, 30.0)), 1000.0);
}
