//! Matching packets between two capture points: unique keys, retransmissions and
//! duplicates, sequence wraps, time order, the delay window, missing timestamps.

use super::*;

const W: i64 = 1_000_000_000;

#[test]
fn unique_keys_match_with_their_delay() {
    let r = match_points(&[1, 2, 3], &[10, 20, 30], &[3, 1], &[35, 12], W);
    assert_eq!(r.in_to_eg, vec![1, -1, 0]);
    assert_eq!(r.eg_to_in, vec![2, 0]);
    assert_eq!(r.reverse_twin, vec![false, false]);
}

#[test]
fn retransmission_after_a_drop_takes_the_latest_twin() {
    // Original at 0 dropped, identical retransmission at 200 ms delivered at 210 ms.
    let r = match_points(&[5, 5], &[0, 200_000_000], &[5], &[210_000_000], W);
    assert_eq!(r.in_to_eg, vec![-1, 0]);
}

#[test]
fn exact_duplicates_leave_first_in_first_out() {
    let r = match_points(&[5, 5], &[0, 1], &[5, 5], &[100, 101], W);
    assert_eq!(r.in_to_eg, vec![0, 1]);
    assert_eq!(r.eg_to_in, vec![0, 1]);
}

#[test]
fn wraps_are_told_apart_by_the_window() {
    // Same key 13 s apart (a 16-bit counter wrapped): each leaves 5 ms after it entered.
    let s = 1_000_000_000i64;
    let r = match_points(
        &[9, 9],
        &[0, 13 * s],
        &[9, 9],
        &[5_000_000, 13 * s + 5_000_000],
        W,
    );
    assert_eq!(r.in_to_eg, vec![0, 1]);
    // With the first one lost, the second is not given to the first.
    let r = match_points(&[9, 9], &[0, 13 * s], &[9], &[13 * s + 5_000_000], W);
    assert_eq!(r.in_to_eg, vec![-1, 0]);
}

#[test]
fn egress_before_ingress_is_not_matched_but_counted() {
    let r = match_points(&[1, 2], &[100, 200], &[1, 2], &[50, 150], W);
    assert_eq!(r.in_to_eg, vec![-1, -1]);
    assert_eq!(r.reverse_twin, vec![true, true]);
}

#[test]
fn records_are_ordered_by_key_time_and_row() {
    let check = |keys: &[u64], times: &[i64]| {
        let mut expected: Vec<Rec> = keys
            .iter()
            .zip(times)
            .enumerate()
            .filter(|(_, (_, &t))| t != NO_TIMESTAMP)
            .map(|(i, (&key, &ts))| Rec {
                key,
                ts,
                idx: i as u64,
            })
            .collect();
        expected.sort_unstable_by_key(|r| (r.key, r.ts, r.idx));
        let sorted = partitioned::sorted(partition_keys(keys, |i| times[i]));
        assert_eq!(sorted, expected);
    };
    check(
        &[u64::MAX, 3, 1 << 40, 3, 0, 1 << 63, 3, 9],
        &[0, 5, 0, 5, 0, 0, 1, NO_TIMESTAMP],
    );
    // Many records (several buckets in use, uneven): same as a plain sort.
    let keys: Vec<u64> = (0..10_000u64)
        .map(|i| crate::keys::finalize(i % 7_000))
        .collect();
    let times: Vec<i64> = (0..10_000i64).map(|i| i % 13).collect();
    check(&keys, &times);
    // Skewed: nearly all records in the first partition (small keys), a few in the last,
    // counts that do not fill the last gathered lines, and ties broken by time then row.
    let keys: Vec<u64> = (0..5_003u64)
        .map(|i| {
            if i % 100 == 99 {
                u64::MAX - i % 7
            } else {
                i % 1_500
            }
        })
        .collect();
    let times: Vec<i64> = (0..5_003i64).map(|i| (i * 7919) % 11).collect();
    check(&keys, &times);
}

#[test]
fn equal_keys_are_put_in_time_order_whatever_the_file_order() {
    let times = [30, 10, 20, 99];
    let recs = partitioned::sorted(partition_keys(&[7, 7, 7, 1], |i| times[i]));
    let order: Vec<u64> = recs.iter().map(|r| r.idx).collect();
    assert_eq!(order, vec![3, 1, 2, 0]);
}

#[test]
fn a_lone_twin_outside_the_window_is_not_matched() {
    let r = match_points(&[4], &[0], &[4], &[W + 1], W);
    assert_eq!(r.in_to_eg, vec![-1]);
    assert_eq!(r.reverse_twin, vec![false]);
}

#[test]
fn packets_without_timestamp_are_never_matched() {
    let r = match_points(&[1], &[NO_TIMESTAMP], &[1], &[5], W);
    assert_eq!(r.in_to_eg, vec![-1]);
    assert_eq!(r.eg_to_in, vec![-1]);
}

/// The match by the rules alone: each key's records, sorted by (time, row), paired by
/// `pair_group`; no partitions, sorts or walks.
fn match_by_groups(
    in_key: &[u64],
    in_ts: &[i64],
    eg_key: &[u64],
    eg_ts: &[i64],
    w: i64,
) -> MatchResult {
    use std::collections::BTreeMap;
    let groups = |key: &[u64], ts: &[i64]| {
        let mut g: BTreeMap<u64, Vec<Rec>> = BTreeMap::new();
        for (i, (&key, &ts)) in key.iter().zip(ts).enumerate() {
            if ts != NO_TIMESTAMP {
                let idx = i as u64;
                g.entry(key).or_default().push(Rec { key, ts, idx });
            }
        }
        for recs in g.values_mut() {
            recs.sort_by_key(|r| (r.ts, r.idx));
        }
        g
    };
    let (gi, ge) = (groups(in_key, in_ts), groups(eg_key, eg_ts));
    let mut r = MatchResult {
        in_to_eg: vec![-1; in_key.len()],
        eg_to_in: vec![-1; eg_key.len()],
        reverse_twin: vec![false; eg_key.len()],
    };
    let mut scratch = Scratch::default();
    for (key, ins) in &gi {
        let Some(egs) = ge.get(key) else { continue };
        pair_group(ins, egs, w, &mut scratch, |a, twin| match twin {
            Twin::Pair(b) => {
                r.in_to_eg[a.idx as usize] = b.idx as i64;
                r.eg_to_in[b.idx as usize] = a.idx as i64;
            }
            Twin::Reverse => r.reverse_twin[a.idx as usize] = true,
        });
    }
    r
}

#[test]
fn partitioned_match_equals_the_match_by_groups() {
    // A small deterministic generator (no dependency): xorshift.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for (n, distinct, skewed) in [
        (0usize, 1u64, false),
        (1, 1, false),
        (300, 50, false),
        (20_000, 15_000, false),
        // Most keys in one partition, far past its room: its spill is matched too.
        (20_000, 3_000, true),
        // Many duplicates of few keys: groups of dozens on each side.
        (20_000, 400, false),
    ] {
        let key = |r: u64| {
            let k = crate::keys::finalize(r % distinct);
            if skewed && r % 10 != 0 {
                k >> 12
            } else {
                k
            }
        };
        // Ingress packets 1 us apart; nine in ten leave within -0.5..4.5 us (some before
        // they came: reverse twins), a few with a key of their own; 1 % have no time.
        let (mut ik, mut it, mut ek, mut et) = (vec![], vec![], vec![], vec![]);
        for i in 0..n {
            let r = next();
            let k = key(r >> 8);
            let t = i as i64 * 1_000;
            ik.push(k);
            it.push(if r % 97 == 0 { NO_TIMESTAMP } else { t });
            if r % 10 != 0 {
                ek.push(if r % 31 == 0 { key(next()) } else { k });
                let out = t + ((r >> 40) % 5_000) as i64 - 500;
                et.push(if r % 89 == 0 { NO_TIMESTAMP } else { out });
            }
        }
        let w = 3_000;
        let want = match_by_groups(&ik, &it, &ek, &et, w);
        assert_eq!(
            match_points(&ik, &it, &ek, &et, w),
            want,
            "{n} packets, {distinct} keys, skewed {skewed}"
        );
        // The walks' largest delay: that of the pairs found.
        let largest = (0..n)
            .filter(|&i| want.in_to_eg[i] >= 0)
            .map(|i| et[want.in_to_eg[i] as usize] - it[i])
            .max()
            .unwrap_or(0);
        let m = match_keys(
            Cow::Borrowed(&ik),
            |i| it[i],
            Cow::Borrowed(&ek),
            |i| et[i],
            w,
        );
        assert_eq!(m.largest_delay_ns, largest, "{n} packets");
        if n >= 300 {
            let paired = want.in_to_eg.iter().filter(|&&j| j >= 0).count();
            let reverse = want.reverse_twin.iter().filter(|&&r| r).count();
            assert!(
                paired > n / 20 && reverse > 0,
                "{paired} pairs, {reverse} reverse"
            );
        }
    }
}
