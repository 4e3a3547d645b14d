//! Pure-Rust core of cganalysis: reading pcap/pcapng captures into columns, matching the
//! packets of two capture points (ingress and egress of a bottleneck), building the packet
//! tables of a match (`table`) and writing them as Parquet (`parquet`).
//!
//! Nothing here knows about Python; `cga-native` wraps it for the `cganalysis` package.

pub mod decode;
pub mod hugepages;
pub mod jitter;
pub mod keys;
pub mod matcher;
pub mod parquet;
pub mod pcap;
pub mod stream;
pub mod streaming;
pub mod table;
mod wordhash;

/// The core's own tests run on the allocator the extension module uses.
#[cfg(test)]
#[global_allocator]
static ALLOCATOR: hugepages::HugePages = hugepages::HugePages;
