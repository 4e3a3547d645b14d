//! What the sender learns from the receiver, and from its silence: RFC 8888 feedback and
//! TFRC reports drive the controller; past the reordering window a missing packet is lost
//! (the `AfterGap` rule), and with no feedback at all the controller times out.

use super::logs::log_controller;
use super::Sender;
use crate::history::FeedbackSummary;
use crate::net::RecvBatch;
use crate::rfc8888::{Feedback, FMT_CCFB, PT_RTPFB};
use crate::rtcp::{self, TfrcReport};

impl Sender {
    /// Handles every feedback datagram waiting on the socket (never blocks); returns how
    /// many there were. `batch` is the loop's receive buffer.
    pub(super) fn read_feedback(&mut self, batch: &mut RecvBatch, now: i64) -> usize {
        let mut handled = 0;
        loop {
            let n = batch.recv(&self.sock).unwrap_or(0);
            for i in 0..n {
                self.on_datagram(batch.datagram(i).0, now);
            }
            handled += n;
            if !batch.more_may_wait() {
                return handled;
            }
        }
    }

    fn on_datagram(&mut self, datagram: &[u8], now: i64) {
        let Some(parts) = rtcp::split(datagram) else {
            self.counts.rtcp_malformed += 1;
            return;
        };
        for part in parts {
            if part[1] == PT_RTPFB && part[0] & 0x1f == FMT_CCFB {
                match Feedback::decode(part, self.cfg.num_reports) {
                    Ok(fb) => self.on_ccfb(&fb, now),
                    Err(_) => self.counts.rtcp_malformed += 1,
                }
            } else if rtcp::is_app(part) {
                match TfrcReport::decode(part) {
                    Some(r) => self.on_tfrc_report(&r, now),
                    None => self.counts.rtcp_malformed += 1,
                }
            } else {
                self.counts.rtcp_unknown += 1;
            }
        }
    }

    /// An RFC 8888 report: what it acknowledges, marks and reveals lost.
    fn on_ccfb(&mut self, fb: &Feedback, now: i64) {
        let s = self.history.on_feedback(fb, now, &self.clock);
        self.last_feedback_ns = now;
        self.cc.on_feedback(&s);
        if s.needs_keyframe(self.last_keyframe_rtp_ts) {
            self.request_keyframe();
        }
        let qd = self.queue.delay_s(now);
        self.log_controller(
            now,
            "feedback",
            self.history.bytes_in_flight(),
            Some(&s),
            qd,
        );
    }

    /// A TFRC receiver report; its round trip is measured here from its echoed times.
    fn on_tfrc_report(&mut self, r: &TfrcReport, now: i64) {
        self.counts.tfrc_reports += 1;
        let now_us = self.clock.wall(now) / 1000;
        let rtt_us = now_us - r.t_recvdata_us as i64 - r.t_delay_us as i64;
        self.cc.on_tfrc_report(now, r, rtt_us.max(10) * 1000);
        let qd = self.queue.delay_s(now);
        self.log_controller(now, "tfrc_report", self.history.bytes_in_flight(), None, qd);
    }

    /// Timers: losses past the reordering window (the `AfterGap` rule), the feedback
    /// timeout, the controller's own timers.
    pub(super) fn check_timers(&mut self, now: i64) {
        let mut tick = FeedbackSummary {
            now_ns: now,
            bytes_in_flight: self.history.bytes_in_flight(),
            ..FeedbackSummary::default()
        };
        self.history.detect_losses(now, &mut tick);
        if tick.packets_newly_lost > 0 {
            self.cc.on_feedback(&tick);
            if tick.needs_keyframe(self.last_keyframe_rtp_ts) {
                self.request_keyframe();
            }
            let bif = self.history.bytes_in_flight();
            self.log_controller(now, "loss_timer", bif, Some(&tick), 0.0);
        }
        if now - self.last_feedback_ns > self.cfg.feedback_timeout_ns {
            self.history.on_feedback_timeout();
            self.cc.on_feedback_timeout(now);
            self.last_feedback_ns = now;
            self.log_controller(now, "feedback_timeout", 0, None, 0.0);
        }
        self.cc.on_tick(now);
    }

    /// One controller.csv row: the controller's state after `event`.
    fn log_controller(
        &mut self,
        now: i64,
        event: &str,
        bytes_in_flight: u64,
        fb: Option<&FeedbackSummary>,
        queue_delay_s: f64,
    ) {
        log_controller(
            &mut self.logs.controller,
            &self.clock,
            now,
            event,
            self.cc.as_ref(),
            bytes_in_flight,
            fb,
            self.queue.bytes(),
            queue_delay_s,
        );
    }
}
