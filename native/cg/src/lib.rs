//! `cga-cg`: a cloud-gaming video traffic generator for the cganalysis testbed.
//!
//! An RTP/UDP video sender whose bitrate a congestion controller drives (SCReAM v2,
//! constant bitrate, TFRC, gTFRC), and a receiver that returns RFC 8888 feedback (and TFRC
//! reports) and reassembles frames. Written from the specifications: the IETF SCReAM v2
//! draft (draft-ietf-ccwg-rfc8298bis-screamv2), RFC 8888, RFC 5348, RFC 3550, and Jourjon
//! et al. (ICON 2006) for gTFRC.
//!
//! Layout: `cc` (controllers), `history` (what the sender knows about sent packets),
//! `rfc8888` and `rtcp` (feedback formats), `rtp` (packetiser), `encoder` (frame sizes),
//! `pacer`, `receiver` (feedback generation, frame reassembly, TFRC receiver), `log`,
//! `net` (sockets), and the two programs `sender` and `receiver_app`.

pub mod cc;
pub mod cli;
pub mod clock;
pub mod encoder;
pub mod history;
pub mod log;
pub mod net;
pub mod pacer;
pub mod receiver;
pub mod receiver_app;
pub mod rfc8888;
pub mod rtcp;
pub mod rtp;
pub mod sender;
pub mod stop;
pub mod tfrc_eq;
pub mod timer;

/// Version reported by `cga-cg --version` (and written to summaries).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
