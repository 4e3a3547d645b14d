//! `cga-cg timer-lateness`: how late this host wakes a sleeping thread, with the default
//! 50 us timer slack and with the 1 ns slack the sender uses. The benchmark prints it next
//! to the sender's pacing error, measured in the same run, as the machine's reference.

use crate::clock::{mono_ns, sleep_until};
use crate::log::JsonObject;

fn percentile(sorted: &[i64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize] as f64
}

/// Sleeps `samples` times for `interval_ns` (absolute deadlines) and returns the sorted
/// lateness of each wake-up, ns.
pub fn measure(samples: usize, interval_ns: i64) -> Vec<i64> {
    let mut late = Vec::with_capacity(samples);
    for _ in 0..samples {
        let deadline = mono_ns() + interval_ns;
        sleep_until(deadline);
        late.push(mono_ns() - deadline);
    }
    late.sort_unstable();
    late
}

fn set_slack(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK only changes this thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0);
    }
}

pub fn run(args: &[String]) -> Result<(), String> {
    let mut samples = 5000usize;
    let mut interval_us = 200i64;
    let mut i = 0;
    while i < args.len() {
        let v = args
            .get(i + 1)
            .ok_or_else(|| format!("{} needs a value", args[i]))?;
        match args[i].as_str() {
            "--samples" => samples = v.parse().map_err(|_| "--samples: expected an integer")?,
            "--interval-us" => {
                interval_us = v
                    .parse()
                    .map_err(|_| "--interval-us: expected an integer")?
            }
            other => {
                return Err(format!(
                    "unknown option {other} (timer-lateness takes --samples N --interval-us U)"
                ))
            }
        }
        i += 2;
    }
    let mut j = JsonObject::default();
    j.int("samples", samples as i64)
        .int("interval_us", interval_us);
    for (label, slack) in [("default_slack", 50_000u64), ("slack_1ns", 1u64)] {
        set_slack(slack);
        let late = measure(samples, interval_us * 1000);
        j.num(&format!("{label}_p50_us"), percentile(&late, 0.5) / 1e3)
            .num(&format!("{label}_p99_us"), percentile(&late, 0.99) / 1e3)
            .num(&format!("{label}_max_us"), percentile(&late, 1.0) / 1e3);
    }
    print!("{}", j.render());
    Ok(())
}
