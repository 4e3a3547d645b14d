//! The walk through a pcapng file: block by block, packets into the columns, and the
//! capture's summary at the end.

use super::*;

/// Where a pcapng reader is in its file.
pub(crate) struct NgCursor {
    st: Pcapng,
    first_be: bool,
    off: usize,
    next_release: usize,
    truncated_at: Option<usize>,
    pub(crate) done: bool,
}

impl NgCursor {
    /// Checks the first section header's length and byte order.
    pub(crate) fn open(data: &[u8]) -> Result<NgCursor, ReadError> {
        if data.len() < 28 {
            return Err(invalid(
                format!(
                    "truncated pcapng section header block ({} bytes)",
                    data.len()
                ),
                0,
            ));
        }
        let first_be = shb_byte_order(data, 0)?;
        Ok(NgCursor {
            st: Pcapng {
                interfaces: Vec::new(),
                stats: Vec::new(),
                section_base: 0,
                be: first_be,
                malformed_options: Vec::new(),
                warnings: Vec::new(),
                last_packet_ns: None,
                isb_in_microseconds: Vec::new(),
                first_unsupported: None,
            },
            first_be,
            off: 0,
            next_release: RELEASE_CHUNK,
            truncated_at: None,
            done: false,
        })
    }

    /// Where the next block starts (bytes from the file's start).
    pub(crate) fn offset(&self) -> usize {
        self.off
    }

    /// The number of packets the first blocks predict for the whole file.
    pub(crate) fn estimate(&self, data: &[u8]) -> usize {
        let be = self.first_be;
        estimate_packets(data, data.len(), 0, |off| {
            if data.len() - off < 12 || (off > 0 && rd32(data, off, false) == SHB) {
                return None;
            }
            let btype = rd32(data, off, be);
            let blen = rd32(data, off + 4, be) as usize;
            Some((blen, matches!(btype, EPB | SPB | PB)))
        })
    }

    /// Decodes blocks until the builder holds `limit` packets or the file ends.
    pub(crate) fn advance(
        &mut self,
        data: &[u8],
        b: &mut Builder,
        quirks: &mut Quirks,
        release: &mut dyn FnMut(usize),
        limit: usize,
    ) -> Result<(), ReadError> {
        let st = &mut self.st;
        let mut off = self.off;
        while !self.done {
            if off >= data.len() {
                self.done = true;
                break;
            }
            if b.len() >= limit {
                break;
            }
            if off >= self.next_release {
                release(off);
                self.next_release = off + RELEASE_CHUNK;
            }
            if data.len() - off < 12 {
                self.truncated_at = Some(off);
                self.done = true;
                break;
            }
            if rd32(data, off, false) == SHB {
                st.be = shb_byte_order(data, off)?;
            }
            let be = st.be;
            let btype = rd32(data, off, be);
            let blen = rd32(data, off + 4, be);
            if blen < 12 || blen % 4 != 0 || blen > PCAPNG_MAX_BLOCK || (btype == SHB && blen < 28)
            {
                return Err(invalid(format!("corrupt block length {blen}"), off));
            }
            let blen = blen as usize;
            if data.len() - off < blen {
                self.truncated_at = Some(off);
                self.done = true;
                break;
            }
            let trailer = rd32(data, off + blen - 4, be);
            if trailer as usize != blen {
                return Err(invalid(
                    format!("corrupt block length {blen} (trailing copy {trailer})"),
                    off,
                ));
            }
            let body = &data[off + 8..off + blen - 4];
            match btype {
                EPB | PB => {
                    if body.len() < 20 {
                        return Err(invalid("corrupt packet block (too short)", off));
                    }
                    // The obsolete packet block has a 16-bit interface id (then drop counts).
                    let id = if btype == EPB {
                        rd32(body, 0, be)
                    } else {
                        u32::from(rd16(body, 0, be))
                    };
                    let g = st.interface(id, off)?;
                    let ts = (u64::from(rd32(body, 4, be)) << 32) | u64::from(rd32(body, 8, be));
                    let caplen = rd32(body, 12, be);
                    let wire = rd32(body, 16, be);
                    if caplen as usize > body.len() - 20 {
                        return Err(invalid(
                            format!(
                                "corrupt packet block: captured length {caplen} exceeds the block"
                            ),
                            off,
                        ));
                    }
                    let iface = &st.interfaces[g];
                    let t_ns = iface.ts_ns(ts);
                    if let Some(link) = iface.link {
                        b.packet(t_ns, g as u32, wire, link, &body[20..20 + caplen as usize]);
                    } else {
                        quirks.skipped_packets += 1;
                    }
                    st.last_packet_ns = Some(t_ns);
                }
                SPB => {
                    if body.len() < 4 {
                        return Err(invalid("corrupt simple packet block (too short)", off));
                    }
                    let g = st.interface(0, off)?;
                    let iface = &st.interfaces[g];
                    let wire = rd32(body, 0, be);
                    let snap = if iface.snaplen == 0 {
                        usize::MAX
                    } else {
                        iface.snaplen as usize
                    };
                    let caplen = (wire as usize).min(snap).min(body.len() - 4);
                    if let Some(link) = iface.link {
                        b.packet(NO_TIMESTAMP, g as u32, wire, link, &body[4..4 + caplen]);
                    } else {
                        quirks.skipped_packets += 1;
                    }
                }
                SHB => {
                    // Versions 1.0 and 1.2 (written by some tools, read as 1.0) are what
                    // libpcap and Wireshark read; 1.1 and anything else are refused.
                    let (major, minor) = (rd16(body, 4, be), rd16(body, 6, be));
                    if major != 1 || !(minor == 0 || minor == 2) {
                        return Err(invalid(
                            format!(
                                "unsupported pcapng version {major}.{minor} (readers know 1.0 and 1.2)"
                            ),
                            off + 12,
                        ));
                    }
                    st.section_base = st.interfaces.len();
                }
                IDB => st.idb(body, off)?,
                ISB => st.isb(body, off)?,
                _ => {}
            }
            off += blen;
        }
        self.off = off;
        Ok(())
    }

    /// The capture, once `advance` reached the end (`columns`: those not yet taken).
    /// `packets`: how many were read in all (chunks already taken included).
    pub(crate) fn finish(
        self,
        columns: Columns,
        flows: FlowTable,
        quirks: Quirks,
        packets: usize,
    ) -> Result<Capture, ReadError> {
        let st = self.st;
        if self.off == 0 {
            return Err(invalid("truncated pcapng section header block", 0));
        }
        let mut warnings = st.warnings;
        if !st.isb_in_microseconds.is_empty() {
            warnings.push(format!(
                "interface statistics of interface(s) {:?} have microsecond timestamps although \
                 the interface resolution is finer (a dumpcap bug); read as microseconds",
                st.isb_in_microseconds
            ));
        }
        if let Some(&first) = st.malformed_options.first() {
            warnings.push(format!(
                "malformed options ignored in {} block(s), the first at byte offset {first}",
                st.malformed_options.len()
            ));
        }
        if let Some((link_type, at)) = st.first_unsupported {
            if st.interfaces.iter().all(|i| i.link.is_none()) {
                // nothing in the file can be decoded: as a pcap file with that link type
                return Err(unsupported_link(link_type, at));
            }
        }
        if let Some(at) = self.truncated_at {
            warnings.push(truncation_warning(at, packets));
        }
        Ok(Capture {
            format: Format::Pcapng,
            big_endian: self.first_be,
            nanosecond: None,
            snaplen: st.interfaces.iter().map(|i| i.snaplen).max().unwrap_or(0),
            columns,
            flows,
            stats: st.stats.into_iter().flatten().collect(),
            interfaces: st.interfaces,
            warnings,
            quirks,
        })
    }
}
