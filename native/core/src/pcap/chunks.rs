//! Reading a capture in chunks of a bounded number of packets, so that a file larger than
//! memory can be processed as it is read: the same decoding as a whole read (the cursors
//! of the pcap and pcapng halves stop after a given number of packets and resume), with
//! the flows numbered across chunks and the file's pages given back as the reader moves on.

use super::*;

/// The bytes of a capture: a read-only file mapping, or the file read into memory.
enum Bytes {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// Gives back the mapped pages before `upto` (rounded down to `RELEASE_CHUNK`): they
/// are read back from the file if touched again, and the reader only moves forward.
pub(super) fn release_pages(map: &memmap2::Mmap, released: &mut usize, upto: usize) {
    let end = upto & !(RELEASE_CHUNK - 1);
    if end > *released {
        // SAFETY: a read-only file mapping; dropped pages are read back on access.
        #[cfg(unix)]
        unsafe {
            let _ = map.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                *released,
                end - *released,
            );
        }
        *released = end;
    }
}

/// Where a reader is in its file.
pub(super) enum Cursor {
    Pcap(PcapCursor),
    Pcapng(Box<pcapng::NgCursor>),
}

impl Cursor {
    /// Checks the file's magic number and header.
    pub(super) fn open(data: &[u8]) -> Result<Cursor, ReadError> {
        if data.is_empty() {
            return Err(invalid("empty file", 0));
        }
        if data.len() < 4 {
            return Err(invalid(
                format!("not a pcap or pcapng file (only {} bytes long)", data.len()),
                0,
            ));
        }
        let magic = u32::from_be_bytes([data[0], data[1], data[2], data[3]]);
        let pcap = |be, nano| PcapCursor::open(data, be, nano).map(Cursor::Pcap);
        match magic {
            0xd4c3_b2a1 => pcap(false, false),
            0xa1b2_c3d4 => pcap(true, false),
            0x4d3c_b2a1 => pcap(false, true),
            0xa1b2_3c4d => pcap(true, true),
            SHB => pcapng::NgCursor::open(data).map(|c| Cursor::Pcapng(Box::new(c))),
            _ => Err(invalid(
                format!("not a pcap or pcapng file (magic 0x{magic:08x})"),
                0,
            )),
        }
    }

    pub(super) fn estimate(&self, data: &[u8]) -> usize {
        match self {
            Cursor::Pcap(c) => c.estimate(data),
            Cursor::Pcapng(c) => c.estimate(data),
        }
    }

    fn offset(&self) -> usize {
        match self {
            Cursor::Pcap(c) => c.offset(),
            Cursor::Pcapng(c) => c.offset(),
        }
    }

    fn done(&self) -> bool {
        match self {
            Cursor::Pcap(c) => c.done,
            Cursor::Pcapng(c) => c.done,
        }
    }

    pub(super) fn advance(
        &mut self,
        data: &[u8],
        b: &mut Builder,
        quirks: &mut Quirks,
        release: &mut dyn FnMut(usize),
        limit: usize,
    ) -> Result<(), ReadError> {
        match self {
            Cursor::Pcap(c) => c.advance(data, b, quirks, release, limit),
            Cursor::Pcapng(c) => c.advance(data, b, quirks, release, limit),
        }
    }

    pub(super) fn finish(
        self,
        columns: Columns,
        flows: FlowTable,
        quirks: Quirks,
        packets: usize,
    ) -> Result<Capture, ReadError> {
        match self {
            Cursor::Pcap(c) => Ok(c.finish(columns, flows, quirks, packets)),
            Cursor::Pcapng(c) => c.finish(columns, flows, quirks, packets),
        }
    }
}

/// A capture read a chunk at a time: `next_chunk` until it gives `None`, then `finish`.
pub struct ChunkReader {
    bytes: Bytes,
    cursor: Cursor,
    builder: Builder,
    quirks: Quirks,
    released: usize,
    /// Packets in the chunks given so far.
    packets: usize,
    /// The packets the file's first records predict (caps a chunk's allocation).
    estimate: usize,
}

impl ChunkReader {
    /// Opens a capture file (memory-mapped when it is a regular file) and checks its header.
    pub fn open(path: &Path) -> Result<ChunkReader, ReadError> {
        let file = File::open(path)?;
        let meta = file.metadata()?;
        if meta.is_file() {
            if meta.len() == 0 {
                return Err(invalid("empty file", 0));
            }
            // SAFETY: as in `read_file`: the map is only read, while the reader lives.
            if let Ok(map) = unsafe { MmapOptions::new().map(&file) } {
                #[cfg(unix)]
                {
                    let _ = map.advise(memmap2::Advice::Sequential);
                }
                return ChunkReader::new(Bytes::Mapped(map));
            }
        }
        let mut data = Vec::new();
        (&file).read_to_end(&mut data)?;
        ChunkReader::new(Bytes::Owned(data))
    }

    /// A reader of a capture held in memory.
    pub fn from_bytes(data: Vec<u8>) -> Result<ChunkReader, ReadError> {
        ChunkReader::new(Bytes::Owned(data))
    }

    fn new(bytes: Bytes) -> Result<ChunkReader, ReadError> {
        let data = bytes.as_slice();
        let cursor = Cursor::open(data)?;
        let estimate = cursor.estimate(data);
        Ok(ChunkReader {
            bytes,
            cursor,
            builder: Builder::with_capacity(0),
            quirks: Quirks::default(),
            released: 0,
            packets: 0,
            estimate,
        })
    }

    /// The next (at most) `max_packets` packet records, in file order; `None` at the end.
    pub fn next_chunk(&mut self, max_packets: usize) -> Result<Option<Columns>, ReadError> {
        assert!(max_packets > 0, "a chunk must hold at least one packet");
        if self.cursor.done() {
            return Ok(None);
        }
        let room = max_packets.min(self.estimate.saturating_sub(self.packets).max(1024));
        self.builder.cols = Columns::with_capacity(room);
        let ChunkReader {
            bytes,
            cursor,
            builder,
            quirks,
            released,
            ..
        } = self;
        let mut release = |upto: usize| {
            if let Bytes::Mapped(map) = &*bytes {
                release_pages(map, released, upto);
            }
        };
        cursor.advance(bytes.as_slice(), builder, quirks, &mut release, max_packets)?;
        let columns = builder.take_columns(0);
        self.packets += columns.len();
        if columns.is_empty() && self.cursor.done() {
            return Ok(None);
        }
        Ok(Some(columns))
    }

    /// The flows of the packets read so far, numbered as the chunks' `flow_idx`.
    pub fn flows(&self) -> &FlowTable {
        &self.builder.flows
    }

    /// Packets in the chunks given so far.
    pub fn packets(&self) -> usize {
        self.packets
    }

    /// Bytes of the file decoded so far: where the next record starts (the file's length
    /// once it is read to its end, unless its last record is incomplete). A long read's
    /// progress.
    pub fn bytes_read(&self) -> usize {
        self.cursor.offset()
    }

    /// What the file says about itself (interfaces, statistics, warnings, quirks), once
    /// every chunk was read; its columns are empty.
    pub fn finish(mut self) -> Result<Capture, ReadError> {
        if !self.cursor.done() {
            return Err(invalid("the capture was not read to its end", self.packets));
        }
        let (columns, flows) = self.builder.finish(&mut self.quirks);
        self.cursor
            .finish(columns, flows, self.quirks, self.packets)
    }
}
