//! A minimal Parquet writer for the packet tables: flat schemas of nullable integer,
//! float, boolean and string columns in data pages (v1), uncompressed, with the file's
//! key-value metadata. Encodings are chosen per column chunk (see `pages`): dictionaries
//! for strings and small integers (protocol, ECN, ports, sizes, IP IDs, flow ids),
//! DELTA_BINARY_PACKED for times, PLAIN for the rest. The packet table then takes ~22
//! bytes a row (51 all PLAIN): fewer bytes to copy into the page cache, which bounded the
//! writer before. What it writes is standard Parquet: polars, pyarrow and DuckDB read it
//! with the logical types below (UInt8..UInt32 as INT32 with an unsigned INTEGER
//! annotation, strings as BYTE_ARRAY STRING).
//!
//! Why not a Parquet library: the general writers spend ~10 ns per value on levels,
//! statistics and page bookkeeping (0.4-0.6 s for a 2-million-row packet table here),
//! more than reading and matching both captures. Column chunks are encoded on all cores
//! (gathering the columns given a row order as they go) and written in order.

mod encode;
mod pages;
mod thrift;

use pages::{column_chunk, Chunk};

use std::io::{self, Write};
use thrift::{Kind, Writer};

/// One column's values; `valid` (one flag per row, None: all valid) marks the non-nulls.
pub enum Values<'a> {
    U8(&'a [u8]),
    U16(&'a [u16]),
    U32(&'a [u32]),
    I64(&'a [i64]),
    F64(&'a [f64]),
    Bool(&'a [bool]),
    /// Per row an index into `dict` (the strings are few: one per address).
    Str {
        index: &'a [u32],
        dict: &'a [String],
    },
}

pub struct Column<'a> {
    pub name: &'a str,
    pub values: Values<'a>,
    pub valid: Option<&'a [bool]>,
    /// Row `i` is `values[order[i]]` and `valid[order[i]]`: a column gathered as it is
    /// encoded, a row group at a time on the encoding threads, instead of copied whole
    /// beforehand. None: row `i` is `values[i]`.
    pub order: Option<&'a [usize]>,
}

impl Column<'_> {
    fn rows(&self) -> usize {
        if let Some(order) = self.order {
            return order.len();
        }
        self.source_len()
    }

    /// Length of the values (before any `order`).
    fn source_len(&self) -> usize {
        match &self.values {
            Values::U8(v) => v.len(),
            Values::U16(v) => v.len(),
            Values::U32(v) => v.len(),
            Values::I64(v) => v.len(),
            Values::F64(v) => v.len(),
            Values::Bool(v) => v.len(),
            Values::Str { index, .. } => index.len(),
        }
    }

    /// (Parquet physical type, unsigned bit width of an INTEGER annotation, is a string).
    fn physical(&self) -> (i32, Option<i8>, bool) {
        match self.values {
            Values::U8(_) => (INT32, Some(8), false),
            Values::U16(_) => (INT32, Some(16), false),
            Values::U32(_) => (INT32, Some(32), false),
            Values::I64(_) => (INT64, None, false),
            Values::F64(_) => (DOUBLE, None, false),
            Values::Bool(_) => (BOOLEAN, None, false),
            Values::Str { .. } => (BYTE_ARRAY, None, true),
        }
    }
}

const BOOLEAN: i32 = 0;
const INT32: i32 = 1;
const INT64: i32 = 2;
const DOUBLE: i32 = 5;
const BYTE_ARRAY: i32 = 6;
const OPTIONAL: i32 = 1;
const PLAIN: i32 = 0;
const RLE: i32 = 3;
const UNCOMPRESSED: i32 = 0;
const DATA_PAGE: i32 = 0;
const DICTIONARY_PAGE: i32 = 2;
const DELTA_BINARY_PACKED: i32 = 5;
const RLE_DICTIONARY: i32 = 8;
// ConvertedType, for readers that predate LogicalType.
const UTF8: i32 = 0;
const UINT_8: i32 = 11;

/// Rows per row group: large enough that per-chunk overhead vanishes, small enough that
/// a reader can stream.
pub const ROW_GROUP_ROWS: usize = 1 << 20;

/// Writes `columns` (all of the same length) as one Parquet file to `out`.
pub fn write<W: Write>(
    out: &mut W,
    columns: &[Column<'_>],
    metadata: &[(&str, &str)],
    created_by: &str,
) -> io::Result<()> {
    let rows = columns.first().map_or(0, Column::rows);
    if columns
        .iter()
        .any(|c| c.rows() != rows || c.valid.is_some_and(|v| v.len() != c.source_len()))
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "columns differ in length",
        ));
    }
    if !orders_fit(columns) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a column's row order points past its values",
        ));
    }
    out.write_all(b"PAR1")?;
    let mut offset = 4i64;
    // An empty table has no row groups: readers take its schema from the footer.
    let spans: Vec<(usize, usize)> = (0..rows)
        .step_by(ROW_GROUP_ROWS)
        .map(|start| (start, (start + ROW_GROUP_ROWS).min(rows)))
        .collect();
    let encoded = encode_chunks(columns, &spans);
    let mut groups = Vec::with_capacity(spans.len());
    for (&(start, end), chunks) in spans.iter().zip(&encoded) {
        let mut metas = Vec::with_capacity(chunks.len());
        for (col, chunk) in columns.iter().zip(chunks) {
            metas.push(ChunkMeta {
                physical: col.physical().0,
                name: col.name,
                values: (end - start) as i64,
                bytes: chunk.len() as i64,
                offset,
                dict_bytes: chunk.dict_bytes as i64,
                encoding: chunk.encoding,
            });
            for piece in &chunk.pieces {
                out.write_all(piece)?;
            }
            offset += chunk.len() as i64;
        }
        groups.push(((end - start) as i64, metas));
    }
    let footer = footer(columns, rows as i64, &groups, metadata, created_by);
    out.write_all(&footer)?;
    out.write_all(&(footer.len() as u32).to_le_bytes())?;
    out.write_all(b"PAR1")?;
    out.flush()
}

struct ChunkMeta<'a> {
    physical: i32,
    name: &'a str,
    values: i64,
    bytes: i64,
    offset: i64,
    /// Bytes of the dictionary page at the chunk's start (0: none).
    dict_bytes: i64,
    /// The data page's encoding.
    encoding: i32,
}

/// Whether every column's row order stays within its values (each distinct order is
/// scanned once: the packet table's gathered columns share one).
fn orders_fit(columns: &[Column<'_>]) -> bool {
    let mut largest: Vec<(*const usize, usize)> = Vec::new();
    columns.iter().all(|c| {
        let Some(order) = c.order else {
            return true;
        };
        let top = match largest.iter().find(|&&(p, _)| p == order.as_ptr()) {
            Some(&(_, top)) => top,
            None => {
                let top = order.iter().copied().max().unwrap_or(0);
                largest.push((order.as_ptr(), top));
                top
            }
        };
        order.is_empty() || top < c.source_len()
    })
}

/// The column chunks of every row group (`spans` of rows), each a page header and its
/// page, encoded on as many threads as the machine has: chunks are independent, and each
/// thread takes the next one not yet taken (their costs differ by a hundred times, and
/// one pool for all row groups leaves no core waiting at a row group's end).
fn encode_chunks(columns: &[Column<'_>], spans: &[(usize, usize)]) -> Vec<Vec<Chunk>> {
    let tasks = spans.len() * columns.len();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(tasks.max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let task = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if task >= tasks {
                return done;
            }
            let (group, col) = (task / columns.len(), task % columns.len());
            let (start, end) = spans[group];
            done.push((task, column_chunk(&columns[col], start, end)));
        }
    };
    let mut done: Vec<(usize, Chunk)> = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        let mut done = work();
        for h in helpers {
            done.extend(h.join().expect("encoding a column chunk panicked"));
        }
        done
    });
    done.sort_unstable_by_key(|&(task, _)| task);
    let mut chunks = done.into_iter().map(|(_, chunk)| chunk);
    spans
        .iter()
        .map(|_| chunks.by_ref().take(columns.len()).collect())
        .collect()
}

fn footer(
    columns: &[Column<'_>],
    rows: i64,
    groups: &[(i64, Vec<ChunkMeta<'_>>)],
    metadata: &[(&str, &str)],
    created_by: &str,
) -> Vec<u8> {
    let mut w = Writer::default();
    w.i32(1, 1);
    w.list(2, Kind::Struct, columns.len() + 1);
    w.begin_elem(); // the root
    w.binary(4, b"schema");
    w.i32(5, columns.len() as i32);
    w.end();
    for col in columns {
        let (physical, int_bits, string) = col.physical();
        w.begin_elem();
        w.i32(1, physical);
        w.i32(3, OPTIONAL);
        w.binary(4, col.name.as_bytes());
        if string {
            w.i32(6, UTF8);
            w.begin(10);
            w.begin(1); // LogicalType.STRING: an empty StringType
            w.end();
            w.end();
        } else if let Some(bits) = int_bits {
            w.i32(6, UINT_8 + (bits as i32).trailing_zeros() as i32 - 3);
            w.begin(10);
            w.begin(10); // LogicalType.INTEGER
            w.i8(1, bits);
            w.bool(2, false);
            w.end();
            w.end();
        }
        w.end();
    }
    w.i64(3, rows);
    w.list(4, Kind::Struct, groups.len());
    for (group_rows, metas) in groups {
        w.begin_elem();
        w.list(1, Kind::Struct, metas.len());
        let mut total = 0;
        for m in metas {
            total += m.bytes;
            w.begin_elem();
            w.i64(2, m.offset);
            w.begin(3);
            w.i32(1, m.physical);
            // RLE: the definition levels; PLAIN: a dictionary page's entries.
            let encodings: &[i32] = if m.dict_bytes > 0 {
                &[PLAIN, RLE, RLE_DICTIONARY]
            } else {
                &[RLE, m.encoding]
            };
            w.list(2, Kind::I32, encodings.len());
            for &e in encodings {
                w.elem_i32(e);
            }
            w.list(3, Kind::Binary, 1);
            w.elem_binary(m.name.as_bytes());
            w.i32(4, UNCOMPRESSED);
            w.i64(5, m.values);
            w.i64(6, m.bytes);
            w.i64(7, m.bytes);
            w.i64(9, m.offset + m.dict_bytes);
            if m.dict_bytes > 0 {
                w.i64(11, m.offset);
            }
            w.end();
            w.end();
        }
        w.i64(2, total);
        w.i64(3, *group_rows);
        w.end();
    }
    if !metadata.is_empty() {
        w.list(5, Kind::Struct, metadata.len());
        for (k, v) in metadata {
            w.begin_elem();
            w.binary(1, k.as_bytes());
            w.binary(2, v.as_bytes());
            w.end();
        }
    }
    w.binary(6, created_by.as_bytes());
    w.end();
    w.out
}
