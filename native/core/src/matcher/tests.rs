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
        assert_eq!(sorted_records(keys, |i| times[i]), expected);
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
    let recs = sorted_records(&[7, 7, 7, 1], |i| times[i]);
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
