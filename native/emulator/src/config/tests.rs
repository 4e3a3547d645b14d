use super::*;

fn cfg(text: &str) -> Res<Config> {
    from_value(&json::parse(text).unwrap())
}

fn with_pipeline(p: &str) -> String {
    format!(r#"{{"interfaces": {{"a": "e0", "b": "e1"}}, "a_to_b": {p}}}"#)
}

#[test]
fn minimal_config_is_passthrough() {
    let c = cfg(r#"{"interfaces": {"a": "e0", "b": "e1"}, "b_to_a": null}"#).unwrap();
    assert!(c.a_to_b.is_none() && c.b_to_a.is_none() && !c.busy_poll);
}

#[test]
fn kernel_defaults_for_dualpi2() {
    let c = cfg(&with_pipeline(
        r#"{"rate": {"mbit": 50}, "qdisc": {"kind": "dualpi2"}}"#,
    ))
    .unwrap();
    let p = c.a_to_b.unwrap();
    let QdiscConfig::DualPi2(d) = p.qdisc else {
        panic!()
    };
    assert_eq!(d.limit, 10000);
    assert_eq!(d.target_ns, 15_000_000);
    assert_eq!(d.tupdate_ns, 16_000_000);
    assert_eq!(d.step_thresh, StepThresh::Time(1_000_000));
    assert_eq!(d.coupling_factor, 2);
    assert!(d.drop_on_overload && !d.drop_enqueue && d.l4s_ect);
    assert_eq!(d.classic_protection, 10);
}

#[test]
fn dualpi2_gains_from_rtts_like_iproute2() {
    let c = cfg(&with_pipeline(
        r#"{"qdisc": {"kind": "dualpi2", "max_rtt_ms": 100}}"#,
    ))
    .unwrap();
    let QdiscConfig::DualPi2(d) = c.a_to_b.unwrap().qdisc else {
        panic!()
    };
    // typical = max / 6; tupdate = min(typical, max / 3); alpha = 0.1 tupdate / max^2.
    assert_eq!(d.target_ns, 16_666_667);
    assert_eq!(d.tupdate_ns, 16_666_667);
    assert!((d.alpha.unwrap() - 0.1 * 0.016_666_667 / 0.01).abs() < 1e-6);
    assert!((d.beta.unwrap() - 3.0).abs() < 1e-9);
    let e = cfg(&with_pipeline(
        r#"{"qdisc": {"kind": "dualpi2", "max_rtt_ms": 10, "typical_rtt_ms": 20}}"#,
    ))
    .unwrap_err();
    assert_eq!(e.key, "a_to_b.qdisc.typical_rtt_ms");
    let e = cfg(&with_pipeline(
        r#"{"qdisc": {"kind": "dualpi2", "max_rtt_ms": 10, "alpha": 0.2}}"#,
    ))
    .unwrap_err();
    assert_eq!(e.key, "a_to_b.qdisc.max_rtt_ms");
}

#[test]
fn errors_name_the_key() {
    let e = cfg(&with_pipeline(r#"{"qdisc": {"kind": "nosuch"}}"#)).unwrap_err();
    assert_eq!(e.key, "a_to_b.qdisc.kind");
    assert!(e.message.contains("unknown discipline 'nosuch'"));
    let e = cfg(&with_pipeline(
        r#"{"qdisc": {"kind": "pfifo", "limit": 0}}"#,
    ))
    .unwrap_err();
    assert_eq!(e.key, "a_to_b.qdisc.limit");
    let e = cfg(&with_pipeline(r#"{"qdisc": {"kind": "pfifo", "limt": 5}}"#)).unwrap_err();
    assert_eq!(e.key, "a_to_b.qdisc.limt");
    assert!(e.message.contains("unknown key"));
    let e = cfg(&with_pipeline(r#"{"rate": {"mbit": -1}}"#)).unwrap_err();
    assert_eq!(e.key, "a_to_b.rate.mbit");
    let e = cfg(&with_pipeline(
        r#"{"rate": {"trace": "/nonexistent/trace"}}"#,
    ))
    .unwrap_err();
    assert_eq!(e.key, "a_to_b.rate.trace");
    let e = cfg(&with_pipeline(r#"{"delay_ms": 5, "jitter_ms": 6}"#)).unwrap_err();
    assert_eq!(e.key, "a_to_b.jitter_ms");
    let e = cfg(r#"{"interfaces": {"a": "e0", "b": "e0"}}"#).unwrap_err();
    assert_eq!(e.key, "interfaces.b");
    let e = cfg(r#"{"interfaces": {"a": "e0"}}"#).unwrap_err();
    assert_eq!(e.key, "interfaces.b");
}

#[test]
fn htb_classes_and_matches() {
    let c = cfg(&with_pipeline(
        r#"{"rate": {"mbit": 50}, "qdisc": {"kind": "htb", "default": "20", "classes": [
            {"classid": "10", "rate_mbit": 10, "ceil_mbit": 50, "prio": 0,
             "leaf": {"kind": "sfq", "limit": 63}, "match": {"proto": "udp", "port": 30002}},
            {"classid": "1:20", "rate_mbit": 40, "ceil_mbit": 50, "prio": 1,
             "leaf": {"kind": "pfifo", "limit": 250}}]}}"#,
    ))
    .unwrap();
    let QdiscConfig::Htb(h) = c.a_to_b.unwrap().qdisc else {
        panic!()
    };
    assert_eq!(h.default, 0x20);
    assert_eq!(h.classes[0].classid, 0x10);
    assert_eq!(h.classes[0].matcher.as_ref().unwrap().proto, Some(17));
    assert_eq!(h.classes[0].matcher.as_ref().unwrap().port, Some(30002));
    let e = cfg(&with_pipeline(
        r#"{"qdisc": {"kind": "htb", "default": "30", "classes": [{"classid": "10", "rate_mbit": 1}]}}"#,
    ))
    .unwrap_err();
    assert_eq!(e.key, "a_to_b.qdisc.default");
    let e = cfg(&with_pipeline(
        r#"{"qdisc": {"kind": "htb", "default": "10", "classes": [{"classid": "10", "rate_mbit": 5, "ceil_mbit": 1}]}}"#,
    ))
    .unwrap_err();
    assert_eq!(e.key, "a_to_b.qdisc.classes[0].ceil_mbit");
}
