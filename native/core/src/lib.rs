//! Pure-Rust core of cganalysis: reading pcap/pcapng captures into columns, and matching
//! the packets of two capture points (ingress and egress of a bottleneck).
//!
//! Nothing here knows about Python; `cga-native` wraps it for the `cganalysis` package.

pub mod decode;
pub mod keys;
pub mod matcher;
pub mod pcap;
pub mod stream;
mod wordhash;
