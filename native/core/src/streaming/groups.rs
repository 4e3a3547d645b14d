//! The tables written a row group at a time as their rows become final: each group made
//! by the in-memory table code (`table::packet_table`, `table::egress_only`) from the
//! held packets as a capture of their own, so the files are the in-memory command's, byte
//! for byte.

use super::held::Held;
use super::queue::Queue;
use crate::decode::FlowKey;
use crate::matcher::NONE;
use crate::parquet::{GroupWriter, ROW_GROUP_ROWS};
use crate::pcap::{Capture, Columns};
use crate::table::rtp::Streams;
use crate::table::{egress_only, packet_table, Captures, FlowIds, FlowStats, Point, SeqCarry};
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::Arc;

type Writer = GroupWriter<BufWriter<File>>;

/// A table's file, its rows not yet written, and the name to give in an error.
struct Out {
    path: PathBuf,
    writer: Writer,
    rows: Held,
    written: u64,
}

impl Out {
    fn create(path: &Path) -> io::Result<Out> {
        let file = File::create(path)?;
        Ok(Out {
            path: path.to_owned(),
            writer: GroupWriter::new(BufWriter::with_capacity(1 << 20, file))?,
            rows: Held::default(),
            written: 0,
        })
    }
}

/// An ingress packet's egress twin: time and IP TOS byte; None: it has none.
pub(crate) type Twin = Option<(i64, u8)>;

/// Both tables being written, and what carries from one row group to the next.
pub struct Tables {
    packets: Out,
    twins: Vec<Twin>,
    egress_only: Out,
    /// Each capture's flows (and format), which the rows' columns refer to.
    ingress: Capture,
    egress: Capture,
    streams: Streams,
    pub(crate) flow_ids: FlowIds,
    carry: SeqCarry,
    pub(crate) span_ns: Option<(i64, i64)>,
    /// (delivered, lost, unknown) of the rows written.
    pub(crate) tally: [u64; 3],
    /// The flow table of the rows written, when asked for.
    pub flows: Option<FlowStats>,
}

/// An error writing a file: the file and why.
pub(crate) type WriteError = (PathBuf, io::Error);

fn named<T>(r: io::Result<T>, path: &Path) -> Result<T, WriteError> {
    r.map_err(|e| (path.to_owned(), e))
}

impl Tables {
    pub(crate) fn create(
        paths: [&Path; 2],
        ingress: &Capture,
        egress: &Capture,
        streams: &Streams,
        flow_ids: FlowIds,
        span_ns: Option<(i64, i64)>,
        keep_delays: Option<usize>,
    ) -> Result<Tables, WriteError> {
        Ok(Tables {
            packets: named(Out::create(paths[0]), paths[0])?,
            twins: Vec::new(),
            egress_only: named(Out::create(paths[1]), paths[1])?,
            ingress: Held::capture(Columns::default(), ingress),
            egress: Held::capture(Columns::default(), egress),
            streams: streams.clone(),
            flow_ids,
            carry: SeqCarry::default(),
            span_ns,
            tally: [0; 3],
            // the delays beyond `keep_delays` go to a file next to the packet table
            flows: keep_delays.map(|keep| {
                let mut spill = paths[0].as_os_str().to_owned();
                spill.push(".delays.partial");
                FlowStats::spilling(spill.into(), keep)
            }),
        })
    }

    /// The first `k` rows of `from` (in table order), moved to the packet table, with
    /// their twins; `guard_ns`: the end guard, or any guard that gives these rows the
    /// same verdicts.
    pub(crate) fn add_packets(
        &mut self,
        from: &mut Queue,
        k: usize,
        twins: &[Twin],
        guard_ns: i64,
    ) -> Result<(), WriteError> {
        // The buffer is filled to a row group exactly and handed over whole, then made
        // again at the same size (from the allocator's kept blocks, not fresh pages).
        let (mut k, mut twins) = (k, twins);
        while k > 0 {
            let rows = &mut self.packets.rows;
            let n = k.min(ROW_GROUP_ROWS - rows.len());
            from.take_front(n, |h, r| {
                if rows.is_empty() && rows.row.capacity() < ROW_GROUP_ROWS {
                    *rows = Held::with_capacity(ROW_GROUP_ROWS, !h.stream.is_empty());
                }
                rows.extend_range(h, r);
            });
            self.twins.extend_from_slice(&twins[..n]);
            (k, twins) = (k - n, &twins[n..]);
            if self.packets.rows.len() == ROW_GROUP_ROWS {
                let group = std::mem::take(&mut self.packets.rows);
                let group_twins = std::mem::take(&mut self.twins);
                self.write_packets(group, &group_twins, guard_ns)?;
                self.twins = group_twins;
                self.twins.clear();
            }
        }
        Ok(())
    }

    /// Flows of the egress capture (read live) that first came in its latest chunk.
    pub(crate) fn add_egress_flows(&mut self, keys: Vec<FlowKey>, hashes: Vec<u64>) {
        self.egress.flows.keys.extend(keys);
        self.egress.flows.hashes.extend(hashes);
    }

    /// Egress-only rows (in file order).
    pub(crate) fn add_egress_only(&mut self, rows: Held) -> Result<(), WriteError> {
        self.egress_only.rows.append(rows);
        while self.egress_only.rows.len() >= ROW_GROUP_ROWS {
            let group = self.egress_only.rows.take_front(ROW_GROUP_ROWS);
            self.write_egress_only(group)?;
        }
        Ok(())
    }

    fn write_packets(
        &mut self,
        group: Held,
        twins: &[Twin],
        guard_ns: i64,
    ) -> Result<(), WriteError> {
        let n = group.len();
        let eg_cols = Columns {
            t_ns: twins.iter().flatten().map(|t| t.0).collect(),
            ecn: twins.iter().flatten().map(|t| t.1 & 3).collect(),
            dscp: twins.iter().flatten().map(|t| t.1 >> 2).collect(),
            ..Columns::default()
        };
        let mut j = 0u32;
        let in_to_eg: Vec<u32> = twins
            .iter()
            .map(|t| match t {
                Some(_) => {
                    j += 1;
                    j - 1
                }
                None => NONE,
            })
            .collect();
        let ing_cap = Arc::new(Held::capture(group.cols, &self.ingress));
        let eg_cap = Arc::new(Held::capture(eg_cols, &self.egress));
        let all: Vec<u32> = (0..n as u32).collect();
        let ing = Point {
            cap: &ing_cap,
            rows: all.clone(),
            stream: group.stream,
            rtp_by_row: group.rtp,
        };
        let eg = Point {
            cap: &eg_cap,
            rows: (0..j).collect(),
            stream: Vec::new(),
            rtp_by_row: Vec::new(),
        };
        let caps = Captures {
            ingress: Arc::clone(&ing_cap),
            egress: Arc::clone(&eg_cap),
        };
        let (table, tally) = packet_table(
            ing,
            &mut self.carry,
            &eg,
            caps,
            &all,
            &self.flow_ids,
            &in_to_eg,
            self.span_ns,
            guard_ns,
        );
        for (sum, t) in self.tally.iter_mut().zip(tally) {
            *sum += t;
        }
        if let Some(flows) = &mut self.flows {
            flows.add(&table);
        }
        let out = &mut self.packets;
        if n > 0 {
            named(out.writer.group(&table.parquet_columns()), &out.path)?;
            out.written += n as u64;
        }
        Ok(())
    }

    fn egress_table(&self, group: Held) -> crate::table::EgressOnly {
        let cap = Held::capture(group.cols, &self.egress);
        let n = group.row.len();
        let eg = Point {
            cap: &cap,
            rows: (0..n as u32).collect(),
            stream: Vec::new(),
            rtp_by_row: Vec::new(),
        };
        let alone: Vec<usize> = (0..n).collect();
        egress_only(&eg, &alone, &self.flow_ids, &self.streams)
    }

    fn write_egress_only(&mut self, group: Held) -> Result<(), WriteError> {
        let n = group.len();
        let table = self.egress_table(group);
        let out = &mut self.egress_only;
        named(out.writer.group(&table.parquet_columns()), &out.path)?;
        out.written += n as u64;
        Ok(())
    }

    /// Writes the rows still held (`guard_ns`: the end guard); returns (packet rows,
    /// egress-only rows) written.
    pub(crate) fn flush(&mut self, guard_ns: i64) -> Result<[u64; 2], WriteError> {
        let rows = std::mem::take(&mut self.packets.rows);
        let twins = std::mem::take(&mut self.twins);
        if !rows.is_empty() {
            self.write_packets(rows, &twins, guard_ns)?;
        }
        let rows = std::mem::take(&mut self.egress_only.rows);
        if !rows.is_empty() {
            self.write_egress_only(rows)?;
        }
        Ok([self.packets.written, self.egress_only.written])
    }

    /// (packet rows, egress-only rows) written so far.
    pub(crate) fn written(&self) -> [u64; 2] {
        [self.packets.written, self.egress_only.written]
    }

    /// Writes both footers (after `flush`), each with `metadata` (JSON) under the key
    /// `cganalysis`.
    pub fn finish(mut self, metadata: &str) -> Result<(), WriteError> {
        // The schemas, from tables of no rows.
        let (empty, _) = self.empty_packets();
        let empty_eg = self.egress_table(Held::default());
        let meta = [("cganalysis", metadata)];
        let meta: &[(&str, &str)] = if metadata.is_empty() { &[] } else { &meta };
        let created_by = "cganalysis (native)";
        let Tables {
            packets,
            egress_only,
            ..
        } = self;
        for (out, cols) in [
            (packets, empty.parquet_columns()),
            (egress_only, empty_eg.parquet_columns()),
        ] {
            named(out.writer.finish(&cols, meta, created_by), &out.path)?;
        }
        Ok(())
    }

    fn empty_packets(&mut self) -> (crate::table::PacketTable, [u64; 3]) {
        let cap = Arc::new(Held::capture(Columns::default(), &self.ingress));
        let eg_cap = Arc::new(Held::capture(Columns::default(), &self.egress));
        let ing = Point {
            cap: &cap,
            rows: Vec::new(),
            stream: Vec::new(),
            rtp_by_row: Vec::new(),
        };
        let eg = Point {
            cap: &eg_cap,
            rows: Vec::new(),
            stream: Vec::new(),
            rtp_by_row: Vec::new(),
        };
        let caps = Captures {
            ingress: Arc::clone(&cap),
            egress: Arc::clone(&eg_cap),
        };
        let mut carry = SeqCarry::default();
        packet_table(
            ing,
            &mut carry,
            &eg,
            caps,
            &[],
            &self.flow_ids,
            &[],
            self.span_ns,
            0,
        )
    }
}
