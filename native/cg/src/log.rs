//! Logs: CSV files with a fixed header (one per table), and a JSON summary.
//!
//! CSV keeps the data plane simple and fast; `cganalysis cg` converts each file to parquet
//! with a declared schema (`cganalysis.schemas`), so the testbed keeps parquet only. An
//! empty field is a null. Files are written under a `.partial` name and renamed when
//! complete, so a crash never leaves a file that looks finished.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Column names of each table (the Python schemas mirror these).
pub const SENDER_PACKETS: &[&str] = &[
    "t_ns",
    "seq",
    "rtp_seq",
    "rtp_ts",
    "frame_id",
    "size_bytes",
    "marker",
    "ecn",
    "due_ns",
    "queue_delay_us",
];
pub const SENDER_FRAMES: &[&str] = &[
    "frame_id",
    "t_ns",
    "size_bytes",
    "packets",
    "keyframe",
    "target_bps",
    "encoder_bps",
];
pub const CONTROLLER: &[&str] = &[
    "t_ns",
    "event",
    "cc",
    "ref_wnd_bytes",
    "send_wnd_bytes",
    "bytes_in_flight",
    "target_bps",
    "pace_bps",
    "srtt_ms",
    "rtt_sample_ms",
    "qdelay_ms",
    "qdelay_avg_ms",
    "qdelay_target_ms",
    "l4s_alpha",
    "l4s_alpha_v",
    "loss_rate",
    "loss_event_rate",
    "x_recv_bps",
    "x_calc_bps",
    "packets_acked",
    "packets_ce",
    "packets_lost",
    "rtp_queue_bytes",
    "rtp_queue_delay_ms",
];
pub const RECEIVER_PACKETS: &[&str] = &[
    "t_ns",
    "ssrc",
    "rtp_seq",
    "seq",
    "rtp_ts",
    "marker",
    "pt",
    "size_bytes",
    "ecn",
    "frame_id",
    "send_t_ns",
];
pub const RECEIVER_FRAMES: &[&str] = &[
    "frame_id",
    "rtp_ts",
    "send_t_ns",
    "t_first_ns",
    "t_last_ns",
    "packets_expected",
    "packets_received",
    "bytes_expected",
    "bytes_received",
    "complete",
    "keyframe",
];

/// One CSV table being written.
pub struct CsvLog {
    out: Option<BufWriter<File>>,
    partial: PathBuf,
    path: PathBuf,
    line: String,
    columns: usize,
    fields: usize,
}

impl CsvLog {
    /// Creates `dir/name` (as `dir/.name.partial` until [`CsvLog::finish`]).
    pub fn create(dir: &Path, name: &str, header: &[&str]) -> std::io::Result<CsvLog> {
        let path = dir.join(name);
        let partial = dir.join(format!(".{name}.partial"));
        let mut out = BufWriter::with_capacity(1 << 16, File::create(&partial)?);
        writeln!(out, "{}", header.join(","))?;
        Ok(CsvLog {
            out: Some(out),
            partial,
            path,
            line: String::with_capacity(256),
            columns: header.len(),
            fields: 0,
        })
    }

    /// A log that writes nothing (no --log directory).
    pub fn disabled() -> CsvLog {
        CsvLog {
            out: None,
            partial: PathBuf::new(),
            path: PathBuf::new(),
            line: String::new(),
            columns: 0,
            fields: 0,
        }
    }

    pub fn enabled(&self) -> bool {
        self.out.is_some()
    }

    fn sep(&mut self) {
        if self.fields > 0 {
            self.line.push(',');
        }
        self.fields += 1;
    }

    pub fn int(&mut self, v: i64) -> &mut Self {
        self.sep();
        let _ = write!(self.line, "{v}");
        self
    }

    pub fn uint(&mut self, v: u64) -> &mut Self {
        self.sep();
        let _ = write!(self.line, "{v}");
        self
    }

    pub fn float(&mut self, v: f64) -> &mut Self {
        self.sep();
        if v.is_finite() {
            let _ = write!(self.line, "{v:.6}");
        }
        self
    }

    pub fn opt_float(&mut self, v: Option<f64>) -> &mut Self {
        match v {
            Some(x) => self.float(x),
            None => self.null(),
        }
    }

    pub fn opt_int(&mut self, v: Option<i64>) -> &mut Self {
        match v {
            Some(x) => self.int(x),
            None => self.null(),
        }
    }

    pub fn boolean(&mut self, v: bool) -> &mut Self {
        self.sep();
        self.line.push_str(if v { "true" } else { "false" });
        self
    }

    pub fn text(&mut self, v: &str) -> &mut Self {
        self.sep();
        self.line.push_str(v);
        self
    }

    pub fn null(&mut self) -> &mut Self {
        self.sep();
        self
    }

    /// Ends the row.
    pub fn end(&mut self) {
        debug_assert!(
            self.out.is_none() || self.fields == self.columns,
            "row has {} fields",
            self.fields
        );
        if let Some(out) = &mut self.out {
            self.line.push('\n');
            let _ = out.write_all(self.line.as_bytes());
        }
        self.line.clear();
        self.fields = 0;
    }

    /// Flushes and renames the file to its final name.
    pub fn finish(&mut self) -> std::io::Result<()> {
        if let Some(mut out) = self.out.take() {
            out.flush()?;
            drop(out);
            std::fs::rename(&self.partial, &self.path)?;
        }
        Ok(())
    }
}

/// A flat JSON object written by hand (numbers, strings, booleans).
#[derive(Default)]
pub struct JsonObject {
    fields: Vec<(String, String)>,
}

impl JsonObject {
    /// A run's timing: wall start (ns), duration and CPU time (s), CPU share of one core.
    pub fn timing(&mut self, start_wall_ns: i64, wall_s: f64, cpu_s: f64) -> &mut Self {
        let pct = if wall_s > 0.0 {
            cpu_s / wall_s * 100.0
        } else {
            f64::NAN
        };
        self.int("start_ns", start_wall_ns)
            .num("duration_s", wall_s)
            .num("cpu_s", cpu_s)
            .num("cpu_pct_one_core", pct)
    }

    pub fn num(&mut self, key: &str, v: f64) -> &mut Self {
        let s = if v.is_finite() {
            format!("{v}")
        } else {
            "null".into()
        };
        self.fields.push((key.into(), s));
        self
    }

    pub fn int(&mut self, key: &str, v: i64) -> &mut Self {
        self.fields.push((key.into(), v.to_string()));
        self
    }

    pub fn text(&mut self, key: &str, v: &str) -> &mut Self {
        let escaped: String = v
            .chars()
            .flat_map(|c| match c {
                '"' => vec!['\\', '"'],
                '\\' => vec!['\\', '\\'],
                '\n' => vec!['\\', 'n'],
                c if (c as u32) < 0x20 => format!("\\u{:04x}", c as u32).chars().collect(),
                c => vec![c],
            })
            .collect();
        self.fields.push((key.into(), format!("\"{escaped}\"")));
        self
    }

    pub fn boolean(&mut self, key: &str, v: bool) -> &mut Self {
        self.fields.push((key.into(), v.to_string()));
        self
    }

    pub fn render(&self) -> String {
        let body: Vec<String> = self
            .fields
            .iter()
            .map(|(k, v)| format!("  \"{k}\": {v}"))
            .collect();
        format!("{{\n{}\n}}\n", body.join(",\n"))
    }

    /// Writes the object to `path` atomically.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let partial = path.with_extension("json.partial");
        std::fs::write(&partial, self.render())?;
        std::fs::rename(partial, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_rows_and_atomic_rename() {
        let dir = std::env::temp_dir().join(format!("cga-cg-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut log = CsvLog::create(&dir, "t.csv", &["a", "b", "c"]).unwrap();
        log.int(1).null().boolean(true).end();
        log.float(0.5).opt_float(None).text("x").end();
        assert!(!dir.join("t.csv").exists());
        log.finish().unwrap();
        let text = std::fs::read_to_string(dir.join("t.csv")).unwrap();
        assert_eq!(text, "a,b,c\n1,,true\n0.500000,,x\n");
        let mut j = JsonObject::default();
        j.int("n", 3)
            .text("s", "a\"b")
            .num("x", f64::NAN)
            .boolean("ok", true);
        j.write(&dir.join("s.json")).unwrap();
        let text = std::fs::read_to_string(dir.join("s.json")).unwrap();
        assert!(text.contains("\"s\": \"a\\\"b\""));
        assert!(text.contains("\"x\": null"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
