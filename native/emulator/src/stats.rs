//! Statistics lines (JSONL), one per interval and direction, like `tc -s -j` sampled by the
//! testbed's 100 ms monitor: cumulative counters, instantaneous backlog, kind-specific keys.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use crate::json::ObjWriter;
use crate::packet::Nanos;
use crate::pipeline::Pipeline;

pub struct StatsWriter {
    out: File,
    pub interval_ns: u64,
    pub next: Nanos,
}

impl StatsWriter {
    pub fn create(path: &Path, interval_ns: u64, now: Nanos) -> std::io::Result<Self> {
        Ok(StatsWriter {
            out: File::create(path)?,
            interval_ns,
            next: now + interval_ns,
        })
    }

    /// Writes one line per direction; `t_real_ns` is CLOCK_REALTIME.
    pub fn write(&mut self, t_real_ns: i64, now: Nanos, pipes: &[&Pipeline], last: bool) {
        let mut text = String::new();
        for p in pipes {
            let mut w = ObjWriter::new();
            w.i64("t_ns", t_real_ns);
            p.stats(now, &mut w);
            if last {
                w.bool("final", true);
            }
            text.push_str(&w.finish());
            text.push('\n');
        }
        // One write per interval keeps lines whole for a reader tailing the file.
        if let Err(e) = self.out.write_all(text.as_bytes()) {
            eprintln!("cga-emu: cannot write statistics: {e}");
        }
    }
}
