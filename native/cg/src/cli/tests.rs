//! The command lines of `cga-cg send` and `cga-cg receive`: defaults, options, and errors
//! that name the option.

use super::*;
use crate::cc::scream::Profile;

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn send_defaults_and_options() {
    let c = parse_send(&s(&["10.0.0.1:5000"])).unwrap();
    assert_eq!(c.cc, CcKind::Scream);
    assert_eq!(c.ecn, Ecn::Ect1);
    assert_eq!(c.limits.max_bps, 30e6);
    assert_eq!(c.rate_bps, 30e6);
    // SCReAM follows Ericsson's code unless the draft is asked for.
    assert_eq!(c.scream_profile, Profile::Ericsson);
    let d = parse_send(&s(&["10.0.0.1:5000", "--profile", "draft"])).unwrap();
    assert_eq!(d.scream_profile, Profile::Draft);
    assert_eq!(d.delay_sampling, None);
    let old = parse_send(&s(&["10.0.0.1:5000", "--profile", "ericsson-2023"])).unwrap();
    assert_eq!(old.scream_profile, Profile::Ericsson2023);
    let m = parse_send(&s(&["10.0.0.1:5000", "--delay-sampling", "draft"])).unwrap();
    assert_eq!(m.delay_sampling, Some(Profile::Draft));
    let e = parse_send(&s(&["10.0.0.1:5000", "--delay-sampling", "x"])).unwrap_err();
    assert!(e.contains("--delay-sampling \"x\""), "{e}");
    // Losses: the profile's rule, Ericsson's for SCReAM by default, or as asked.
    use crate::history::LossDetection;
    use crate::sender::loss_detection;
    assert_eq!(loss_detection(&c), LossDetection::Ericsson);
    assert_eq!(loss_detection(&d), LossDetection::AfterGap);
    let l = parse_send(&s(&["10.0.0.1:5000", "--loss-detection", "draft"])).unwrap();
    assert_eq!(loss_detection(&l), LossDetection::AfterGap);
    let t = parse_send(&s(&["10.0.0.1:5000", "--cc", "tfrc"])).unwrap();
    assert_eq!(loss_detection(&t), LossDetection::AfterGap);
    let e = parse_send(&s(&["10.0.0.1:5000", "--loss-detection", "x"])).unwrap_err();
    assert!(e.contains("--loss-detection \"x\""), "{e}");
    // A cloud-gaming encoder: I-frames on request only, unless periodic ones are asked.
    assert_eq!(c.keyframe_interval_s, 0.0);
    let k = parse_send(&s(&["10.0.0.1:5000", "--keyframe-interval", "2"])).unwrap();
    assert_eq!(k.keyframe_interval_s, 2.0);
    // Packets leave on the pacing schedule unless Ericsson's test loop is asked for.
    assert_eq!(c.send_loop, SendLoop::Schedule);
    let t = parse_send(&s(&["10.0.0.1:5000", "--send-loop", "ericsson-test"])).unwrap();
    assert_eq!(t.send_loop, SendLoop::EricssonTest);
    let e = parse_send(&s(&["10.0.0.1:5000", "--send-loop", "x"])).unwrap_err();
    assert!(e.contains("--send-loop: \"x\""), "{e}");
    let c = parse_send(&s(&[
        "10.0.0.1:5000",
        "--cc",
        "none",
        "--rate-mbps=20",
        "--quiet",
        "--duration",
        "3",
    ]))
    .unwrap();
    assert_eq!(c.cc, CcKind::None);
    assert_eq!(c.ecn, Ecn::NotEct);
    assert_eq!(c.rate_bps, 20e6);
    assert!(c.quiet);
    assert_eq!(c.duration_s, Some(3.0));
}

#[test]
fn send_errors_name_the_option() {
    let e = parse_send(&s(&["10.0.0.1:5000", "--cc", "bbr"])).unwrap_err();
    assert!(e.contains("--cc"), "{e}");
    let e = parse_send(&s(&["10.0.0.1"])).unwrap_err();
    assert!(e.contains("IP:PORT"), "{e}");
    let e = parse_send(&s(&["10.0.0.1:1", "--max-mbps", "-3"])).unwrap_err();
    assert!(e.contains("--max-mbps"), "{e}");
    let e = parse_send(&s(&["10.0.0.1:1", "--bogus", "1"])).unwrap_err();
    assert!(e.contains("--bogus"), "{e}");
    let e = parse_send(&s(&["10.0.0.1:1", "--profile", "rfc"])).unwrap_err();
    assert!(e.contains("--profile \"rfc\""), "{e}");
    let e = parse_send(&s(&["10.0.0.1:1", "--fps"])).unwrap_err();
    assert!(e.contains("--fps needs a value"), "{e}");
}

#[test]
fn receive_options() {
    let c = parse_receive(&s(&["0.0.0.0:30002", "--num-reports", "count-minus-one"])).unwrap();
    assert_eq!(c.num_reports, NumReports::CountMinusOne);
    assert_eq!(c.feedback_packets, 16);
    assert!(parse_receive(&s(&["0.0.0.0:30002", "--num-reports", "x"])).is_err());
}
