//! Flow ids: the packet table numbers its flows by their first packet.

use super::{rtp, Point, NO_TIMESTAMP};
use crate::matcher::NONE;
use crate::wordhash::WordMap;
use std::collections::HashMap;

/// Flow ids, numbered by each flow's first packet: earliest time (flows with no time
/// last), then first row. A "flow" is a stream key (`rtp::stream_key`): the 5-tuple,
/// and for RTP also the SSRC.
pub(crate) struct FlowIds {
    /// By ingress stream index (`Point::stream`); `NONE` for streams with no kept packet.
    by_stream: Vec<u32>,
    /// By stream key, for packets of the other capture.
    by_key: HashMap<u64, u32, WordMap>,
}

impl FlowIds {
    pub(super) fn number(ing: &Point<'_>, kept: &[u32], streams: &rtp::Streams) -> FlowIds {
        let flows = ing.cap.flows.len();
        let mut first = vec![FIRST_NONE; flows + streams.len()];
        for &k in kept {
            let k = k as usize;
            see_first(&mut first[ing.stream[k] as usize], ing.t(k), k);
        }
        FlowIds::of_firsts(first, &ing.cap.flows.hashes, streams)
    }

    /// Numbered by each stream's first packet (`first`, by stream index: see
    /// `see_first`; streams with no packet have `FIRST_NONE`).
    pub(crate) fn of_firsts(
        first: Vec<First>,
        flow_hashes: &[u64],
        streams: &rtp::Streams,
    ) -> FlowIds {
        let flows = flow_hashes.len();
        let mut order: Vec<(usize, (bool, i64, usize))> = first
            .into_iter()
            .enumerate()
            .filter(|(_, f)| f.2 != usize::MAX)
            .collect();
        order.sort_by_key(|&(_, v)| v);
        let mut key_of: Vec<u64> = flow_hashes.to_vec();
        key_of.resize(flows + streams.len(), 0);
        for (&key, &number) in streams {
            key_of[flows + number as usize] = key;
        }
        let mut by_stream = vec![NONE; key_of.len()];
        let mut by_key = HashMap::default();
        for (id, (stream, _)) in order.into_iter().enumerate() {
            by_stream[stream] = id as u32;
            by_key.insert(key_of[stream], id as u32);
        }
        FlowIds { by_stream, by_key }
    }

    /// The id of the flow of ingress IP row `k` (a kept row).
    pub(crate) fn of_ingress(&self, ing: &Point<'_>, k: usize) -> u32 {
        self.by_stream[ing.stream[k] as usize]
    }

    /// The id of a flow, if ingress saw it.
    pub(crate) fn find(&self, key: u64) -> Option<u32> {
        self.by_key.get(&key).copied()
    }

    pub(crate) fn len(&self) -> usize {
        self.by_key.len()
    }
}

/// A stream's first packet: (no time seen yet, earliest time, first IP row).
pub(crate) type First = (bool, i64, usize);
pub(crate) const FIRST_NONE: First = (true, i64::MAX, usize::MAX);

/// Counts IP row `k` at time `t` into its stream's first packet.
#[inline]
pub(crate) fn see_first(e: &mut First, t: i64, k: usize) {
    if t != NO_TIMESTAMP && (e.0 || t < e.1) {
        (e.0, e.1) = (false, t);
    }
    e.2 = e.2.min(k);
}
