//! The Thrift compact protocol, as much of it as a Parquet footer and page header need:
//! structs of i32/i64/binary/bool fields, lists, and nested structs.

/// Compact-protocol type codes.
#[derive(Clone, Copy)]
#[repr(u8)]
pub enum Kind {
    I8 = 3,
    I32 = 5,
    I64 = 6,
    Binary = 8,
    List = 9,
    Struct = 12,
}

const BOOL_TRUE: u8 = 1;
const BOOL_FALSE: u8 = 2;

/// Writes one Thrift message into a byte buffer; structs nest with `begin`/`end`.
#[derive(Default)]
pub struct Writer {
    pub out: Vec<u8>,
    last_field: Vec<i16>,
    current: i16,
}

impl Writer {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }

    fn zigzag(&mut self, v: i64) {
        self.varint(((v << 1) ^ (v >> 63)) as u64);
    }

    fn field(&mut self, id: i16, kind: u8) {
        let delta = id - self.current;
        if (1..=15).contains(&delta) {
            self.out.push(((delta as u8) << 4) | kind);
        } else {
            self.out.push(kind);
            self.zigzag(id as i64);
        }
        self.current = id;
    }

    pub fn i8(&mut self, id: i16, v: i8) {
        self.field(id, Kind::I8 as u8);
        self.out.push(v as u8);
    }

    pub fn i32(&mut self, id: i16, v: i32) {
        self.field(id, Kind::I32 as u8);
        self.zigzag(v as i64);
    }

    pub fn i64(&mut self, id: i16, v: i64) {
        self.field(id, Kind::I64 as u8);
        self.zigzag(v);
    }

    pub fn bool(&mut self, id: i16, v: bool) {
        self.field(id, if v { BOOL_TRUE } else { BOOL_FALSE });
    }

    pub fn binary(&mut self, id: i16, v: &[u8]) {
        self.field(id, Kind::Binary as u8);
        self.varint(v.len() as u64);
        self.out.extend_from_slice(v);
    }

    /// A list field header: `len` elements of `elem` follow (write them with the
    /// `elem_*` methods or, for structs, `begin_elem`/`end`).
    pub fn list(&mut self, id: i16, elem: Kind, len: usize) {
        self.field(id, Kind::List as u8);
        if len < 15 {
            self.out.push(((len as u8) << 4) | elem as u8);
        } else {
            self.out.push(0xF0 | elem as u8);
            self.varint(len as u64);
        }
    }

    pub fn elem_i32(&mut self, v: i32) {
        self.zigzag(v as i64);
    }

    pub fn elem_binary(&mut self, v: &[u8]) {
        self.varint(v.len() as u64);
        self.out.extend_from_slice(v);
    }

    /// A struct field: its fields follow, then `end`.
    pub fn begin(&mut self, id: i16) {
        self.field(id, Kind::Struct as u8);
        self.begin_elem();
    }

    /// A struct as a list element.
    pub fn begin_elem(&mut self) {
        self.last_field.push(self.current);
        self.current = 0;
    }

    /// Ends the innermost struct (or the message).
    pub fn end(&mut self) {
        self.out.push(0);
        self.current = self.last_field.pop().unwrap_or(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long_field_deltas_and_lists() {
        let mut w = Writer::default();
        w.i32(1, -1); // delta 1, zigzag(-1) = 1
        w.i64(20, 300); // delta 19: long form
        w.list(21, Kind::I32, 2);
        w.elem_i32(3);
        w.elem_i32(64);
        w.bool(22, true);
        w.end();
        assert_eq!(
            w.out,
            vec![0x15, 0x01, 0x06, 40, 0xD8, 0x04, 0x19, 0x25, 6, 0x80, 0x01, 0x11, 0]
        );
    }

    #[test]
    fn nested_structs_restore_the_outer_field_id() {
        let mut w = Writer::default();
        w.i32(4, 7);
        w.begin(5);
        w.i32(1, 1);
        w.end();
        w.i32(6, 2);
        w.end();
        // 6 follows 5 in the outer struct: delta 1
        assert_eq!(w.out, vec![0x45, 14, 0x1C, 0x15, 2, 0, 0x15, 4, 0]);
    }
}
