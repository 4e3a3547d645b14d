//! The streaming matcher against the whole-capture matcher on random pairs of captures,
//! pushed in small chunks so that chunk boundaries cut through look-alike groups.

use super::*;
use crate::matcher::{match_points, MatchResult};

/// SplitMix64: a small deterministic generator (no external crates).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        crate::keys::finalize(self.0)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random point: keys from a small set (look-alikes), times mostly increasing with
/// some disorder, now and then no timestamp.
fn point(rng: &mut Rng, n: usize, keys: u64, disorder: i64, start: i64) -> (Vec<u64>, Vec<i64>) {
    let mut t = start;
    let (mut k, mut ts) = (Vec::new(), Vec::new());
    for _ in 0..n {
        t += rng.below(400) as i64;
        k.push(rng.below(keys));
        let jitter = if disorder > 0 {
            rng.below(disorder as u64) as i64
        } else {
            0
        };
        ts.push(if rng.below(50) == 0 {
            NO_TIMESTAMP
        } else {
            t - jitter
        });
    }
    (k, ts)
}

/// The least time at or after each chunk start (the watermark a pre-pass gives).
fn suffix_min(ts: &[i64], chunk: usize) -> Vec<i64> {
    let starts: Vec<usize> = (0..ts.len()).step_by(chunk).collect();
    let mut out = vec![i64::MAX; starts.len() + 1];
    for (c, &s) in starts.iter().enumerate().rev() {
        let m = ts[s..(s + chunk).min(ts.len())]
            .iter()
            .filter(|&&t| t != NO_TIMESTAMP)
            .min()
            .copied()
            .unwrap_or(i64::MAX);
        out[c] = m.min(out[c + 1]);
    }
    out
}

fn streamed(
    ik: &[u64],
    it: &[i64],
    ek: &[u64],
    et: &[i64],
    max_delay: i64,
    chunk: usize,
) -> MatchResult {
    let mut m = StreamMatcher::new(max_delay);
    let tos: Vec<u8> = (0..ek.len()).map(|i| i as u8).collect();
    let (wi, we) = (suffix_min(it, chunk), suffix_min(et, chunk));
    let (mut ci, mut ce) = (0usize, 0usize);
    let (ni, ne) = (wi.len() - 1, we.len() - 1);
    while ci < ni || ce < ne {
        // read from the point that is behind in time
        if ci < ni && (ce >= ne || wi[ci] <= we[ce]) {
            let r = ci * chunk..(ci * chunk + chunk).min(ik.len());
            m.push_ingress(&ik[r.clone()], &it[r]);
            ci += 1;
        } else {
            let r = ce * chunk..(ce * chunk + chunk).min(ek.len());
            m.push_egress(&ek[r.clone()], &et[r.clone()], &tos[r]);
            ce += 1;
        }
        m.advance(wi[ci].min(we[ce]));
    }
    m.advance(i64::MAX);
    assert_eq!(m.pending(), 0);
    let mut r = MatchResult {
        in_to_eg: vec![-1; ik.len()],
        eg_to_in: vec![-1; ek.len()],
        reverse_twin: vec![false; ek.len()],
    };
    for (i, x) in r.in_to_eg.iter_mut().enumerate() {
        let f = m.ingress_fate(i as u64).expect("kept");
        assert!(f.resolved);
        *x = f.twin;
        if f.twin >= 0 {
            assert_eq!(f.twin_ts, et[f.twin as usize]);
            assert_eq!(f.twin_tos, tos[f.twin as usize]);
        }
    }
    for (i, (x, rev)) in r.eg_to_in.iter_mut().zip(&mut r.reverse_twin).enumerate() {
        let f = m.egress_fate(i as u64).expect("kept");
        assert!(f.resolved);
        (*x, *rev) = (f.twin, f.reverse);
    }
    r
}

#[test]
fn streaming_pairs_as_the_whole_capture_matcher() {
    let mut rng = Rng(7);
    for case in 0..400 {
        let n_in = 1 + rng.below(300) as usize;
        let keys = 1 + rng.below(if case % 2 == 0 { 20 } else { 400 });
        let disorder = [0, 0, 50, 3000][rng.below(4) as usize];
        let (ik, it) = point(&mut rng, n_in, keys, disorder, 1_000_000);
        // egress: a delayed, thinned, slightly duplicated copy plus strays
        let (mut ek, mut et) = (Vec::new(), Vec::new());
        for (&k, &t) in ik.iter().zip(&it) {
            let copies = match rng.below(10) {
                0 => 0,
                1 => 2,
                _ => 1,
            };
            for _ in 0..copies {
                if t == NO_TIMESTAMP {
                    continue;
                }
                ek.push(k);
                et.push(t + rng.below(1500) as i64 - 100);
            }
        }
        let strays = rng.below(20) as usize;
        let (sk, st) = point(&mut rng, strays, keys, 0, 1_000_000);
        ek.extend(sk);
        et.extend(st);
        // disorder at egress too: swap a few neighbours
        for i in 1..et.len() {
            if rng.below(8) == 0 {
                et.swap(i - 1, i);
                ek.swap(i - 1, i);
            }
        }
        let max_delay = [0, 300, 1000, 5000][rng.below(4) as usize];
        let whole = match_points(&ik, &it, &ek, &et, max_delay);
        for chunk in [1, 2, 7, 64] {
            let s = streamed(&ik, &it, &ek, &et, max_delay, chunk);
            assert_eq!(s, whole, "case {case}, chunks of {chunk}");
        }
    }
}

#[test]
fn released_rows_are_forgotten_and_pending_packets_counted() {
    // Buckets of 10 ns: key 1 in bucket 0, key 2 in bucket 1, key 7 in both.
    let mut m = StreamMatcher::new(10);
    m.push_ingress(&[1, 7, 2], &[0, 8, 15]);
    m.push_egress(&[1, 7], &[3, 12], &[7, 9]);
    assert_eq!(m.pending(), 5);
    m.advance(19); // bucket 1 may still get packets: bucket 0 waits
    assert_eq!(m.pending(), 5);
    m.advance(20); // bucket 0 paired, but for key 7, carried into bucket 1
    assert_eq!(m.pending(), 3);
    let f = m.ingress_fate(0).unwrap();
    assert_eq!((f.resolved, f.twin, f.twin_ts, f.twin_tos), (true, 0, 3, 7));
    assert!(!m.ingress_fate(1).unwrap().resolved);
    assert!(!m.ingress_fate(2).unwrap().resolved);
    m.release_ingress(1);
    assert_eq!(m.ingress_fate(0), None);
    m.advance(30);
    assert_eq!(m.pending(), 0);
    let f = m.ingress_fate(1).unwrap();
    assert_eq!(
        (f.resolved, f.twin, f.twin_ts, f.twin_tos),
        (true, 1, 12, 9)
    );
    assert_eq!(m.ingress_fate(2).unwrap().twin, -1);
}

#[test]
fn the_end_pairs_what_is_pending_with_nothing_new() {
    let mut m = StreamMatcher::new(2_000_000_000);
    m.push_ingress(&[5], &[200]);
    m.push_egress(&[5], &[2_200], &[0]);
    m.advance(1_200); // too early for key 5
    m.advance(i64::MAX); // nothing pushed since: the end still pairs it
    let f = m.ingress_fate(0).unwrap();
    assert_eq!((f.resolved, f.twin, f.twin_ts), (true, 0, 2_200));
}

#[test]
fn a_zero_max_delay_gives_every_packet_a_bucket_and_still_pairs_them() {
    // Each time its own bucket (width 1 ns): 100,000 buckets in one push.
    let n = 100_000u64;
    let keys: Vec<u64> = (0..n).map(|i| crate::keys::finalize(i + 1)).collect();
    let ts: Vec<i64> = (0..n as i64).map(|i| 1_000 + 3 * i).collect();
    let tos = vec![1u8; n as usize];
    let mut m = StreamMatcher::new(0);
    m.push_ingress(&keys, &ts);
    m.push_egress(&keys, &ts, &tos);
    m.advance(i64::MAX);
    assert_eq!(m.pending(), 0);
    for i in 0..n {
        let f = m.ingress_fate(i).expect("kept");
        assert_eq!(
            (f.resolved, f.twin, f.twin_ts),
            (true, i as i64, ts[i as usize])
        );
    }
}

#[test]
fn buckets_hold_each_packet_in_key_time_row_order() {
    // `bucketed` against its definition: packets with a time grouped by the bucket of
    // their time, each group sorted by (key, time, row); over bucket widths from one
    // packet a bucket to all in one, keys few (look-alikes) or many (slots of the radix
    // sort), times out of order and missing.
    let mut rng = Rng(11);
    for &(n, keys, width) in &[
        (0, 5, 10),
        (1, 5, 10),
        (700, 3, 1),
        (5_000, 50, 40_000),
        (20_000, 1 << 40, 300_000),
        (20_000, 1 << 40, i64::MAX),
    ] {
        let (mut key, ts) = point(&mut rng, n, keys, 900, -100_000);
        // spread the keys over the top bits, where the radix sort looks
        for k in &mut key {
            *k = k.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
        let first = 1_000;
        let runs = bucketed(&key, &ts, first, width);
        let w = buckets::width(width);
        let mut expected: Vec<(i64, Vec<Rec>)> = Vec::new();
        for (i, (&k, &t)) in key.iter().zip(&ts).enumerate() {
            if t == NO_TIMESTAMP {
                continue;
            }
            let id = t.div_euclid(w);
            let rec = Rec {
                key: k,
                ts: t,
                idx: first + i as u64,
            };
            match expected.iter_mut().find(|(b, _)| *b == id) {
                Some((_, recs)) => recs.push(rec),
                None => expected.push((id, vec![rec])),
            }
        }
        for (_, recs) in &mut expected {
            recs.sort_by_key(|r| (r.key, r.ts, r.idx));
        }
        assert_eq!(runs.width, w);
        assert_eq!(
            runs.runs, expected,
            "{n} packets, {keys} keys, width {width}"
        );
    }
}
