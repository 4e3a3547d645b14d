//! HTB's settings: the class ids as tc spells them, each class's rates, bursts and leaf
//! discipline, and the classifier (`match`) that sends traffic to it.

use std::net::IpAddr;

use super::discipline::qdisc;
use super::obj::{opt_int, Obj};
use super::types::{HtbClassConfig, HtbConfig, Match, QdiscConfig};
use super::{err, Res};
use crate::json::Value;

/// An HTB class id: the minor number in hex, as tc spells it ("10", "1:10", or 10 meaning 0x10).
fn classid(path: &str, v: &Value) -> Res<u32> {
    let text = match v {
        Value::Str(s) => s.clone(),
        Value::Num(x) if x.fract() == 0.0 && *x >= 0.0 => format!("{}", *x as u64),
        other => {
            return err(
                path,
                format!(
                    "must be a class id string such as \"10\", got {}",
                    other.type_name()
                ),
            )
        }
    };
    let minor = text.rsplit(':').next().unwrap_or("");
    u32::from_str_radix(minor, 16)
        .ok()
        .filter(|&m| m > 0 && m <= 0xffff)
        .map_or_else(
            || {
                err(
                    path,
                    format!(
                        "'{text}' is not a class id (hex minor 1..ffff, e.g. \"10\" or \"1:10\")"
                    ),
                )
            },
            Ok,
        )
}

pub(super) fn htb(path: &str, o: &mut Obj) -> Res<HtbConfig> {
    let default_v = o.get("default").map_or_else(
        || {
            err(
                &format!("{path}.default"),
                "is required (the class id of unclassified traffic)",
            )
        },
        Ok,
    )?;
    let default = classid(&format!("{path}.default"), default_v)?;
    let classes_v = match o.get("classes") {
        Some(Value::Arr(a)) if !a.is_empty() => a,
        Some(Value::Arr(_)) | None => {
            return err(
                &format!("{path}.classes"),
                "must be a non-empty array of classes",
            )
        }
        Some(v) => {
            return err(
                &format!("{path}.classes"),
                format!("must be an array, got {}", v.type_name()),
            )
        }
    };
    let mut classes: Vec<HtbClassConfig> = Vec::new();
    for (i, cv) in classes_v.iter().enumerate() {
        let cp = format!("{path}.classes[{i}]");
        let mut c = Obj::new(&cp, cv)?;
        let id_v = c
            .get("classid")
            .map_or_else(|| err(&format!("{cp}.classid"), "is required"), Ok)?;
        let id = classid(&format!("{cp}.classid"), id_v)?;
        if classes.iter().any(|x| x.classid == id) {
            return err(
                &format!("{cp}.classid"),
                format!("duplicate class id {id:x}"),
            );
        }
        let rate_mbit = c.num_in(
            "rate_mbit",
            -1.0,
            -1.0,
            1e5,
            "a rate in Mbit/s in (0, 100000]",
        )?;
        if rate_mbit <= 0.0 {
            return err(&format!("{cp}.rate_mbit"), "is required and must be > 0");
        }
        let ceil_mbit = c.num_in("ceil_mbit", rate_mbit, 1e-3, 1e5, "a rate in Mbit/s")?;
        if ceil_mbit < rate_mbit {
            return err(
                &format!("{cp}.ceil_mbit"),
                format!("must be >= rate_mbit ({rate_mbit}), got {ceil_mbit}"),
            );
        }
        let prio = c.int_in("prio", 0, 0, 7)? as u8;
        let quantum = c.int_in("quantum", 1514, 64, 1 << 24)? as u32;
        // tc's default burst is rate/HZ + mtu with HZ = 1e9 on hrtimer kernels: about one
        // 1600-byte packet.
        let burst_default = (rate_mbit * 1e6 / 8.0 / 1e9 + 1600.0).ceil() as u64;
        let cburst_default = (ceil_mbit * 1e6 / 8.0 / 1e9 + 1600.0).ceil() as u64;
        let burst_bytes = c.int_in("burst_bytes", burst_default, 1, 1 << 32)?;
        let cburst_bytes = c.int_in("cburst_bytes", cburst_default, 1, 1 << 32)?;
        let leaf = match c.get("leaf") {
            None => QdiscConfig::Pfifo { limit: 1000 },
            Some(l) => qdisc(&format!("{cp}.leaf"), l, true)?,
        };
        let matcher = match c.get("match") {
            None => None,
            Some(m) => Some(parse_match(&format!("{cp}.match"), m)?),
        };
        c.finish(&[
            "classid",
            "rate_mbit",
            "ceil_mbit",
            "prio",
            "quantum",
            "burst_bytes",
            "cburst_bytes",
            "leaf",
            "match",
        ])?;
        classes.push(HtbClassConfig {
            classid: id,
            rate_bit_per_s: rate_mbit * 1e6,
            ceil_bit_per_s: ceil_mbit * 1e6,
            prio,
            quantum,
            burst_bytes,
            cburst_bytes,
            leaf,
            matcher,
        });
    }
    if !classes.iter().any(|c| c.classid == default) {
        return err(
            &format!("{path}.default"),
            format!("no class has id {default:x}"),
        );
    }
    o.finish(&["kind", "default", "classes"])?;
    Ok(HtbConfig { default, classes })
}

fn parse_prefix(path: &str, s: &str) -> Res<(IpAddr, u8)> {
    let (addr, len) = match s.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (s, None),
    };
    let ip: IpAddr = addr
        .parse()
        .or_else(|_| err(path, format!("'{s}' is not an IP address or prefix")))?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let len = match len {
        None => max,
        Some(l) => l
            .parse::<u8>()
            .ok()
            .filter(|&l| l <= max)
            .map_or_else(|| err(path, format!("bad prefix length in '{s}'")), Ok)?,
    };
    Ok((ip, len))
}

fn parse_match(path: &str, v: &Value) -> Res<Match> {
    let mut o = Obj::new(path, v)?;
    let proto = match o.get("proto") {
        None => None,
        Some(Value::Str(s)) => Some(match s.as_str() {
            "tcp" => 6,
            "udp" => 17,
            "icmp" => 1,
            "icmpv6" => 58,
            other => {
                return err(
                    &format!("{path}.proto"),
                    format!("unknown protocol '{other}'; use tcp, udp, icmp, icmpv6 or a number"),
                )
            }
        }),
        Some(Value::Num(x)) if x.fract() == 0.0 && (0.0..=255.0).contains(x) => Some(*x as u8),
        Some(_) => {
            return err(
                &format!("{path}.proto"),
                "must be tcp, udp, icmp, icmpv6 or a protocol number",
            )
        }
    };
    let port = |o: &mut Obj, k: &str| -> Res<Option<u16>> {
        Ok(opt_int(o, k, 0, 65535)?.map(|p| p as u16))
    };
    let m = Match {
        proto,
        port: port(&mut o, "port")?,
        sport: port(&mut o, "sport")?,
        dport: port(&mut o, "dport")?,
        dscp: opt_int(&mut o, "dscp", 0, 63)?.map(|d| d as u8),
        ecn: opt_int(&mut o, "ecn", 0, 3)?.map(|e| e as u8),
        src: o
            .string("src")?
            .map(|s| parse_prefix(&format!("{path}.src"), s))
            .transpose()?,
        dst: o
            .string("dst")?
            .map(|s| parse_prefix(&format!("{path}.dst"), s))
            .transpose()?,
    };
    o.finish(&[
        "proto", "port", "sport", "dport", "dscp", "ecn", "src", "dst",
    ])?;
    if m == Match::default() {
        return err(
            path,
            "must name at least one field (proto, port, sport, dport, dscp, ecn, src, dst)",
        );
    }
    Ok(m)
}
