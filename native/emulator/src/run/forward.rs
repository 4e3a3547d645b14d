//! Frames in and out: a frame read from a receive ring enters its direction's pipeline, and
//! what the pipeline has due is written to the other interface in one batch.

use crate::clock;
use crate::events::EventLog;
use crate::io::{Frame, PacketSocket};
use crate::packet::{complete_l4_checksum, Nanos, Packet};
use crate::pipeline::Pipeline;

/// Per-direction state that is not the pipeline: warnings already given.
#[derive(Default)]
pub struct DirState {
    warned_oversize: bool,
    warned_tx: bool,
}

pub fn ingest(
    fr: Frame,
    offset: i64,
    pipe: &mut Pipeline,
    st: &mut DirState,
    ifname: &str,
    events: Option<&mut EventLog>,
) {
    let now = clock::mono_ns();
    let t = if fr.ts_real_ns > 0 {
        ((fr.ts_real_ns - offset).max(0) as Nanos).min(now)
    } else {
        now
    };
    if fr.truncated {
        if !st.warned_oversize {
            eprintln!(
                "cga-emu: frames larger than the MTU arrive on {ifname} and are dropped: turn off \
                 segmentation offloads on the senders (ethtool -K DEV tso off gso off gro off)"
            );
            st.warned_oversize = true;
        }
        pipe.drop_unforwardable(
            Packet::new(fr.data.to_vec(), u64::MAX, t),
            t,
            events,
            "oversize",
        );
        return;
    }
    let mut data = Vec::with_capacity(fr.data.len() + 4);
    match fr.vlan {
        Some((tci, tpid)) if fr.data.len() >= 12 => {
            data.extend_from_slice(&fr.data[..12]);
            data.extend_from_slice(&tpid.to_be_bytes());
            data.extend_from_slice(&tci.to_be_bytes());
            data.extend_from_slice(&fr.data[12..]);
        }
        _ => data.extend_from_slice(fr.data),
    }
    if fr.csum_not_ready {
        complete_l4_checksum(&mut data);
    }
    pipe.arrive(data, t, events);
}

pub fn transmit(
    pipe: &mut Pipeline,
    out: &PacketSocket,
    st: &mut DirState,
    now: Nanos,
    batch: &mut Vec<Packet>,
    mut events: Option<&mut EventLog>,
) {
    batch.clear();
    while let Some((_, p)) = pipe.pop_due(now) {
        batch.push(p);
    }
    if batch.is_empty() {
        return;
    }
    let t_send = clock::mono_ns();
    let frames: Vec<&[u8]> = batch.iter().map(|p| p.data.as_slice()).collect();
    let (failed, err) = out.send_batch(&frames);
    if failed > 0 {
        pipe.traffic.tx_errors += failed as u64;
        if !st.warned_tx {
            let e = err.map_or_else(|| "unknown error".to_string(), |e| e.to_string());
            eprintln!(
                "cga-emu: cannot write {failed} frame(s) to {}: {e} (counted as tx_errors)",
                out.ifname
            );
            st.warned_tx = true;
        }
    }
    for p in batch.iter() {
        pipe.note_sent(p);
        if let Some(ev) = events.as_deref_mut() {
            ev.record(
                t_send,
                "send",
                pipe.dir,
                p,
                Some(t_send.saturating_sub(p.t_arrival)),
                "",
            );
        }
    }
}
