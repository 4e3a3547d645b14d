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

mod column;
mod encode;
mod groups;
mod pages;
mod thrift;

pub use column::{Column, Computed, Owned, Rows, Values};
pub use groups::GroupWriter;

use pages::{column_chunk, Chunk};

use std::io::{self, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use thrift::{Kind, Writer};

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

/// Rows per row group: 2^18, polars' own default. Large enough that per-chunk overhead
/// stays small (the files are 1 % larger than with 2^20), small enough that a reader can
/// stream and read the groups in parallel. A streaming match holds a row group of rows
/// and its encoded pages at once: with 2^20, those were most of its fresh memory (a
/// forced streaming match of the benchmark's mix B faulted in 124 fresh huge pages with
/// 2^20, 55 with 2^18).
pub const ROW_GROUP_ROWS: usize = 1 << 18;

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
    let mut groups: Vec<(i64, Vec<ChunkMeta>)> = spans
        .iter()
        .map(|&(start, end)| ((end - start) as i64, Vec::with_capacity(columns.len())))
        .collect();
    encode_in_order(columns, &spans, |task, chunk| {
        let (group, col) = (task / columns.len(), &columns[task % columns.len()]);
        let (values, metas) = &mut groups[group];
        metas.push(ChunkMeta {
            physical: col.physical().0,
            name: col.name.to_owned(),
            values: *values,
            bytes: chunk.len() as i64,
            offset,
            dict_bytes: chunk.dict_bytes as i64,
            encoding: chunk.encoding,
        });
        for piece in &chunk.pieces {
            out.write_all(piece)?;
        }
        offset += chunk.len() as i64;
        Ok(())
    })?;
    let footer = footer(
        &schema_of(columns),
        rows as i64,
        &groups,
        metadata,
        created_by,
    );
    out.write_all(&footer)?;
    out.write_all(&(footer.len() as u32).to_le_bytes())?;
    out.write_all(b"PAR1")?;
    out.flush()
}

/// A column's name and (Parquet physical type, unsigned integer bits, is a string).
type SchemaColumn = (String, (i32, Option<i8>, bool));

fn schema_of(columns: &[Column<'_>]) -> Vec<SchemaColumn> {
    columns
        .iter()
        .map(|c| (c.name.to_owned(), c.physical()))
        .collect()
}

struct ChunkMeta {
    physical: i32,
    name: String,
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
    let mut largest: Vec<(*const u32, u32)> = Vec::new();
    columns.iter().all(|c| {
        let Rows::Order(order) = c.rows else {
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
        order.is_empty() || (top as usize) < c.source_len()
    })
}

/// What the encoding threads share with the writing one.
struct Encoded {
    /// Chunks done and not yet written, by task (row group, then column).
    done: Vec<Option<Chunk>>,
    /// An encoding thread panicked: the chunk waited for may never come.
    failed: bool,
}

/// Marks `Encoded::failed` if its thread unwinds.
struct PanicFlag<'a>(&'a Mutex<Encoded>, &'a Condvar);

impl Drop for PanicFlag<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            lock(self.0).failed = true;
            self.1.notify_all();
        }
    }
}

fn lock(m: &Mutex<Encoded>) -> MutexGuard<'_, Encoded> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Encodes every row group's column chunks (`spans` of rows) on as many threads as the
/// machine has, and hands them to `take` on this thread in file order as they are done,
/// so that writing overlaps encoding. Each encoding thread takes the next chunk not yet
/// taken: chunks are independent, their costs differ by a hundred times, and one pool
/// for all row groups leaves no core waiting at a row group's end. An error from `take`
/// stops the encoding and is returned.
fn encode_in_order(
    columns: &[Column<'_>],
    spans: &[(usize, usize)],
    mut take: impl FnMut(usize, Chunk) -> io::Result<()>,
) -> io::Result<()> {
    let tasks = spans.len() * columns.len();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(tasks.max(1));
    let next = AtomicUsize::new(0);
    let shared = Mutex::new(Encoded {
        done: (0..tasks).map(|_| None).collect(),
        failed: false,
    });
    let ready = Condvar::new();
    let runs = contiguous_runs(columns, spans);
    let encode = || {
        let _flag = PanicFlag(&shared, &ready);
        loop {
            let task = next.fetch_add(1, Ordering::Relaxed);
            if task >= tasks {
                return;
            }
            let (group, col) = (task / columns.len(), task % columns.len());
            let (start, end) = spans[group];
            let chunk = column_chunk(&columns[col], start, end, runs[group][col]);
            lock(&shared).done[task] = Some(chunk);
            ready.notify_all();
        }
    };
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(encode);
        }
        for task in 0..tasks {
            let chunk = {
                let mut enc = lock(&shared);
                loop {
                    if let Some(chunk) = enc.done[task].take() {
                        break chunk;
                    }
                    assert!(!enc.failed, "encoding a column chunk panicked");
                    enc = ready.wait(enc).unwrap_or_else(|e| e.into_inner());
                }
            };
            if let Err(e) = take(task, chunk) {
                next.store(tasks, Ordering::Relaxed);
                return Err(e);
            }
        }
        Ok(())
    })
}

/// Per row group and column, whether the column's row order is a contiguous run of its
/// values in that row group (then it is encoded in place). Each distinct order is checked
/// once per row group: the packet table's columns share one.
fn contiguous_runs(columns: &[Column<'_>], spans: &[(usize, usize)]) -> Vec<Vec<bool>> {
    spans
        .iter()
        .map(|&(start, end)| {
            let mut known: Vec<(*const u32, bool)> = Vec::new();
            columns
                .iter()
                .map(|c| {
                    let Rows::Order(order) = c.rows else {
                        return false;
                    };
                    if let Some(&(_, run)) = known.iter().find(|&&(p, _)| p == order.as_ptr()) {
                        return run;
                    }
                    let run = pages::contiguous(&order[start..end]);
                    known.push((order.as_ptr(), run));
                    run
                })
                .collect()
        })
        .collect()
}

fn footer(
    columns: &[SchemaColumn],
    rows: i64,
    groups: &[(i64, Vec<ChunkMeta>)],
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
    for (name, (physical, int_bits, string)) in columns {
        let (physical, int_bits, string) = (*physical, *int_bits, *string);
        w.begin_elem();
        w.i32(1, physical);
        w.i32(3, OPTIONAL);
        w.binary(4, name.as_bytes());
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

#[cfg(test)]
mod tests;
