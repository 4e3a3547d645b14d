//! The encodings the pages use, by the Parquet format's definitions: bit packing, the
//! RLE/bit-packing hybrid (definition levels, dictionary indices), DELTA_BINARY_PACKED
//! (times), and integer dictionaries.

/// Values per DELTA_BINARY_PACKED block, and miniblocks per block (the format's usual).
const DELTA_BLOCK: usize = 128;
const DELTA_MINIBLOCKS: usize = 4;
const MINIBLOCK: usize = DELTA_BLOCK / DELTA_MINIBLOCKS;

/// Integer columns whose values all lie below this get a dictionary (one array slot per
/// possible value, no hashing): ports, sizes, IP IDs, flow ids.
pub(super) const DICT_MAX_VALUE: u32 = 1 << 16;

/// `v` as an unsigned LEB128 varint.
pub(super) fn uleb(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Flags packed least significant first, padded to whole bytes; eight at a time.
pub(super) fn pack_flags(out: &mut Vec<u8>, flags: &[bool]) {
    let mut groups = flags.chunks_exact(8);
    for g in &mut groups {
        // Eight 0/1 bytes as one word; the multiply gathers bit 8i of each into bit
        // 56 + i (all partial products land on distinct bits, so nothing carries).
        let word = u64::from_le_bytes(std::array::from_fn(|i| u8::from(g[i])));
        out.push((word.wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8);
    }
    pack_bits(out, groups.remainder().iter().copied());
}

/// Bits packed least significant first, padded to whole bytes.
pub(super) fn pack_bits(out: &mut Vec<u8>, bits: impl Iterator<Item = bool>) {
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

/// `values`, `width` bits each (up to 64), least significant first, then `pad` zero
/// values; the whole padded to a byte.
fn pack_width<T: Copy + Into<u64>>(out: &mut Vec<u8>, values: &[T], pad: usize, width: u32) {
    if width == 0 {
        return;
    }
    let total_bits = (values.len() + pad) * width as usize;
    out.reserve(total_bits.div_ceil(8) + 8);
    if width <= 32 {
        // The common case, on a 64-bit accumulator: fewer than 32 bits wait in it. (The
        // 128-bit loop below alone, for every width, made the packet table's encoding 12 %
        // slower.)
        let (mut acc, mut bits) = (0u64, 0u32);
        for &v in values {
            acc |= v.into() << bits;
            bits += width;
            if bits >= 32 {
                out.extend_from_slice(&(acc as u32).to_le_bytes());
                acc >>= 32;
                bits -= 32;
            }
        }
        let rest = total_bits - values.len() * width as usize + bits as usize;
        out.extend_from_slice(&acc.to_le_bytes()[..rest.min(64).div_ceil(8)]);
        out.resize(out.len() + rest.saturating_sub(64).div_ceil(8), 0);
        return;
    }
    let (mut acc, mut bits) = (0u128, 0u32);
    for &v in values {
        acc |= u128::from(v.into()) << bits;
        bits += width;
        while bits >= 32 {
            out.extend_from_slice(&(acc as u32).to_le_bytes());
            acc >>= 32;
            bits -= 32;
        }
    }
    let rest = total_bits - values.len() * width as usize + bits as usize;
    out.extend_from_slice(&acc.to_le_bytes()[..rest.min(128).div_ceil(8)]);
    out.resize(out.len() + rest.saturating_sub(128).div_ceil(8), 0);
}

/// `values` in the RLE/bit-packing hybrid, `width` bits each: one RLE run when they are
/// all equal (constant columns, such as the IP version or a column null but in a few
/// rows), else one bit-packed run.
pub(super) fn pack_hybrid(out: &mut Vec<u8>, values: &[u32], width: u8) {
    if let Some(&first) = values.first() {
        if values.iter().all(|&v| v == first) {
            uleb(out, (values.len() as u64) << 1);
            out.extend_from_slice(&first.to_le_bytes()[..usize::from(width).div_ceil(8)]);
            return;
        }
    }
    let groups = values.len().div_ceil(8);
    uleb(out, ((groups as u64) << 1) | 1);
    // A run holds whole groups of 8: the last one is padded with zeros.
    pack_width(out, values, groups * 8 - values.len(), u32::from(width));
}

/// Definition levels (max level 1) of `n` rows in the RLE/bit-packing hybrid, with the
/// v1 page's 4-byte length, and how many rows are valid: one RLE run when every row is
/// (`valid` None or all set) or none is, bit-packed otherwise. The flags are packed
/// first and counted from the packed bytes, an eighth of the bytes to count.
pub(super) fn def_levels(valid: Option<&[bool]>, n: usize) -> (Vec<u8>, usize) {
    let mut enc = Vec::new();
    let mut kept = n;
    if let Some(v) = valid {
        let mut packed = Vec::with_capacity(n.div_ceil(8));
        pack_flags(&mut packed, v);
        kept = packed.iter().map(|b| b.count_ones() as usize).sum();
        if 0 < kept && kept < n {
            uleb(&mut enc, ((n.div_ceil(8) as u64) << 1) | 1);
            enc.extend_from_slice(&packed);
        }
    }
    if enc.is_empty() {
        uleb(&mut enc, (n as u64) << 1);
        enc.push(u8::from(kept > 0));
    }
    let mut levels = Vec::with_capacity(enc.len() + 4);
    levels.extend_from_slice(&(enc.len() as u32).to_le_bytes());
    levels.extend_from_slice(&enc);
    (levels, kept)
}

/// `values` DELTA_BINARY_PACKED: a header (block size, miniblocks per block, count, first
/// value), then per block of 128 deltas their minimum and four miniblocks of 32, each
/// bit-packed at its own width. Times in capture order differ by microseconds, so they
/// take 2-3 bytes instead of 8.
pub(super) fn delta_binary_packed(out: &mut Vec<u8>, values: &[i64]) {
    uleb(out, DELTA_BLOCK as u64);
    uleb(out, DELTA_MINIBLOCKS as u64);
    uleb(out, values.len() as u64);
    uleb(out, zigzag(values.first().copied().unwrap_or(0)));
    // Block by block (128 deltas: values[at..=at + 128]), on the stack.
    let mut deltas = [0u64; DELTA_BLOCK];
    let n_deltas = values.len().saturating_sub(1);
    let mut at = 0;
    while at < n_deltas {
        let len = DELTA_BLOCK.min(n_deltas - at);
        let pairs = values[at..at + len + 1].windows(2);
        let mut min = i64::MAX;
        for (d, w) in deltas.iter_mut().zip(pairs) {
            let delta = w[1].wrapping_sub(w[0]);
            *d = delta as u64;
            min = min.min(delta);
        }
        uleb(out, zigzag(min));
        // Relative to the minimum; a miniblock's width is that of the OR of its values.
        let minis = len.div_ceil(MINIBLOCK);
        let mut widths = [0u32; DELTA_MINIBLOCKS];
        for (k, width) in widths.iter_mut().enumerate().take(minis) {
            let mini = &mut deltas[k * MINIBLOCK..(k * MINIBLOCK + MINIBLOCK).min(len)];
            let mut any = 0u64;
            for d in mini.iter_mut() {
                *d = d.wrapping_sub(min as u64);
                any |= *d;
            }
            *width = u64::BITS - any.leading_zeros();
        }
        // Widths of miniblocks the last block does not need are present, as zeros.
        out.extend(widths.iter().map(|&w| w as u8));
        for (k, &width) in widths.iter().enumerate().take(minis) {
            // A miniblock always takes 32 values' room: the last one is padded with zeros.
            let used = (len - k * MINIBLOCK).min(MINIBLOCK);
            let mini = &deltas[k * MINIBLOCK..k * MINIBLOCK + used];
            pack_width(out, mini, MINIBLOCK - used, width);
        }
        at += len;
    }
}

/// The values whose flag in `ok` is set, without a branch per row: TCP and UDP packets
/// alternate at random, and a filter's branch mispredicted on every other row (it cost
/// more than the encoding).
pub(super) fn kept_values<T: Copy>(values: &[T], ok: &[bool]) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(values.len());
    let slots = out.spare_capacity_mut();
    let mut kept = 0;
    for (&x, &k) in values.iter().zip(ok) {
        // Written in any case, kept only if valid: the next value overwrites it if not.
        slots[kept].write(x);
        kept += usize::from(k);
    }
    // SAFETY: slots 0..kept were written above (kept never passes the rows written).
    unsafe { out.set_len(kept) };
    out
}

/// A dictionary of an integer column's (non-null) values: (the dictionary's entries as
/// PLAIN INT32, each value's index, the number of entries). None when a value lies at or
/// above [`DICT_MAX_VALUE`] or PLAIN would be as small.
pub(super) fn small_int_dictionary<T: Copy + Into<u32>>(
    values: &[T],
) -> Option<(Vec<u8>, Vec<u32>, usize)> {
    // One slot per possible value: no hashing, and a u16 index needs no bounds check.
    let mut slot: Box<[u32; DICT_MAX_VALUE as usize]> = vec![u32::MAX; DICT_MAX_VALUE as usize]
        .into_boxed_slice()
        .try_into()
        .expect("slot table");
    let mut dict = Vec::new();
    let mut idx = Vec::with_capacity(values.len());
    for &x in values {
        let x: u32 = x.into();
        if x >= DICT_MAX_VALUE {
            return None;
        }
        let s = &mut slot[usize::from(x as u16)];
        if *s == u32::MAX {
            *s = (dict.len() / 4) as u32;
            dict.extend_from_slice(&(x as i32).to_le_bytes());
        }
        idx.push(*s);
    }
    let (kept, entries) = (idx.len(), dict.len() / 4);
    let width = index_width(entries) as usize;
    let smaller = dict.len() + (kept * width).div_ceil(8) < kept * 4;
    (entries > 0 && smaller).then_some((dict, idx, entries))
}

/// Bits of a dictionary index with `entries` entries (at least 1).
pub(super) fn index_width(entries: usize) -> u8 {
    (usize::BITS - entries.saturating_sub(1).leading_zeros()).max(1) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `width`-bit values back (the format's bit order), as readers do.
    fn unpack(bytes: &[u8], width: u32, n: usize) -> Vec<u64> {
        (0..n)
            .map(|i| {
                (0..width).fold(0u64, |v, b| {
                    let bit = i * width as usize + b as usize;
                    v | (u64::from(bytes[bit / 8] >> (bit % 8) & 1) << b)
                })
            })
            .collect()
    }

    fn read_uleb(b: &[u8], at: &mut usize) -> u64 {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let byte = b[*at];
            *at += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return v;
            }
            shift += 7;
        }
    }

    /// A DELTA_BINARY_PACKED decoder written from the format's text.
    fn undelta(b: &[u8]) -> Vec<i64> {
        let unzig = |v: u64| ((v >> 1) as i64) ^ -((v & 1) as i64);
        let at = &mut 0;
        let (block, minis) = (read_uleb(b, at) as usize, read_uleb(b, at) as usize);
        let count = read_uleb(b, at) as usize;
        let first = unzig(read_uleb(b, at));
        if count == 0 {
            return Vec::new();
        }
        let mut out = vec![first];
        let per_mini = block / minis;
        while out.len() < count {
            let min = unzig(read_uleb(b, at));
            let widths: Vec<u32> = b[*at..*at + minis].iter().map(|&w| u32::from(w)).collect();
            *at += minis;
            for w in widths {
                if out.len() >= count {
                    break;
                }
                let bytes = per_mini * w as usize / 8;
                for d in unpack(&b[*at..*at + bytes], w, per_mini) {
                    if out.len() < count {
                        let last = *out.last().unwrap();
                        out.push(last.wrapping_add(min.wrapping_add(d as i64)));
                    }
                }
                *at += bytes;
            }
        }
        assert_eq!(*at, b.len(), "bytes left over");
        out
    }

    #[test]
    fn delta_binary_packed_round_trips() {
        let times: Vec<i64> = (0..1000)
            .map(|i| 1_700_000_000_000_000_000 + i * 7919)
            .collect();
        let extremes = vec![i64::MIN, i64::MAX, 0, -1, i64::MIN, 5];
        let falling: Vec<i64> = (0..300).map(|i| 1000 - i * i).collect();
        for values in [vec![], vec![42], times, extremes, falling, vec![3; 129]] {
            let mut out = Vec::new();
            delta_binary_packed(&mut out, &values);
            assert_eq!(undelta(&out), values);
        }
    }

    #[test]
    fn regular_times_take_few_bytes() {
        let times: Vec<i64> = (0..100_000)
            .map(|i| 1_700_000_000_000_000_000 + i * 1000 + i % 7)
            .collect();
        let mut out = Vec::new();
        delta_binary_packed(&mut out, &times);
        assert!(out.len() < times.len(), "{} bytes", out.len());
    }

    #[test]
    fn flags_pack_eight_at_a_time_like_one_by_one() {
        for n in [0, 1, 7, 8, 9, 64, 1001] {
            let flags: Vec<bool> = (0..n).map(|i| (i * 7919) % 3 == 0 || i % 11 == 0).collect();
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            pack_flags(&mut fast, &flags);
            pack_bits(&mut slow, flags.iter().copied());
            assert_eq!(fast, slow, "{n} flags");
            let back = unpack(&fast, 1, n);
            assert!(back.iter().zip(&flags).all(|(&b, &f)| (b == 1) == f));
        }
    }

    #[test]
    fn hybrid_constant_values_take_one_run() {
        let mut out = Vec::new();
        pack_hybrid(&mut out, &[5; 1000], 12);
        assert_eq!(out, [0xd0, 0x0f, 5, 0]); // 1000 << 1 as a varint, then 2 value bytes
    }

    #[test]
    fn wide_values_pack_across_words() {
        for width in [1, 7, 31, 32, 33, 63, 64] {
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            let values: Vec<u64> = (0..37u64)
                .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) & mask)
                .collect();
            let mut out = Vec::new();
            pack_width(&mut out, &values, 0, width);
            assert_eq!(out.len(), (37 * width as usize).div_ceil(8));
            assert_eq!(unpack(&out, width, 37), values, "width {width}");
        }
    }

    #[test]
    fn hybrid_runs_pad_to_groups_of_eight() {
        let values = [1u32, 2, 3, 4, 5, 6, 7, 0, 1, 2];
        let mut out = Vec::new();
        pack_hybrid(&mut out, &values, 3);
        assert_eq!(out[0], (2 << 1) | 1); // two groups, bit-packed
        assert_eq!(out.len(), 1 + 2 * 3);
        let back = unpack(&out[1..], 3, 16);
        assert_eq!(&back[..10], &values.map(u64::from)[..]);
        assert!(back[10..].iter().all(|&v| v == 0));
    }

    #[test]
    fn dictionaries_only_when_smaller() {
        let ports = [443u16, 5000, 443, 443, 5000].repeat(100);
        let (dict, idx, entries) = small_int_dictionary(&ports).unwrap();
        assert_eq!((entries, dict.len()), (2, 8));
        assert_eq!(&idx[..3], &[0, 1, 0]);
        // Null rows take no index.
        let valid: Vec<bool> = (0..ports.len()).map(|i| i % 5 != 0).collect();
        let (_, idx, _) = small_int_dictionary(&kept_values(&ports, &valid)).unwrap();
        assert_eq!((idx.len(), &idx[..3]), (400, &[0, 1, 1][..]));
        // All distinct: the dictionary would outweigh PLAIN.
        let distinct: Vec<u32> = (0..1000).collect();
        assert!(small_int_dictionary(&distinct).is_none());
        // A value past the slot table: none (a null row's value does not count).
        let wide = [7u32, 7, 1 << 16, 7].repeat(100);
        assert!(small_int_dictionary(&wide).is_none());
        let valid: Vec<bool> = (0..wide.len()).map(|i| i % 4 != 2).collect();
        assert!(small_int_dictionary(&kept_values(&wide, &valid)).is_some());
    }
}
