//! Reading a capture in chunks of a bounded number of packets, so that a file larger than
//! memory can be processed as it is read: the same decoding as a whole read (the cursors
//! of the pcap and pcapng halves stop after a given number of packets and resume), with
//! the flows numbered across chunks and the file's pages given back as the reader moves on.

use super::*;

/// The bytes of a capture: a pcap file read through a buffer (as `read_file` reads one), a
/// read-only file mapping (pcapng), or the file read into memory.
enum Bytes {
    Buffered(classic::Window),
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Buffered(w) => &w.buf[..w.filled],
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// Gives back the mapped pages before `upto` (rounded down to `RELEASE_CHUNK`): they
/// are read back from the file if touched again, and the reader only moves forward.
/// The range given back, if any.
pub(super) fn release_pages(
    map: &memmap2::Mmap,
    released: &mut usize,
    upto: usize,
) -> Option<(usize, usize)> {
    let end = upto & !(RELEASE_CHUNK - 1);
    if end > *released {
        let start = *released;
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
        return Some((start, end));
    }
    None
}

/// Largest page-cache folio (a PMD page): a folio straddling `start` was still mapped when
/// the range before it was dropped, so each drop reaches back this far for it.
const FOLIO_MAX: usize = 2 << 20;

/// Drops the file's pages in `start..end` (from `from` on) from the page cache: clean
/// pages that no one maps; elsewhere than on Linux, nothing.
fn uncache(file: &File, from: usize, start: usize, end: usize) {
    let start = start.saturating_sub(FOLIO_MAX).max(from);
    #[cfg(target_os = "linux")]
    if end > start {
        use std::os::fd::AsRawFd;
        let (Ok(off), Ok(len)) = (i64::try_from(start), i64::try_from(end - start)) else {
            return;
        };
        // SAFETY: a plain system call on an open descriptor; failure only leaves the pages.
        unsafe {
            libc::posix_fadvise(file.as_raw_fd(), off, len, libc::POSIX_FADV_DONTNEED);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, start, end);
}

/// Opens a regular file as a pcap file read through a buffer: its cursor, the buffer
/// holding the file's first bytes and the packets they predict; None (the file's position
/// put back) when it is not a pcap file.
pub(super) fn open_pcap_buffered(
    file: &File,
    len: u64,
) -> Result<Option<(Cursor, classic::Window, usize)>, ReadError> {
    let mut buf = vec![0u8; READ_BUFFER];
    let filled = read_full(file, &mut buf)?;
    let head = &buf[..filled];
    let Ok(Cursor::Pcap(cursor)) = Cursor::open(head) else {
        std::io::Seek::seek(&mut &*file, std::io::SeekFrom::Start(0))?;
        return Ok(None); // pcapng or not a capture: the mapped read decides
    };
    let estimate = cursor.estimate_in(head, usize::try_from(len).unwrap_or(usize::MAX));
    let window = classic::Window { buf, filled };
    Ok(Some((Cursor::Pcap(cursor), window, estimate)))
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
    /// The mapped file (for the page-cache advice).
    file: Option<File>,
    /// Where the pages read start to be dropped from the page cache (`uncache_from`).
    uncache_from: Option<usize>,
    cursor: Cursor,
    builder: Builder,
    quirks: Quirks,
    released: usize,
    /// Packets in the chunks given so far.
    packets: usize,
    /// The packets the file's first records predict (caps a chunk's allocation).
    estimate: usize,
    /// A chunk's columns given back (`recycle`), for the next chunk.
    spare: Option<Columns>,
}

impl ChunkReader {
    /// Opens a capture file and checks its header: a regular pcap file is read through a
    /// buffer, a regular pcapng file memory-mapped.
    pub fn open(path: &Path) -> Result<ChunkReader, ReadError> {
        let file = File::open(path)?;
        let meta = file.metadata()?;
        if meta.is_file() {
            if meta.len() == 0 {
                return Err(invalid("empty file", 0));
            }
            if let Some((cursor, window, estimate)) = open_pcap_buffered(&file, meta.len())? {
                let mut reader =
                    ChunkReader::with_cursor(Bytes::Buffered(window), cursor, estimate);
                reader.file = Some(file);
                return Ok(reader);
            }
            // SAFETY: as in `read_file`: the map is only read, while the reader lives.
            if let Ok(map) = unsafe { MmapOptions::new().map(&file) } {
                #[cfg(unix)]
                {
                    let _ = map.advise(memmap2::Advice::Sequential);
                }
                let mut reader = ChunkReader::new(Bytes::Mapped(map))?;
                reader.file = Some(file);
                return Ok(reader);
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
        Ok(ChunkReader::with_cursor(bytes, cursor, estimate))
    }

    fn with_cursor(bytes: Bytes, cursor: Cursor, estimate: usize) -> ChunkReader {
        ChunkReader {
            bytes,
            file: None,
            uncache_from: None,
            cursor,
            builder: Builder::with_capacity(0),
            quirks: Quirks::default(),
            released: 0,
            packets: 0,
            estimate,
            spare: None,
        }
    }

    /// From now on, the pages of the file from `offset` on are dropped from the page cache
    /// once read (and those before it kept): a file read again soon that the cache cannot
    /// hold whole keeps its beginning there, instead of each read evicting the pages the
    /// next one needs first. `None` (the default): every page is left to the kernel. No
    /// effect on a file read into memory.
    pub fn uncache_from(&mut self, offset: Option<usize>) {
        self.uncache_from = offset;
    }

    /// The next (at most) `max_packets` packet records, in file order; `None` at the end.
    pub fn next_chunk(&mut self, max_packets: usize) -> Result<Option<Columns>, ReadError> {
        assert!(max_packets > 0, "a chunk must hold at least one packet");
        if self.cursor.done() {
            return Ok(None);
        }
        let room = max_packets.min(self.estimate.saturating_sub(self.packets).max(1024));
        self.builder.cols = match self.spare.take() {
            Some(mut cols) if cols.t_ns.capacity() >= room => {
                cols.clear();
                cols
            }
            _ => Columns::with_capacity(room),
        };
        let ChunkReader {
            bytes,
            file,
            uncache_from,
            cursor,
            builder,
            quirks,
            released,
            ..
        } = self;
        let (file, from) = (&*file, *uncache_from);
        if let (Bytes::Buffered(window), Cursor::Pcap(c), Some(f)) =
            (&mut *bytes, &mut *cursor, file)
        {
            let mut more = |buf: &mut [u8]| read_full(f, buf);
            c.advance_buffered(window, &mut more, builder, quirks, max_packets)?;
            // What was read is dropped from the page cache as a mapped read drops it: in
            // release steps, and the rest at the end.
            let upto = if c.done {
                usize::MAX
            } else {
                c.offset() & !(RELEASE_CHUNK - 1)
            };
            if let Some(from) = from {
                let end = upto.min(c.offset());
                if end > *released {
                    uncache(f, from, *released, end);
                    *released = end;
                }
            }
            return self.take_chunk();
        }
        let mut release = |upto: usize| {
            if let Bytes::Mapped(map) = &*bytes {
                let done = release_pages(map, released, upto);
                if let (Some((start, end)), Some(file), Some(from)) = (done, file, from) {
                    uncache(file, from, start, end);
                }
            }
        };
        cursor.advance(bytes.as_slice(), builder, quirks, &mut release, max_packets)?;
        if let (true, Bytes::Mapped(map), Some(file), Some(from)) =
            (cursor.done(), &*bytes, file, from)
        {
            // The last pages, short of a release step: unmapped, so that they can go.
            let start = *released;
            // SAFETY: as in `release_pages`; the reader reads nothing more.
            unsafe {
                let _ = map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    start,
                    map.len() - start,
                );
            }
            *released = map.len();
            uncache(file, from, start, map.len());
        }
        self.take_chunk()
    }

    /// The packets the builder holds, as the next chunk (`None` when none are left).
    fn take_chunk(&mut self) -> Result<Option<Columns>, ReadError> {
        let columns = self.builder.take_columns(0);
        self.packets += columns.len();
        if columns.is_empty() && self.cursor.done() {
            return Ok(None);
        }
        Ok(Some(columns))
    }

    /// Gives a chunk's columns back once their values are no longer needed: the next chunk
    /// is read into their memory. (Fresh memory costs the kernel a page fault and the
    /// zeroing of each page, a tenth of a chunked read's time.)
    pub fn recycle(&mut self, columns: Columns) {
        self.spare = Some(columns);
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
