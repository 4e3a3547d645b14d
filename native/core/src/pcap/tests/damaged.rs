//! Damaged and foreign files (truncated records, corrupt lengths, other formats and link
//! types), and reading whole files page by page.

use super::*;

#[test]
fn truncated_last_record_is_a_warning() {
    let frame = udp_frame();
    let mut data = pcap(
        false,
        false,
        65535,
        1,
        &[rec(0, 0, &frame), rec(1, 0, &frame)],
    );
    let second = 24 + 16 + frame.len();
    for cut in [second + 5, second + 16 + 3] {
        let c = read(&data[..cut]);
        assert_eq!(c.columns.len(), 1);
        assert_eq!(
            c.warnings,
            vec![format!(
                "truncated last record at byte offset {second}: kept 1 complete records"
            )]
        );
    }
    // header only: no packets, no warning
    data.truncate(24);
    let c = read(&data);
    assert!(c.columns.is_empty() && c.warnings.is_empty() && c.flows.is_empty());

    let mut ng = Ng::new(false);
    ng.idb(1, 0, &[]);
    ng.epb(0, 1, &frame, 0);
    let last = ng.epb(0, 2, &frame, 0);
    let n = ng.out.len();
    for cut in [last + 4, last + 13, n - 1] {
        let c = read(&ng.out[..cut]);
        assert_eq!(c.columns.len(), 1);
        assert_eq!(
            c.warnings,
            vec![format!(
                "truncated last record at byte offset {last}: kept 1 complete records"
            )]
        );
    }
    let mut ng = Ng::new(false);
    ng.idb(1, 0, &[]);
    assert!(read(&ng.out).columns.is_empty());
}

#[test]
fn corrupt_lengths_are_errors() {
    let frame = udp_frame();
    let mut data = pcap(
        false,
        false,
        128,
        1,
        &[rec(0, 0, &frame), rec(1, 0, &frame)],
    );
    let second = 24 + 16 + frame.len();
    data[second + 8..second + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(
        read_err(&data),
        ("corrupt record length 4294967295".into(), second as u64)
    );
    // snaplen 128 still allows the libpcap maximum
    let mut data = pcap(false, false, 128, 1, &[rec(0, 0, &frame)]);
    data[24 + 8..24 + 12].copy_from_slice(&262_145u32.to_le_bytes());
    assert_eq!(read_err(&data).1, 24);

    let mut ng = Ng::new(false);
    ng.idb(1, 0, &[]);
    let off = ng.epb(0, 1, &frame, 0);
    ng.epb(0, 2, &frame, 0);
    let mut bad = ng.out.clone();
    bad[off + 4..off + 8].copy_from_slice(&10u32.to_le_bytes());
    assert_eq!(
        read_err(&bad),
        ("corrupt block length 10".into(), off as u64)
    );
    let mut bad = ng.out.clone();
    bad[off + 4..off + 8].copy_from_slice(&8u32.to_le_bytes());
    assert_eq!(read_err(&bad).1, off as u64);
    let mut bad = ng.out.clone();
    let blen = u32::from_le_bytes(bad[off + 4..off + 8].try_into().unwrap()) as usize;
    bad[off + blen - 4] ^= 4;
    assert_eq!(read_err(&bad).1, off as u64);
    // captured length beyond the block
    let mut bad = ng.out.clone();
    bad[off + 20..off + 24].copy_from_slice(&1000u32.to_le_bytes());
    assert_eq!(read_err(&bad).1, off as u64);
}

#[test]
fn not_a_capture() {
    assert_eq!(read_err(&[]), ("empty file".into(), 0));
    assert_eq!(
        read_err(&[0x12, 0x34, 0x56, 0x78, 0, 0, 0, 0]),
        ("not a pcap or pcapng file (magic 0x12345678)".into(), 0)
    );
    assert_eq!(read_err(&[0xd4, 0xc3]).1, 0);
    assert_eq!(read_err(&[0xd4, 0xc3, 0xb2, 0xa1, 2, 0]).1, 0);
    let mut ng = Ng::new(false);
    ng.out[8] = 0x99;
    assert_eq!(read_err(&ng.out).1, 8);
    assert_eq!(read_err(&ng.out[..20]).1, 0);
}

#[test]
fn unsupported_link_types() {
    let data = pcap(false, false, 65535, 147, &[]);
    assert_eq!(
        read_err(&data),
        ("unsupported link type 147 (USER0)".into(), 20)
    );
    let data = pcap(true, false, 65535, 0x1234, &[]);
    assert_eq!(read_err(&data), ("unsupported link type 4660".into(), 20));
    // FCS bits above the low 16 bits are ignored
    let data = pcap(
        false,
        false,
        65535,
        1 | (0x1 << 26) | (4 << 28),
        &[rec(0, 0, &udp_frame())],
    );
    assert_eq!(per_packet(&read(&data)).ip_version, vec![4]);

    // a pcapng file none of whose interfaces can be decoded is refused like a pcap file
    // (one undecodable interface among others is skipped: see tests/quirks.rs)
    let mut ng = Ng::new(false);
    let off = ng.idb(127, 0, &[]);
    ng.idb(147, 0, &[]);
    ng.epb(0, 0, &[0; 40], 40);
    assert_eq!(
        read_err(&ng.out),
        (
            "unsupported link type 127 (IEEE802_11_RADIOTAP)".into(),
            off as u64 + 8
        )
    );
}

#[test]
fn read_file_errors() {
    let dir = std::env::temp_dir().join(format!("cga-core-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("missing.pcap");
    assert!(
        matches!(read_file(&missing), Err(ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound)
    );
    let empty = dir.join("empty.pcap");
    std::fs::write(&empty, b"").unwrap();
    assert!(matches!(
        read_file(&empty),
        Err(ReadError::Invalid { offset: 0, .. })
    ));
    let good = dir.join("good.pcap");
    std::fs::write(&good, pcap(false, true, 128, 1, &[rec(0, 0, &udp_frame())])).unwrap();
    assert_eq!(read_file(&good).unwrap().columns.len(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn read_file_gives_back_pages_and_reads_everything() {
    // bigger than two release steps, in both formats: the same as reading from memory
    let frame = udp_frame();
    let n = 2 * RELEASE_CHUNK / (16 + frame.len()) + 1000;
    let recs: Vec<Rec<'_>> = (0..n as u32).map(|i| rec(i, 7, &frame)).collect();
    let mut ng = Ng::new(false);
    ng.idb(1, 0, &[]);
    for i in 0..n as u64 {
        ng.epb(0, i * 1000, &frame, frame.len() as u32);
    }
    let dir = std::env::temp_dir().join(format!("cga-core-release-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, data) in [
        ("big.pcap", pcap(false, false, 65535, 1, &recs)),
        ("big.pcapng", ng.out),
    ] {
        assert!(data.len() > 2 * RELEASE_CHUNK);
        let path = dir.join(name);
        std::fs::write(&path, &data).unwrap();
        let from_file = read_file(&path).unwrap();
        assert_eq!(from_file.columns.len(), n);
        assert!(from_file.columns == read(&data).columns, "{name}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_pcap_file_read_through_its_buffer_reports_the_files_offsets() {
    // Past the first READ_BUFFER bytes (1000 in tests): a record longer than the buffer, a
    // bad timestamp, a truncated last record and a corrupt length, each where a read of the
    // whole file in memory puts it (`read` and `read_err` compare the two).
    let frame = udp_frame();
    let long = eth(0x0800, &ipv4(17, &udp(9, 9, &[7u8; 3000])));
    let mut recs: Vec<Rec<'_>> = (0..40).map(|i| rec(i, 0, &frame)).collect();
    recs.push(rec(40, 0, &long));
    recs.extend((41..60).map(|i| rec(i, 0, &frame)));
    recs[50].frac = 2_000_000; // a microsecond field past one second
    let data = pcap(false, false, 65535, 1, &recs);
    assert!(data.len() > 4 * READ_BUFFER && long.len() > READ_BUFFER);
    let c = read(&data);
    assert_eq!(c.columns.len(), 60);
    assert_eq!(c.columns.wire_len[40] as usize, long.len());
    let at = c.quirks.first_bad_timestamp_at.expect("a bad timestamp") as usize;
    assert!(at > 2 * READ_BUFFER);
    let cut = data.len() - 7;
    let c = read(&data[..cut]);
    assert_eq!(c.columns.len(), 59);
    assert_eq!(c.warnings.len(), 1);
    let last = data.len() - 16 - frame.len();
    let mut bad = data.clone();
    bad[last + 8..last + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(read_err(&bad).1, last as u64);
}

#[test]
fn many_records_beyond_the_capacity_estimate() {
    // the first 4096 records are big, the rest tiny: the estimate is far too low
    let big = udp_frame();
    let small = eth(0x0806, &[0u8; 28]);
    let mut recs: Vec<Rec<'_>> = (0..4096).map(|i| rec(i, 0, &big)).collect();
    recs.extend((0..20_000).map(|i| rec(5000 + i, 0, &small)));
    let c = read(&pcap(false, false, 65535, 1, &recs));
    assert_eq!(c.columns.len(), 24_096);
    assert_eq!(c.columns.t_ns[24_095], 24_999_000_000_000);
    assert_eq!(per_packet(&c).ip_version[4095], 4);
    assert_eq!(per_packet(&c).ip_version[4096], 0);
    assert_eq!(c.columns.flow_idx.iter().filter(|&&f| f == 0).count(), 4096);
}

/// Which of the file's pages are in the page cache (Linux `mincore`).
#[cfg(target_os = "linux")]
fn cached_pages(path: &Path) -> Vec<bool> {
    let file = File::open(path).unwrap();
    // SAFETY: a read-only map only inspected, never read, while the file is unchanged.
    let map = unsafe { MmapOptions::new().map(&file) }.unwrap();
    let page = 4096;
    let mut flags = vec![0u8; map.len().div_ceil(page)];
    // SAFETY: `flags` has a byte per page of the mapping.
    let rc = unsafe {
        libc::mincore(
            map.as_ptr() as *mut libc::c_void,
            map.len(),
            flags.as_mut_ptr(),
        )
    };
    assert_eq!(rc, 0, "mincore failed");
    flags.iter().map(|f| f & 1 == 1).collect()
}

#[cfg(target_os = "linux")]
#[test]
fn a_chunked_read_drops_the_pages_from_the_uncache_offset_on() {
    // Written and synced, the whole file is in the page cache (clean pages); read a chunk
    // at a time with `uncache_from`, it keeps the pages before the offset and loses the
    // rest (but for a folio of up to 2 MiB across the offset), and reads the same packets.
    let frame = udp_frame();
    let n = (16 << 20) / (16 + frame.len());
    let recs: Vec<Rec<'_>> = (0..n as u32).map(|i| rec(i, 7, &frame)).collect();
    let data = pcap(false, false, 65535, 1, &recs);
    // Next to the test binary, not in the temporary directory: a tmpfs keeps its pages.
    let exe = std::env::current_exe().unwrap();
    let dir = exe.with_file_name(format!("cga-core-uncache-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("big.pcap");
    let file = File::create(&path).unwrap();
    std::io::Write::write_all(&mut &file, &data).unwrap();
    file.sync_all().unwrap();
    assert!(
        cached_pages(&path).iter().all(|&c| c),
        "a written file is cached"
    );
    let keep = 4 << 20;
    let mut reader = ChunkReader::open(&path).unwrap();
    reader.uncache_from(Some(keep));
    let mut packets = 0;
    while let Some(c) = reader.next_chunk(1000).unwrap() {
        packets += c.len();
    }
    assert_eq!(packets, n);
    let cached = cached_pages(&path);
    let kept = keep / 4096;
    assert!(
        cached[..kept].iter().all(|&c| c),
        "the pages before the offset stay"
    );
    let left: Vec<usize> = (kept + 512..cached.len()).filter(|&i| cached[i]).collect();
    assert!(
        left.is_empty(),
        "the pages from the offset on are dropped: {left:?} of {}",
        cached.len()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
