//! A small, fast, seedable random generator (splitmix64) for loss, jitter and the AQMs'
//! random marking. Seeded from EMU.json's `seed` for reproducible runs, else from the clock.

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x2545_f491_4f6c_dd1d)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        crate::packet::mix64(self.0)
    }

    /// Uniform in [0, 1).
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p` (p <= 0: never, p >= 1: always).
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && (p >= 1.0 || self.f64() < p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chance_matches_probability() {
        let mut r = Rng::new(7);
        let hits = (0..100_000).filter(|_| r.chance(0.3)).count();
        assert!((29_000..31_000).contains(&hits), "{hits}");
        assert!(!r.chance(0.0) && r.chance(1.0));
    }
}
