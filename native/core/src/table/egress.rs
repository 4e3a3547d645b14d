//! The egress-only table: egress packets with no ingress twin, with the fields of
//! `cganalysis.schemas` `EGRESS_ONLY` (few rows, so copied outright).

use super::columns::{gather, Table};
use super::rtp::{stream_key, stream_number, Streams};
use super::{FlowIds, Point, NO_TIMESTAMP};
use crate::decode::FlowKey;
use crate::parquet::Owned;
use crate::pcap::Capture;

/// Egress packets with no ingress twin (`alone`: indices into the egress point's IP
/// rows, in capture order), with the flow id of their flow when ingress saw it.
pub fn egress_only(
    eg: &Point<'_>,
    alone: &[usize],
    flow_ids: &FlowIds,
    streams: &Streams,
) -> Table {
    let e = &eg.cap.columns;
    let rows: Vec<usize> = alone.iter().map(|&k| eg.row(k)).collect();
    let ids: Vec<Option<u32>> = rows
        .iter()
        .map(|&i| {
            let rtp = stream_number(eg.cap, i, streams).map(|_| e.rtp_ssrc(i));
            flow_ids.find(stream_key(eg.cap.flow_hash(i), rtp))
        })
        .collect();

    let t_ns = gather(&rows, &e.t_ns);
    let tcp = Some(gather(&rows, &e.has_tcp));
    let rtp = Some(gather(&rows, &e.has_rtp));
    let ports = Some(gather(&rows, &e.has_ports));
    let mut t = Table::with_rows(rows.len());
    t.push(
        "flow_id",
        Owned::U32(ids.iter().map(|id| id.unwrap_or(0)).collect()),
        Some(ids.iter().map(Option::is_some).collect()),
    );
    let known = t_ns.iter().map(|&x| x != NO_TIMESTAMP).collect();
    t.push("t_ns", Owned::I64(t_ns), Some(known));
    t.push(
        "interface_id",
        Owned::U32(rows.iter().map(|&i| e.interface_id(i)).collect()),
        None,
    );
    t.push(
        "wire_len_bytes",
        Owned::U32(gather(&rows, &e.wire_len)),
        None,
    );
    let ip_version = of_flows(eg.cap, &rows, FlowKey::ip_version);
    t.push("ip_version", Owned::U8(ip_version), None);
    t.push_owned_addresses(eg.cap, gather(&rows, &e.flow_idx));
    t.push(
        "proto",
        Owned::U8(of_flows(eg.cap, &rows, FlowKey::proto)),
        None,
    );
    let sport = of_flows(eg.cap, &rows, FlowKey::sport);
    t.push("sport", Owned::U16(sport), ports.clone());
    let dport = of_flows(eg.cap, &rows, FlowKey::dport);
    t.push("dport", Owned::U16(dport), ports);
    t.push(
        "ip_id",
        Owned::U32(gather(&rows, &e.ip_id)),
        Some(gather(&rows, &e.has_ip_id)),
    );
    t.push("size_bytes", Owned::U32(gather(&rows, &e.ip_len)), None);
    t.push("dscp", Owned::U8(gather(&rows, &e.dscp)), None);
    t.push("ecn", Owned::U8(gather(&rows, &e.ecn)), None);
    t.push("ttl", Owned::U8(gather(&rows, &e.ttl)), None);
    t.push(
        "tcp_seq",
        Owned::U32(rows.iter().map(|&i| e.tcp_seq(i)).collect()),
        tcp.clone(),
    );
    t.push(
        "tcp_ack",
        Owned::U32(rows.iter().map(|&i| e.tcp_ack(i)).collect()),
        tcp.clone(),
    );
    t.push(
        "tcp_flags",
        Owned::U16(rows.iter().map(|&i| e.tcp_flags(i)).collect()),
        tcp.clone(),
    );
    t.push(
        "tcp_payload_bytes",
        Owned::U32(gather(&rows, &e.tcp_payload_len)),
        tcp,
    );
    t.push(
        "rtp_ssrc",
        Owned::U32(rows.iter().map(|&i| e.rtp_ssrc(i)).collect()),
        rtp.clone(),
    );
    t.push(
        "rtp_seq",
        Owned::U16(rows.iter().map(|&i| e.rtp_seq(i)).collect()),
        rtp.clone(),
    );
    t.push(
        "rtp_ts",
        Owned::U32(rows.iter().map(|&i| e.rtp_ts(i)).collect()),
        rtp.clone(),
    );
    t.push(
        "rtp_marker",
        Owned::Bool(gather(&rows, &e.rtp_marker)),
        rtp.clone(),
    );
    t.push("rtp_pt", Owned::U8(gather(&rows, &e.rtp_pt)), rtp);
    t.push("truncated", Owned::Bool(gather(&rows, &e.truncated)), None);
    t
}

/// A field of each row's flow (0 for a packet that is not IP).
pub(super) fn of_flows<T: Default>(
    cap: &Capture,
    rows: &[usize],
    field: fn(&FlowKey) -> T,
) -> Vec<T> {
    rows.iter()
        .map(|&i| cap.flow(i).map_or_else(T::default, field))
        .collect()
}
