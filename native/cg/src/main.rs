//! `cga-cg`: the CG traffic generator's command line (see `cga-cg --help`).

use cga_cg::{cli, receiver_app, sender, timer, VERSION};

const HELP: &str = "\
cga-cg: cloud-gaming RTP video traffic generator (SCReAM v2, constant bitrate, TFRC, gTFRC)

usage:
  cga-cg send DEST_IP:PORT [options]      send RTP video, congestion-controlled
  cga-cg receive LISTEN_IP:PORT [options] receive it, send RFC 8888 feedback, log frames
  cga-cg timer-lateness [--samples N] [--interval-us U]
                                          measure this host's timer wake-up lateness
  cga-cg --version

  cga-cg send --help / cga-cg receive --help list the options.
";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let wants_help = |rest: &[String]| rest.iter().any(|a| a == "--help" || a == "-h");
    let result = match args.first().map(String::as_str) {
        Some("send") if wants_help(&args[1..]) => {
            print!("{}", cli::SEND_HELP);
            Ok(())
        }
        Some("receive") if wants_help(&args[1..]) => {
            print!("{}", cli::RECEIVE_HELP);
            Ok(())
        }
        Some("send") => cli::parse_send(&args[1..]).and_then(sender::run),
        Some("receive") => cli::parse_receive(&args[1..]).and_then(receiver_app::run),
        Some("timer-lateness") => timer::run(&args[1..]),
        Some("--version") | Some("-V") => {
            println!("cga-cg {VERSION}");
            Ok(())
        }
        Some("--help") | Some("-h") | Some("help") => {
            print!("{HELP}");
            Ok(())
        }
        None => {
            eprint!("{HELP}");
            std::process::exit(2);
        }
        Some(other) => Err(format!(
            "unknown command {other:?} (expected send, receive or timer-lateness)"
        )),
    };
    if let Err(e) = result {
        let cmd = args.first().map(String::as_str).unwrap_or("");
        eprintln!("cga-cg {cmd}: error: {e}");
        std::process::exit(2);
    }
}
