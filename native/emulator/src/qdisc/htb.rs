//! HTB with one level of classes under the root, as the testbed uses it: each class has a
//! rate (guarantee), a ceil (borrowing limit), a prio and a leaf discipline; packets are
//! classified by protocol, port, DSCP, ECN or address, the rest go to the default class.
//!
//! Scheduling follows Linux's sch_htb: classes within their rate are served first (level 0),
//! then classes borrowing up to their ceil (level 1); within a level the lowest prio wins
//! and equal prios share by deficit round robin with their quantum. Token buckets run on
//! the link's virtual clock, so late wake-ups lose no tokens. The root rate is the
//! pipeline's rate (the link), which paces the whole tree.

use super::{build, Backlog, Counters, Ctx, Qdisc};
use crate::config::{HtbConfig, Match};
use crate::json::ObjWriter;
use crate::packet::{Nanos, Packet};

/// The kernel's bound on how far a bucket can go into debt (60 s).
const MBUFFER_NS: f64 = 60e9;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    CanSend,
    MayBorrow,
    CantSend,
}

struct Class {
    id: u32,
    prio: u8,
    quantum: i64,
    rate_mbit: f64,
    ceil_mbit: f64,
    /// Nanoseconds of transmission per byte at rate and at ceil.
    ns_per_byte_rate: f64,
    ns_per_byte_ceil: f64,
    buffer_ns: f64,
    cbuffer_ns: f64,
    tokens_ns: f64,
    ctokens_ns: f64,
    t_c: Nanos,
    deficit: [i64; 2],
    leaf: Box<dyn Qdisc>,
    matcher: Option<Match>,
    lends: u64,
    borrows: u64,
    dropped: u64,
}

impl Class {
    fn tokens_at(&self, now: Nanos) -> (f64, f64) {
        let diff = now.saturating_sub(self.t_c) as f64;
        (
            (self.tokens_ns + diff).min(self.buffer_ns),
            (self.ctokens_ns + diff).min(self.cbuffer_ns),
        )
    }

    fn mode(&self, now: Nanos) -> Mode {
        let (toks, ctoks) = self.tokens_at(now);
        if ctoks < 0.0 {
            Mode::CantSend
        } else if toks >= 0.0 {
            Mode::CanSend
        } else {
            Mode::MayBorrow
        }
    }

    fn charge(&mut self, bytes: usize, level: usize, now: Nanos) {
        let (toks, ctoks) = self.tokens_at(now);
        self.tokens_ns = if level == 0 {
            self.lends += 1;
            (toks - bytes as f64 * self.ns_per_byte_rate).max(-MBUFFER_NS)
        } else {
            self.borrows += 1;
            toks
        };
        self.ctokens_ns = (ctoks - bytes as f64 * self.ns_per_byte_ceil).max(-MBUFFER_NS);
        self.t_c = now;
    }
}

fn prefix_match(addr: &[u8; 16], version: u8, prefix: &(std::net::IpAddr, u8)) -> bool {
    let (net, len) = prefix;
    let (bytes, n): (Vec<u8>, usize) = match net {
        std::net::IpAddr::V4(a) if version == 4 => (a.octets().to_vec(), 4),
        std::net::IpAddr::V6(a) if version == 6 => (a.octets().to_vec(), 16),
        _ => return false,
    };
    let len = *len as usize;
    for i in 0..n {
        let bits = len.saturating_sub(i * 8).min(8);
        if bits == 0 {
            break;
        }
        let mask = (0xffu16 << (8 - bits)) as u8;
        if addr[i] & mask != bytes[i] & mask {
            return false;
        }
    }
    true
}

pub fn matches(m: &Match, p: &Packet) -> bool {
    let x = &p.meta;
    if x.l3_off == 0 {
        return false;
    }
    m.proto.is_none_or_eq(x.proto)
        && m.port
            .map_or(true, |port| x.sport == port || x.dport == port)
        && m.sport.is_none_or_eq(x.sport)
        && m.dport.is_none_or_eq(x.dport)
        && m.dscp.is_none_or_eq(x.dscp)
        && m.ecn.is_none_or_eq(x.ecn)
        && m.src
            .as_ref()
            .map_or(true, |pfx| prefix_match(&x.src, x.ip_version, pfx))
        && m.dst
            .as_ref()
            .map_or(true, |pfx| prefix_match(&x.dst, x.ip_version, pfx))
}

trait OptEq<T> {
    fn is_none_or_eq(&self, v: T) -> bool;
}

impl<T: PartialEq + Copy> OptEq<T> for Option<T> {
    fn is_none_or_eq(&self, v: T) -> bool {
        self.map_or(true, |x| x == v)
    }
}

pub struct Htb {
    classes: Vec<Class>,
    default: usize,
    /// Round-robin position per (level, prio): the class index to try first.
    rr: [[usize; 8]; 2],
    c: Counters,
}

impl Htb {
    pub fn new(cfg: &HtbConfig, mtu: u32, now: Nanos, seed: u64) -> Self {
        let mut classes: Vec<Class> = cfg
            .classes
            .iter()
            .enumerate()
            .map(|(i, cc)| {
                let ns_per_byte_rate = 8e9 / cc.rate_bit_per_s;
                let ns_per_byte_ceil = 8e9 / cc.ceil_bit_per_s;
                let buffer_ns = cc.burst_bytes as f64 * ns_per_byte_rate;
                let cbuffer_ns = cc.cburst_bytes as f64 * ns_per_byte_ceil;
                Class {
                    id: cc.classid,
                    prio: cc.prio,
                    quantum: cc.quantum as i64,
                    rate_mbit: cc.rate_bit_per_s / 1e6,
                    ceil_mbit: cc.ceil_bit_per_s / 1e6,
                    ns_per_byte_rate,
                    ns_per_byte_ceil,
                    buffer_ns,
                    cbuffer_ns,
                    tokens_ns: buffer_ns,
                    ctokens_ns: cbuffer_ns,
                    t_c: now,
                    deficit: [0; 2],
                    leaf: build(&cc.leaf, mtu, now, seed.wrapping_add(i as u64 + 1)),
                    matcher: cc.matcher.clone(),
                    lends: 0,
                    borrows: 0,
                    dropped: 0,
                }
            })
            .collect();
        // The kernel keeps classes sorted by class id; round robin follows that order.
        classes.sort_by_key(|c| c.id);
        let default = classes
            .iter()
            .position(|c| c.id == cfg.default)
            .expect("validated default class");
        Htb {
            classes,
            default,
            rr: [[0; 8]; 2],
            c: Counters::default(),
        }
    }

    fn classify(&self, p: &Packet) -> usize {
        self.classes
            .iter()
            .position(|c| c.matcher.as_ref().is_some_and(|m| matches(m, p)))
            .unwrap_or(self.default)
    }

    /// Tries one (level, prio) round: returns a packet if some class there could send.
    fn dequeue_at(&mut self, level: usize, prio: u8, now: Nanos, ctx: &mut Ctx) -> Option<Packet> {
        let want = if level == 0 {
            Mode::CanSend
        } else {
            Mode::MayBorrow
        };
        let n = self.classes.len();
        let start = self.rr[level][prio as usize] % n;
        for step in 0..n {
            let i = (start + step) % n;
            let cl = &mut self.classes[i];
            if cl.prio != prio || cl.leaf.is_empty() || cl.mode(now) != want {
                continue;
            }
            let before = ctx.totals.dropped;
            let p = cl.leaf.dequeue(now, ctx);
            cl.dropped += ctx.totals.dropped - before;
            let Some(p) = p else { continue };
            cl.deficit[level] -= p.len() as i64;
            if cl.deficit[level] < 0 {
                cl.deficit[level] += cl.quantum;
                self.rr[level][prio as usize] = (i + 1) % n;
            } else {
                self.rr[level][prio as usize] = i;
            }
            cl.charge(p.len(), level, now);
            return Some(p);
        }
        None
    }
}

impl Qdisc for Htb {
    fn kind(&self) -> &'static str {
        "htb"
    }

    fn enqueue(&mut self, p: Packet, now: Nanos, ctx: &mut Ctx) {
        let i = self.classify(&p);
        let before = ctx.totals.dropped;
        self.classes[i].leaf.enqueue(p, now, ctx);
        let dropped = ctx.totals.dropped - before;
        self.classes[i].dropped += dropped;
        self.c.dropped += dropped;
    }

    fn dequeue(&mut self, now: Nanos, ctx: &mut Ctx) -> Option<Packet> {
        let (d0, m0) = (ctx.totals.dropped, ctx.totals.marked);
        let mut out = None;
        'levels: for level in 0..2 {
            for prio in 0..8u8 {
                if let Some(p) = self.dequeue_at(level, prio, now, ctx) {
                    out = Some(p);
                    break 'levels;
                }
            }
        }
        self.c.dropped += ctx.totals.dropped - d0;
        self.c.marked += ctx.totals.marked - m0;
        match out {
            Some(p) => {
                self.c.sent(&p);
                Some(p)
            }
            None => {
                if !self.is_empty() {
                    self.c.overlimits += 1;
                }
                None
            }
        }
    }

    fn backlog(&self) -> Backlog {
        self.classes.iter().map(|c| c.leaf.backlog()).sum()
    }

    fn counters(&self) -> &Counters {
        &self.c
    }

    fn next_ready(&self, now: Nanos) -> Option<Nanos> {
        self.classes
            .iter()
            .filter(|c| !c.leaf.is_empty())
            .map(|c| {
                let (_, ctoks) = c.tokens_at(now);
                now + (-ctoks).max(0.0).ceil() as u64
            })
            .min()
    }

    fn next_timer(&self) -> Option<Nanos> {
        self.classes
            .iter()
            .filter_map(|c| c.leaf.next_timer())
            .min()
    }

    fn on_timer(&mut self, now: Nanos) {
        for c in &mut self.classes {
            if c.leaf.next_timer().is_some_and(|t| t <= now) {
                c.leaf.on_timer(now);
            }
        }
    }

    fn stats(&self, now: Nanos, w: &mut ObjWriter) {
        let mut arr = String::from("[");
        for (i, c) in self.classes.iter().enumerate() {
            if i > 0 {
                arr.push_str(", ");
            }
            let (toks, ctoks) = c.tokens_at(now);
            let k = c.leaf.counters();
            let mut leaf = ObjWriter::new();
            leaf.str("kind", c.leaf.kind());
            c.leaf.stats(now, &mut leaf);
            let mut o = ObjWriter::new();
            o.str("classid", &format!("{:x}", c.id))
                .f64("rate_mbit", c.rate_mbit)
                .f64("ceil_mbit", c.ceil_mbit)
                .u64("prio", c.prio as u64)
                .u64("sent_bytes", k.sent_bytes)
                .u64("sent_packets", k.sent_packets)
                .u64("dropped", c.dropped)
                .u64("marked", k.marked)
                .u64("backlog_bytes", c.leaf.backlog_bytes())
                .u64("backlog_packets", c.leaf.len() as u64)
                .u64("lended", c.lends)
                .u64("borrowed", c.borrows)
                .i64("tokens_ns", toks as i64)
                .i64("ctokens_ns", ctoks as i64)
                .raw("leaf", &leaf.finish());
            arr.push_str(&o.finish());
        }
        arr.push(']');
        w.raw("classes", &arr);
    }
}

#[cfg(test)]
mod tests;
