//! Column chunks: the pages of one column's rows in a row group (dictionary page, data
//! page v1), their headers, and the encodings they use (PLAIN, RLE/bit-packing hybrid).

use super::thrift::Writer;
use super::{Column, Values, DATA_PAGE, DICTIONARY_PAGE, PLAIN, RLE, RLE_DICTIONARY};

/// A column chunk's bytes: an optional dictionary page, then one data page.
#[derive(Default)]
pub(super) struct Chunk {
    pub bytes: Vec<u8>,
    pub dict_bytes: usize,
}

/// Rows `start..end` of `col` as one column chunk.
pub(super) fn column_chunk(col: &Column<'_>, start: usize, end: usize) -> Chunk {
    let n = end - start;
    let valid = col.valid.map(|v| &v[start..end]);
    let keep = |i: usize| valid.map_or(true, |v| v[i]);
    let mut page = Vec::with_capacity(n * 8 + 16);
    def_levels(&mut page, valid, n);
    // dictionary-encoded: (dictionary page values, entries, number of entries)
    let dict: Option<(Vec<u8>, Vec<u32>, usize)> = match &col.values {
        Values::U8(v) => {
            let mut slot = [u32::MAX; 256];
            let (mut dict, mut idx) = (Vec::new(), Vec::with_capacity(n));
            for (i, &x) in v[start..end].iter().enumerate() {
                if keep(i) {
                    if slot[x as usize] == u32::MAX {
                        slot[x as usize] = (dict.len() / 4) as u32;
                        dict.extend_from_slice(&i32::from(x).to_le_bytes());
                    }
                    idx.push(slot[x as usize]);
                }
            }
            let entries = dict.len() / 4;
            (entries > 0).then_some((dict, idx, entries))
        }
        Values::Str { index, dict } => {
            let mut page_dict = Vec::new();
            for s in dict.iter() {
                page_dict.extend_from_slice(&(s.len() as u32).to_le_bytes());
                page_dict.extend_from_slice(s.as_bytes());
            }
            let idx = index[start..end]
                .iter()
                .enumerate()
                .filter(|&(i, _)| keep(i))
                .map(|(_, &k)| k)
                .collect();
            (!dict.is_empty()).then_some((page_dict, idx, dict.len()))
        }
        _ => None,
    };
    let mut chunk = Chunk::default();
    let encoding = if let Some((dict_page, idx, entries)) = dict {
        let width = (usize::BITS - entries.saturating_sub(1).leading_zeros()).max(1) as u8;
        page.push(width);
        pack_hybrid(&mut page, &idx, width);
        chunk.bytes = page_header(DICTIONARY_PAGE, dict_page.len(), entries, PLAIN);
        chunk.bytes.extend_from_slice(&dict_page);
        chunk.dict_bytes = chunk.bytes.len();
        RLE_DICTIONARY
    } else {
        plain_values(&mut page, col, start, end, &keep);
        PLAIN
    };
    chunk
        .bytes
        .extend_from_slice(&page_header(DATA_PAGE, page.len(), n, encoding));
    chunk.bytes.extend_from_slice(&page);
    chunk
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

/// The non-null values of rows `start..end`, PLAIN.
fn plain_values(
    page: &mut Vec<u8>,
    col: &Column<'_>,
    start: usize,
    end: usize,
    keep: &dyn Fn(usize) -> bool,
) {
    let valid = col.valid.map(|v| &v[start..end]);
    match &col.values {
        Values::U8(v) => plain_i32(page, &v[start..end], valid, i32::from),
        Values::U16(v) => plain_i32(page, &v[start..end], valid, i32::from),
        Values::U32(v) => plain_i32(page, &v[start..end], valid, |x| x as i32),
        Values::I64(v) => {
            for (i, x) in v[start..end].iter().enumerate() {
                if keep(i) {
                    page.extend_from_slice(&x.to_le_bytes());
                }
            }
        }
        Values::F64(v) => {
            for (i, x) in v[start..end].iter().enumerate() {
                if keep(i) {
                    page.extend_from_slice(&x.to_le_bytes());
                }
            }
        }
        Values::Bool(v) => {
            let bits = v[start..end]
                .iter()
                .enumerate()
                .filter(|&(i, _)| keep(i))
                .map(|(_, &b)| b);
            pack_bits(page, bits);
        }
        Values::Str { index, dict } => {
            for (i, &k) in index[start..end].iter().enumerate() {
                if keep(i) {
                    let s = dict[k as usize].as_bytes();
                    page.extend_from_slice(&(s.len() as u32).to_le_bytes());
                    page.extend_from_slice(s);
                }
            }
        }
    }
}

/// `values` in one bit-packed run of the RLE/bit-packing hybrid, `width` bits each.
fn pack_hybrid(out: &mut Vec<u8>, values: &[u32], width: u8) {
    uleb(out, ((values.len().div_ceil(8) as u64) << 1) | 1);
    let w = u32::from(width);
    for group in values.chunks(8) {
        let (mut acc, mut bits) = (0u64, 0u32);
        for i in 0..8 {
            acc |= u64::from(group.get(i).copied().unwrap_or(0)) << bits;
            bits += w;
            while bits >= 8 {
                out.push(acc as u8);
                acc >>= 8;
                bits -= 8;
            }
        }
    }
}

fn plain_i32<T: Copy>(page: &mut Vec<u8>, v: &[T], valid: Option<&[bool]>, f: impl Fn(T) -> i32) {
    match valid {
        None => v
            .iter()
            .for_each(|&x| page.extend_from_slice(&f(x).to_le_bytes())),
        Some(ok) => v
            .iter()
            .zip(ok)
            .filter(|(_, &k)| k)
            .for_each(|(&x, _)| page.extend_from_slice(&f(x).to_le_bytes())),
    }
}

/// Definition levels (max level 1) in the RLE/bit-packing hybrid, with the v1 page's
/// 4-byte length: one RLE run when every row is valid, bit-packed otherwise.
fn def_levels(page: &mut Vec<u8>, valid: Option<&[bool]>, n: usize) {
    let mut enc = Vec::new();
    match valid {
        Some(v) if v.iter().any(|&k| !k) => {
            uleb(&mut enc, ((n.div_ceil(8) as u64) << 1) | 1);
            pack_bits(&mut enc, v.iter().copied());
        }
        _ => {
            uleb(&mut enc, (n as u64) << 1);
            enc.push(1);
        }
    }
    page.extend_from_slice(&(enc.len() as u32).to_le_bytes());
    page.extend_from_slice(&enc);
}

/// Bits packed least significant first, padded to whole bytes.
fn pack_bits(out: &mut Vec<u8>, bits: impl Iterator<Item = bool>) {
    let (mut byte, mut used) = (0u8, 0);
    for b in bits {
        byte |= (b as u8) << used;
        used += 1;
        if used == 8 {
            out.push(byte);
            (byte, used) = (0, 0);
        }
    }
    if used > 0 {
        out.push(byte);
    }
}

fn uleb(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}
