//! Column chunks: the pages of one column's rows in a row group (dictionary page, data
//! page v1) and their headers. Each column chunk's encoding follows from its type and
//! values, each costing one pass over them:
//! - strings, and integers all below 2^16 (ports, sizes, IP IDs, flow ids): a dictionary,
//!   its indices bit-packed, unless PLAIN would be as small;
//! - 64-bit integers (times): DELTA_BINARY_PACKED;
//! - the rest (sequence numbers, floats, booleans): PLAIN.

use super::encode::pack_hybrid;
use super::encode::small_int_dictionary;
use super::encode::{def_levels, delta_binary_packed, index_width, pack_flags};
use super::thrift::Writer;
use super::RLE_DICTIONARY;
use super::{
    Column, Owned, Rows, Values, DATA_PAGE, DELTA_BINARY_PACKED, DICTIONARY_PAGE, PLAIN, RLE,
};

/// A column chunk: its bytes in pieces written one after the other (an optional
/// dictionary page and its header, then the data page's header and the page).
#[derive(Default)]
pub(super) struct Chunk {
    pub pieces: Vec<Vec<u8>>,
    /// Bytes of the dictionary page with its header (0: none).
    pub dict_bytes: usize,
    /// The data page's encoding.
    pub encoding: i32,
}

impl Chunk {
    pub(super) fn len(&self) -> usize {
        self.pieces.iter().map(Vec::len).sum()
    }
}

/// A dictionary: (the dictionary page's values, each kept row's index, entries).
type Dictionary = (Vec<u8>, Vec<u32>, usize);

/// Rows `start..end` of `col` as one column chunk. `contiguous`: whether the rows of a
/// `Rows::Order` column are consecutive rows of its values there (the writer checks each
/// distinct order once per row group, not once per column).
pub(super) fn column_chunk(col: &Column<'_>, start: usize, end: usize, contiguous: bool) -> Chunk {
    let gathered = match &col.rows {
        Rows::Direct => None,
        Rows::Order(order) => {
            let rows = &order[start..end];
            if let Some(&first) = rows.first().filter(|_| contiguous) {
                // Consecutive rows of the values (all of a clean capture's packets are):
                // encoded where they lie, not copied first.
                let at = first as usize..first as usize + rows.len();
                let valid = col.valid.map(|v| &v[at.clone()]);
                let direct = Column::direct(col.name, col.values.slice(at), valid);
                return column_chunk(&direct, 0, rows.len(), false);
            }
            let valid = col
                .valid
                .map(|v| rows.iter().map(|&i| v[i as usize]).collect());
            Some((Owned::gather(&col.values, rows), valid))
        }
        Rows::Computed(_, compute) => Some(compute(start, end)),
    };
    if let Some((values, valid)) = gathered {
        let direct = Column::direct(col.name, values.as_values(), valid.as_deref());
        return column_chunk(&direct, 0, end - start, false);
    }
    let n = end - start;
    let valid = col.valid.map(|v| &v[start..end]);
    let (levels, kept) = def_levels(valid, n);
    // No null in these rows: the encodings below take their unmasked paths.
    let valid = valid.filter(|_| kept < n);
    let mut page = Vec::with_capacity(kept * 8 + 64);
    page.extend_from_slice(&levels);
    // The non-null values, next to each other: the encodings below see no nulls.
    let some = valid.filter(|_| kept > 0);
    let compacted = some.map(|ok| Owned::kept(&col.values.slice(start..end), ok));
    let values = compacted
        .as_ref()
        .map_or_else(|| col.values.slice(start..end), Owned::as_values);
    let mut chunk = Chunk::default();
    if kept == 0 {
        // All null: the levels say it all (no values, no dictionary).
        chunk.encoding = PLAIN;
    } else if let Some((dict_page, idx, entries)) = dictionary(&values) {
        page.push(index_width(entries));
        pack_hybrid(&mut page, &idx, index_width(entries));
        chunk.dict_bytes = push_page(&mut chunk, DICTIONARY_PAGE, dict_page, entries, PLAIN);
        chunk.encoding = RLE_DICTIONARY;
    } else if let Values::I64(v) = values {
        delta_binary_packed(&mut page, v);
        chunk.encoding = DELTA_BINARY_PACKED;
    } else {
        plain_values(&mut page, &values);
        chunk.encoding = PLAIN;
    }
    let encoding = chunk.encoding;
    push_page(&mut chunk, DATA_PAGE, page, n, encoding);
    chunk
}

/// Whether each row follows the one before it.
pub(super) fn contiguous(rows: &[u32]) -> bool {
    rows.windows(2).all(|w| w[1] == w[0].wrapping_add(1))
}

/// Adds a page with its header to `chunk`; returns the bytes added.
fn push_page(chunk: &mut Chunk, kind: i32, page: Vec<u8>, values: usize, encoding: i32) -> usize {
    let header = page_header(kind, page.len(), values, encoding);
    let added = header.len() + page.len();
    chunk.pieces.push(header);
    chunk.pieces.push(page);
    added
}

/// The dictionary of `values` (non-null), for the columns that take one (see the module).
fn dictionary(values: &Values<'_>) -> Option<Dictionary> {
    match *values {
        Values::U8(v) => small_int_dictionary(v),
        Values::U16(v) => small_int_dictionary(v),
        Values::U32(v) => small_int_dictionary(v),
        Values::Str { index, dict } => {
            let mut page_dict = Vec::new();
            for s in dict.iter() {
                page_dict.extend_from_slice(&(s.len() as u32).to_le_bytes());
                page_dict.extend_from_slice(s.as_bytes());
            }
            (!dict.is_empty()).then(|| (page_dict, index.to_vec(), dict.len()))
        }
        Values::Indexed { index, dict, .. } => {
            let page_dict = dict.iter().flat_map(|&v| v.to_le_bytes()).collect();
            (!dict.is_empty()).then(|| (page_dict, index.to_vec(), dict.len()))
        }
        _ => None,
    }
}

/// A page header: a data page (v1) of `values` rows or a dictionary page of `values`
/// entries, `len` bytes.
fn page_header(kind: i32, len: usize, values: usize, encoding: i32) -> Vec<u8> {
    let mut h = Writer::default();
    h.i32(1, kind);
    h.i32(2, len as i32);
    h.i32(3, len as i32);
    if kind == DATA_PAGE {
        h.begin(5);
        h.i32(1, values as i32);
        h.i32(2, encoding);
        h.i32(3, RLE);
        h.i32(4, RLE);
    } else {
        h.begin(7);
        h.i32(1, values as i32);
        h.i32(2, encoding);
    }
    h.end();
    h.end();
    h.out
}

/// `values` (non-null), PLAIN.
fn plain_values(page: &mut Vec<u8>, values: &Values<'_>) {
    match *values {
        Values::U8(v) => plain_i32(page, v, i32::from),
        Values::U16(v) => plain_i32(page, v, i32::from),
        Values::U32(v) => plain_i32(page, v, |x| x as i32),
        Values::I64(v) => plain_fixed(page, v, i64::to_le_bytes),
        Values::F64(v) => plain_fixed(page, v, f64::to_le_bytes),
        Values::Bool(v) => pack_flags(page, v),
        Values::Indexed { index, dict, .. } => {
            plain_i32(page, index, |k| dict[k as usize] as i32);
        }
        Values::Str { index, dict } => {
            for &k in index {
                let s = dict[k as usize].as_bytes();
                page.extend_from_slice(&(s.len() as u32).to_le_bytes());
                page.extend_from_slice(s);
            }
        }
    }
}

fn plain_i32<T: Copy>(page: &mut Vec<u8>, v: &[T], f: impl Fn(T) -> i32) {
    plain_fixed(page, v, |x| f(x).to_le_bytes());
}

/// The values, `N` bytes each, written into room made once (a push per value checks the
/// capacity each time and cost more than the rest of the encoding).
fn plain_fixed<T: Copy, const N: usize>(page: &mut Vec<u8>, v: &[T], f: impl Fn(T) -> [u8; N]) {
    let at = page.len();
    page.resize(at + v.len() * N, 0);
    for (slot, &x) in page[at..].chunks_exact_mut(N).zip(v) {
        slot.copy_from_slice(&f(x));
    }
}
