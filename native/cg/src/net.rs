//! UDP sockets with what std does not offer: the ECN bits of outgoing packets (IP_TOS /
//! IPV6_TCLASS), the ECN bits and kernel arrival time of incoming packets (IP_RECVTOS /
//! IPV6_RECVTCLASS and SO_TIMESTAMPNS control messages), sending and receiving several
//! datagrams per system call (sendmmsg, recvmmsg), and waiting on a socket with a
//! nanosecond timeout (ppoll).

use std::io;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;

mod batch;

pub use batch::{send_all, RecvBatch, RxMeta, SendOutcome};

/// ECN codepoints (RFC 3168).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ecn {
    NotEct,
    Ect1,
    Ect0,
}

impl Ecn {
    pub fn parse(name: &str) -> Option<Ecn> {
        match name {
            "none" | "not-ect" => Some(Ecn::NotEct),
            "ect1" => Some(Ecn::Ect1),
            "ect0" => Some(Ecn::Ect0),
            _ => None,
        }
    }

    /// The two ECN bits.
    pub fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0,
            Ecn::Ect1 => 1,
            Ecn::Ect0 => 2,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Ecn::NotEct => "none",
            Ecn::Ect1 => "ect1",
            Ecn::Ect0 => "ect0",
        }
    }
}

fn setsockopt_int(
    sock: &UdpSocket,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: a valid fd and a pointer to an int of the stated length.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            name,
            &value as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets the whole TOS / traffic class byte (DSCP << 2 | ECN) of outgoing packets.
pub fn set_tos(sock: &UdpSocket, tos: u8, ipv6: bool) -> io::Result<()> {
    if ipv6 {
        setsockopt_int(
            sock,
            libc::IPPROTO_IPV6,
            libc::IPV6_TCLASS,
            tos as libc::c_int,
        )
    } else {
        setsockopt_int(sock, libc::IPPROTO_IP, libc::IP_TOS, tos as libc::c_int)
    }
}

/// Asks for the TOS byte and the kernel receive time of each incoming packet.
pub fn enable_rx_metadata(sock: &UdpSocket, ipv6: bool) -> io::Result<()> {
    if ipv6 {
        setsockopt_int(sock, libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS, 1)?;
    } else {
        setsockopt_int(sock, libc::IPPROTO_IP, libc::IP_RECVTOS, 1)?;
    }
    setsockopt_int(sock, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
}

/// Larger socket buffers, so that a burst of a key frame is not dropped by the host.
pub fn set_buffers(sock: &UdpSocket, bytes: usize) {
    let v = bytes.min(i32::MAX as usize) as libc::c_int;
    let _ = setsockopt_int(sock, libc::SOL_SOCKET, libc::SO_SNDBUF, v);
    let _ = setsockopt_int(sock, libc::SOL_SOCKET, libc::SO_RCVBUF, v);
}

/// Waits until the socket is readable or `timeout_ns` passes (negative: no wait).
/// Returns true when readable.
pub fn wait_readable(sock: &UdpSocket, timeout_ns: i64) -> bool {
    let mut pfd = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let t = timeout_ns.max(0);
    let ts = libc::timespec {
        tv_sec: t / 1_000_000_000,
        tv_nsec: t % 1_000_000_000,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask change.
    let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    rc > 0 && pfd.revents & libc::POLLIN != 0
}
