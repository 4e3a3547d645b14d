//! Writing a Parquet file a row group at a time, for tables whose rows become final as
//! captures are read (the streaming match).

use super::{encode_in_order, footer, orders_fit, schema_of, ChunkMeta, Column};
use std::io::{self, Write};

/// A Parquet file written a row group at a time (a table made as its rows become final,
/// never whole): the same bytes as `write` given the same rows, when every group but the
/// last holds `ROW_GROUP_ROWS` rows.
pub struct GroupWriter<W: Write> {
    out: W,
    offset: i64,
    rows: i64,
    groups: Vec<(i64, Vec<ChunkMeta>)>,
}

impl<W: Write> GroupWriter<W> {
    pub fn new(mut out: W) -> io::Result<GroupWriter<W>> {
        out.write_all(b"PAR1")?;
        Ok(GroupWriter {
            out,
            offset: 4,
            rows: 0,
            groups: Vec::new(),
        })
    }

    /// Writes `columns` (of one length, not 0) as one row group.
    pub fn group(&mut self, columns: &[Column<'_>]) -> io::Result<()> {
        let rows = columns.first().map_or(0, Column::rows);
        if rows == 0 || columns.iter().any(|c| c.rows() != rows) || !orders_fit(columns) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a row group's columns differ in length, or are empty",
            ));
        }
        let mut metas = Vec::with_capacity(columns.len());
        let (out, offset) = (&mut self.out, &mut self.offset);
        encode_in_order(columns, &[(0, rows)], |task, chunk| {
            let col = &columns[task];
            metas.push(ChunkMeta {
                physical: col.physical().0,
                name: col.name.to_owned(),
                values: rows as i64,
                bytes: chunk.len() as i64,
                offset: *offset,
                dict_bytes: chunk.dict_bytes as i64,
                encoding: chunk.encoding,
            });
            for piece in &chunk.pieces {
                out.write_all(piece)?;
            }
            *offset += chunk.len() as i64;
            Ok(())
        })?;
        self.groups.push((rows as i64, metas));
        self.rows += rows as i64;
        Ok(())
    }

    /// Writes the footer; `columns` give the schema (any rows, e.g. none).
    pub fn finish(
        mut self,
        columns: &[Column<'_>],
        metadata: &[(&str, &str)],
        created_by: &str,
    ) -> io::Result<W> {
        let footer = footer(
            &schema_of(columns),
            self.rows,
            &self.groups,
            metadata,
            created_by,
        );
        self.out.write_all(&footer)?;
        self.out.write_all(&(footer.len() as u32).to_le_bytes())?;
        self.out.write_all(b"PAR1")?;
        self.out.flush()?;
        Ok(self.out)
    }
}
