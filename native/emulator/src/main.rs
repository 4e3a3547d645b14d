//! `cga-emu --config EMU.json`: see docs/emulator.md for the file format and the statistics.

use std::path::PathBuf;
use std::process::ExitCode;

use cga_emu::config;
use cga_emu::run::{run, Options};

const USAGE: &str = "\
usage: cga-emu --config EMU.json [--check] [--spin-us N]

Link emulator between two interfaces of the current network namespace (an L2 bump in the
wire over AF_PACKET). Prints 'cga-emu: ready' once both interfaces are bound, runs until
SIGTERM or SIGINT, then writes its final statistics and exits 0.

  --config PATH   EMU.json (interfaces, a_to_b / b_to_a pipelines, stats, events, busy_poll)
  --check         validate the configuration (and load traces), print a summary, exit
  --spin-us N     spin instead of sleeping when the next departure is within N us
                  (sharper timing for some CPU; busy_poll in EMU.json spins always)
  --version       print the version

Exit codes: 0 stopped by a signal, 2 bad configuration or usage, 1 other failure.
Documentation: docs/emulator.md in the cganalysis repository.";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut config_path: Option<PathBuf> = None;
    let mut check = false;
    let mut opts = Options::default();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--config" | "-c" => config_path = args.next().map(PathBuf::from),
            "--check" => check = true,
            "--spin-us" => match args.next().and_then(|v| v.parse::<u64>().ok()) {
                Some(us) => opts.spin_ns = us * 1000,
                None => return usage_error("--spin-us needs a number of microseconds"),
            },
            "--help" | "-h" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            "--version" | "-V" => {
                println!("cga-emu {}", env!("CARGO_PKG_VERSION"));
                return ExitCode::SUCCESS;
            }
            other => return usage_error(&format!("unknown argument '{other}'")),
        }
    }
    let Some(path) = config_path else {
        return usage_error("--config EMU.json is required");
    };
    let cfg = match config::load(&path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cga-emu: {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    if check {
        println!("cga-emu: {} is valid", path.display());
        return ExitCode::SUCCESS;
    }
    match run(&cfg, &opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cga-emu: {}", e.message);
            ExitCode::from(e.code as u8)
        }
    }
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("cga-emu: {msg}\n{USAGE}");
    ExitCode::from(2)
}
