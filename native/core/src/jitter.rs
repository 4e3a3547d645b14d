//! The running RTP inter-arrival jitter of RFC 3550 (section 6.4.1, appendix A.8).

/// The running jitter after each packet, from the transit-time differences `|D|` (in RTP
/// timestamp units): `J_k = J_(k-1) + (|D_k| - J_(k-1)) / 16`, with `J_0 = 0`, computed as
/// `J_k = |D_k| / 16 + 15/16 J_(k-1)` (the order of operations scipy's `lfilter` uses, so
/// the values are the same bit for bit as the Python reference's).
pub fn running_jitter(abs_transit_diff: &[f64]) -> Vec<f64> {
    let mut out = Vec::with_capacity(abs_transit_diff.len());
    let mut j = 0.0_f64;
    for &d in abs_transit_diff {
        j = d / 16.0 + 15.0 / 16.0 * j;
        out.push(j);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::running_jitter;

    #[test]
    fn a_constant_difference_converges_to_itself() {
        let j = running_jitter(&[160.0; 400]);
        assert_eq!(j[0], 10.0);
        assert_eq!(j[1], 10.0 + 150.0 / 16.0);
        assert!((j[399] - 160.0).abs() < 1e-9);
    }

    #[test]
    fn no_difference_no_jitter() {
        assert!(running_jitter(&[]).is_empty());
        assert_eq!(running_jitter(&[0.0, 0.0]), vec![0.0, 0.0]);
    }
}
