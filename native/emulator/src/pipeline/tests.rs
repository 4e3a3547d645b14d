//! The pipeline in simulated time: exact fixed and trace rates despite late wake-ups, the
//! delay line, no idle credit, and HTB and DualPI2 behind a trace link.

use super::*;
use crate::config::{self, QdiscConfig};
use crate::packet::testutil::udp4;
use crate::trace::Trace;

fn pipe(rate: RateConfig, qdisc: QdiscConfig, delay_ns: u64) -> Pipeline {
    let cfg = PipelineConfig {
        rate,
        qdisc,
        delay_ns,
        jitter_ns: 0,
        loss: 0.0,
    };
    Pipeline::new("a_to_b", &cfg, 1514, 0, 1)
}

/// Offers `offered_mbit` of 1514-byte frames for `secs`, advancing the clock in steps of
/// `wake_ns` as a late-waking process would; returns the delivered Mbit/s.
fn delivered(p: &mut Pipeline, offered_mbit: f64, secs: f64, wake_ns: u64) -> f64 {
    let gap = 1514.0 * 8.0 / offered_mbit * 1e3; // ns
    let end = (secs * 1e9) as u64;
    let (mut t_arr, mut now, mut bytes) = (0.0f64, 0u64, 0u64);
    let mut first: Option<Nanos> = None;
    let mut last = 0;
    while now < end {
        now += wake_ns;
        while t_arr <= now as f64 {
            p.arrive(udp4(1514, 1, 2, 0), t_arr as u64, None);
            t_arr += gap;
        }
        p.advance(now, None);
        while let Some((due, pk)) = p.pop_due(now) {
            if due > end / 10 {
                first.get_or_insert(due);
                bytes += pk.len() as u64;
                last = due;
            }
        }
    }
    bytes as f64 * 8.0 / ((last - first.unwrap()) as f64 / 1e9) / 1e6
}

#[test]
fn fixed_rate_is_exact_despite_late_wakeups() {
    // 80 Mbit/s offered to 50 Mbit/s, waking only every 1.7 ms: still 50.0 Mbit/s.
    let mut p = pipe(
        RateConfig::Fixed { bit_per_s: 50e6 },
        QdiscConfig::Pfifo { limit: 250 },
        0,
    );
    let mbit = delivered(&mut p, 80.0, 10.0, 1_700_000);
    assert!((mbit / 50.0 - 1.0).abs() < 0.001, "{mbit}");
    assert!(p.totals.dropped > 0);
}

#[test]
fn trace_rate_matches_its_mean_and_scale() {
    // 1 opportunity per ms = 1504 B/ms; scaled by 2: two 1500-byte IP packets (each
    // counting 1504 with mahimahi's TUN header) per ms, 24 Mbit/s of IP bytes.
    let text: String = (1..=1000).map(|i| format!("{i}\n")).collect();
    let trace = Trace::parse(&text).unwrap();
    let rate = RateConfig::Trace {
        path: "t".into(),
        scale: 2.0,
        trace,
    };
    let mut p = pipe(rate, QdiscConfig::Pfifo { limit: 1000 }, 0);
    let mbit = delivered(&mut p, 40.0, 5.0, 300_000);
    // Frames are 1514 B on the wire but count 1504 B against the trace.
    let expected = 2.0 * 12.0 * 1514.0 / 1500.0;
    assert!(
        (mbit / expected - 1.0).abs() < 0.002,
        "{mbit} vs {expected}"
    );
}

#[test]
fn delay_line_adds_exactly_the_delay() {
    let mut p = pipe(
        RateConfig::Line,
        QdiscConfig::Pfifo { limit: 1000 },
        30_000_000,
    );
    for i in 0..100u64 {
        p.arrive(udp4(200, 1, 2, 0), i * 1_000_000, None);
    }
    p.advance(200_000_000, None);
    let mut n = 0;
    while let Some((due, pk)) = p.pop_due(200_000_000) {
        assert_eq!(due - pk.t_arrival, 30_000_000);
        n += 1;
    }
    assert_eq!(n, 100);
}

#[test]
fn idle_link_keeps_no_credit() {
    // A lone frame on an idle link leaves when it arrives; back-to-back frames are paced.
    let mut p = pipe(
        RateConfig::Fixed { bit_per_s: 10e6 },
        QdiscConfig::Pfifo { limit: 10 },
        0,
    );
    for _ in 0..3 {
        p.arrive(udp4(1250, 1, 2, 0), 5_000_000_000, None);
    }
    p.advance(6_000_000_000, None);
    let dues: Vec<Nanos> = std::iter::from_fn(|| p.pop_due(6_000_000_000))
        .map(|(d, _)| d)
        .collect();
    assert_eq!(dues, vec![5_000_000_000, 5_001_000_000, 5_002_000_000]);
}

/// HTB (CG class 10 Mbit/s prio 0 on port 30002, best effort 20 prio 1, both with
/// `ceil` and `cburst`) over a trace of one opportunity per ms scaled by `scale`; CG
/// offers 6 Mbit/s, best effort is backlogged. Returns (CG, best effort, trace) Mbit/s.
fn htb_over_trace(scale: f64, ceil: f64, cburst: Option<u64>) -> (f64, f64, f64) {
    let text: String = (1..=1000).map(|i| format!("{i}\n")).collect();
    let rate = RateConfig::Trace {
        path: "t".into(),
        scale,
        trace: Trace::parse(&text).unwrap(),
    };
    let cb = cburst.map_or(String::new(), |b| format!(r#", "cburst_bytes": {b}"#));
    let q = config::qdisc(
        "q",
        &crate::json::parse(&format!(
            r#"{{"kind": "htb", "default": "20", "classes": [
            {{"classid": "10", "rate_mbit": 10, "ceil_mbit": {ceil}, "prio": 0{cb},
              "match": {{"proto": "udp", "port": 30002}}}},
            {{"classid": "20", "rate_mbit": 20, "ceil_mbit": {ceil}, "prio": 1{cb}}}]}}"#
        ))
        .unwrap(),
        false,
    )
    .unwrap();
    let mut p = pipe(rate, q, 0);
    let (secs, mut bytes) = (5u64, [0u64; 2]);
    let cg_gap = 1514 * 8 * 1000 / 6; // ns between CG frames at 6 Mbit/s
    let (mut next_cg, mut next_be) = (0u64, 0u64);
    for ms in 0..secs * 1000 {
        let now = (ms + 1) * 1_000_000;
        while next_cg < now {
            p.arrive(udp4(1514, 30001, 30002, 0), next_cg, None);
            next_cg += cg_gap;
        }
        while p.queued() < 200 {
            p.arrive(udp4(1514, 40000, 5201, 0), next_be.max(now - 1), None);
            next_be += 100_000;
        }
        p.advance(now, None);
        while let Some((due, pk)) = p.pop_due(now) {
            if due > 1_000_000_000 {
                let cg = pk.meta.dport == 30002;
                bytes[usize::from(!cg)] += pk.len() as u64;
            }
        }
    }
    let mbit = |b: u64| b as f64 * 8.0 / (secs - 1) as f64 / 1e6;
    let trace = scale * 12.032 * 1514.0 / 1500.0;
    (mbit(bytes[0]), mbit(bytes[1]), trace)
}

/// The CG class got all it offered (6 Mbit/s) and the two classes the whole trace.
fn assert_cg_first_and_trace_used((cg, be, trace): (f64, f64, f64)) {
    assert!((cg / 6.0 - 1.0).abs() < 0.03, "CG {cg} Mbit/s");
    let total = cg + be;
    assert!(
        (total / trace - 1.0).abs() < 0.03,
        "total {total} of {trace}"
    );
}

#[test]
fn htb_over_a_trace_serves_the_guaranteed_class_first() {
    // A 12 Mbit/s trace under an HTB provisioned for 50 Mbit/s: the prio-0 class gets
    // all it offers, best effort what the trace has left, together the whole trace.
    assert_cg_first_and_trace_used(htb_over_trace(1.0, 50.0, None));
}

#[test]
fn htb_over_a_bursty_trace_needs_buckets_that_hold_an_opportunity() {
    // Scaled x4, each opportunity carries four packets at one instant. Default buckets
    // (about one packet) let one packet out per instant and the rest of the opportunity
    // is lost; buckets that hold the burst use the whole trace.
    let (cg, be, trace) = htb_over_trace(4.0, 10_000.0, None);
    assert!(
        (cg + be) / trace < 0.75,
        "default buckets: {} of {trace}",
        cg + be
    );
    assert_cg_first_and_trace_used(htb_over_trace(4.0, 10_000.0, Some(1_000_000)));
}

#[test]
fn dualpi2_over_a_trace_marks() {
    let text: String = (1..=1000).map(|i| format!("{i}\n")).collect();
    let rate = RateConfig::Trace {
        path: "t".into(),
        scale: 1.0,
        trace: Trace::parse(&text).unwrap(),
    };
    let q = config::qdisc(
        "q",
        &crate::json::parse(r#"{"kind": "dualpi2", "limit": 1000}"#).unwrap(),
        false,
    )
    .unwrap();
    let mut p = pipe(rate, q, 0);
    for i in 0..20_000u64 {
        // 2 frames per ms of ECT(1) into a 1 frame/ms trace: the step AQM marks.
        p.arrive(udp4(1514, 1, 2, 1), i * 500_000, None);
    }
    p.advance(20_000_000_000, None);
    assert!(p.totals.marked > 1000, "marked {}", p.totals.marked);
}
