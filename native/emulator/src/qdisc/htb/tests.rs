//! HTB in simulated time: classification, guarantees and borrowing by priority, ceil,
//! prefix matching.

use super::*;
use crate::config::{self, QdiscConfig};
use crate::json;
use crate::packet::testutil::pkt;
use crate::qdisc::testutil::Harness;

fn htb(text: &str) -> Htb {
    let QdiscConfig::Htb(c) = config::qdisc("q", &json::parse(text).unwrap(), false).unwrap()
    else {
        panic!()
    };
    Htb::new(&c, 1514, 0, 1)
}

const TWO_CLASSES: &str = r#"{"kind": "htb", "default": "20", "classes": [
    {"classid": "10", "rate_mbit": 10, "ceil_mbit": 50, "prio": 0,
     "leaf": {"kind": "pfifo", "limit": 1000}, "match": {"proto": "udp", "port": 30002}},
    {"classid": "20", "rate_mbit": 40, "ceil_mbit": 50, "prio": 1,
     "leaf": {"kind": "pfifo", "limit": 1000}}]}"#;

/// Drives the tree behind a 50 Mbit/s link in simulated time; returns bytes per class.
fn saturate(q: &mut Htb, seconds: f64, cg_share_of_link: f64) -> (u64, u64) {
    let mut h = Harness::new();
    let link_ns_per_byte = 8e9 / 50e6;
    let (mut t, end) = (0u64, (seconds * 1e9) as u64);
    let (mut cg, mut be) = (0u64, 0u64);
    let mut next_cg = 0.0f64;
    let be_class = q.classes.iter().position(|c| c.id == 0x20).unwrap();
    while t < end {
        // Offered: best effort always backlogged; CG at `cg_share_of_link` of 50 Mbit/s.
        while q.classes[be_class].leaf.len() < 50 {
            h.enq(q, pkt(1500, 5201, 0, 0, t), t);
        }
        while next_cg <= t as f64 {
            let mut p = pkt(1500, 30001, 0, 1, t);
            p.meta.dport = 30002;
            h.enq(q, p, t);
            next_cg += 1514.0 * link_ns_per_byte / cg_share_of_link;
        }
        match h.deq(q, t) {
            Some(p) => {
                if p.meta.dport == 30002 {
                    cg += p.len() as u64
                } else {
                    be += p.len() as u64
                }
                t += (p.len() as f64 * link_ns_per_byte) as u64;
            }
            None => t = q.next_ready(t).unwrap_or(t + 1000).max(t + 1),
        }
    }
    (cg, be)
}

#[test]
fn classifies_by_port_and_defaults_the_rest() {
    let q = htb(TWO_CLASSES);
    let mut p = pkt(100, 1, 0, 0, 0);
    assert_eq!(q.classes[q.classify(&p)].id, 0x20);
    p.meta.dport = 30002;
    assert_eq!(q.classes[q.classify(&p)].id, 0x10);
}

#[test]
fn guarantees_hold_and_the_rest_is_borrowed_by_prio() {
    // Best effort always backlogged. CG asking for the whole link gets its 10 Mbit/s
    // guarantee and best effort keeps its 40: rates are served before borrowing.
    let (cg, be) = saturate(&mut htb(TWO_CLASSES), 2.0, 1.0);
    let (cg_mbit, be_mbit) = (cg as f64 * 4.0 / 1e6, be as f64 * 4.0 / 1e6);
    assert!(
        (cg_mbit - 10.0).abs() < 0.5 && (be_mbit - 40.0).abs() < 0.5,
        "{cg_mbit} {be_mbit}"
    );
    // With best effort guaranteed 30, the spare 10 goes first to the prio-0 class: CG
    // asking for 15 gets 15, best effort the remaining 35.
    let cfg = TWO_CLASSES.replace("\"rate_mbit\": 40", "\"rate_mbit\": 30");
    let (cg, be) = saturate(&mut htb(&cfg), 2.0, 0.3);
    let (cg_mbit, be_mbit) = (cg as f64 * 4.0 / 1e6, be as f64 * 4.0 / 1e6);
    assert!(
        (cg_mbit - 15.0 * 1500.0 / 1514.0).abs() < 0.5,
        "cg {cg_mbit}"
    );
    assert!(
        (cg_mbit + be_mbit - 50.0).abs() < 0.5,
        "total {}",
        cg_mbit + be_mbit
    );
}

#[test]
fn ceil_limits_a_class_below_the_link() {
    let mut q = htb(r#"{"kind": "htb", "default": "20", "classes": [
        {"classid": "20", "rate_mbit": 5, "ceil_mbit": 20, "leaf": {"kind": "pfifo"}}]}"#);
    let (_, be) = saturate(&mut q, 2.0, 0.0001);
    let mbit = be as f64 * 8.0 / 2.0 / 1e6;
    assert!((mbit - 20.0).abs() < 0.3, "ceil 20, got {mbit}");
}

#[test]
fn prefix_matching() {
    let m = Match {
        dst: Some(("10.0.0.0".parse().unwrap(), 24)),
        ..Match::default()
    };
    assert!(matches(&m, &pkt(100, 1, 0, 0, 0)));
    let m = Match {
        dst: Some(("10.0.1.0".parse().unwrap(), 24)),
        ..Match::default()
    };
    assert!(!matches(&m, &pkt(100, 1, 0, 0, 0)));
    let m = Match {
        ecn: Some(1),
        ..Match::default()
    };
    assert!(matches(&m, &pkt(100, 1, 1, 0, 0)) && !matches(&m, &pkt(100, 1, 2, 0, 0)));
}
