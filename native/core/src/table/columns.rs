//! The packet and egress-only tables as columns, with a validity mask where the Python
//! schema has nulls. Columns computed for the table (times and delays, verdicts, flow ids)
//! are built here; columns that only copy a field of the ingress capture are read from
//! the capture through the table's row order by the Parquet writer as it encodes them,
//! a row group at a time, instead of copied whole beforehand (a pass over the table and a
//! tenth of a gigabyte saved).

use super::{FlowIds, Point, NO_TIMESTAMP};
use crate::decode::FlowKey;
use crate::parquet::{Column, Owned, Values};
use crate::pcap::{Capture, Columns};
use std::borrow::Cow;
use std::sync::Arc;

/// What the ingress-sourced columns read: the capture, its RTP marks (one per capture
/// row) and the capture row of each table row.
pub struct Ingress {
    cap: Arc<Capture>,
    rtp: Vec<bool>,
    order: Vec<usize>,
}

/// A field of the ingress capture.
type Field = fn(&Ingress) -> Values<'_>;
/// A flag of the ingress capture (one per capture row).
type Flag = fn(&Ingress) -> &[bool];

/// Where a column comes from.
enum Source {
    /// Values and validity (None: no nulls), one per table row.
    Owned(Owned<'static>, Option<Vec<bool>>),
    /// A field of the ingress capture and its validity flag, read through the order.
    Ingress(Field, Option<Flag>),
}

/// A table: named columns of one length.
#[derive(Default)]
pub struct Table {
    pub(super) rows: usize,
    columns: Vec<(&'static str, Source)>,
    ingress: Option<Ingress>,
}

pub type PacketTable = Table;
pub type EgressOnly = Table;

impl Table {
    /// A table of `rows` rows and no columns yet.
    pub(super) fn with_rows(rows: usize) -> Table {
        Table {
            rows,
            ..Default::default()
        }
    }

    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The columns as the Parquet writer takes them.
    pub fn parquet_columns(&self) -> Vec<Column<'_>> {
        self.columns
            .iter()
            .map(|(name, source)| match source {
                Source::Owned(v, valid) => Column {
                    name,
                    values: v.as_values(),
                    valid: valid.as_deref(),
                    order: None,
                },
                Source::Ingress(field, flag) => {
                    let ing = self
                        .ingress
                        .as_ref()
                        .expect("an ingress column needs its capture");
                    Column {
                        name,
                        values: field(ing),
                        valid: flag.map(|f| f(ing)),
                        order: Some(&ing.order),
                    }
                }
            })
            .collect()
    }

    pub(super) fn push(&mut self, name: &'static str, v: Owned<'static>, valid: Option<Vec<bool>>) {
        self.columns.push((name, Source::Owned(v, valid)));
    }

    fn push_ingress(&mut self, name: &'static str, field: Field, flag: Option<Flag>) {
        self.columns.push((name, Source::Ingress(field, flag)));
    }

    /// `src` and `dst`: each row's flow (`flow_idx`) into the capture's address strings,
    /// which the Parquet writer keeps as a dictionary.
    pub(super) fn push_addresses(&mut self, cap: &Capture, flow_idx: Vec<u32>) {
        let strings =
            |f: fn(&FlowKey) -> String| Cow::Owned(cap.flows.keys.iter().map(f).collect());
        let src = Owned::Str {
            index: flow_idx.clone(),
            dict: strings(|k| k.src_string()),
        };
        let dst = Owned::Str {
            index: flow_idx,
            dict: strings(|k| k.dst_string()),
        };
        self.push("src", src, None);
        self.push("dst", dst, None);
    }
}

/// `src[i]` for each row `i` of `rows`.
pub(super) fn gather<T: Copy>(rows: &[usize], src: &[T]) -> Vec<T> {
    rows.iter().map(|&i| src[i]).collect()
}

/// `src[j]` for each egress twin `j` of `twins` (`NONE`: `absent`).
fn gather_twin<T: Copy>(twins: &[usize], src: &[T], absent: T) -> Vec<T> {
    twins
        .iter()
        .map(|&j| if j == NONE { absent } else { src[j] })
        .collect()
}

const NONE: usize = usize::MAX;

/// The packet rows: `kept` ingress rows (indices into the point's IP rows) in time order.
/// `cap` is the ingress capture `ing` reads, and `rtp` its RTP marks (one per capture
/// row), both kept by the table. Returns the table and its (delivered, lost, unknown)
/// counts.
#[allow(clippy::too_many_arguments)]
pub fn packet_table(
    ing: &Point<'_>,
    eg: &Point<'_>,
    cap: &Arc<Capture>,
    rtp: Vec<bool>,
    kept: &[usize],
    flow_ids: &FlowIds,
    in_to_eg: &[i64],
    span_ns: Option<(i64, i64)>,
    guard_ns: i64,
) -> (Table, [u64; 3]) {
    let (c, e) = (&ing.cap.columns, &eg.cap.columns);
    // captures are usually, not always, in time order; unknown times last
    let key = |k: usize| (ing.t(k) == NO_TIMESTAMP, ing.t(k));
    let mut order = kept.to_vec();
    if !order.windows(2).all(|w| key(w[0]) <= key(w[1])) {
        order.sort_by_key(|&k| (key(k), k));
    }
    let rows: Vec<usize> = order.iter().map(|&k| ing.rows[k]).collect();
    let twins: Vec<usize> = order
        .iter()
        .map(|&k| {
            if in_to_eg[k] < 0 {
                NONE
            } else {
                eg.rows[in_to_eg[k] as usize]
            }
        })
        .collect();
    let ids: Vec<u32> = order
        .iter()
        .map(|&k| flow_ids.get(ing.flow_key[k]))
        .collect();
    // The twins' ECN and DSCP, CE marks, RTP sequence numbers and address indices on
    // another core, while this one does times, delays and loss verdicts.
    let (times, (ecn_eg, ce, dscp_eg, rtp_seq_ext, is_rtp_rows, flow_idx)) =
        std::thread::scope(|scope| {
            let other = scope.spawn(|| {
                let ecn_eg = gather_twin(&twins, &e.ecn, 0);
                let ce: Vec<bool> = rows
                    .iter()
                    .zip(&ecn_eg)
                    .map(|(&i, &o)| o == 3 && c.ecn[i] != 3)
                    .collect();
                let dscp_eg = gather_twin(&twins, &e.dscp, 0);
                let is_rtp: Vec<bool> = rows.iter().map(|&i| rtp[i]).collect();
                let seq = gather(&rows, &c.rtp_seq);
                let rtp_seq_ext = unwrap_rtp_seq(&seq, &ids, &is_rtp, flow_ids.len());
                let flow_idx = gather(&rows, &c.flow_idx);
                (ecn_eg, ce, dscp_eg, rtp_seq_ext, is_rtp, flow_idx)
            });
            let times = times_and_verdicts(&rows, &twins, c, e, span_ns, guard_ns);
            (times, other.join().expect("packet table thread"))
        });
    let Times {
        t_in,
        t_eg,
        delay,
        delay_known,
        verdicts,
        tally,
    } = times;
    let known = |t: &[i64]| Some(t.iter().map(|&x| x != NO_TIMESTAMP).collect::<Vec<bool>>());
    let matched: Vec<bool> = twins.iter().map(|&j| j != NONE).collect();

    let mut t = Table::with_rows(order.len());
    t.push("flow_id", Owned::U32(ids), None);
    t.push_ingress("proto", |s| Values::U8(&s.cap.columns.proto), None);
    t.push_ingress(
        "ip_version",
        |s| Values::U8(&s.cap.columns.ip_version),
        None,
    );
    t.push_addresses(ing.cap, flow_idx);
    let ports: Option<Flag> = Some(|s| &s.cap.columns.has_ports);
    t.push_ingress("sport", |s| Values::U16(&s.cap.columns.sport), ports);
    t.push_ingress("dport", |s| Values::U16(&s.cap.columns.dport), ports);
    t.push_ingress("size_bytes", |s| Values::U32(&s.cap.columns.ip_len), None);
    let (known_in, known_eg) = (known(&t_in), known(&t_eg));
    t.push("t_ingress_ns", Owned::I64(t_in), known_in);
    t.push("t_egress_ns", Owned::I64(t_eg), known_eg);
    t.push("delay_ms", Owned::F64(delay), Some(delay_known));
    t.push(
        "lost",
        Owned::Bool(verdicts.iter().map(|v| v.unwrap_or(false)).collect()),
        Some(verdicts.iter().map(Option::is_some).collect()),
    );
    t.push_ingress("ecn_ingress", |s| Values::U8(&s.cap.columns.ecn), None);
    t.push("ecn_egress", Owned::U8(ecn_eg), Some(matched.clone()));
    t.push("ce_marked", Owned::Bool(ce), Some(matched.clone()));
    t.push_ingress("dscp_ingress", |s| Values::U8(&s.cap.columns.dscp), None);
    t.push("dscp_egress", Owned::U8(dscp_eg), Some(matched));
    let ip_id: Option<Flag> = Some(|s| &s.cap.columns.has_ip_id);
    t.push_ingress("ip_id", |s| Values::U32(&s.cap.columns.ip_id), ip_id);
    let tcp: Option<Flag> = Some(|s| &s.cap.columns.has_tcp);
    t.push_ingress("tcp_seq", |s| Values::U32(&s.cap.columns.tcp_seq), tcp);
    t.push_ingress("tcp_ack", |s| Values::U32(&s.cap.columns.tcp_ack), tcp);
    t.push_ingress("tcp_flags", |s| Values::U16(&s.cap.columns.tcp_flags), tcp);
    let payload: Field = |s| Values::U32(&s.cap.columns.tcp_payload_len);
    t.push_ingress("tcp_payload_bytes", payload, tcp);
    let rtp_flag: Option<Flag> = Some(|s| &s.rtp);
    t.push_ingress(
        "rtp_ssrc",
        |s| Values::U32(&s.cap.columns.rtp_ssrc),
        rtp_flag,
    );
    t.push_ingress("rtp_seq", |s| Values::U16(&s.cap.columns.rtp_seq), rtp_flag);
    t.push("rtp_seq_ext", Owned::I64(rtp_seq_ext), Some(is_rtp_rows));
    t.push_ingress("rtp_ts", |s| Values::U32(&s.cap.columns.rtp_ts), rtp_flag);
    t.push_ingress(
        "rtp_marker",
        |s| Values::Bool(&s.cap.columns.rtp_marker),
        rtp_flag,
    );
    t.push_ingress("rtp_pt", |s| Values::U8(&s.cap.columns.rtp_pt), rtp_flag);
    t.ingress = Some(Ingress {
        cap: Arc::clone(cap),
        rtp,
        order: rows,
    });
    (t, tally)
}

/// The packet table's times, delays and loss verdicts (with their tally).
struct Times {
    t_in: Vec<i64>,
    t_eg: Vec<i64>,
    delay: Vec<f64>,
    delay_known: Vec<bool>,
    verdicts: Vec<Option<bool>>,
    tally: [u64; 3],
}

fn times_and_verdicts(
    rows: &[usize],
    twins: &[usize],
    c: &Columns,
    e: &Columns,
    span_ns: Option<(i64, i64)>,
    guard_ns: i64,
) -> Times {
    let t_in = gather(rows, &c.t_ns);
    let t_eg = gather_twin(twins, &e.t_ns, NO_TIMESTAMP);
    let delay_known: Vec<bool> = t_in
        .iter()
        .zip(&t_eg)
        .map(|(&a, &b)| a != NO_TIMESTAMP && b != NO_TIMESTAMP)
        .collect();
    let delay: Vec<f64> = t_in
        .iter()
        .zip(&t_eg)
        .zip(&delay_known)
        .map(|((&a, &b), &ok)| if ok { (b - a) as f64 / 1e6 } else { 0.0 })
        .collect();
    // Lost: no twin, and entered while the egress capture ran, early enough to have left
    // before it stopped; unknown otherwise (cganalysis.matching.table.loss_verdict).
    let verdict = |(m, &t): (bool, &i64)| -> Option<bool> {
        if m {
            return Some(false);
        }
        let (start, end) = span_ns?;
        (t != NO_TIMESTAMP && t >= start && t <= end - guard_ns).then_some(true)
    };
    let matched = twins.iter().map(|&j| j != NONE);
    let verdicts: Vec<Option<bool>> = matched.zip(&t_in).map(verdict).collect();
    let mut tally = [0u64; 3];
    for v in &verdicts {
        tally[match v {
            Some(false) => 0,
            Some(true) => 1,
            None => 2,
        }] += 1;
    }
    Times {
        t_in,
        t_eg,
        delay,
        delay_known,
        verdicts,
        tally,
    }
}

/// RTP sequence numbers extended past 16 bits per flow in table order: each step the
/// shortest way round the 16-bit circle (`cganalysis.capture.rtp.unwrap_rtp_seq`).
fn unwrap_rtp_seq(seq: &[u16], ids: &[u32], is_rtp: &[bool], flows: usize) -> Vec<i64> {
    let mut last: Vec<Option<(i64, u16)>> = vec![None; flows];
    (0..seq.len())
        .map(|i| {
            if !is_rtp[i] {
                return 0;
            }
            let slot = &mut last[ids[i] as usize];
            let ext = match *slot {
                None => i64::from(seq[i]),
                Some((ext, prev)) => {
                    ext + (i64::from(seq[i]) - i64::from(prev) + 32768).rem_euclid(65536) - 32768
                }
            };
            *slot = Some((ext, seq[i]));
            ext
        })
        .collect()
}
