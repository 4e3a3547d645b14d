//! Reading a whole pcap or pcapng capture into columns (one row per packet record).
//!
//! One sequential pass over the (memory-mapped) bytes. The columns are allocated up front
//! for the number of packets the first few thousand records predict (a separate counting
//! pass costs a cache miss per record), grow in the rare case that was too few, and are
//! trimmed at the end. Nothing is allocated per packet.
//!
//! Interfaces: `interface_id` in the columns, the interface list and the statistics is the
//! index of the interface in the whole file. With a single pcapng section (the usual case)
//! it equals the pcapng interface ID; every further section's interfaces follow on.
//!
//! This file holds the entry points; the parts are `capture` (what a read yields), `error`,
//! `builder` (packets into columns), `classic` (pcap records), `pcapng` and `chunks`.

use crate::decode::{decode_into, len_source, linktype_name, FlowKey, FlowTable, Link, Packet};
use memmap2::MmapOptions;
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// `t_ns` of a packet whose block carries no timestamp (pcapng simple packet block).
pub const NO_TIMESTAMP: i64 = i64::MIN;
/// `flow_idx` of a packet that is not IP.
pub const NO_FLOW: u32 = u32::MAX;

/// A pcap record longer than max(snaplen, this) is taken as corruption.
const PCAP_MAX_CAPLEN: u32 = 262_144;
/// A pcapng block longer than this is taken as corruption (far larger than real blocks;
/// Wireshark itself refuses blocks over 16 MiB).
const PCAPNG_MAX_BLOCK: u32 = 64 << 20;

const SHB: u32 = 0x0a0d_0d0a;
const IDB: u32 = 1;
const PB: u32 = 2;
const SPB: u32 = 3;
const ISB: u32 = 5;
const EPB: u32 = 6;

#[inline(always)]
fn rd16(d: &[u8], off: usize, be: bool) -> u16 {
    let b = [d[off], d[off + 1]];
    if be {
        u16::from_be_bytes(b)
    } else {
        u16::from_le_bytes(b)
    }
}

#[inline(always)]
fn rd32(d: &[u8], off: usize, be: bool) -> u32 {
    let b = [d[off], d[off + 1], d[off + 2], d[off + 3]];
    if be {
        u32::from_be_bytes(b)
    } else {
        u32::from_le_bytes(b)
    }
}

#[inline(always)]
fn rd64(d: &[u8], off: usize, be: bool) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[off..off + 8]);
    if be {
        u64::from_be_bytes(b)
    } else {
        u64::from_le_bytes(b)
    }
}

fn truncation_warning(offset: usize, kept: usize) -> String {
    format!("truncated last record at byte offset {offset}: kept {kept} complete records")
}

/// Reads a capture file: a regular pcap file through a small buffer, a regular pcapng file
/// memory-mapped, anything else (pipes, file systems that cannot map) read whole.
pub fn read_file(path: &Path) -> Result<Capture, ReadError> {
    let file = File::open(path)?;
    let meta = file.metadata()?;
    if meta.is_file() {
        if meta.len() == 0 {
            return Err(invalid("empty file", 0));
        }
        if let Some(cap) = read_pcap_buffered(&file, meta.len())? {
            return Ok(cap);
        }
        // Not pre-faulted: the pages read are given back as the reader moves on (below),
        // so that the mapped file never adds its whole size to the process's memory.
        let options = MmapOptions::new();
        // SAFETY: the map is only read, and only while this function runs. Another process
        // truncating the file meanwhile could fault the reads; captures are not rewritten in
        // place, and that risk is the price of a zero-copy read.
        if let Ok(map) = unsafe { options.map(&file) } {
            #[cfg(unix)]
            {
                let _ = map.advise(memmap2::Advice::Sequential);
            }
            let mut released = 0usize;
            let mut release = |upto: usize| {
                chunks::release_pages(&map, &mut released, upto);
            };
            return read_bytes_releasing(&map, &mut release);
        }
        // a file system without mmap: read it instead
    }
    let mut data = Vec::new();
    (&file).read_to_end(&mut data)?;
    read_bytes(&data)
}

/// Bytes a classic pcap file is read at a time (small in tests, so that records straddle
/// the buffer's end). Small enough that the bytes just copied are still in the core's
/// second-level cache when decoded. The whole command on the benchmark's pairs, alternated
/// builds: 256 KiB faster than 1 MiB in one set, within the noise of 64-128 KiB in another
/// (64 KiB with more system time, from four times the calls).
const READ_BUFFER: usize = if cfg!(test) { 1000 } else { 256 << 10 };

/// Reads a classic pcap file through a small buffer with `read`; None (the file's position
/// put back) when the file is not one. Mapping the file cost more than copying it:
/// mapping and unmapping a 324 MB capture's page-cache pages 4 KiB at a time took 53 ms
/// of system time against 33 ms to read it, and the decoder then read each byte from
/// memory rather than from the cache. Reading mix B's ingress capture alone: 0.126 ->
/// 0.109 s. (pcapng files, rarely this large, are mapped.)
fn read_pcap_buffered(file: &File, len: u64) -> Result<Option<Capture>, ReadError> {
    let Some((chunks::Cursor::Pcap(mut cursor), mut window, estimate)) =
        chunks::open_pcap_buffered(file, len)?
    else {
        return Ok(None);
    };
    let mut b = Builder::with_capacity(estimate);
    let mut quirks = Quirks::default();
    let mut more = |buf: &mut [u8]| read_full(file, buf);
    cursor.advance_buffered(&mut window, &mut more, &mut b, &mut quirks, usize::MAX)?;
    let (columns, flows) = b.finish(&mut quirks);
    let packets = columns.len();
    Ok(Some(cursor.finish(columns, flows, quirks, packets)))
}

/// Fills `buf` from `file` as far as the file goes; the bytes read.
fn read_full(mut file: &File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The reader gives back mapped pages in steps of this many bytes (a power of two; small
/// in tests, so that small files take the same path).
const RELEASE_CHUNK: usize = if cfg!(test) { 64 << 10 } else { 32 << 20 };

/// Reads a capture held in memory.
pub fn read_bytes(data: &[u8]) -> Result<Capture, ReadError> {
    read_bytes_releasing(data, &mut |_| {})
}

/// Reads a capture, calling `release(offset)` now and then: the bytes before `offset`
/// will not be read again.
fn read_bytes_releasing(data: &[u8], release: &mut dyn FnMut(usize)) -> Result<Capture, ReadError> {
    let mut cursor = chunks::Cursor::open(data)?;
    let mut b = Builder::with_capacity(cursor.estimate(data));
    let mut quirks = Quirks::default();
    cursor.advance(data, &mut b, &mut quirks, release, usize::MAX)?;
    let (columns, flows) = b.finish(&mut quirks);
    let packets = columns.len();
    cursor.finish(columns, flows, quirks, packets)
}

/// How many packets to allocate columns for: the packets per byte of the first records
/// (`record(off)` gives a record's length and whether it is a packet), extrapolated to the
/// file's `total` bytes (`data` may be its beginning only) with some margin. Columns grow
/// if that was too few and are trimmed at the end.
fn estimate_packets(
    data: &[u8],
    total: usize,
    start: usize,
    record: impl Fn(usize) -> Option<(usize, bool)>,
) -> usize {
    let (mut off, mut packets) = (start, 0usize);
    for _ in 0..4096 {
        match record(off) {
            Some((len, is_packet)) if len > 0 && len <= data.len() - off => {
                off += len;
                packets += usize::from(is_packet);
            }
            _ => break,
        }
    }
    let sampled = off - start;
    if sampled == 0 || off >= total {
        return packets;
    }
    let rest = (total - start) as f64 * packets as f64 / sampled as f64;
    (rest * 1.1) as usize + 64
}

mod builder;
mod capture;
mod chunks;
mod classic;
mod error;
mod pcapng;

pub(crate) use builder::Builder;
pub(crate) use capture::each_column;
pub use capture::{Capture, Columns, Format, Interface, InterfaceStats, Quirks, TsResolution};
pub use chunks::ChunkReader;
pub(crate) use classic::PcapCursor;
pub use error::ReadError;
use error::{invalid, unsupported_link};

#[cfg(test)]
mod tests;
