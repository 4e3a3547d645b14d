//! UDP sockets with what std does not offer: the ECN bits of outgoing packets (IP_TOS /
//! IPV6_TCLASS), the ECN bits and kernel arrival time of incoming packets (IP_RECVTOS /
//! IPV6_RECVTCLASS and SO_TIMESTAMPNS control messages), and waiting on a socket with a
//! nanosecond timeout (ppoll).

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

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

/// One received datagram's metadata.
#[derive(Clone, Copy, Debug)]
pub struct RxMeta {
    pub len: usize,
    pub src: SocketAddr,
    /// ECN bits of the IP header, when the kernel reported them.
    pub ecn: Option<u8>,
    /// Kernel receive time, wall clock ns, when reported.
    pub kernel_ns: Option<i64>,
}

fn sockaddr_to_std(ss: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match ss.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let sin = unsafe { &*(ss as *const _ as *const libc::sockaddr_in) };
            let ip = std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            Some(SocketAddr::new(ip.into(), u16::from_be(sin.sin_port)))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let sin6 = unsafe { &*(ss as *const _ as *const libc::sockaddr_in6) };
            let ip = std::net::Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some(SocketAddr::new(ip.into(), u16::from_be(sin6.sin6_port)))
        }
        _ => None,
    }
}

/// Receives one datagram without blocking; Ok(None) when nothing is waiting.
pub fn recv_with_meta(sock: &UdpSocket, buf: &mut [u8]) -> io::Result<Option<RxMeta>> {
    let mut addr: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    let mut control = [0u64; 16]; // 128 bytes, 8-byte aligned
                                  // SAFETY: msghdr is plain data; all pointers below stay valid during recvmsg.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = &mut addr as *mut _ as *mut libc::c_void;
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: valid fd and msghdr.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        let err = io::Error::last_os_error();
        return match err.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
            _ => Err(err),
        };
    }
    let mut meta = RxMeta {
        len: n as usize,
        src: sockaddr_to_std(&addr).unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0))),
        ecn: None,
        kernel_ns: None,
    };
    // SAFETY: walking the control messages the kernel wrote, with the libc macros.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            let h = &*cmsg;
            let data = libc::CMSG_DATA(cmsg);
            match (h.cmsg_level, h.cmsg_type) {
                (libc::IPPROTO_IP, libc::IP_TOS) => meta.ecn = Some(*data & 3),
                (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) => {
                    let v = std::ptr::read_unaligned(data as *const libc::c_int);
                    meta.ecn = Some((v & 3) as u8);
                }
                (libc::SOL_SOCKET, libc::SCM_TIMESTAMPNS) => {
                    let ts = std::ptr::read_unaligned(data as *const libc::timespec);
                    meta.kernel_ns = Some(ts.tv_sec * 1_000_000_000 + ts.tv_nsec);
                }
                _ => {}
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok(Some(meta))
}

/// Receives one datagram without blocking (no metadata).
pub fn recv_nowait(sock: &UdpSocket, buf: &mut [u8]) -> io::Result<Option<(usize, SocketAddr)>> {
    recv_with_meta(sock, buf).map(|m| m.map(|m| (m.len, m.src)))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_carries_ecn_and_timestamps() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable_rx_metadata(&rx, false).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        set_tos(&tx, Ecn::Ect1.bits(), false).unwrap();
        tx.send_to(b"hello", rx.local_addr().unwrap()).unwrap();
        assert!(wait_readable(&rx, 1_000_000_000));
        let mut buf = [0u8; 64];
        let m = recv_with_meta(&rx, &mut buf).unwrap().unwrap();
        assert_eq!(&buf[..m.len], b"hello");
        assert_eq!(m.ecn, Some(1));
        assert!(m.kernel_ns.is_some());
        assert_eq!(m.src, tx.local_addr().unwrap());
        assert!(recv_with_meta(&rx, &mut buf).unwrap().is_none());
    }
}
