//! Reading a command line: positionals and `--name VALUE` / `--name=VALUE` options, and
//! the checks of their values; every error names the option and what it expects.

use std::net::SocketAddr;

use crate::cc::scream::Profile;
use crate::rfc8888::NumReports;

/// A command line split into positionals and (name, value) options.
pub(super) struct Args {
    pub(super) positional: Vec<String>,
    opts: Vec<(String, String)>,
}

impl Args {
    /// Splits `args` into positionals and (name, value) options; flags get an empty value.
    pub(super) fn split(args: &[String], flags: &[&str]) -> Result<Args, String> {
        let mut pos = Vec::new();
        let mut opts = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            if let Some(name) = a.strip_prefix("--") {
                if let Some((n, v)) = name.split_once('=') {
                    opts.push((n.to_string(), v.to_string()));
                } else if flags.contains(&name) {
                    opts.push((name.to_string(), String::new()));
                } else {
                    let v = args
                        .get(i + 1)
                        .ok_or_else(|| format!("--{name} needs a value"))?;
                    opts.push((name.to_string(), v.clone()));
                    i += 1;
                }
            } else {
                pos.push(a.clone());
            }
            i += 1;
        }
        Ok(Args {
            positional: pos,
            opts,
        })
    }

    /// Refuses any option that is neither in `known` nor in `flags`.
    pub(super) fn refuse_unknown(
        &self,
        known: &[&str],
        flags: &[&str],
        command: &str,
    ) -> Result<(), String> {
        for (k, _) in &self.opts {
            if !known.contains(&k.as_str()) && !flags.contains(&k.as_str()) {
                return Err(format!(
                    "unknown option --{k} (see cga-cg {command} --help)"
                ));
            }
        }
        Ok(())
    }

    /// The value of `--name` (the last one given), if any.
    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.opts
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

fn num(name: &str, v: &str) -> Result<f64, String> {
    v.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| format!("--{name} {v:?}: expected a number"))
}

pub(super) fn positive(name: &str, v: &str) -> Result<f64, String> {
    let x = num(name, v)?;
    if x > 0.0 {
        Ok(x)
    } else {
        Err(format!("--{name} {v}: must be greater than 0"))
    }
}

pub(super) fn non_negative(name: &str, v: &str) -> Result<f64, String> {
    let x = num(name, v)?;
    if x >= 0.0 {
        Ok(x)
    } else {
        Err(format!("--{name} {v}: must not be negative"))
    }
}

pub(super) fn integer(name: &str, v: &str, max: u64) -> Result<u64, String> {
    let x = if let Some(hex) = v.strip_prefix("0x") {
        u64::from_str_radix(hex, 16).ok()
    } else {
        v.parse::<u64>().ok()
    };
    x.filter(|&x| x <= max)
        .ok_or_else(|| format!("--{name} {v:?}: expected an integer from 0 to {max}"))
}

pub(super) fn addr(what: &str, v: &str) -> Result<SocketAddr, String> {
    v.parse::<SocketAddr>().map_err(|_| {
        format!("{what} {v:?}: expected IP:PORT, e.g. 10.0.2.1:30002 or [fd00::1]:30002")
    })
}

pub(super) fn num_reports(v: &str) -> Result<NumReports, String> {
    NumReports::parse(v)
        .ok_or_else(|| format!("--num-reports {v:?}: expected count or count-minus-one"))
}

/// A profile name given to option `--name`.
pub(super) fn profile(name: &str, v: &str) -> Result<Profile, String> {
    match v {
        "ericsson" => Ok(Profile::Ericsson),
        "draft" => Ok(Profile::Draft),
        "ericsson-2023" => Ok(Profile::Ericsson2023),
        other => Err(format!(
            "--{name} {other:?}: expected ericsson, ericsson-2023 or draft"
        )),
    }
}
