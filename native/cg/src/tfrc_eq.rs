//! The TCP throughput equation of TFRC (RFC 5348 3.1) and its inverse.
//!
//! ```text
//!                               s
//! X_Bps = ----------------------------------------------------------
//!         R*sqrt(2*b*p/3) + (t_RTO * (3*sqrt(3*b*p/8)*p*(1+32*p^2)))
//! ```
//!
//! with s the segment size (bytes), R the round-trip time (s), p the loss event rate, b = 1
//! (RFC 5348 recommends b = 1) and t_RTO = 4R.

/// Packets acknowledged by one TCP ACK in the model (RFC 5348 recommends 1).
pub const B: f64 = 1.0;

/// Allowed sending rate in bytes/s; infinite when `p` is 0.
pub fn x_bps(s_bytes: f64, rtt_s: f64, p: f64) -> f64 {
    if p <= 0.0 {
        return f64::INFINITY;
    }
    let t_rto = 4.0 * rtt_s;
    let denom = rtt_s * (2.0 * B * p / 3.0).sqrt()
        + t_rto * (3.0 * (3.0 * B * p / 8.0).sqrt() * p * (1.0 + 32.0 * p * p));
    s_bytes / denom
}

/// The loss event rate at which the equation gives `x` bytes/s (RFC 5348 6.3.1 uses it
/// to seed the first loss interval). The equation decreases in p, so bisection works.
pub fn p_for_rate(s_bytes: f64, rtt_s: f64, x: f64) -> f64 {
    if x.is_nan() || rtt_s.is_nan() || x <= 0.0 || rtt_s <= 0.0 {
        return 1.0;
    }
    let (mut lo, mut hi) = (1e-12_f64, 1.0_f64);
    if x_bps(s_bytes, rtt_s, lo) <= x {
        return lo;
    }
    if x_bps(s_bytes, rtt_s, hi) >= x {
        return hi;
    }
    for _ in 0..200 {
        let mid = (lo * hi).sqrt(); // bisect in log space: p spans many decades
        if x_bps(s_bytes, rtt_s, mid) > x {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi / lo < 1.000_000_1 {
            break;
        }
    }
    (lo * hi).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_hand_computed_value() {
        // s = 1000 B, R = 0.1 s, p = 0.01:
        // sqrt(2p/3) = 0.0816497, 3*sqrt(3p/8) = 0.1837117, *p*(1+32p^2) = 0.0018430
        // denom = 0.1*0.0816497 + 0.4*0.0018430 = 0.0089022 -> X = 112331 B/s
        let x = x_bps(1000.0, 0.1, 0.01);
        assert!((x - 112_331.0).abs() < 50.0, "{x}");
    }

    #[test]
    fn decreases_with_p_and_rtt() {
        assert!(x_bps(1200.0, 0.05, 0.001) > x_bps(1200.0, 0.05, 0.01));
        assert!(x_bps(1200.0, 0.05, 0.01) > x_bps(1200.0, 0.1, 0.01));
        assert!(x_bps(1200.0, 0.05, 0.0).is_infinite());
    }

    #[test]
    fn inverse_recovers_p() {
        for p in [1e-6, 1e-4, 0.01, 0.2, 0.9] {
            let x = x_bps(1200.0, 0.03, p);
            let back = p_for_rate(1200.0, 0.03, x);
            assert!((back - p).abs() / p < 1e-4, "{p} -> {back}");
        }
    }
}
