//! The writer's file layout and its failure modes (readers check the files: the Python
//! tests read them back with polars and pyarrow).

use super::*;

/// A sink that fails after `left` bytes.
struct Failing {
    left: usize,
}

impl Write for Failing {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.len() > self.left {
            return Err(io::Error::other("disk full"));
        }
        self.left -= buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn table(rows: usize) -> (Vec<i64>, Vec<u32>, Vec<bool>, Vec<u32>) {
    let t = (0..rows as i64).map(|i| 1_000_000 * i + i % 7).collect();
    let v = (0..rows as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let ok = (0..rows).map(|i| i % 5 != 0).collect();
    let order = (0..rows as u32).rev().collect();
    (t, v, ok, order)
}

fn columns<'a>(t: &'a [i64], v: &'a [u32], ok: &'a [bool], order: &'a [u32]) -> Vec<Column<'a>> {
    let squares = |start: usize, end: usize| {
        let v: Vec<i64> = (start as i64..end as i64).map(|i| i * i).collect();
        (
            Owned::I64(v),
            Some((start..end).map(|i| i % 3 != 0).collect()),
        )
    };
    vec![
        Column::direct("t", Values::I64(t), None),
        Column::direct("v", Values::U32(v), Some(ok)),
        Column {
            name: "g",
            values: Values::U32(v),
            valid: Some(ok),
            rows: Rows::Order(order),
        },
        Column {
            name: "c",
            values: Values::I64(&[]),
            valid: None,
            rows: Rows::Computed(t.len(), Box::new(squares)),
        },
    ]
}

#[test]
fn files_do_not_depend_on_which_thread_encoded_what() {
    let rows = 2 * ROW_GROUP_ROWS + 12_345;
    let (t, v, ok, order) = table(rows);
    let cols = columns(&t, &v, &ok, &order);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    write(&mut a, &cols, &[("k", "v")], "test").unwrap();
    write(&mut b, &cols, &[("k", "v")], "test").unwrap();
    assert!(a == b && a.starts_with(b"PAR1") && a.ends_with(b"PAR1"));
}

#[test]
fn a_failing_sink_ends_the_write_with_its_error() {
    let (t, v, ok, order) = table(3 * ROW_GROUP_ROWS);
    let cols = columns(&t, &v, &ok, &order);
    for left in [0, 10, 5 << 20] {
        let err = write(&mut Failing { left }, &cols, &[], "test").unwrap_err();
        assert_eq!(err.to_string(), "disk full");
    }
}

#[test]
fn computed_and_gathered_columns_equal_their_values_written_directly() {
    let rows = ROW_GROUP_ROWS + 777;
    let (t, v, ok, order) = table(rows);
    let cols = columns(&t, &v, &ok, &order);
    // the same values laid out beforehand
    let g: Vec<u32> = order.iter().map(|&i| v[i as usize]).collect();
    let g_ok: Vec<bool> = order.iter().map(|&i| ok[i as usize]).collect();
    let (c, c_ok): (Vec<i64>, Vec<bool>) = (0..rows as i64).map(|i| (i * i, i % 3 != 0)).unzip();
    let direct = vec![
        Column::direct("t", Values::I64(&t), None),
        Column::direct("v", Values::U32(&v), Some(&ok)),
        Column::direct("g", Values::U32(&g), Some(&g_ok)),
        Column::direct("c", Values::I64(&c), Some(&c_ok)),
    ];
    let (mut a, mut b) = (Vec::new(), Vec::new());
    write(&mut a, &cols, &[], "test").unwrap();
    write(&mut b, &direct, &[], "test").unwrap();
    assert!(a == b);
}

#[test]
fn rows_in_a_contiguous_run_are_encoded_as_they_lie() {
    // An order that is a run of consecutive rows in the first row group and not in
    // the second: both encode what gathering would.
    let rows = ROW_GROUP_ROWS + 1000;
    let (_, v, ok, _) = table(rows + 7);
    let mut order: Vec<u32> = (7..rows as u32 + 7).collect();
    order.swap(ROW_GROUP_ROWS + 3, ROW_GROUP_ROWS + 500);
    let g: Vec<u32> = order.iter().map(|&i| v[i as usize]).collect();
    let g_ok: Vec<bool> = order.iter().map(|&i| ok[i as usize]).collect();
    let ordered = [Column {
        name: "g",
        values: Values::U32(&v),
        valid: Some(&ok),
        rows: Rows::Order(&order),
    }];
    let direct = [Column::direct("g", Values::U32(&g), Some(&g_ok))];
    let (mut a, mut b) = (Vec::new(), Vec::new());
    write(&mut a, &ordered, &[], "test").unwrap();
    write(&mut b, &direct, &[], "test").unwrap();
    assert!(a == b);
}

#[test]
fn orders_past_their_values_are_refused() {
    let (t, v, ok, _) = table(10);
    let order: Vec<u32> = (1..=10).collect();
    let cols = columns(&t, &v, &ok, &order);
    let err = write(&mut Vec::new(), &cols, &[], "test").unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
}

#[test]
fn a_column_null_in_every_row_is_one_run_of_levels_and_no_values() {
    let (v, none) = (vec![7u32; 1000], vec![false; 1000]);
    let col = Column::direct("n", Values::U32(&v), Some(&none));
    let chunk = pages::column_chunk(&col, 0, 1000, false);
    assert_eq!((chunk.dict_bytes, chunk.encoding), (0, PLAIN));
    // The levels' 4-byte length, then one RLE run: 1000 rows (ULEB128 of 1000 << 1) at 0.
    let page = chunk.pieces.last().expect("a data page");
    assert_eq!(page.as_slice(), &[3, 0, 0, 0, 0xd0, 0x0f, 0]);
}

#[test]
fn an_indexed_column_is_its_dictionary_and_the_indices() {
    // Three flows' ports, and rows of flows 2, 0, 2, 1.
    let (ports, flow_of_row) = ([80u32, 443, 5004], [2u32, 0, 2, 1]);
    let col = Column::direct(
        "sport",
        Values::Indexed {
            index: &flow_of_row,
            dict: &ports,
            bits: 16,
        },
        None,
    );
    assert_eq!(col.physical(), (INT32, Some(16), false));
    let chunk = pages::column_chunk(&col, 0, 4, false);
    assert_eq!(chunk.encoding, RLE_DICTIONARY);
    // The dictionary page's entries are the ports, PLAIN; the data page ends with the
    // index width (2 bits) and one bit-packed run of 8 indices (4 rows, then padding).
    let dict_page = &chunk.pieces[1];
    assert_eq!(
        dict_page.as_slice(),
        &[80, 0, 0, 0, 187, 1, 0, 0, 140, 19, 0, 0]
    );
    let data = chunk.pieces.last().expect("a data page");
    assert_eq!(&data[data.len() - 4..], &[2, 3, 0b0110_0010, 0]);
}

/// The first `n` rows of the test table's direct columns (a row group's worth).
fn direct_rows<'a>(t: &'a [i64], v: &'a [u32], ok: &'a [bool]) -> Vec<Column<'a>> {
    vec![
        Column::direct("t", Values::I64(t), None),
        Column::direct("v", Values::U32(v), Some(ok)),
    ]
}

#[test]
fn a_file_written_a_row_group_at_a_time_is_the_whole_write_byte_for_byte() {
    let rows = 2 * ROW_GROUP_ROWS + 123;
    let (t, v, ok, _) = table(rows);
    let mut whole = Vec::new();
    write(&mut whole, &direct_rows(&t, &v, &ok), &[("k", "m")], "x").unwrap();
    let mut groups = GroupWriter::new(Vec::new()).unwrap();
    for start in (0..rows).step_by(ROW_GROUP_ROWS) {
        let end = (start + ROW_GROUP_ROWS).min(rows);
        let cols = direct_rows(&t[start..end], &v[start..end], &ok[start..end]);
        groups.group(&cols).unwrap();
    }
    let schema = direct_rows(&[], &[], &[]);
    let pieces = groups.finish(&schema, &[("k", "m")], "x").unwrap();
    assert_eq!(pieces, whole);
    // an empty table: no row group, the schema alone
    let mut empty = Vec::new();
    write(&mut empty, &schema, &[], "x").unwrap();
    let none = GroupWriter::new(Vec::new()).unwrap();
    assert_eq!(none.finish(&schema, &[], "x").unwrap(), empty);
    // a group of no rows is refused
    let mut w = GroupWriter::new(Vec::new()).unwrap();
    assert!(w.group(&schema).is_err());
}
