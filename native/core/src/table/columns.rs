//! The packet and egress-only tables as columns, with a validity mask where the Python
//! schema has nulls. Of the packet table only the flow ids and extended RTP sequence
//! numbers are built beforehand. Columns that copy a field of the ingress capture are
//! read from it through the table's row order, and columns derived from a row's packet
//! and its egress twin (times, delays, loss verdicts, ECN and DSCP at egress) are
//! computed, both by the Parquet writer's threads a row group at a time as they encode
//! it: none of them exists whole (about 60 bytes a row, and a pass over the table, saved).

use super::{FlowIds, Point, NO_TIMESTAMP};
use crate::decode::FlowKey;
use crate::matcher::NONE;
use crate::parquet::{Column, Owned, Rows, Values};
use crate::pcap::Capture;
use std::borrow::Cow;
use std::sync::Arc;

/// The two captures a packet table reads.
pub struct Captures {
    pub ingress: Arc<Capture>,
    pub egress: Arc<Capture>,
}

/// What the packet table's columns read when written: both captures, the ingress RTP
/// marks (one per capture row), and per table row its ingress packet's capture row and
/// its egress twin's (`NONE`: no twin).
pub struct Sources {
    caps: Captures,
    rtp: Vec<bool>,
    rows: Vec<u32>,
    twins: Vec<u32>,
    span_ns: Option<(i64, i64)>,
    guard_ns: i64,
    /// The ingress capture's addresses, by `flow_idx`.
    src: Vec<String>,
    dst: Vec<String>,
}

/// A field of the ingress capture.
type Field = fn(&Sources) -> Values<'_>;
/// A flag of the ingress capture (one per capture row).
type Flag = fn(&Sources) -> &[bool];

/// Where a column comes from.
enum Source {
    /// Values and validity (None: no nulls), one per table row.
    Owned(Owned<'static>, Option<Vec<bool>>),
    /// A field of the ingress capture and its validity flag, read through the row order.
    Ingress(Field, Option<Flag>),
    /// Computed from a row's packet and its egress twin.
    Derived(Derived),
}

/// The columns computed from a row's ingress packet and its egress twin.
#[derive(Clone, Copy)]
enum Derived {
    TIngress,
    TEgress,
    Delay,
    Lost,
    EcnEgress,
    CeMarked,
    DscpEgress,
}

impl Derived {
    /// An empty slice of the column's type.
    fn prototype(self) -> Values<'static> {
        match self {
            Derived::TIngress | Derived::TEgress => Values::I64(&[]),
            Derived::Delay => Values::F64(&[]),
            Derived::Lost | Derived::CeMarked => Values::Bool(&[]),
            Derived::EcnEgress | Derived::DscpEgress => Values::U8(&[]),
        }
    }

    /// Rows `start..end`: values and validity.
    fn compute(self, s: &Sources, start: usize, end: usize) -> (Owned<'static>, Option<Vec<bool>>) {
        let (c, e) = (&s.caps.ingress.columns, &s.caps.egress.columns);
        let rows = &s.rows[start..end];
        let twins = &s.twins[start..end];
        let t_in = |i: usize| c.t_ns[rows[i] as usize];
        let twin = |i: usize| (twins[i] != NONE).then_some(twins[i] as usize);
        let t_eg = |i: usize| twin(i).map_or(NO_TIMESTAMP, |j| e.t_ns[j]);
        let n = end - start;
        // (value, valid) of each row
        fn split<T>(pairs: impl Iterator<Item = (T, bool)>) -> (Vec<T>, Option<Vec<bool>>) {
            let (v, ok): (Vec<T>, Vec<bool>) = pairs.unzip();
            (v, Some(ok))
        }
        let at_twin = |f: &dyn Fn(usize, usize) -> u8| {
            split((0..n).map(|i| twin(i).map_or((0, false), |j| (f(i, j), true))))
        };
        match self {
            Derived::TIngress | Derived::TEgress => {
                let t = |i| {
                    if matches!(self, Derived::TIngress) {
                        t_in(i)
                    } else {
                        t_eg(i)
                    }
                };
                let (v, ok) = split((0..n).map(|i| (t(i), t(i) != NO_TIMESTAMP)));
                (Owned::I64(v), ok)
            }
            Derived::Delay => {
                let (v, ok) = split((0..n).map(|i| {
                    let (a, b) = (t_in(i), t_eg(i));
                    if a != NO_TIMESTAMP && b != NO_TIMESTAMP {
                        ((b - a) as f64 / 1e6, true)
                    } else {
                        (0.0, false)
                    }
                }));
                (Owned::F64(v), ok)
            }
            Derived::Lost => {
                let verdicts = (0..n).map(|i| verdict(s, twins[i] != NONE, t_in(i)));
                let (v, ok) = split(verdicts.map(|v| (v.unwrap_or(false), v.is_some())));
                (Owned::Bool(v), ok)
            }
            Derived::CeMarked => {
                let ce = |i: usize, j: usize| e.ecn[j] == 3 && c.ecn[rows[i] as usize] != 3;
                let (v, ok) =
                    split((0..n).map(|i| twin(i).map_or((false, false), |j| (ce(i, j), true))));
                (Owned::Bool(v), ok)
            }
            Derived::EcnEgress => {
                let (v, ok) = at_twin(&|_, j| e.ecn[j]);
                (Owned::U8(v), ok)
            }
            Derived::DscpEgress => {
                let (v, ok) = at_twin(&|_, j| e.dscp[j]);
                (Owned::U8(v), ok)
            }
        }
    }
}

/// Lost: no twin, and entered while the egress capture ran, early enough to have left
/// before it stopped; unknown otherwise (`cganalysis.matching.table.loss_verdict`).
fn verdict(s: &Sources, matched: bool, t: i64) -> Option<bool> {
    if matched {
        return Some(false);
    }
    let (start, end) = s.span_ns?;
    (t != NO_TIMESTAMP && t >= start && t <= end - s.guard_ns).then_some(true)
}

/// A table: named columns of one length.
#[derive(Default)]
pub struct Table {
    pub(super) rows: usize,
    columns: Vec<(&'static str, Source)>,
    sources: Option<Sources>,
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
        let sources = || {
            self.sources
                .as_ref()
                .expect("a column read from the captures needs them")
        };
        self.columns
            .iter()
            .map(|(name, source)| match source {
                Source::Owned(v, valid) => Column::direct(name, v.as_values(), valid.as_deref()),
                Source::Ingress(field, flag) => {
                    let s = sources();
                    Column {
                        name,
                        values: field(s),
                        valid: flag.map(|f| f(s)),
                        rows: Rows::Order(&s.rows),
                    }
                }
                &Source::Derived(d) => {
                    let s = sources();
                    Column {
                        name,
                        values: d.prototype(),
                        valid: None,
                        rows: Rows::Computed(self.rows, Box::new(move |a, b| d.compute(s, a, b))),
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

    fn push_derived(&mut self, name: &'static str, d: Derived) {
        self.columns.push((name, Source::Derived(d)));
    }

    /// `src` and `dst`: each row's flow (`flow_idx`) into the capture's address strings,
    /// which the Parquet writer keeps as a dictionary.
    pub(super) fn push_owned_addresses(&mut self, cap: &Capture, flow_idx: Vec<u32>) {
        let (src, dst) = addresses(cap);
        let index = flow_idx.clone();
        let src = Owned::Str {
            index,
            dict: Cow::Owned(src),
        };
        let dst = Owned::Str {
            index: flow_idx,
            dict: Cow::Owned(dst),
        };
        self.push("src", src, None);
        self.push("dst", dst, None);
    }
}

/// The source and destination address strings of a capture's flows, by `flow_idx`.
fn addresses(cap: &Capture) -> (Vec<String>, Vec<String>) {
    let strings = |f: fn(&FlowKey) -> String| cap.flows.keys.iter().map(f).collect();
    (strings(|k| k.src_string()), strings(|k| k.dst_string()))
}

/// `src[i]` for each row `i` of `rows`.
pub(super) fn gather<T: Copy>(rows: &[usize], src: &[T]) -> Vec<T> {
    rows.iter().map(|&i| src[i]).collect()
}

/// The packet rows: `kept` ingress rows (indices into the point's IP rows) in time order.
/// The table keeps `caps`, which `ing` and `eg` read. Returns the table and its
/// (delivered, lost, unknown) counts.
#[allow(clippy::too_many_arguments)]
pub fn packet_table(
    mut ing: Point<'_>,
    eg: &Point<'_>,
    caps: Captures,
    kept: &[u32],
    flow_ids: &FlowIds,
    in_to_eg: &[u32],
    span_ns: Option<(i64, i64)>,
    guard_ns: i64,
) -> (Table, [u64; 3]) {
    // captures are usually, not always, in time order; unknown times last
    let key = |k: u32| (ing.t(k as usize) == NO_TIMESTAMP, ing.t(k as usize));
    let order: Cow<'_, [u32]> = if kept.windows(2).all(|w| key(w[0]) <= key(w[1])) {
        Cow::Borrowed(kept)
    } else {
        let mut order = kept.to_vec();
        order.sort_by_key(|&k| (key(k), k));
        Cow::Owned(order)
    };
    let n = order.len();
    let (mut rows, mut twins, mut ids) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for &k in order.iter() {
        let k = k as usize;
        rows.push(ing.rows[k]);
        twins.push(match in_to_eg[k] {
            NONE => NONE,
            j => eg.rows[j as usize],
        });
        ids.push(flow_ids.of_ingress(&ing, k));
    }
    let c = &ing.cap.columns;
    let rtp = std::mem::take(&mut ing.rtp_by_row);
    let (src, dst) = addresses(ing.cap);
    let s = Sources {
        caps,
        rtp,
        rows,
        twins,
        span_ns,
        guard_ns,
        src,
        dst,
    };
    let mut tally = [0u64; 3];
    for (&i, &j) in s.rows.iter().zip(&s.twins) {
        tally[match verdict(&s, j != NONE, c.t_ns[i as usize]) {
            Some(false) => 0,
            Some(true) => 1,
            None => 2,
        }] += 1;
    }
    let (rtp_seq_ext, is_rtp) = unwrap_rtp_seq(&s, &ids, flow_ids.len());

    let mut t = Table::with_rows(n);
    t.push("flow_id", Owned::U32(ids), None);
    t.push_ingress("proto", |s| Values::U8(&s.caps.ingress.columns.proto), None);
    t.push_ingress(
        "ip_version",
        |s| Values::U8(&s.caps.ingress.columns.ip_version),
        None,
    );
    let src: Field = |s| Values::Str {
        index: &s.caps.ingress.columns.flow_idx,
        dict: &s.src,
    };
    let dst: Field = |s| Values::Str {
        index: &s.caps.ingress.columns.flow_idx,
        dict: &s.dst,
    };
    t.push_ingress("src", src, None);
    t.push_ingress("dst", dst, None);
    let ports: Option<Flag> = Some(|s| &s.caps.ingress.columns.has_ports);
    t.push_ingress(
        "sport",
        |s| Values::U16(&s.caps.ingress.columns.sport),
        ports,
    );
    t.push_ingress(
        "dport",
        |s| Values::U16(&s.caps.ingress.columns.dport),
        ports,
    );
    t.push_ingress(
        "size_bytes",
        |s| Values::U32(&s.caps.ingress.columns.ip_len),
        None,
    );
    t.push_derived("t_ingress_ns", Derived::TIngress);
    t.push_derived("t_egress_ns", Derived::TEgress);
    t.push_derived("delay_ms", Derived::Delay);
    t.push_derived("lost", Derived::Lost);
    t.push_ingress(
        "ecn_ingress",
        |s| Values::U8(&s.caps.ingress.columns.ecn),
        None,
    );
    t.push_derived("ecn_egress", Derived::EcnEgress);
    t.push_derived("ce_marked", Derived::CeMarked);
    t.push_ingress(
        "dscp_ingress",
        |s| Values::U8(&s.caps.ingress.columns.dscp),
        None,
    );
    t.push_derived("dscp_egress", Derived::DscpEgress);
    let ip_id: Option<Flag> = Some(|s| &s.caps.ingress.columns.has_ip_id);
    t.push_ingress(
        "ip_id",
        |s| Values::U32(&s.caps.ingress.columns.ip_id),
        ip_id,
    );
    let tcp: Option<Flag> = Some(|s| &s.caps.ingress.columns.has_tcp);
    t.push_ingress(
        "tcp_seq",
        |s| Values::U32(&s.caps.ingress.columns.tcp_seq),
        tcp,
    );
    t.push_ingress(
        "tcp_ack",
        |s| Values::U32(&s.caps.ingress.columns.tcp_ack),
        tcp,
    );
    t.push_ingress(
        "tcp_flags",
        |s| Values::U16(&s.caps.ingress.columns.tcp_flags),
        tcp,
    );
    let payload: Field = |s| Values::U32(&s.caps.ingress.columns.tcp_payload_len);
    t.push_ingress("tcp_payload_bytes", payload, tcp);
    let rtp_flag: Option<Flag> = Some(|s| &s.rtp);
    t.push_ingress(
        "rtp_ssrc",
        |s| Values::U32(&s.caps.ingress.columns.rtp_ssrc),
        rtp_flag,
    );
    t.push_ingress(
        "rtp_seq",
        |s| Values::U16(&s.caps.ingress.columns.rtp_seq),
        rtp_flag,
    );
    t.push("rtp_seq_ext", Owned::I64(rtp_seq_ext), Some(is_rtp));
    t.push_ingress(
        "rtp_ts",
        |s| Values::U32(&s.caps.ingress.columns.rtp_ts),
        rtp_flag,
    );
    t.push_ingress(
        "rtp_marker",
        |s| Values::Bool(&s.caps.ingress.columns.rtp_marker),
        rtp_flag,
    );
    t.push_ingress(
        "rtp_pt",
        |s| Values::U8(&s.caps.ingress.columns.rtp_pt),
        rtp_flag,
    );
    t.sources = Some(s);
    (t, tally)
}

/// RTP sequence numbers extended past 16 bits per flow in table order, each step the
/// shortest way round the 16-bit circle (`cganalysis.capture.rtp.unwrap_rtp_seq`), and
/// which rows are RTP.
fn unwrap_rtp_seq(s: &Sources, ids: &[u32], flows: usize) -> (Vec<i64>, Vec<bool>) {
    let seq = &s.caps.ingress.columns.rtp_seq;
    let mut last: Vec<Option<(i64, u16)>> = vec![None; flows];
    s.rows
        .iter()
        .zip(ids)
        .map(|(&i, &id)| {
            let i = i as usize;
            if !s.rtp[i] {
                return (0, false);
            }
            let slot = &mut last[id as usize];
            let ext = match *slot {
                None => i64::from(seq[i]),
                Some((ext, prev)) => {
                    ext + (i64::from(seq[i]) - i64::from(prev) + 32768).rem_euclid(65536) - 32768
                }
            };
            *slot = Some((ext, seq[i]));
            (ext, true)
        })
        .unzip()
}
