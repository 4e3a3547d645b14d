//! The column builder both halves of the reader share: packets are decoded into a small
//! batch of rows, which is then spread over the columns, and their flows interned.

use super::*;
use crate::hugepages::LARGE_BYTES;
use crate::keys::fold32;

/// How many decoded rows are buffered before they are spread over the columns.
const BATCH: usize = 256;

/// One decoded packet record, before it goes into the columns.
#[derive(Clone, Copy, Default)]
struct Row {
    p: Packet,
    t_ns: i64,
    interface_id: u32,
    wire_len: u32,
    flow_idx: u32,
}

/// Gives back a column's capacity beyond its values, unless that would move it from a
/// mapping of its own (a remap) to the C allocator (a copy, into fresh 4 KiB pages: the
/// egress capture's one-byte columns of the benchmark's mix B, 2.0 MB, were a third of
/// the command's page faults).
fn shrink<T>(v: &mut Vec<T>) {
    let bytes = |n: usize| n * std::mem::size_of::<T>();
    if bytes(v.len()) >= LARGE_BYTES || bytes(v.capacity()) < LARGE_BYTES {
        v.shrink_to_fit();
    }
}

/// Decodes packets into columns and interns their flows.
///
/// Packets are decoded in place into a small buffer of rows that is then copied column by
/// column: 30 `Vec::push` per packet cost more than decoding (each reloads and stores its
/// length and checks its capacity), while a column-wise `extend` of a batch is a tight loop.
pub(crate) struct Builder {
    pub(super) cols: Columns,
    pub(super) flows: FlowTable,
    rows: Box<[Row]>,
    n_rows: usize,
    /// Packets per `len_source` value.
    len_sources: [u64; 3],
    /// Each packet's captured length: the framing tests' view (the tables need none of it,
    /// so the columns do not keep it).
    #[cfg(test)]
    pub(super) cap_lens: Vec<u32>,
}

impl Builder {
    pub(super) fn with_capacity(n: usize) -> Builder {
        Builder {
            cols: Columns::with_capacity(n),
            flows: FlowTable::default(),
            rows: vec![Row::default(); BATCH].into_boxed_slice(),
            n_rows: 0,
            len_sources: [0; 3],
            #[cfg(test)]
            cap_lens: Vec::new(),
        }
    }

    #[inline(always)]
    pub(super) fn packet(
        &mut self,
        t_ns: i64,
        interface_id: u32,
        wire_len: u32,
        link: Link,
        frame: &[u8],
    ) {
        if self.n_rows == BATCH {
            self.flush();
        }
        let r = &mut self.rows[self.n_rows];
        self.n_rows += 1;
        r.p = Packet::default();
        decode_into(link, frame, wire_len, &mut r.p);
        self.len_sources[usize::from(r.p.len_source)] += 1;
        r.flow_idx = if r.p.ip_version != 0 {
            self.flows.intern(&r.p)
        } else {
            NO_FLOW
        };
        r.t_ns = t_ns;
        r.interface_id = interface_id;
        r.wire_len = wire_len;
        #[cfg(test)]
        self.cap_lens.push(frame.len() as u32);
    }

    #[inline(never)]
    pub(super) fn flush(&mut self) {
        let rows = &self.rows[..self.n_rows];
        let c = &mut self.cols;
        c.t_ns.extend(rows.iter().map(|r| r.t_ns));
        // Kept only once a packet of another interface than 0 comes (zeros filled in).
        if !c.interface_id.is_empty() || rows.iter().any(|r| r.interface_id != 0) {
            c.interface_id.resize(c.t_ns.len() - rows.len(), 0);
            c.interface_id.extend(rows.iter().map(|r| r.interface_id));
        }
        c.wire_len.extend(rows.iter().map(|r| r.wire_len));
        c.flow_idx.extend(rows.iter().map(|r| r.flow_idx));
        c.has_ports.extend(rows.iter().map(|r| r.p.has_ports));
        c.ip_id.extend(rows.iter().map(|r| r.p.ip_id));
        c.has_ip_id.extend(rows.iter().map(|r| r.p.has_ip_id));
        c.ip_len.extend(rows.iter().map(|r| r.p.ip_len));
        c.dscp.extend(rows.iter().map(|r| r.p.dscp));
        c.ecn.extend(rows.iter().map(|r| r.p.ecn));
        c.ttl.extend(rows.iter().map(|r| r.p.ttl));
        // A packet's TCP fields or its RTP fields are 0 (decoded from a fresh `Packet`):
        // or-ed, they share columns.
        debug_assert!(rows.iter().all(|r| !(r.p.has_tcp && r.p.has_rtp)));
        c.tcp_seq_rtp_ssrc
            .extend(rows.iter().map(|r| r.p.tcp_seq | r.p.rtp_ssrc));
        c.tcp_ack_rtp_ts
            .extend(rows.iter().map(|r| r.p.tcp_ack | r.p.rtp_ts));
        c.tcp_flags_rtp_seq
            .extend(rows.iter().map(|r| r.p.tcp_flags | r.p.rtp_seq));
        c.tcp_payload_len
            .extend(rows.iter().map(|r| r.p.tcp_payload_len));
        c.has_tcp.extend(rows.iter().map(|r| r.p.has_tcp));
        c.has_rtp.extend(rows.iter().map(|r| r.p.has_rtp));
        c.rtp_marker.extend(rows.iter().map(|r| r.p.rtp_marker));
        c.rtp_pt.extend(rows.iter().map(|r| r.p.rtp_pt));
        c.l4_hash.extend(rows.iter().map(|r| fold32(r.p.l4_hash)));
        c.truncated.extend(rows.iter().map(|r| r.p.truncated));
        self.n_rows = 0;
    }

    /// Packets decoded so far (in the columns and the batch).
    pub(super) fn len(&self) -> usize {
        self.cols.len() + self.n_rows
    }

    /// The columns decoded so far, replaced by empty ones with room for `capacity`
    /// packets; the flows stay (a chunked read keeps numbering them).
    pub(super) fn take_columns(&mut self, capacity: usize) -> Columns {
        self.flush();
        std::mem::replace(&mut self.cols, Columns::with_capacity(capacity))
    }

    pub(super) fn count_quirks(&self, quirks: &mut Quirks) {
        quirks.len_from_frame = self.len_sources[usize::from(len_source::FRAME)];
        quirks.jumbograms = self.len_sources[usize::from(len_source::JUMBO)];
    }

    /// The columns and flows; capacity beyond the packets read is given back (for big
    /// columns a remap, not a copy).
    pub(super) fn finish(mut self, quirks: &mut Quirks) -> (Columns, FlowTable) {
        self.flush();
        self.count_quirks(quirks);
        let mut c = self.cols;
        if c.t_ns.capacity() - c.t_ns.len() >= 1024 {
            shrink(&mut c.t_ns);
            shrink(&mut c.interface_id);
            shrink(&mut c.wire_len);
            shrink(&mut c.flow_idx);
            shrink(&mut c.has_ports);
            shrink(&mut c.ip_id);
            shrink(&mut c.has_ip_id);
            shrink(&mut c.ip_len);
            shrink(&mut c.dscp);
            shrink(&mut c.ecn);
            shrink(&mut c.ttl);
            shrink(&mut c.tcp_seq_rtp_ssrc);
            shrink(&mut c.tcp_ack_rtp_ts);
            shrink(&mut c.tcp_flags_rtp_seq);
            shrink(&mut c.tcp_payload_len);
            shrink(&mut c.has_tcp);
            shrink(&mut c.has_rtp);
            shrink(&mut c.rtp_marker);
            shrink(&mut c.rtp_pt);
            shrink(&mut c.l4_hash);
            shrink(&mut c.truncated);
        }
        (c, self.flows)
    }
}

#[cfg(test)]
mod shrink_tests {
    use super::{shrink, LARGE_BYTES};

    #[test]
    fn columns_give_back_capacity_but_stay_on_their_own_mapping() {
        // Would fall below the allocator's threshold: kept as it is, not copied.
        let mut v: Vec<u8> = Vec::with_capacity(LARGE_BYTES + 4096);
        v.resize(LARGE_BYTES / 2, 1);
        let at = v.as_ptr();
        shrink(&mut v);
        assert_eq!((v.as_ptr(), v.capacity()), (at, LARGE_BYTES + 4096));
        // Stays above it, or was below it all along: capacity given back.
        let mut v: Vec<u32> = Vec::with_capacity(LARGE_BYTES);
        v.resize(LARGE_BYTES / 2, 1);
        shrink(&mut v);
        assert_eq!(v.capacity(), LARGE_BYTES / 2);
        let mut v: Vec<u8> = Vec::with_capacity(1000);
        v.push(1);
        shrink(&mut v);
        assert_eq!(v.capacity(), 1);
    }
}
