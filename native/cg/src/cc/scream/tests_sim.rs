//! SCReAM v2 in a closed loop: a packet-level bottleneck model (sim.rs), real RFC 8888
//! reports and the sender's transmission history; each test names the draft behaviour it
//! checks.

use super::sim::*;
use super::tests::scream;
use super::*;

#[test]
fn no_congestion_ramps_to_the_maximum() {
    // 100 Mbit/s link, 20 ms RTT, no loss, no marking: the target reaches the 30 Mbit/s
    // maximum and stays there.
    let r = simulate(
        scream(true, 30.0),
        100.0,
        10.0,
        1_000_000,
        Marking::None,
        8.0,
    );
    let reached = r.samples.iter().find(|s| s.3 >= 29.99).map(|s| s.0);
    assert!(
        reached.is_some_and(|t| t < 5.0),
        "reached max at {reached:?}"
    );
    let tail = mean_after(&r, 6.0, |s| s.3);
    assert!(tail >= 29.99, "target at the end {tail}");
    let delivered = mean_after(&r, 6.0, |s| s.1);
    assert!(delivered > 27.0, "delivered {delivered}");
    assert_eq!(r.losses, 0);
}

#[test]
fn steady_ce_fraction_settles_near_two_marks_per_rtt() {
    // The draft's L4S design point is two marked packets per RTT at equilibrium (one MSS
    // of increase per RTT balances a cut of l4s_alpha / 2), i.e. a window of about
    // 2 MSS (1 - p) / p; its discussion section adds that SCReAM may settle for fewer
    // (the target bitrate is below ref_wnd / s_rtt, and the fast-attack l4s_alpha filter
    // over 10 ms reads sparse marks high). Uncongested link, 25 ms RTT (= VIRTUAL_RTT),
    // every 25th packet marked (p = 4 %), 60 s.
    let p = 0.04;
    let r = simulate(
        scream(true, 1000.0),
        1000.0,
        12.5,
        10_000_000,
        Marking::Fraction(p),
        60.0,
    );
    let predicted = 2.0 * MSS * (1.0 - p) / p;
    assert!(
        (0.5..=2.5).contains(&r.marks_per_rtt),
        "marks per RTT {} (window {}, predicted {predicted})",
        r.marks_per_rtt,
        r.final_ref_wnd
    );
    assert!(
        r.final_ref_wnd > 0.3 * predicted && r.final_ref_wnd < 1.5 * predicted,
        "window {} vs predicted {predicted}",
        r.final_ref_wnd
    );
    // Settled: the rate over the second half stays within 15 % of its mean.
    let mean = mean_after(&r, 30.0, |s| s.3);
    for s in r.samples.iter().filter(|s| s.0 >= 30.0) {
        assert!(
            (s.3 - mean).abs() < 0.15 * mean,
            "target {} vs mean {mean} at {} s",
            s.3,
            s.0
        );
    }
}

#[test]
fn fifo_bottleneck_settles_near_half_the_delay_target() {
    // Delay-based control on a deep drop-tail queue (20 Mbit/s, 250 kB, 20 ms RTT): most
    // of the capacity, queue delay held around qdelay_target / 2 = 30 ms, no loss.
    let r = simulate(
        scream(false, 30.0),
        20.0,
        10.0,
        250_000,
        Marking::None,
        20.0,
    );
    let delivered = mean_after(&r, 5.0, |s| s.1);
    let qdelay = mean_after(&r, 5.0, |s| s.2);
    assert!(delivered > 0.8 * 20.0, "delivered {delivered} Mbit/s");
    assert!(qdelay < 45.0, "mean queue delay {qdelay} ms");
    assert_eq!(r.losses, 0);
}

#[test]
fn reports_at_frame_ends_sample_the_top_of_the_ramp() {
    // Paced frames build a queue ramp within each frame (60 fps, 1.5 x pacing into
    // 20 Mbit/s, 15 ms each way). The controller's queue-delay sample is each report's
    // newest packet: with Ericsson's receiver (a report every 32 packets and at each
    // frame's end) that is the top of the ramp, with one every 16 packets often its
    // middle: sampled at the top, the estimate sits further above the mean queue every
    // packet saw. What that does to the mean queue depends on the other rules and is not
    // asserted: with RFC 6298's sRTT the model held 2.9 ms less with the sparse cadence,
    // with all of Ericsson's rules (two-stage sRTT, min-subtracted average) 3.4 ms more.
    let run = |report_packets| {
        let setup = SimSetup {
            fps: Some(60.0),
            report_packets,
            report_on_marker: true,
            report_ms: 40,
        };
        simulate_with(
            scream(false, 30.0),
            setup,
            20.0,
            15.0,
            250_000,
            Marking::None,
            40.0,
        )
    };
    let (dense, sparse) = (run(16), run(32));
    let over = |r: &SimResult| r.est_qdelay_ms - r.true_qdelay_ms;
    assert!(
        over(&sparse) > over(&dense) + 0.5,
        "estimate over the packets' mean: every 32 {:.2} ms, every 16 {:.2} ms",
        over(&sparse),
        over(&dense)
    );
    for r in [&dense, &sparse] {
        assert_eq!(r.losses, 0);
        assert!(mean_after(r, 10.0, |s| s.1) > 0.9 * 20.0);
    }
}
