//! Delays written to a file when there are too many to keep (a streaming match of a large
//! pair), and the percentiles' order statistics found over it exactly: a radix search,
//! 8 bits a pass from the top, each pass counting per wanted rank the delays that share
//! the prefix found so far by their next 8 bits. Four passes over the file for 32-bit
//! delays; memory: a histogram of 256 counts per wanted rank of each flow.

use super::flowstats::{ranks, Flow};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;

/// (flow id, delay in ns) records, 8 bytes each.
pub(super) struct Spill {
    path: PathBuf,
    out: Option<BufWriter<File>>,
    error: Option<io::Error>,
}

impl Spill {
    pub(super) fn new(path: PathBuf) -> Spill {
        Spill {
            path,
            out: None,
            error: None,
        }
    }

    /// Whether any delay was written.
    pub(super) fn used(&self) -> bool {
        self.out.is_some() || self.error.is_some()
    }

    pub(super) fn push(&mut self, flow: u32, d: u32) {
        if self.error.is_some() {
            return;
        }
        if self.out.is_none() {
            match File::create(&self.path) {
                Ok(f) => self.out = Some(BufWriter::with_capacity(1 << 20, f)),
                Err(e) => {
                    self.error = Some(e);
                    return;
                }
            }
        }
        let mut rec = [0u8; 8];
        rec[..4].copy_from_slice(&flow.to_le_bytes());
        rec[4..].copy_from_slice(&d.to_le_bytes());
        if let Some(Err(e)) = self.out.as_mut().map(|o| o.write_all(&rec)) {
            self.error = Some(e);
        }
    }

    /// Per flow id, (rank, value) of every rank its percentiles need; the file is removed.
    pub(super) fn values(mut self, flows: &[Option<Flow>]) -> io::Result<Vec<Vec<(u64, i64)>>> {
        let result = self.search(flows);
        let _ = std::fs::remove_file(&self.path);
        result
    }

    fn search(&mut self, flows: &[Option<Flow>]) -> io::Result<Vec<Vec<(u64, i64)>>> {
        if let Some(e) = self.error.take() {
            return Err(io::Error::new(
                e.kind(),
                format!("{}: {e}", self.path.display()),
            ));
        }
        if let Some(mut out) = self.out.take() {
            out.flush()?;
        }
        // Per flow, its ranks among the spilled (32-bit) delays: (rank, prefix, residual);
        // ranks among its longer delays (kept in memory) are read from those, sorted.
        let mut found: Vec<Vec<(u64, i64)>> = vec![Vec::new(); flows.len()];
        let mut wanted: Vec<Vec<(u64, u64, u64)>> = vec![Vec::new(); flows.len()];
        for (id, flow) in flows.iter().enumerate() {
            let Some(flow) = flow else { continue };
            let mut wide = flow.wide_delays().to_vec();
            wide.sort_unstable();
            let narrow = flow.n_delays() - wide.len() as u64;
            for r in ranks(flow.n_delays()) {
                if r < narrow {
                    wanted[id].push((r, 0, r));
                } else {
                    found[id].push((r, wide[(r - narrow) as usize]));
                }
            }
        }
        for pass in 0..4u32 {
            let shift = 24 - 8 * pass;
            let mut hist: Vec<Vec<[u64; 256]>> =
                wanted.iter().map(|w| vec![[0u64; 256]; w.len()]).collect();
            self.each(|flow, d| {
                let f = flow as usize;
                let Some(w) = wanted.get(f) else { return };
                let (above, digit) = (u64::from(d) >> (shift + 8), (d >> shift) & 255);
                for (k, &(_, prefix, _)) in w.iter().enumerate() {
                    if prefix == above {
                        hist[f][k][digit as usize] += 1;
                    }
                }
            })?;
            for (w, h) in wanted.iter_mut().zip(&hist) {
                for ((_, prefix, residual), counts) in w.iter_mut().zip(h) {
                    let mut before = 0;
                    for (digit, &c) in counts.iter().enumerate() {
                        if before + c > *residual {
                            *residual -= before;
                            *prefix = (*prefix << 8) | digit as u64;
                            break;
                        }
                        before += c;
                    }
                }
            }
        }
        for (f, w) in wanted.into_iter().enumerate() {
            found[f].extend(w.into_iter().map(|(r, prefix, _)| (r, prefix as i64)));
        }
        Ok(found)
    }

    /// Calls `f(flow, delay)` for every record, in file order.
    fn each(&self, mut f: impl FnMut(u32, u32)) -> io::Result<()> {
        let mut input = BufReader::with_capacity(1 << 20, File::open(&self.path)?);
        let mut buf = vec![0u8; 1 << 20];
        let mut have = 0;
        loop {
            let n = input.read(&mut buf[have..])?;
            if n == 0 {
                return Ok(());
            }
            have += n;
            let whole = have / 8 * 8;
            for rec in buf[..whole].chunks_exact(8) {
                let flow = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]);
                f(flow, u32::from_le_bytes([rec[4], rec[5], rec[6], rec[7]]));
            }
            buf.copy_within(whole..have, 0);
            have -= whole;
        }
    }
}

impl Drop for Spill {
    fn drop(&mut self) {
        if self.used() {
            self.out = None;
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_radix_search_finds_the_sorted_ranks() {
        let path = std::env::temp_dir().join(format!("cga-spill-test-{}", std::process::id()));
        let mut spill = Spill::new(path.clone());
        let mut flows: Vec<Option<Flow>> = vec![None; 4];
        let mut all: Vec<Vec<i64>> = vec![Vec::new(); 4];
        let mut x = 12345u64;
        for i in 0..20_000u64 {
            x = crate::keys::finalize(x.wrapping_add(i));
            let f = (x % 3) as usize; // flow 3 has no delay
                                      // clustered delays (many equal), and now and then one past 2^32 ns
            let d = match x % 7 {
                0 => 2_000_000,
                1 => (1 << 32) + (x % 1000) as i64,
                _ => ((x >> 8) % 50_000_000) as i64,
            };
            all[f].push(d);
            let flow = flows[f].get_or_insert_with(Flow::default);
            if let Some(d) = flow.add(100, Some(false), Some(d), 0, false, 1) {
                spill.push(f as u32, d);
            }
        }
        let values = spill.values(&flows).unwrap();
        assert!(!path.exists(), "the file is removed");
        for (f, mut delays) in all.into_iter().enumerate() {
            delays.sort_unstable();
            let mut got = values[f].clone();
            got.sort_unstable();
            let want: Vec<(u64, i64)> = ranks(delays.len() as u64)
                .into_iter()
                .map(|r| (r, delays[r as usize]))
                .collect();
            assert_eq!(got, want, "flow {f}");
        }
    }
}
