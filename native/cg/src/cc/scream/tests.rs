//! SCReAM v2 against the draft: each test names the draft behaviour it checks.
//!
//! Two kinds of test: direct ones (here) feed hand-made feedback summaries, so the
//! arithmetic of one rule is checked exactly; simulated ones (tests_sim.rs) close the loop
//! through a packet-level bottleneck model, real RFC 8888 reports and the sender's
//! transmission history.

use super::*;
use crate::cc::RateLimits;

const MS: i64 = 1_000_000;

pub(super) fn limits(max_mbps: f64) -> RateLimits {
    RateLimits {
        min_bps: 0.5e6,
        start_bps: 10e6,
        max_bps: max_mbps * 1e6,
    }
}

pub(super) fn scream(l4s: bool, max_mbps: f64) -> Scream {
    Scream::new(ScreamConfig::new(l4s, limits(max_mbps), 1.0 / 60.0))
}

/// The draft's constants and rules (Profile::Draft), for tests of the draft's arithmetic.
pub(super) fn draft(l4s: bool, max_mbps: f64) -> Scream {
    let cfg = ScreamConfig::with_profile(l4s, limits(max_mbps), 1.0 / 60.0, Profile::Draft);
    Scream::new(cfg)
}

/// A feedback summary: `acked` bytes newly acknowledged, RTT and one-way delay in ms.
pub(super) fn fb(now_ms: f64, acked: u64, rtt_ms: f64, owd_ms: f64) -> FeedbackSummary {
    FeedbackSummary {
        now_ns: (now_ms * 1e6) as i64,
        bytes_newly_acked: acked,
        packets_newly_acked: acked / 1000,
        rtt_sample_ns: Some((rtt_ms * 1e6) as i64),
        owd_ns: Some((owd_ms * 1e6) as i64),
        bytes_in_flight: 100_000,
        ..FeedbackSummary::default()
    }
}

/// Warms a controller up: 2 s of loss-free feedback every 5 ms at `rtt_ms`.
fn warm(s: &mut Scream, rtt_ms: f64) -> f64 {
    let mut t = 0.0;
    while t < 2000.0 {
        s.on_sent((t * 1e6) as i64, 1000, 100_000);
        s.on_feedback(&fb(t, 5000, rtt_ms, 10.0));
        t += 5.0;
    }
    t
}

#[test]
fn one_loss_cuts_ref_wnd_by_beta_loss_once() {
    // The draft's unconditional loss backoff; Ericsson's code ignores a lone loss (next test).
    let mut s = draft(false, 1000.0);
    let mut t = warm(&mut s, 20.0);
    let before = s.ref_wnd;
    // A loss, with nothing newly acknowledged (so no increase blurs the factor).
    let mut lossy = fb(t, 0, 20.0, 10.0);
    lossy.packets_newly_lost = 1;
    s.on_feedback(&lossy);
    assert!(
        (s.ref_wnd - before * BETA_LOSS).abs() < 1e-6,
        "{before} -> {}",
        s.ref_wnd
    );
    assert_eq!(s.reactions.loss, 1);
    // Further feedback without a new loss does not cut again.
    for _ in 0..10 {
        t += 5.0;
        s.on_feedback(&fb(t, 0, 20.0, 10.0));
    }
    assert!((s.ref_wnd - before * BETA_LOSS).abs() < 1e-6);
    assert_eq!(s.reactions.loss, 1);
}

#[test]
fn a_lone_loss_without_queue_delay_is_ignored_as_ericssons_code_does() {
    // ScreamV2Tx.cpp reacts to loss only with a loss rate over 1 % or a queue delay over a
    // quarter of the target (conditional loss backoff): one loss in a calm queue is noise.
    let mut s = scream(false, 1000.0);
    let t = warm(&mut s, 20.0);
    let before = s.ref_wnd;
    let mut lossy = fb(t, 0, 20.0, 10.0);
    lossy.packets_newly_lost = 1;
    s.on_feedback(&lossy);
    assert_eq!(s.reactions.loss, 0);
    assert!(s.ref_wnd >= before);
    // With the queue delay past a quarter of the target the same loss cuts by BETA_LOSS.
    let mut q = scream(false, 1000.0);
    let mut t = warm(&mut q, 20.0);
    for _ in 0..40 {
        t += 5.0;
        q.on_feedback(&fb(t, 0, 40.0, 30.0)); // qdelay 20 ms > 60 ms / 4
    }
    let before = q.ref_wnd;
    let mut lossy = fb(t + 5.0, 0, 40.0, 30.0);
    lossy.packets_newly_lost = 1;
    q.on_feedback(&lossy);
    assert_eq!(q.reactions.loss, 1);
    assert!(
        q.ref_wnd <= before * BETA_LOSS + 1e-6,
        "{before} -> {}",
        q.ref_wnd
    );
}

#[test]
fn losses_cut_at_most_once_per_rtt() {
    let mut s = scream(false, 1000.0);
    let mut t = warm(&mut s, 20.0);
    let srtt = s.s_rtt().unwrap();
    let start = s.ref_wnd;
    let mut cut_times = Vec::new();
    // A loss in every feedback, every 2 ms, for 200 ms.
    for _ in 0..100 {
        t += 2.0;
        let w = s.ref_wnd;
        let mut lossy = fb(t, 0, 20.0, 10.0);
        lossy.packets_newly_lost = 1;
        s.on_feedback(&lossy);
        if s.ref_wnd < w {
            assert!((s.ref_wnd - (w * BETA_LOSS).max(MIN_REF_WND)).abs() < 1e-6);
            cut_times.push(t);
        }
    }
    assert!(cut_times.len() >= 2, "{cut_times:?}");
    for pair in cut_times.windows(2) {
        assert!(
            pair[1] - pair[0] >= VIRTUAL_RTT.min(srtt) * 1e3 - 1e-9,
            "cuts {pair:?} closer than one RTT ({srtt} s)"
        );
    }
    assert!(s.ref_wnd < start);
}

#[test]
fn classic_ecn_cuts_by_beta_ecn_and_l4s_by_alpha() {
    let mut classic = scream(false, 1000.0);
    let t = warm(&mut classic, 20.0);
    let before = classic.ref_wnd;
    // 10 ms after the last feedback, so that l4s_alpha (updated every 10 ms) sees it.
    let mut marked = fb(t + 10.0, 0, 20.0, 10.0);
    marked.packets_newly_acked = 10;
    marked.packets_newly_ce = 1;
    classic.on_feedback(&marked);
    // The default profile's classic-ECN beta: Ericsson's 0.7 (scream_sender.cpp), the
    // draft's 0.8 with Profile::Draft.
    let beta_ecn = Profile::Ericsson.params().beta_ecn;
    assert!((classic.ref_wnd - before * beta_ecn).abs() < 1e-6);

    // The draft's L4S arithmetic: with Ericsson's larger bytes-in-flight headroom, warm()
    // grows ref_wnd past what is in flight, and the first CE after a calm spell clamps it
    // there first (a cut larger than l4s_alpha / 2, in both codes).
    let mut l4s = draft(true, 1000.0);
    warm(&mut l4s, 20.0);
    let before = l4s.ref_wnd;
    l4s.on_feedback(&marked);
    let alpha = l4s.l4s_alpha();
    assert!(alpha > 0.0 && alpha < 0.2, "{alpha}");
    // L4S: ref_wnd *= 1 - backoff with backoff <= l4s_alpha / 2 (scaled down near the last
    // known maximum, never up): a much smaller cut than classic ECN.
    let cut = 1.0 - l4s.ref_wnd / before;
    assert!(
        cut > 0.0 && cut <= alpha / 2.0 + 1e-9,
        "cut {cut}, alpha {alpha}"
    );
}

#[test]
fn queue_delay_beyond_half_the_target_reduces_the_window() {
    // qdelay 20 ms < 30 ms (half the 60 ms target): no reduction.
    let mut calm = scream(false, 1000.0);
    let mut t = warm(&mut calm, 20.0);
    let before = calm.ref_wnd;
    for _ in 0..100 {
        t += 5.0;
        calm.on_feedback(&fb(t, 0, 40.0, 10.0 + 20.0));
    }
    assert_eq!(calm.reactions.virtual_ce, 0);
    assert!((calm.ref_wnd - before).abs() < 1e-6);

    // qdelay 50 ms > 30 ms: the averaged delay crosses 30 ms and the window shrinks.
    let mut loaded = scream(false, 1000.0);
    let mut t = warm(&mut loaded, 20.0);
    let before = loaded.ref_wnd;
    for _ in 0..100 {
        t += 5.0;
        loaded.on_feedback(&fb(t, 0, 70.0, 10.0 + 50.0));
    }
    assert!(loaded.qdelay_avg() > 0.03);
    assert!(loaded.reactions.virtual_ce > 0);
    assert!(
        loaded.ref_wnd < 0.9 * before,
        "{before} -> {}",
        loaded.ref_wnd
    );
    assert_eq!(loaded.reactions.loss + loaded.reactions.ce, 0);
}

#[test]
fn every_acknowledged_packet_feeds_the_base_delay_and_the_jitter_spread() {
    // Ericsson's code takes every packet a report acknowledges into its base delay
    // (E:1012, 1933) and its max/min jitter trackers (E:711-721); the draft's pseudocode
    // one sample per report, the newest packet's. Each report here acknowledges one frame
    // whose packets waited 0..5 ms in a queue that empties between frames (one-way delays
    // 15..20 ms, the newest 20 ms), for 10 s at 60 fps.
    let run = |profile| {
        let mut cfg = ScreamConfig::with_profile(false, limits(1000.0), 1.0 / 60.0, profile);
        cfg.reduce_jitter = true;
        let mut s = Scream::new(cfg);
        let mut t = 0.0;
        for _ in 0..600 {
            t += 1000.0 / 60.0;
            let mut f = fb(t, 5000, 40.0, 20.0);
            f.owd_min_ns = Some(15 * MS);
            f.owd_max_ns = Some(20 * MS);
            s.on_feedback(&f);
        }
        s
    };
    // Ericsson: the base is the frame's first packet, so the newest packet's 5 ms of queue
    // is seen, and the 5 ms ramp within each frame is jitter: the window's increase scale
    // settles at 1 - 5 ms / 10 ms.
    let e = run(Profile::Ericsson);
    assert!((e.qdelay - 0.005).abs() < 1e-6, "qdelay {}", e.qdelay);
    assert!(
        (e.ref_wnd_delay_scale - 0.5).abs() < 0.02,
        "scale {}",
        e.ref_wnd_delay_scale
    );
    // Draft: the base is the smallest newest-packet delay, the queue reads empty and the
    // delay never varies.
    let d = run(Profile::Draft);
    assert!(d.qdelay.abs() < 1e-9, "qdelay {}", d.qdelay);
    assert!(
        d.ref_wnd_delay_scale > 0.999,
        "scale {}",
        d.ref_wnd_delay_scale
    );
}

#[test]
fn target_bitrate_follows_ref_wnd_over_rtt() {
    // Ericsson's target (ScreamV2Tx.cpp, ScreamV2TxStream.cpp): 1 ms added to the RTT,
    // divided by 1.1 x (1 + rate_adjust); the draft divides by 1.2 + rate_adjust + dev.
    let mut s = scream(false, 1000.0);
    warm(&mut s, 20.0);
    let expected =
        8.0 * s.ref_wnd / (s.s_rtt().unwrap() + 0.001) * (MSS / (MSS + PACKET_OVERHEAD)) / 1.1;
    let mut d = draft(false, 1000.0);
    warm(&mut d, 20.0);
    let expected_draft =
        8.0 * d.ref_wnd / d.s_rtt().unwrap() * (MSS / (MSS + PACKET_OVERHEAD)) / 1.2;
    let got_draft = d.target_bitrate();
    assert!((got_draft - expected_draft).abs() / expected_draft < 0.01);
    let got = s.target_bitrate();
    assert!(
        (got - expected).abs() / expected < 0.01,
        "{got} vs {expected}"
    );
    // Pacing: 1.5 x the target (far from the maximum, no relaxed pacing).
    assert!((s.pacing_rate() - 1.5 * got).abs() < 1e-6);
}

#[test]
fn pacing_is_not_relaxed_near_the_maximum_unless_asked() {
    // At its 30 Mbit/s maximum the draft paces at 1.5 x the target (45 Mbit/s, below a
    // 50 Mbit/s link); relaxed pacing (earlier drafts) would pace up to 4 x faster.
    let mut cfg = ScreamConfig::new(true, limits(30.0), 1.0 / 60.0);
    let mut s = Scream::new(cfg.clone());
    warm(&mut s, 20.0);
    let target = s.target_bitrate();
    assert!(
        target > 0.95 * 30e6,
        "the warm-up should reach the maximum: {target}"
    );
    assert!((s.pacing_rate() - 1.5 * target).abs() < 1e-6);
    cfg.relaxed_pacing = true;
    let mut relaxed = Scream::new(cfg);
    warm(&mut relaxed, 20.0);
    let t2 = relaxed.target_bitrate();
    assert!((relaxed.pacing_rate() - 4.0 * 1.5 * t2).abs() < 1e-6);
}

#[test]
fn l4s_alpha_tracks_sparse_marks_above_their_mean_unless_one_gain_is_asked() {
    // One 10 ms window in four holds a mark among 20 packets (a 1.25 % marked fraction):
    // fast attack / slow decay settles well above it, one symmetric gain of 1/16 near it.
    let run = |gain: Option<f64>| {
        let mut cfg = ScreamConfig::new(true, limits(1000.0), 1.0 / 60.0);
        cfg.l4s_alpha_gain = gain;
        let mut s = Scream::new(cfg);
        let mut sum = 0.0;
        for i in 0..4000u64 {
            let now = i as f64 * 0.010;
            s.update_l4s_alpha(now, 0.030, 20, u64::from(i % 4 == 0));
            if i >= 2000 {
                sum += s.l4s_alpha();
            }
        }
        sum / 2000.0
    };
    let (draft, symmetric) = (run(None), run(Some(1.0 / 16.0)));
    assert!(draft > 2.0 * 0.0125, "fast attack / slow decay: {draft}");
    assert!(
        (symmetric / 0.0125 - 1.0).abs() < 0.1,
        "one gain: {symmetric}"
    );
}

#[test]
fn l4s_alpha_tracks_a_dense_marked_fraction() {
    // Fast attack, slow decay EWMA of the marked fraction, updated every 10 ms: with many
    // packets per update it converges to the fraction itself.
    let mut s = scream(true, 1000.0);
    let mut t = 0.0;
    for _ in 0..400 {
        t += 10.0;
        let mut f = fb(t, 0, 20.0, 10.0);
        f.packets_newly_acked = 40;
        f.packets_newly_ce = 10;
        s.on_feedback(&f);
    }
    assert!((s.l4s_alpha() - 0.25).abs() < 0.01, "{}", s.l4s_alpha());
    // Marks stop: it decays by 1/128 per update.
    let before = s.l4s_alpha();
    t += 10.0;
    let mut f = fb(t, 0, 20.0, 10.0);
    f.packets_newly_acked = 40;
    s.on_feedback(&f);
    assert!((s.l4s_alpha() - before * (1.0 - L4S_AVG_G_DOWN)).abs() < 1e-12);
}

#[test]
fn srtt_follows_an_rtt_step_in_two_stages_as_ericssons_code() {
    // RFC 6298 (draft profile): 1/8 per sample, so 20 samples in 100 ms take sRTT most of
    // the way from 20 to 60 ms. Ericsson's code (E:1068-1088): a 1/8 average per report,
    // which sRTT follows with 1/8 only once per round trip: after 100 ms still near 20 ms.
    let step = |mut s: Scream| {
        let mut t = warm(&mut s, 20.0);
        for _ in 0..20 {
            t += 5.0;
            s.on_feedback(&fb(t, 5000, 60.0, 10.0));
        }
        s.s_rtt().unwrap() * 1e3
    };
    let (rfc, ericsson) = (step(draft(false, 1000.0)), step(scream(false, 1000.0)));
    assert!(rfc > 50.0, "RFC 6298 sRTT {rfc} ms");
    assert!(ericsson < 30.0, "two-stage sRTT {ericsson} ms");
}

#[test]
fn a_loss_within_an_srtt_of_the_last_reaction_is_not_acted_on() {
    // Ericsson's code raises a loss event only a whole sRTT after the last one (E:1134,
    // 1206); the draft once its reaction interval (25 ms) has passed. sRTT here is 80 ms.
    let run = |mut s: Scream| {
        let mut t = warm(&mut s, 80.0);
        // A 20 ms queue (above target/4, so Ericsson's conditional loss backoff applies;
        // below target/2, so no virtual CE).
        for _ in 0..100 {
            t += 5.0;
            s.on_feedback(&fb(t, 5000, 80.0, 30.0));
        }
        let mut losses = Vec::new();
        for dt in [0.0, 40.0, 100.0] {
            let mut lossy = fb(t + dt, 5000, 80.0, 30.0);
            lossy.packets_newly_lost = 1;
            s.on_feedback(&lossy);
            losses.push(s.reactions.loss);
        }
        assert_eq!(s.reactions.virtual_ce, 0);
        losses
    };
    assert_eq!(run(scream(false, 1000.0)), vec![1, 1, 2]);
    assert_eq!(run(draft(false, 1000.0)), vec![1, 2, 3]);
}
