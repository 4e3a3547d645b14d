//! Captures built byte by byte: the frame builders (tests/frames.rs) and file builders
//! (here), and the tests by topic: what each packet's columns hold (tests/fields.rs), link
//! and network layers (tests/layers.rs), the file formats (tests/formats.rs), damaged
//! files and reading whole files (tests/damaged.rs), the readers' decisions on what tcpdump
//! and tshark disagree about (tests/quirks.rs).

use super::*;
use crate::keys::{fold32, hash_bytes, mix64};

mod frames;

use frames::*;

struct Rec<'a> {
    sec: u32,
    frac: u32,
    wire: u32,
    data: &'a [u8],
}

fn rec(sec: u32, frac: u32, data: &[u8]) -> Rec<'_> {
    Rec {
        sec,
        frac,
        wire: data.len() as u32,
        data,
    }
}

fn pcap(be: bool, nano: bool, snaplen: u32, link_type: u32, recs: &[Rec<'_>]) -> Vec<u8> {
    let w32 = |v: &mut Vec<u8>, x: u32| {
        v.extend_from_slice(&if be { x.to_be_bytes() } else { x.to_le_bytes() })
    };
    let w16 = |v: &mut Vec<u8>, x: u16| {
        v.extend_from_slice(&if be { x.to_be_bytes() } else { x.to_le_bytes() })
    };
    let mut v = Vec::new();
    w32(&mut v, if nano { 0xa1b2_3c4d } else { 0xa1b2_c3d4 });
    w16(&mut v, 2);
    w16(&mut v, 4);
    w32(&mut v, 0);
    w32(&mut v, 0);
    w32(&mut v, snaplen);
    w32(&mut v, link_type);
    for r in recs {
        w32(&mut v, r.sec);
        w32(&mut v, r.frac);
        w32(&mut v, r.data.len() as u32);
        w32(&mut v, r.wire);
        v.extend_from_slice(r.data);
    }
    v
}

/// pcapng writer in one byte order.
struct Ng {
    be: bool,
    out: Vec<u8>,
}

impl Ng {
    fn new(be: bool) -> Ng {
        let mut ng = Ng {
            be,
            out: Vec::new(),
        };
        ng.shb();
        ng
    }
    fn u16(&self, x: u16) -> [u8; 2] {
        if self.be {
            x.to_be_bytes()
        } else {
            x.to_le_bytes()
        }
    }
    fn u32(&self, x: u32) -> [u8; 4] {
        if self.be {
            x.to_be_bytes()
        } else {
            x.to_le_bytes()
        }
    }
    fn u64(&self, x: u64) -> [u8; 8] {
        if self.be {
            x.to_be_bytes()
        } else {
            x.to_le_bytes()
        }
    }
    fn opt(&self, code: u16, value: &[u8]) -> Vec<u8> {
        let mut v = self.u16(code).to_vec();
        v.extend_from_slice(&self.u16(value.len() as u16));
        v.extend_from_slice(value);
        while v.len() % 4 != 0 {
            v.push(0);
        }
        v
    }
    fn ts_opt(&self, code: u16, ts: u64) -> Vec<u8> {
        let mut value = self.u32((ts >> 32) as u32).to_vec();
        value.extend_from_slice(&self.u32(ts as u32));
        self.opt(code, &value)
    }
    fn block(&mut self, btype: u32, body: &[u8]) -> usize {
        let mut body = body.to_vec();
        while body.len() % 4 != 0 {
            body.push(0);
        }
        let off = self.out.len();
        let len = (body.len() + 12) as u32;
        let (t, l) = (self.u32(btype), self.u32(len));
        self.out.extend_from_slice(&t);
        self.out.extend_from_slice(&l);
        self.out.extend_from_slice(&body);
        self.out.extend_from_slice(&l);
        off
    }
    fn shb(&mut self) -> usize {
        let mut body = self.u32(0x1a2b_3c4d).to_vec();
        body.extend_from_slice(&self.u16(1));
        body.extend_from_slice(&self.u16(0));
        body.extend_from_slice(&self.u64(u64::MAX));
        body.extend_from_slice(&self.opt(0, &[]));
        self.block(SHB, &body)
    }
    fn idb(&mut self, link_type: u16, snaplen: u32, options: &[Vec<u8>]) -> usize {
        let mut body = self.u16(link_type).to_vec();
        body.extend_from_slice(&[0, 0]);
        body.extend_from_slice(&self.u32(snaplen));
        for o in options {
            body.extend_from_slice(o);
        }
        if !options.is_empty() {
            body.extend_from_slice(&self.opt(0, &[]));
        }
        self.block(IDB, &body)
    }
    fn epb(&mut self, iface: u32, ts: u64, data: &[u8], wire: u32) -> usize {
        let mut body = self.u32(iface).to_vec();
        body.extend_from_slice(&self.u32((ts >> 32) as u32));
        body.extend_from_slice(&self.u32(ts as u32));
        body.extend_from_slice(&self.u32(data.len() as u32));
        body.extend_from_slice(&self.u32(wire));
        body.extend_from_slice(data);
        self.block(EPB, &body)
    }
    fn spb(&mut self, data: &[u8], wire: u32) -> usize {
        let mut body = self.u32(wire).to_vec();
        body.extend_from_slice(data);
        self.block(SPB, &body)
    }
    fn pb(&mut self, iface: u16, ts: u64, data: &[u8]) -> usize {
        let mut body = self.u16(iface).to_vec();
        body.extend_from_slice(&self.u16(0));
        body.extend_from_slice(&self.u32((ts >> 32) as u32));
        body.extend_from_slice(&self.u32(ts as u32));
        body.extend_from_slice(&self.u32(data.len() as u32));
        body.extend_from_slice(&self.u32(data.len() as u32));
        body.extend_from_slice(data);
        self.block(PB, &body)
    }
    fn isb(&mut self, iface: u32, options: &[Vec<u8>]) -> usize {
        self.isb_at(iface, 0, options)
    }
    fn isb_at(&mut self, iface: u32, ts: u64, options: &[Vec<u8>]) -> usize {
        let mut body = self.u32(iface).to_vec();
        body.extend_from_slice(&self.u32((ts >> 32) as u32));
        body.extend_from_slice(&self.u32(ts as u32));
        for o in options {
            body.extend_from_slice(o);
        }
        body.extend_from_slice(&self.opt(0, &[]));
        self.block(ISB, &body)
    }
    /// Starts a new section, possibly in the other byte order.
    fn section(&mut self, be: bool) -> usize {
        self.be = be;
        self.shb()
    }
}

/// Each packet's captured length, as the reader framed the records.
fn captured_lengths(data: &[u8]) -> Vec<u32> {
    let mut cursor = chunks::Cursor::open(data).expect("a capture");
    let mut b = Builder::with_capacity(0);
    let mut quirks = Quirks::default();
    cursor
        .advance(data, &mut b, &mut quirks, &mut |_| {}, usize::MAX)
        .expect("readable records");
    b.cap_lens
}

fn read(data: &[u8]) -> Capture {
    let whole = match read_bytes(data) {
        Ok(c) => c,
        Err(e) => panic!("read failed: {e}"),
    };
    // Read in chunks of 1, 2 and 3 packets, every capture of these tests gives the same.
    for size in 1..=3 {
        check_chunked(data, &whole, size);
    }
    // and from a file (a pcap file through a buffer of READ_BUFFER bytes)
    match through_file(data) {
        Ok(c) => assert_same(&c, &whole),
        Err(e) => panic!("read from a file failed: {e}"),
    }
    whole
}

/// A new file holding `data` (the caller removes it).
fn test_file(data: &[u8]) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static FILES: AtomicUsize = AtomicUsize::new(0);
    let n = FILES.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("cga-core-file-{}-{n}", std::process::id()));
    std::fs::write(&path, data).expect("write the test file");
    path
}

/// `read_file` of a file holding `data`.
fn through_file(data: &[u8]) -> Result<Capture, ReadError> {
    let path = test_file(data);
    let read = read_file(&path);
    std::fs::remove_file(&path).expect("remove the test file");
    read
}

/// Two reads of one capture give the same capture.
fn assert_same(a: &Capture, b: &Capture) {
    assert!(a.columns == b.columns, "columns");
    assert!(a.flows.keys == b.flows.keys && a.flows.hashes == b.flows.hashes);
    assert_eq!(
        (&a.warnings, &a.quirks, a.format, a.big_endian),
        (&b.warnings, &b.quirks, b.format, b.big_endian)
    );
    assert_eq!((a.nanosecond, a.snaplen), (b.nanosecond, b.snaplen));
    assert_eq!((&a.interfaces, &a.stats), (&b.interfaces, &b.stats));
}

/// What each packet's flow determines, per packet (the columns keep it per flow).
struct PerPacket {
    ip_version: Vec<u8>,
    proto: Vec<u8>,
    sport: Vec<u16>,
    dport: Vec<u16>,
    flow_hash: Vec<u64>,
}

fn per_packet(c: &Capture) -> PerPacket {
    fn field<T: Default>(c: &Capture, f: fn(&FlowKey) -> T) -> Vec<T> {
        let of = |i| c.flow(i).map_or_else(T::default, f);
        (0..c.columns.len()).map(of).collect()
    }
    PerPacket {
        ip_version: field(c, FlowKey::ip_version),
        proto: field(c, FlowKey::proto),
        sport: field(c, FlowKey::sport),
        dport: field(c, FlowKey::dport),
        flow_hash: (0..c.columns.len()).map(|i| c.flow_hash(i)).collect(),
    }
}

fn append(all: &mut Columns, c: &Columns) {
    macro_rules! cat {
        ($($f:ident),*) => { $(all.$f.extend_from_slice(&c.$f);)* };
    }
    // Interface ids are kept only when one is not 0: so for the whole as for a read.
    let ids = [all.interface_ids(), c.interface_ids()].concat();
    all.interface_id = if ids.iter().any(|&id| id != 0) {
        ids
    } else {
        Vec::new()
    };
    each_column!(cat);
}

fn check_chunked(data: &[u8], whole: &Capture, size: usize) {
    check_chunks(
        ChunkReader::from_bytes(data.to_vec()).expect("open"),
        data,
        whole,
        size,
    );
    // from a file (a pcap file through a buffer of READ_BUFFER bytes)
    let path = test_file(data);
    let reader = ChunkReader::open(&path).expect("open the file");
    std::fs::remove_file(&path).expect("remove the test file");
    check_chunks(reader, data, whole, size);
}

fn check_chunks(mut reader: ChunkReader, data: &[u8], whole: &Capture, size: usize) {
    let mut all = Columns::default();
    let mut read = reader.bytes_read();
    let mut chunks = 0;
    while let Some(c) = reader.next_chunk(size).expect("chunk") {
        assert!(
            !c.is_empty() && c.len() <= size,
            "chunk of {} packets",
            c.len()
        );
        append(&mut all, &c);
        chunks += 1;
        if chunks % 2 == 1 {
            // the next chunk read into this one's memory: the same packets
            reader.recycle(c);
        }
        // a chunk of packets moves the reader on, never past the end
        assert!(read < reader.bytes_read() && reader.bytes_read() <= data.len());
        read = reader.bytes_read();
    }
    assert_eq!(reader.packets(), whole.columns.len());
    if whole.warnings.is_empty() {
        assert_eq!(
            reader.bytes_read(),
            data.len(),
            "a whole file read to its end"
        );
    }
    let rest = reader.finish().expect("finish");
    assert_eq!(all, whole.columns, "chunks of {size}");
    assert!(rest.columns.is_empty());
    assert_eq!(rest.flows.keys, whole.flows.keys);
    assert_eq!(rest.interfaces, whole.interfaces);
    assert_eq!(rest.stats, whole.stats);
    assert_eq!(rest.warnings, whole.warnings);
    assert_eq!(rest.quirks, whole.quirks);
    assert_eq!(rest.snaplen, whole.snaplen);
}

fn read_err(data: &[u8]) -> (String, u64) {
    // A chunked read fails the same way, at the latest when it is finished.
    let chunked = ChunkReader::from_bytes(data.to_vec()).and_then(|mut r| {
        while r.next_chunk(2)?.is_some() {}
        r.finish()
    });
    match (chunked, read_bytes(data)) {
        (
            Err(ReadError::Invalid { message, offset }),
            Err(ReadError::Invalid {
                message: m,
                offset: o,
            }),
        ) => {
            assert_eq!((&message, offset), (&m, o));
        }
        (Ok(_), _) => panic!("a chunked read succeeded where a whole read must fail"),
        _ => {}
    }
    let whole = match read_bytes(data) {
        Ok(_) => panic!("expected an error"),
        Err(ReadError::Invalid { message, offset }) => (message, offset),
        Err(e) => panic!("unexpected error {e}"),
    };
    // the same error from a file, whole and in chunks (an empty file fails before reading)
    if !data.is_empty() {
        match through_file(data) {
            Err(ReadError::Invalid { message, offset }) => assert_eq!((message, offset), whole),
            other => panic!("from a file: {:?}", other.map(|c| c.columns.len())),
        }
        let path = test_file(data);
        let chunked = ChunkReader::open(&path).and_then(|mut r| {
            while r.next_chunk(2)?.is_some() {}
            r.finish()
        });
        std::fs::remove_file(&path).expect("remove the test file");
        match chunked {
            Err(ReadError::Invalid { message, offset }) => assert_eq!((message, offset), whole),
            other => panic!(
                "in chunks from a file: {:?}",
                other.map(|c| c.columns.len())
            ),
        }
    }
    whole
}

fn udp_frame() -> Vec<u8> {
    eth(
        0x0800,
        &ipv4(
            17,
            &udp(5004, 6000, &rtp(true, 96, 7, 90_000, 0xdead_beef, &[1; 20])),
        ),
    )
}

mod damaged;
mod fields;
mod formats;
mod layers;
mod quirks;
