//! The RTP queue's two ends: frames that are due go in (packetised at the controller's
//! target), and packets come out on the pacing schedule while the send window allows.
//! A queue that grew too old is thrown away for an I-frame.

use super::{SendLoop, Sender};
use crate::net;
use crate::pacer::TestLoopBurst;

/// A wake-up this late or less is no pacing slip, whatever the microburst (the default
/// microburst, 500 us).
const SLIP_MIN_LATE_NS: i64 = 500_000;
use crate::rtp::{flags, PayloadHeader};

impl Sender {
    /// Makes every frame whose time has come and queues its packets.
    pub(super) fn enqueue_due_frames(&mut self, now: i64) {
        while self.next_frame_ns() <= now {
            self.enqueue_frame(now);
        }
    }

    fn enqueue_frame(&mut self, now: i64) {
        let frame_t = self.next_frame_ns();
        let frame = self.source.produce(self.cc.target_bitrate());
        let rtp_ts = self.packetizer.rtp_timestamp(frame_t - self.start);
        if frame.keyframe {
            self.last_keyframe_rtp_ts = Some(rtp_ts);
        }
        let f = self.frame_flags | if frame.keyframe { flags::KEYFRAME } else { 0 };
        let pkts = self
            .packetizer
            .packetize(self.frame_id, frame.bytes, rtp_ts, f, now);
        if self.queue.is_empty() {
            self.pacer.reanchor(now);
        }
        let media_qdelay = self.queue.delay_s(now);
        let log = &mut self.logs.frames;
        if log.enabled() {
            log.int(self.frame_id as i64)
                .int(self.clock.wall(frame_t))
                .uint(frame.bytes as u64)
                .uint(pkts.len() as u64)
                .boolean(frame.keyframe)
                .float(self.cc.target_bitrate())
                .float(frame.encoder_bps);
            log.end();
        }
        for p in pkts {
            self.queue.push(p);
        }
        self.cc
            .on_frame(now, frame.bytes, media_qdelay, self.queue.bytes());
        self.counts.frames += 1;
        self.counts.keyframes += frame.keyframe as u64;
        self.frame_id = self.frame_id.wrapping_add(1);
    }

    /// RTP queue too old: throw it away and ask for an I-frame (draft 4.4's frame
    /// discard), at most every 250 ms.
    pub(super) fn discard_stale_queue(&mut self, now: i64) {
        if !self.queue.is_empty()
            && self.queue.delay_s(now) > self.cfg.max_rtp_queue_s
            && now - self.last_discard_ns > 250_000_000
        {
            self.counts.discarded_packets += self.queue.len() as u64;
            self.counts.discards += 1;
            self.queue.clear();
            self.last_discard_ns = now;
            self.request_keyframe();
        }
    }

    /// A wake-up late by more than a microburst window (a host timer stall) would send
    /// every overdue packet back to back: a burst the flow never meant, which a shallow
    /// AQM marks or drops (DualPI2's 1 ms step threshold). The schedule moves instead;
    /// the pacing headroom (1.5 x the target) makes up the delay.
    pub(super) fn skip_missed_schedule(&mut self, now: i64) {
        if self.cfg.send_loop == SendLoop::EricssonTest {
            return; // that loop keeps no schedule to skip
        }
        let late = now - self.pacer.due_ns();
        let behind = late - self.cfg.burst_ns;
        if behind > 0 && !self.queue.is_empty() && !self.window_blocked {
            // A slip is a wake-up later than a microburst, and than SLIP_MIN_LATE_NS: with
            // no microbursts (`--burst-us 0`, one packet per interval as eCGP's proxy)
            // every wake-up is a few microseconds late and moves the schedule, as the
            // proxy's relative sleeps do, without being a stall.
            if late > SLIP_MIN_LATE_NS {
                self.counts.pacing_slips += 1;
                self.counts.pacing_slip_max_ns = self.counts.pacing_slip_max_ns.max(behind);
            }
            self.pacer.reanchor(now - self.cfg.burst_ns);
        }
    }

    /// Sends everything that is due within a microburst window, while the window allows;
    /// returns the time read after the last packets left, if any did.
    ///
    /// The packets due at `now` leave back to back in one `sendmmsg` call, all stamped with
    /// `now`: under user-mode Linux each system call, a clock read included, costs two host
    /// context switches, and one batch's sends are microseconds apart anyway. The clock is
    /// read once after each batch and the window moves with it, as it moved after each
    /// `send_to` before, so a slow send (a loaded host) still lets the packets that became
    /// due meanwhile out in the same turn.
    pub(super) fn send_due(&mut self, mut now: i64) -> Option<i64> {
        let mut sent_at = None;
        loop {
            let datagrams = match self.cfg.send_loop {
                SendLoop::Schedule => self.take_due(now),
                SendLoop::EricssonTest => {
                    if self.test_loop_wake.is_some_and(|w| now < w) {
                        return sent_at; // woken early (feedback, a frame): still asleep
                    }
                    // One burst per wake-up; the loop sleeps once it has sent it.
                    let (sent, sleep_ns) = self.send_test_loop_burst(now);
                    self.test_loop_wake = sleep_ns.map(|s| sent.unwrap_or(now) + s);
                    return sent;
                }
            };
            if datagrams.is_empty() {
                return sent_at;
            }
            self.send_batch(&datagrams);
            now = self.clock.now();
            sent_at = Some(now);
        }
    }

    fn send_batch(&mut self, datagrams: &[Vec<u8>]) {
        let refs: Vec<&[u8]> = datagrams.iter().map(Vec::as_slice).collect();
        let sent = net::send_all(&self.sock, self.cfg.dest, &refs);
        self.counts.send_errors += sent.failed;
        self.counts.send_calls += sent.calls;
    }

    /// Whether the window lets the queue's head (`size` bytes) out at `now`; when it does
    /// not, the queue waits for feedback or the minimum rate's next packet.
    fn window_allows(&mut self, size: usize, now: i64) -> bool {
        // A closed window still lets packets out at the minimum rate: SCReAM v2 is
        // "not entirely self-clocked" (draft section 1), so lost feedback cannot stall
        // the flow until the feedback timeout.
        let min_rate_due =
            self.last_send_ns + (size as f64 * 8.0 / self.cfg.limits.min_bps * 1e9) as i64;
        if !self.cc.may_send(self.history.bytes_in_flight(), size) && now < min_rate_due {
            self.window_blocked = true;
            self.next_window_probe = min_rate_due;
            return false;
        }
        if self.window_blocked {
            self.pacer.reanchor(now);
            self.window_blocked = false;
        }
        true
    }

    /// One burst of Ericsson's test sender's loop (crate::pacer::TestLoopBurst), sent as
    /// theirs sends it, one packet at a time: the head leaves whatever its due time, the
    /// next is due a pacing interval after it left, and the burst ends once the time owed,
    /// less the time the sends took, passes 1 ms, or the window closes. Returns when the
    /// last packet left and how long the loop then sleeps (None: it polls again at once).
    fn send_test_loop_burst(&mut self, mut now: i64) -> (Option<i64>, Option<i64>) {
        let mut burst = TestLoopBurst::default();
        let mut sent_at = None;
        while let Some(front) = self.queue.front() {
            if !self.window_allows(front.bytes.len(), now) {
                break;
            }
            let due = self.pacer.due_ns();
            self.pacer.restart(now);
            let datagram = self.take_head(due, now);
            self.send_batch(&[datagram]);
            let after = self.clock.now();
            self.pacer.shift(after - now);
            sent_at = Some(after);
            let goes_on = burst.on_sent(due - now, after - now);
            now = after;
            if !goes_on {
                break;
            }
        }
        (sent_at, burst.sleep_ns())
    }

    /// Takes the packets due within a microburst window of `now` off the queue, while the
    /// window allows, stamped and booked as leaving at `now`.
    fn take_due(&mut self, now: i64) -> Vec<Vec<u8>> {
        let mut datagrams = Vec::new();
        while let Some(front) = self.queue.front() {
            if !self.window_allows(front.bytes.len(), now) {
                break;
            }
            let due = self.pacer.due_ns();
            if due > now + self.cfg.burst_ns {
                break;
            }
            datagrams.push(self.take_head(due, now));
        }
        datagrams
    }

    /// Stamps the queue's head (due at `due`) as leaving at `send_ns`, books it as sent
    /// and returns its bytes.
    fn take_head(&mut self, due: i64, send_ns: i64) -> Vec<u8> {
        let mut p = self.queue.pop().expect("send_due saw a head");
        let size = p.bytes.len();
        let wall = self.clock.wall(send_ns);
        let rtt_us = self
            .cc
            .srtt_ns()
            .map_or(0, |r| (r / 1000).clamp(0, u32::MAX as i64) as u32);
        PayloadHeader::stamp(&mut p.bytes, (wall / 1000) as u64, rtt_us);
        self.history.on_sent(p.seq, send_ns, size, p.rtp_ts);
        self.cc
            .on_sent(send_ns, size, self.history.bytes_in_flight());
        self.pacer.on_sent(size, self.cc.pacing_rate());
        self.counts.pacing_errors_ns.push(send_ns - due);
        self.last_send_ns = send_ns;
        self.counts.packets += 1;
        self.counts.bytes += size as u64;
        let log = &mut self.logs.packets;
        if log.enabled() {
            log.int(wall)
                .uint(p.seq)
                .uint(p.seq & 0xffff)
                .uint(p.rtp_ts as u64)
                .uint(p.frame_id as u64)
                .uint(size as u64)
                .boolean(p.marker)
                .uint(self.cfg.ecn.bits() as u64)
                .int(self.clock.wall(due))
                .int((send_ns - p.enqueued_ns) / 1000);
            log.end();
        }
        p.bytes
    }
}
