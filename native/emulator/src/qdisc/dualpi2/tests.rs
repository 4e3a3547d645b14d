//! DualPI2 against RFC 9332 and the kernel: classification, coupled marking, overload,
//! step marking, the PI update and the credit scheduler, in simulated time.

use super::*;
use crate::config::{self, QdiscConfig};
use crate::json;
use crate::packet::testutil::pkt;
use crate::packet::{ECN_CE, ECN_ECT0, ECN_ECT1, ECN_NOT_ECT};
use crate::qdisc::testutil::Harness;

const MTU: u32 = 1514;
const MS: u64 = 1_000_000;

fn dualpi2(extra: &str) -> DualPi2 {
    let text = format!(r#"{{"kind": "dualpi2", "limit": 100000{extra}}}"#);
    let QdiscConfig::DualPi2(c) = config::qdisc("q", &json::parse(&text).unwrap(), false).unwrap()
    else {
        panic!()
    };
    DualPi2::new(&c, MTU, 0)
}

#[test]
fn classifies_by_ecn() {
    let mut h = Harness::new();
    let mut q = dualpi2("");
    for (i, ecn) in [ECN_NOT_ECT, ECN_ECT0, ECN_ECT1, ECN_CE]
        .into_iter()
        .enumerate()
    {
        h.enq(&mut q, pkt(100, 1, ecn, i as u64, 0), 0);
    }
    assert_eq!((q.c.len(), q.l.len()), (2, 2));
    assert_eq!((q.packets_in_c, q.packets_in_l), (2, 2));
    let mut any = dualpi2(r#", "l4s_ect": false"#);
    for (i, ecn) in [ECN_NOT_ECT, ECN_ECT0, ECN_ECT1, ECN_CE]
        .into_iter()
        .enumerate()
    {
        h.enq(&mut any, pkt(100, 1, ecn, i as u64, 0), 0);
    }
    assert_eq!((any.c.len(), any.l.len()), (1, 3));
}

/// Makes the WRR scheduler always serve the classic (or the L) queue first, so the packet
/// under test leaves before the filler that keeps the backlog up.
fn serve_first(q: &mut DualPi2, classic: bool) {
    (q.wc, q.wl) = if classic { (100, 0) } else { (0, 100) };
    q.credit_init = if classic { i64::MAX / 4 } else { -i64::MAX / 4 };
    q.credit = q.credit_init;
}

/// Keeps a standing backlog well above 2 MTU in the other queue and sends `n` packets of
/// `ecn` through at zero sojourn; returns (marked, dropped) among them.
fn rates(q: &mut DualPi2, h: &mut Harness, ecn: u8, n: usize) -> (usize, usize) {
    let (mut marked, mut sent) = (0, 0);
    let filler_ecn = if ecn == ECN_ECT1 || ecn == ECN_CE {
        ECN_NOT_ECT
    } else {
        ECN_ECT1
    };
    for i in 0..n {
        // 3 MTU of the other class keep the backlog above the floor; they never leave
        // because the scheduler serves the packet under test first or drops it.
        while q.backlog_bytes() < 4 * MTU as u64 {
            h.enq(q, pkt(1500, 9, filler_ecn, u64::MAX, 0), 0);
        }
        h.enq(q, pkt(1000, 1, ecn, i as u64, 0), 0);
        // Pop until the packet under test comes out or disappears (dropped).
        while let Some(p) = h.deq(q, 0) {
            if p.id == i as u64 {
                sent += 1;
                marked += (p.meta.ecn == ECN_CE) as usize;
                break;
            }
        }
    }
    (marked, n - sent)
}

#[test]
fn l4s_marking_is_coupled_k_times_p() {
    let mut h = Harness::new();
    let mut q = dualpi2(r#", "step_thresh_ms": 1000"#);
    q.prob = 0.1;
    serve_first(&mut q, false);
    let (marked, dropped) = rates(&mut q, &mut h, ECN_ECT1, 20_000);
    assert_eq!(dropped, 0);
    let frac = marked as f64 / 20_000.0;
    assert!(
        (frac - 0.2).abs() < 0.015,
        "p_L = {frac}, expected k p' = 0.2"
    );
}

#[test]
fn classic_marking_and_dropping_is_p_squared() {
    let mut h = Harness::new();
    let mut q = dualpi2(r#", "step_thresh_ms": 1000"#);
    q.prob = 0.3;
    serve_first(&mut q, true);
    let (marked, dropped) = rates(&mut q, &mut h, ECN_ECT0, 20_000);
    let frac = marked as f64 / 20_000.0;
    assert_eq!(dropped, 0);
    assert!(
        (frac - 0.09).abs() < 0.01,
        "ECT(0) mark rate {frac}, expected p'^2 = 0.09"
    );
    let (marked, dropped) = rates(&mut q, &mut h, ECN_NOT_ECT, 20_000);
    let frac = dropped as f64 / 20_000.0;
    assert_eq!(marked, 0);
    assert!(
        (frac - 0.09).abs() < 0.01,
        "Not-ECT drop rate {frac}, expected p'^2 = 0.09"
    );
}

#[test]
fn overload_drops_classic_ect_and_l4s() {
    let mut h = Harness::new();
    let mut q = dualpi2(r#", "step_thresh_ms": 1000"#);
    q.prob = 0.6; // k p' = 1.2 > 1
    serve_first(&mut q, true);
    let (marked, dropped) = rates(&mut q, &mut h, ECN_ECT0, 20_000);
    assert_eq!(
        marked, 0,
        "classic ECT packets are dropped, not marked, in overload"
    );
    assert!((dropped as f64 / 20_000.0 - 0.36).abs() < 0.015);
    let mut q = dualpi2(r#", "step_thresh_ms": 1000"#);
    q.prob = 0.6;
    serve_first(&mut q, false);
    let (marked, dropped) = rates(&mut q, &mut h, ECN_ECT1, 20_000);
    assert!(
        (dropped as f64 / 20_000.0 - 0.36).abs() < 0.015,
        "L drops {dropped}"
    );
    assert_eq!(
        marked + dropped,
        20_000,
        "every surviving L packet is marked"
    );
    // Without drop_on_overload p' is capped at 1/k: L packets are marked, never dropped.
    let mut q = dualpi2(r#", "step_thresh_ms": 1000, "drop_on_overload": false"#);
    q.prob = 0.9;
    q.update_probability(0);
    assert!(q.prob <= 0.5 + 1e-12);
}

#[test]
fn nothing_is_marked_under_two_mtu_of_backlog() {
    let mut h = Harness::new();
    let mut q = dualpi2(r#", "step_thresh_ms": 1000"#);
    q.prob = 1.0;
    for i in 0..1000u64 {
        let ecn = [ECN_NOT_ECT, ECN_ECT0, ECN_ECT1][(i % 3) as usize];
        h.enq(&mut q, pkt(1000, 1, ecn, i, i * 10), i * 10);
        h.enq(&mut q, pkt(1000, 2, ecn, i, i * 10), i * 10); // 2000 B < 2 x 1514
        let a = h.deq(&mut q, i * 10 + 5).unwrap();
        let b = h.deq(&mut q, i * 10 + 5).unwrap();
        assert!(a.meta.ecn != ECN_CE && b.meta.ecn != ECN_CE);
    }
    assert_eq!((h.totals.dropped, h.totals.marked), (0, 0));
}

#[test]
fn step_marks_l_packets_above_one_ms() {
    let mut h = Harness::new();
    let mut q = dualpi2("");
    // prob stays 0: only the step AQM acts. Sojourns 0.5 ms and 1.5 ms alternate.
    for i in 0..100u64 {
        let t0 = i * 10 * MS;
        h.enq(&mut q, pkt(1000, 1, ECN_ECT1, i, t0), t0);
        let wait = if i % 2 == 0 { MS / 2 } else { 3 * MS / 2 };
        let p = h.deq(&mut q, t0 + wait).unwrap();
        assert_eq!(
            p.meta.ecn == ECN_CE,
            i % 2 == 1,
            "packet {i} sojourn {wait} ns"
        );
    }
    assert_eq!(q.step_marks, 50);
    // A classic packet with the same sojourn is never step-marked.
    h.enq(&mut q, pkt(1000, 1, ECN_ECT0, 999, 0), 0);
    assert_ne!(h.deq(&mut q, 5 * MS).unwrap().meta.ecn, ECN_CE);
}

#[test]
fn pi_controller_follows_the_rfc_update() {
    let mut q = dualpi2("");
    let mut h = Harness::new();
    h.enq(&mut q, pkt(1000, 1, ECN_NOT_ECT, 0, 0), 0);
    // First tick at t = 16 ms with the head packet enqueued at 0: qdelay = 16 ms.
    let t = q.next_timer().unwrap();
    assert_eq!(t, 16 * MS);
    q.on_timer(t);
    let alpha = 41.0 / 256.0;
    let beta = 819.0 / 256.0;
    let expected = alpha * (0.016 - 0.015) + beta * 0.016;
    assert!(
        (q.prob - expected).abs() < 1e-12,
        "{} vs {expected}",
        q.prob
    );
    // Queue empty: qdelay 0, probability falls by alpha*target + beta*16ms.
    h.deq(&mut q, t);
    q.on_timer(t + 16 * MS);
    assert_eq!(q.prob, 0.0);
}

#[test]
fn credit_scheduler_keeps_classic_protection() {
    let mut h = Harness::new();
    let mut q = dualpi2(r#", "step_thresh_ms": 4000"#);
    let (mut l_bytes, mut c_bytes) = (0u64, 0u64);
    for i in 0..20_000u64 {
        while q.l.len() < 5 {
            h.enq(&mut q, pkt(1500, 1, ECN_ECT1, i, 0), 0);
        }
        while q.c.len() < 5 {
            h.enq(&mut q, pkt(1500, 2, ECN_NOT_ECT, i, 0), 0);
        }
        let p = h.deq(&mut q, 0).unwrap();
        if p.meta.ecn == ECN_ECT1 {
            l_bytes += p.len() as u64;
        } else {
            c_bytes += p.len() as u64;
        }
    }
    let share = c_bytes as f64 / (l_bytes + c_bytes) as f64;
    assert!((share - 0.10).abs() < 0.01, "classic share {share}");
}

#[test]
fn overflow_drops_at_the_limit() {
    let mut h = Harness::new();
    let text = r#"{"kind": "dualpi2", "limit": 10}"#;
    let QdiscConfig::DualPi2(c) = config::qdisc("q", &json::parse(text).unwrap(), false).unwrap()
    else {
        panic!()
    };
    let mut q = DualPi2::new(&c, MTU, 0);
    for i in 0..15 {
        h.enq(&mut q, pkt(100, 1, ECN_ECT1, i, 0), 0);
    }
    assert_eq!(
        (q.len(), q.counters().overlimits, h.totals.dropped),
        (10, 5, 5)
    );
}
