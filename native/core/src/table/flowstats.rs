//! The flow table (`cganalysis.matching.flows.flow_table`): one row per flow of a packet
//! table, gathered from the table's row groups as they are written (in memory or
//! streaming alike, so both give the same table), with the delay percentiles exact.
//!
//! Delays are kept per flow as integer nanoseconds (4 bytes each while they fit, which
//! they do below a `max_delay_ns` of 4.29 s) and the percentiles selected from them at
//! the end: the linear interpolation of polars' `quantile`, on the same `delay_ms` values
//! the packet table holds. The mean is the exact mean of the integer delays. Beyond
//! `KEEP_DELAYS` delays, a streaming match's are written to a file instead and the
//! percentiles found by a radix search over it (`flowspill`): memory stays bounded.

use super::columns::Table;
use super::derived::verdict;
use super::flowspill::Spill;
use super::NO_TIMESTAMP;
use crate::matcher::NONE;
use std::path::PathBuf;

/// The percentiles of the flow table, by column.
pub const QUANTILES: [(&str, f64); 3] = [
    ("delay_p50_ms", 0.5),
    ("delay_p95_ms", 0.95),
    ("delay_p99_ms", 0.99),
];

/// One flow's running row.
#[derive(Clone, Debug, Default)]
pub struct Flow {
    /// Identity, from the flow's first row.
    pub proto: u8,
    pub ip_version: u8,
    pub src: String,
    pub dst: String,
    pub sport: Option<u16>,
    pub dport: Option<u16>,
    pub rtp_ssrc: Option<u32>,
    pub packets_in: u64,
    pub packets_out: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub packets_lost: u64,
    pub packets_unknown: u64,
    pub ecn_in: [u64; 4],
    pub ce_marked: u64,
    pub t_first_ns: Option<i64>,
    pub t_last_ns: Option<i64>,
    delay_sum_ns: i128,
    delay_min_ns: i64,
    delay_max_ns: i64,
    /// Delays measured (kept here, or spilled).
    n_delay: u64,
    delays: Vec<u32>,
    wide_delays: Vec<i64>,
}

/// A flow's delay statistics in milliseconds (None: no delay measured).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Delays {
    pub mean: f64,
    pub min: f64,
    pub quantiles: [f64; 3],
    pub max: f64,
}

impl Flow {
    /// Adds one row of the packet table; returns its delay if it is to be kept (below
    /// 2^32 ns; a longer one is kept here).
    pub(super) fn add(
        &mut self,
        size: u32,
        lost: Option<bool>,
        delay_ns: Option<i64>,
        ecn: u8,
        ce: bool,
        t: i64,
    ) -> Option<u32> {
        self.packets_in += 1;
        self.bytes_in += u64::from(size);
        match lost {
            Some(false) => {
                self.packets_out += 1;
                self.bytes_out += u64::from(size);
            }
            Some(true) => self.packets_lost += 1,
            None => self.packets_unknown += 1,
        }
        self.ecn_in[usize::from(ecn & 3)] += 1;
        self.ce_marked += u64::from(ce);
        if t != NO_TIMESTAMP {
            self.t_first_ns = Some(self.t_first_ns.map_or(t, |f| f.min(t)));
            self.t_last_ns = Some(self.t_last_ns.map_or(t, |l| l.max(t)));
        }
        let d = delay_ns?;
        if self.n_delay == 0 {
            (self.delay_min_ns, self.delay_max_ns) = (d, d);
        }
        self.n_delay += 1;
        self.delay_min_ns = self.delay_min_ns.min(d);
        self.delay_max_ns = self.delay_max_ns.max(d);
        self.delay_sum_ns += i128::from(d);
        match u32::try_from(d) {
            Ok(d) => Some(d),
            Err(_) => {
                self.wide_delays.push(d);
                None
            }
        }
    }

    pub(super) fn n_delays(&self) -> u64 {
        self.n_delay
    }

    pub(super) fn wide_delays(&self) -> &[i64] {
        &self.wide_delays
    }

    /// The delay statistics from the kept delays (consumed).
    fn delays_kept(&mut self) -> Option<Delays> {
        let mut all: Vec<i64> = std::mem::take(&mut self.wide_delays);
        let narrow = std::mem::take(&mut self.delays);
        all.reserve(narrow.len());
        all.extend(narrow.into_iter().map(i64::from));
        let ranks = ranks(all.len() as u64);
        // Each rank selected in what is left above the one before (linear time in all).
        let mut at = 0;
        for &r in &ranks {
            let r = r as usize;
            all[at..].select_nth_unstable(r - at);
            at = r + 1; // the elements up to r are final
        }
        self.delay_stats(|r| all[r as usize])
    }

    /// The statistics, given the value of each rank of `ranks`.
    fn delay_stats(&self, value: impl Fn(u64) -> i64) -> Option<Delays> {
        let n = self.n_delay;
        if n == 0 {
            return None;
        }
        let ms = |d: i64| d as f64 / 1e6;
        let quantiles = QUANTILES.map(|(_, q)| {
            let idx = (n - 1) as f64 * q;
            let (lo, hi) = (idx.floor(), idx.ceil());
            let (v_lo, v_hi) = (ms(value(lo as u64)), ms(value(hi as u64)));
            if lo == hi {
                v_lo
            } else {
                v_lo + (v_hi - v_lo) * (idx - lo)
            }
        });
        Some(Delays {
            mean: self.delay_sum_ns as f64 / n as f64 / 1e6,
            min: ms(self.delay_min_ns),
            quantiles,
            max: ms(self.delay_max_ns),
        })
    }
}

/// The ranks (0-based, in increasing order) whose values the percentiles of `n` delays
/// interpolate between.
pub(super) fn ranks(n: u64) -> Vec<u64> {
    if n == 0 {
        return Vec::new();
    }
    let mut ranks: Vec<u64> = QUANTILES
        .iter()
        .flat_map(|&(_, q)| {
            let idx = (n - 1) as f64 * q;
            [idx.floor() as u64, idx.ceil() as u64]
        })
        .collect();
    ranks.sort_unstable();
    ranks.dedup();
    ranks
}

/// Delays kept in memory at most (64 MB) by a match that may spill them.
pub const KEEP_DELAYS: usize = 16 << 20;

/// The flows of a packet table, by flow id.
#[derive(Default)]
pub struct FlowStats {
    pub flows: Vec<Option<Flow>>,
    /// Where delays go beyond `keep` kept ones (None: all are kept).
    spill: Option<Spill>,
    kept: usize,
    keep: usize,
}

impl FlowStats {
    /// Flow statistics that keep at most `keep` delays in memory and write the rest to
    /// the file `path` (removed when they are done).
    pub fn spilling(path: PathBuf, keep: usize) -> FlowStats {
        FlowStats {
            spill: Some(Spill::new(path)),
            keep,
            ..FlowStats::default()
        }
    }

    /// Every flow, by id, with its delay statistics.
    pub fn finish(mut self) -> std::io::Result<Vec<(u32, Flow, Option<Delays>)>> {
        let spilled = match self.spill.take() {
            Some(spill) if spill.used() => Some(spill.values(&self.flows)?),
            _ => None,
        };
        let mut out = Vec::new();
        for (id, flow) in self.flows.into_iter().enumerate() {
            let Some(mut flow) = flow else { continue };
            let delays = match &spilled {
                Some(values) => {
                    let v = &values[id];
                    flow.delay_stats(|r| v.iter().find(|x| x.0 == r).map_or(0, |x| x.1))
                }
                None => flow.delays_kept(),
            };
            out.push((id as u32, flow, delays));
        }
        Ok(out)
    }

    /// Keeps a delay of flow `id`, or spills it (and all kept ones, the first time).
    fn keep_delay(&mut self, id: usize, d: u32) {
        match &mut self.spill {
            Some(spill) if spill.used() || self.kept >= self.keep => {
                if !spill.used() {
                    for (f, flow) in self.flows.iter_mut().enumerate() {
                        if let Some(flow) = flow {
                            for d in std::mem::take(&mut flow.delays) {
                                spill.push(f as u32, d);
                            }
                        }
                    }
                }
                spill.push(id as u32, d);
            }
            _ => {
                if let Some(flow) = &mut self.flows[id] {
                    flow.delays.push(d);
                }
                self.kept += 1;
            }
        }
    }

    /// Adds the rows of `table` (a packet table, or a row group of one, in table order).
    pub fn add(&mut self, table: &Table) {
        let Some((s, ids)) = table.sources_and_ids() else {
            return;
        };
        let (c, e) = (&s.caps.ingress.columns, &s.caps.egress.columns);
        let flows = &s.caps.ingress.flows;
        for ((&i, &j), &id) in s.rows.iter().zip(&s.twins).zip(ids) {
            let (i, id) = (i as usize, id as usize);
            if self.flows.len() <= id {
                self.flows.resize(id + 1, None);
            }
            let flow = self.flows[id].get_or_insert_with(|| {
                let key = flows.keys.get(c.flow_idx[i] as usize);
                Flow {
                    proto: key.map_or(0, |k| k.proto()),
                    ip_version: key.map_or(0, |k| k.ip_version()),
                    src: s
                        .src
                        .get(c.flow_idx[i] as usize)
                        .cloned()
                        .unwrap_or_default(),
                    dst: s
                        .dst
                        .get(c.flow_idx[i] as usize)
                        .cloned()
                        .unwrap_or_default(),
                    sport: c.has_ports[i].then(|| key.map_or(0, |k| k.sport())),
                    dport: c.has_ports[i].then(|| key.map_or(0, |k| k.dport())),
                    rtp_ssrc: s.rtp[i].then(|| c.tcp_seq_rtp_ssrc[i]),
                    ..Flow::default()
                }
            });
            let t = c.t_ns[i];
            let matched = j != NONE;
            let (t_out, ecn_out) = if matched {
                (e.t_ns[j as usize], e.ecn[j as usize])
            } else {
                (NO_TIMESTAMP, 0)
            };
            let delay = (t != NO_TIMESTAMP && t_out != NO_TIMESTAMP).then(|| t_out.wrapping_sub(t));
            let ce = matched && ecn_out == 3 && c.ecn[i] != 3;
            if let Some(d) = flow.add(c.ip_len[i], verdict(s, matched, t), delay, c.ecn[i], ce, t) {
                self.keep_delay(id, d);
            }
        }
    }
}
