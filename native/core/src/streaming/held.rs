//! Packets held between chunks: an IP packet's columns (gathered from the chunks it came
//! in), its row as the matcher numbers it and, at ingress, its stream and RTP mark.

use crate::decode::FlowTable;
use crate::pcap::{each_column, Capture, Columns, Format, NO_TIMESTAMP};
use crate::table::Point;
use std::ops::Range;

/// Rows `rows` of `src` added to the end of `dst`.
fn extend_rows(dst: &mut Columns, src: &Columns, rows: &[u32]) {
    let before = dst.len();
    macro_rules! extend {
        ($($f:ident),*) => {
            $(dst.$f.extend(rows.iter().map(|&i| src.$f[i as usize]));)*
        };
    }
    each_column!(extend);
    if !src.interface_id.is_empty() || !dst.interface_id.is_empty() {
        dst.interface_id.resize(before, 0);
        dst.interface_id
            .extend(rows.iter().map(|&i| src.interface_id(i as usize)));
    }
}

/// Rows `rows` of `src` added to the end of `dst` (slices copied whole).
fn extend_range(dst: &mut Columns, src: &Columns, rows: Range<usize>) {
    let before = dst.len();
    macro_rules! extend {
        ($($f:ident),*) => {
            $(dst.$f.extend_from_slice(&src.$f[rows.clone()]);)*
        };
    }
    each_column!(extend);
    if !src.interface_id.is_empty() || !dst.interface_id.is_empty() {
        dst.interface_id.resize(before, 0);
        dst.interface_id.extend(rows.map(|i| src.interface_id(i)));
    }
}

/// The first `k` rows of `c`, taken out of it.
fn split_front(c: &mut Columns, k: usize) -> Columns {
    let mut front = Columns::default();
    macro_rules! split {
        ($($f:ident),*) => {
            $(front.$f = cut_vec(&mut c.$f, k);)*
        };
    }
    each_column!(split);
    let ids = k.min(c.interface_id.len());
    front.interface_id = cut_vec(&mut c.interface_id, ids);
    front
}

/// The rows of `c` in `order`.
fn permuted(c: &Columns, order: &[u32]) -> Columns {
    let mut out = Columns::default();
    extend_rows(&mut out, c, order);
    out
}

/// Held packets, in the order they will be written.
#[derive(Default)]
pub(crate) struct Held {
    pub(crate) cols: Columns,
    /// The matcher's row of each packet (rows are pushed in file order).
    pub(crate) row: Vec<u64>,
    /// Each packet's flow hash.
    pub(crate) hash: Vec<u64>,
    /// Ingress: each packet's stream and RTP mark (`Point::stream`, `Point::rtp_by_row`).
    pub(crate) stream: Vec<u32>,
    pub(crate) rtp: Vec<bool>,
}

impl Held {
    pub(crate) fn len(&self) -> usize {
        self.row.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.row.is_empty()
    }

    /// The IP packets `ks` of a chunk's point (indices into its IP rows), numbered on
    /// from `first_row`.
    pub(crate) fn push(&mut self, p: &Point<'_>, ks: &[u32], first_row: u64) {
        let rows: Vec<u32> = ks.iter().map(|&k| p.rows[k as usize]).collect();
        extend_rows(&mut self.cols, &p.cap.columns, &rows);
        self.row.extend((0..ks.len() as u64).map(|r| first_row + r));
        self.hash
            .extend(rows.iter().map(|&i| p.cap.flow_hash(i as usize)));
        if !p.stream.is_empty() {
            self.stream.extend(ks.iter().map(|&k| p.stream[k as usize]));
            self.rtp
                .extend(rows.iter().map(|&i| p.rtp_by_row[i as usize]));
        }
    }

    /// Every packet of a chunk's point (all of them IP), numbered on from `first_row`, but
    /// for their columns (which the caller moves in).
    pub(crate) fn number(&mut self, p: &Point<'_>, first_row: u64) {
        let n = p.rows.len();
        self.row.extend((0..n as u64).map(|r| first_row + r));
        self.hash.extend((0..n).map(|i| p.cap.flow_hash(i)));
        if !p.stream.is_empty() {
            self.stream.extend_from_slice(&p.stream);
            self.rtp.extend_from_slice(&p.rtp_by_row);
        }
    }

    /// Room for `n` packets (with, given `streams`, their stream and RTP mark), allocated
    /// once: a row group's buffer then never grows by copies into fresh pages.
    pub(crate) fn with_capacity(n: usize, streams: bool) -> Held {
        let mut cols = Columns::default();
        macro_rules! reserve {
            ($($f:ident),*) => {
                $(cols.$f.reserve_exact(n);)*
            };
        }
        each_column!(reserve);
        let room = if streams { n } else { 0 };
        Held {
            cols,
            row: Vec::with_capacity(n),
            hash: Vec::with_capacity(n),
            stream: Vec::with_capacity(room),
            rtp: Vec::with_capacity(room),
        }
    }

    /// Adds `other`'s packets after these.
    pub(crate) fn append(&mut self, mut other: Held) {
        if self.is_empty() && self.row.capacity() < other.len() {
            // Nothing to keep: take `other`'s memory (kept, an empty buffer's room is
            // filled in place, without fresh pages).
            *self = other;
            return;
        }
        extend_range(&mut self.cols, &other.cols, 0..other.len());
        self.row.append(&mut other.row);
        self.hash.append(&mut other.hash);
        self.stream.append(&mut other.stream);
        self.rtp.append(&mut other.rtp);
    }

    /// Adds packets `rows` of `src` after these.
    pub(crate) fn extend_range(&mut self, src: &Held, rows: Range<usize>) {
        extend_range(&mut self.cols, &src.cols, rows.clone());
        self.row.extend_from_slice(&src.row[rows.clone()]);
        self.hash.extend_from_slice(&src.hash[rows.clone()]);
        if !src.stream.is_empty() {
            self.stream.extend_from_slice(&src.stream[rows.clone()]);
            self.rtp.extend_from_slice(&src.rtp[rows]);
        }
    }

    /// The first `k` packets, taken out.
    pub(crate) fn take_front(&mut self, k: usize) -> Held {
        let row = cut_vec(&mut self.row, k);
        Held {
            cols: split_front(&mut self.cols, k),
            row,
            hash: cut_vec(&mut self.hash, k),
            stream: cut_vec(&mut self.stream, k),
            rtp: cut_vec(&mut self.rtp, k),
        }
    }

    /// The packets `at` (indices), as held packets of their own.
    pub(crate) fn select(&self, at: &[usize]) -> Held {
        let rows: Vec<u32> = at.iter().map(|&i| i as u32).collect();
        let pick = |v: &[u64]| at.iter().map(|&i| v[i]).collect();
        let mut out = Held {
            row: pick(&self.row),
            hash: pick(&self.hash),
            ..Held::default()
        };
        extend_rows(&mut out.cols, &self.cols, &rows);
        if !self.stream.is_empty() {
            out.stream = at.iter().map(|&i| self.stream[i]).collect();
            out.rtp = at.iter().map(|&i| self.rtp[i]).collect();
        }
        out
    }

    /// Sorts into the packet table's order if the packets are not in it: time, unknown
    /// times last, then row (`table::columns::packet_table`).
    pub(crate) fn sort_by_time(&mut self) {
        let key = |i: usize| {
            let t = self.cols.t_ns[i];
            ((t == NO_TIMESTAMP, t), self.row[i])
        };
        let n = self.len();
        if (1..n).all(|i| key(i - 1) <= key(i)) {
            return;
        }
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by_key(|&i| key(i as usize));
        self.cols = permuted(&self.cols, &order);
        self.row = order.iter().map(|&i| self.row[i as usize]).collect();
        self.hash = order.iter().map(|&i| self.hash[i as usize]).collect();
        if !self.stream.is_empty() {
            self.stream = order.iter().map(|&i| self.stream[i as usize]).collect();
            self.rtp = order.iter().map(|&i| self.rtp[i as usize]).collect();
        }
    }

    /// A chunk of a capture read live, with the flows known so far (the table code reads
    /// only the columns and the flows of a capture).
    pub(crate) fn live_capture(cols: Columns, flows: FlowTable) -> Capture {
        Capture {
            format: Format::Pcap,
            big_endian: false,
            nanosecond: None,
            snaplen: 0,
            columns: cols,
            flows,
            interfaces: Vec::new(),
            stats: Vec::new(),
            warnings: Vec::new(),
            quirks: Default::default(),
        }
    }

    /// The held packets as a capture of their own, with `like`'s flows.
    pub(crate) fn capture(cols: Columns, like: &Capture) -> Capture {
        Capture {
            format: like.format,
            big_endian: like.big_endian,
            nanosecond: like.nanosecond,
            snaplen: like.snaplen,
            columns: cols,
            flows: like.flows.copy_keys(),
            interfaces: Vec::new(),
            stats: Vec::new(),
            warnings: Vec::new(),
            quirks: Default::default(),
        }
    }
}

/// The first `k` values of `v`, taken out of it. The longer part stays where it is: the
/// rest moved down in place when it is the longer (fresh memory is zeroed page by page
/// by the kernel, which cost more than the copy).
fn cut_vec<T: Copy>(v: &mut Vec<T>, k: usize) -> Vec<T> {
    if v.is_empty() {
        return Vec::new(); // a column the point does not have (egress streams)
    }
    if k <= v.len() / 2 {
        let front = v[..k].to_vec();
        v.drain(..k);
        front
    } else {
        let rest = v.split_off(k);
        std::mem::replace(v, rest)
    }
}
