//! The packet and egress-only tables as columns, with a validity mask where the Python
//! schema has nulls. Of the packet table only the flow ids and extended RTP sequence
//! numbers are built beforehand. Columns that copy a field of the ingress capture are
//! read from it through the table's row order, and columns derived from a row's packet
//! and its egress twin (times, delays, loss verdicts, ECN and DSCP at egress) are
//! computed, both by the Parquet writer's threads a row group at a time as they encode
//! it: none of them exists whole (about 60 bytes a row, and a pass over the table, saved).

use super::derived::{verdict, Derived};
use super::sources::{Captures, FlowFields, Sources};
use super::{FlowIds, Point, NO_TIMESTAMP};
use crate::decode::FlowKey;
use crate::matcher::NONE;
use crate::parquet::{Column, Owned, Rows, Values};
use crate::pcap::Capture;
use std::borrow::Cow;

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

    /// What a packet table's rows read, and their flow ids (None: not a packet table).
    pub(super) fn sources_and_ids(&self) -> Option<(&Sources, &[u32])> {
        let ids = self
            .columns
            .iter()
            .find_map(|(name, source)| match source {
                Source::Owned(Owned::U32(ids), _) if *name == "flow_id" => Some(ids.as_slice()),
                _ => None,
            })?;
        Some((self.sources.as_ref()?, ids))
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
    carry: &mut SeqCarry,
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
    // Every IP row, in capture order (nothing left out, already in time order): the table's
    // rows are the point's, taken as they are rather than copied.
    let all = matches!(order, Cow::Borrowed(_)) && n == ing.rows.len();
    // The flow ids on another core, while this one takes the rows and twins.
    let (rows, twins, ids) = std::thread::scope(|s| {
        let ids = s.spawn(|| -> Vec<u32> {
            order
                .iter()
                .map(|&k| flow_ids.of_ingress(&ing, k as usize))
                .collect()
        });
        let rows: Vec<u32> = if all {
            Vec::new()
        } else {
            order.iter().map(|&k| ing.rows[k as usize]).collect()
        };
        let twin = |&k: &u32| match in_to_eg[k as usize] {
            NONE => NONE,
            j => eg.rows[j as usize],
        };
        let twins: Vec<u32> = order.iter().map(twin).collect();
        (rows, twins, ids.join().expect("flow ids"))
    });
    let rows = if all {
        std::mem::take(&mut ing.rows)
    } else {
        rows
    };
    let c = &ing.cap.columns;
    let rtp = std::mem::take(&mut ing.rtp_by_row);
    let (src, dst) = addresses(ing.cap);
    let s = Sources {
        flow_fields: FlowFields::of(ing.cap),
        caps,
        rtp,
        rows,
        twins,
        span_ns,
        guard_ns,
        src,
        dst,
    };
    // The loss tally on another core, while this one extends the RTP sequence numbers.
    let (tally, (rtp_seq_ext, is_rtp)) = std::thread::scope(|scope| {
        let tally = scope.spawn(|| {
            let mut tally = [0u64; 3];
            for (&i, &j) in s.rows.iter().zip(&s.twins) {
                tally[match verdict(&s, j != NONE, c.t_ns[i as usize]) {
                    Some(false) => 0,
                    Some(true) => 1,
                    None => 2,
                }] += 1;
            }
            tally
        });
        let ext = unwrap_rtp_seq(&s, &ids, flow_ids.len(), carry);
        (tally.join().expect("loss tally"), ext)
    });

    let mut t = Table::with_rows(n);
    t.push("flow_id", Owned::U32(ids), None);
    let proto: Field = |s| s.of_flows(&s.flow_fields.proto, 8);
    t.push_ingress("proto", proto, None);
    let ip_version: Field = |s| s.of_flows(&s.flow_fields.ip_version, 8);
    t.push_ingress("ip_version", ip_version, None);
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
    let sport: Field = |s| s.of_flows(&s.flow_fields.sport, 16);
    t.push_ingress("sport", sport, ports);
    let dport: Field = |s| s.of_flows(&s.flow_fields.dport, 16);
    t.push_ingress("dport", dport, ports);
    t.push_ingress(
        "size_bytes",
        |s| Values::U32(&s.caps.ingress.columns.ip_len),
        None,
    );
    // Every row's packet has a time (all but pcapng simple packet blocks and records with
    // an out-of-range sub-second field): the capture's times are written where they lie,
    // through the row order, not computed.
    if s.rows.iter().all(|&r| c.t_ns[r as usize] != NO_TIMESTAMP) {
        t.push_ingress(
            "t_ingress_ns",
            |s| Values::I64(&s.caps.ingress.columns.t_ns),
            None,
        );
    } else {
        t.push_derived("t_ingress_ns", Derived::TIngress);
    }
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
        |s| Values::U32(&s.caps.ingress.columns.tcp_seq_rtp_ssrc),
        tcp,
    );
    t.push_ingress(
        "tcp_ack",
        |s| Values::U32(&s.caps.ingress.columns.tcp_ack_rtp_ts),
        tcp,
    );
    t.push_ingress(
        "tcp_flags",
        |s| Values::U16(&s.caps.ingress.columns.tcp_flags_rtp_seq),
        tcp,
    );
    let payload: Field = |s| Values::U32(&s.caps.ingress.columns.tcp_payload_len);
    t.push_ingress("tcp_payload_bytes", payload, tcp);
    let rtp_flag: Option<Flag> = Some(|s| &s.rtp);
    t.push_ingress(
        "rtp_ssrc",
        |s| Values::U32(&s.caps.ingress.columns.tcp_seq_rtp_ssrc),
        rtp_flag,
    );
    t.push_ingress(
        "rtp_seq",
        |s| Values::U16(&s.caps.ingress.columns.tcp_flags_rtp_seq),
        rtp_flag,
    );
    t.push("rtp_seq_ext", Owned::I64(rtp_seq_ext), Some(is_rtp));
    t.push_ingress(
        "rtp_ts",
        |s| Values::U32(&s.caps.ingress.columns.tcp_ack_rtp_ts),
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

/// Per flow id, the last RTP row's extended and 16-bit sequence numbers: a table made a
/// row group at a time carries them from one group to the next.
#[derive(Default)]
pub struct SeqCarry(Vec<Option<(i64, u16)>>);

/// RTP sequence numbers extended past 16 bits per flow in table order, each step the
/// shortest way round the 16-bit circle (`cganalysis.capture.rtp.unwrap_rtp_seq`), and
/// which rows are RTP.
fn unwrap_rtp_seq(
    s: &Sources,
    ids: &[u32],
    flows: usize,
    carry: &mut SeqCarry,
) -> (Vec<i64>, Vec<bool>) {
    // RTP rows only: their sequence numbers (the column is shared with TCP flags).
    let seq = &s.caps.ingress.columns.tcp_flags_rtp_seq;
    let last = &mut carry.0;
    if last.len() < flows {
        last.resize(flows, None);
    }
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
