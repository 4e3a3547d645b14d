//! The frame sources: the encoder model's mean rate, lag and limits, I-frames on request
//! and their payback, and trace replay.

use super::*;

fn settings() -> EncoderSettings {
    EncoderSettings {
        fps: 60.0,
        start_bps: 10e6,
        min_bps: 0.5e6,
        max_bps: 30e6,
        lag_s: 0.1,
        size_cv: 0.2,
        keyframe_interval_s: 2.0,
        keyframe_factor: 4.0,
        seed: 1,
    }
}

#[test]
fn mean_rate_tracks_target_with_keyframes() {
    let mut e = EncoderModel::new(settings());
    let mut bytes = 0usize;
    let mut keyframes = 0;
    for _ in 0..600 {
        let f = e.produce(10e6);
        bytes += f.bytes;
        keyframes += f.keyframe as usize;
    }
    let rate = bytes as f64 * 8.0 / 10.0;
    assert!((rate - 10e6).abs() / 10e6 < 0.05, "{rate}");
    assert_eq!(keyframes, 5);
}

#[test]
fn follows_target_with_lag_and_limits() {
    let mut e = EncoderModel::new(settings());
    let f = e.produce(20e6);
    assert!(
        f.encoder_bps > 10e6 && f.encoder_bps < 12e6,
        "{}",
        f.encoder_bps
    );
    for _ in 0..120 {
        e.produce(100e6);
    }
    assert!((e.produce(100e6).encoder_bps - 30e6).abs() < 1.0);
    for _ in 0..120 {
        e.produce(0.0);
    }
    assert!((e.produce(0.0).encoder_bps - 0.5e6).abs() < 1.0);
}

#[test]
fn requested_keyframes_keep_the_mean_rate() {
    let mut e = EncoderModel::new(settings());
    let mut bytes = 0usize;
    let mut keyframes = 0;
    for i in 0..600 {
        if i % 12 == 0 {
            e.request_keyframe(); // every 200 ms, as after persistent loss
        }
        let f = e.produce(10e6);
        bytes += f.bytes;
        keyframes += f.keyframe as usize;
    }
    assert!(keyframes >= 45, "{keyframes}");
    let rate = bytes as f64 * 8.0 / 10.0;
    assert!((rate - 10e6).abs() / 10e6 < 0.05, "{rate}");
}

#[test]
fn keyframe_on_request_once() {
    let mut s = settings();
    s.keyframe_interval_s = 0.0;
    s.size_cv = 0.0;
    let mut e = EncoderModel::new(s);
    for _ in 0..30 {
        e.produce(10e6);
    }
    e.request_keyframe();
    e.request_keyframe();
    let f = e.produce(10e6);
    assert!(f.keyframe);
    assert!(!e.produce(10e6).keyframe);
    assert!(f.bytes > 3 * (10e6 / 60.0 / 8.0) as usize);
}

#[test]
fn trace_replay_scales_and_loops() {
    let trace = FrameTrace::parse_csv("t_s,size_bytes\n0,1000\n0.5,3000\n").unwrap();
    assert_eq!(trace.period_s(), 1.0);
    assert_eq!(trace.mean_bps(), 32_000.0);
    let mut r = TraceReplay::new(trace, 64_000.0, 1.0, 1e9, 0.0, 2.0);
    let f = r.produce(64_000.0);
    assert_eq!(f.bytes, 2000);
    assert_eq!(r.next_time_s(), 0.5);
    assert_eq!(r.produce(64_000.0).bytes, 6000);
    assert_eq!(r.next_time_s(), 1.0);
    r.request_keyframe();
    let f = r.produce(64_000.0);
    assert!(f.keyframe);
    assert_eq!(f.bytes, 4000);
}

#[test]
fn trace_errors_name_the_line() {
    let err = FrameTrace::parse_csv("t_s,size_bytes\n0,10\nx,y\n").unwrap_err();
    assert!(err.contains("line 3"), "{err}");
    assert!(FrameTrace::parse_csv("0,10\n").is_err());
}
