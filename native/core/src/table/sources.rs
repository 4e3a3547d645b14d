//! What the packet table's columns read when the Parquet writer asks for a row group: both
//! captures, the table's row order and egress twins, and fields of the ingress capture's
//! flows. The copied columns (columns.rs) and the derived ones (derived.rs) both read it.

use crate::decode::FlowKey;
use crate::parquet::Values;
use crate::pcap::Capture;
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
    pub(super) caps: Captures,
    pub(super) rtp: Vec<bool>,
    pub(super) rows: Vec<u32>,
    pub(super) twins: Vec<u32>,
    pub(super) span_ns: Option<(i64, i64)>,
    pub(super) guard_ns: i64,
    /// The ingress capture's addresses and other fields of its flows, by `flow_idx`.
    pub(super) src: Vec<String>,
    pub(super) dst: Vec<String>,
    pub(super) flow_fields: FlowFields,
}

/// Fields of a capture's flows, by `flow_idx` (as the dictionary of a column that reads
/// its rows' flows).
pub(super) struct FlowFields {
    pub(super) ip_version: Vec<u32>,
    pub(super) proto: Vec<u32>,
    pub(super) sport: Vec<u32>,
    pub(super) dport: Vec<u32>,
}

impl FlowFields {
    pub(super) fn of(cap: &Capture) -> FlowFields {
        let field = |f: fn(&FlowKey) -> u32| cap.flows.keys.iter().map(f).collect();
        FlowFields {
            ip_version: field(|k| k.ip_version().into()),
            proto: field(|k| k.proto().into()),
            sport: field(|k| k.sport().into()),
            dport: field(|k| k.dport().into()),
        }
    }
}

impl Sources {
    /// A field of each packet's flow: `by_flow` (`bits`-bit unsigned integers) read
    /// through the ingress capture's `flow_idx`.
    pub(super) fn of_flows<'a>(&'a self, by_flow: &'a [u32], bits: u8) -> Values<'a> {
        Values::Indexed {
            index: &self.caps.ingress.columns.flow_idx,
            dict: by_flow,
            bits,
        }
    }
}
