//! The optional ground-truth event log: one CSV row per enqueue, dequeue, drop, mark and
//! send, with the time and the packet's identity, to check capture-based analysis end to end.
//!
//! Columns: t_ns (CLOCK_REALTIME), event, direction, pkt (serial per direction), size_bytes,
//! proto, src, dst, sport, dport, ip_id, tcp_seq, ecn (after the event), sojourn_ns (on
//! dequeue: time in the queue; on send: time since arrival), reason (drop and mark causes).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;

use crate::packet::{Nanos, Packet};

pub const HEADER: &str =
    "t_ns,event,direction,pkt,size_bytes,proto,src,dst,sport,dport,ip_id,tcp_seq,ecn,sojourn_ns,reason\n";

pub struct EventLog {
    out: BufWriter<File>,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC, refreshed by the main loop.
    pub mono_to_real_ns: i64,
    line: String,
    failed: bool,
}

impl EventLog {
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
        out.write_all(HEADER.as_bytes())?;
        Ok(EventLog {
            out,
            mono_to_real_ns: 0,
            line: String::with_capacity(256),
            failed: false,
        })
    }

    pub fn record(
        &mut self,
        t: Nanos,
        event: &str,
        dir: &str,
        p: &Packet,
        sojourn_ns: Option<u64>,
        reason: &str,
    ) {
        use std::fmt::Write as _;
        if self.failed {
            return;
        }
        let m = &p.meta;
        let l = &mut self.line;
        l.clear();
        let t_real = t as i64 + self.mono_to_real_ns;
        let _ = write!(l, "{t_real},{event},{dir},{},{},", p.id, p.len());
        if m.l3_off > 0 {
            let _ = write!(l, "{},", m.proto);
            if m.ip_version == 4 {
                let s = Ipv4Addr::new(m.src[0], m.src[1], m.src[2], m.src[3]);
                let d = Ipv4Addr::new(m.dst[0], m.dst[1], m.dst[2], m.dst[3]);
                let _ = write!(l, "{s},{d},");
            } else {
                let _ = write!(l, "{},{},", Ipv6Addr::from(m.src), Ipv6Addr::from(m.dst));
            }
            let _ = write!(l, "{},{},{},", m.sport, m.dport, m.ip_id);
            if let Some(seq) = m.tcp_seq {
                let _ = write!(l, "{seq}");
            }
            let _ = write!(l, ",{}", m.ecn);
        } else {
            l.push_str(",,,,,,,");
        }
        l.push(',');
        if let Some(s) = sojourn_ns {
            let _ = write!(l, "{s}");
        }
        l.push(',');
        l.push_str(reason);
        l.push('\n');
        if let Err(e) = self.out.write_all(l.as_bytes()) {
            eprintln!("cga-emu: event log write failed, no more events are logged: {e}");
            self.failed = true;
        }
    }

    pub fn flush(&mut self) {
        if !self.failed {
            let _ = self.out.flush();
        }
    }
}
