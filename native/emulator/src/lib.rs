//! `cga-emu`: a userspace link emulator placed as an L2 bump in the wire between two
//! interfaces. Each direction runs a pipeline: random loss, a queue discipline (the
//! kernel's pfifo, bfifo, HTB, SFQ, DualPI2, CoDel, FQ-CoDel, PIE, plus SQF and per-flow
//! DRR), a link (fixed rate or mahimahi trace) and a propagation delay. ECN marking works
//! wherever the discipline marks, trace-driven links included.
//!
//! The library is the whole emulator minus the command line; every discipline and the link
//! run on explicit time, so the unit tests drive them in simulated time.

pub mod clock;
pub mod config;
pub mod events;
pub mod io;
pub mod json;
pub mod link;
pub mod packet;
pub mod pipeline;
pub mod qdisc;
pub mod ranges;
pub mod rng;
pub mod run;
pub mod stats;
pub mod trace;
