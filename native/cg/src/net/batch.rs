//! Sending and receiving several datagrams per system call (sendmmsg, recvmmsg), with
//! the metadata the receiver needs of each: ECN bits, kernel arrival time, source.
//!
//! Under user-mode Linux (the `sim` testbed) every system call costs two host context
//! switches, so the programs read what is waiting in one call per wake-up, and send the
//! packets one turn sends back to back in one call.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

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

/// The metadata the kernel attached to a received datagram (ECN bits, arrival time).
fn parse_control(msg: &libc::msghdr, meta: &mut RxMeta) {
    // SAFETY: walking the control messages the kernel wrote, with the libc macros.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(msg);
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
            cmsg = libc::CMSG_NXTHDR(msg, cmsg);
        }
    }
}

/// Control-message space per datagram: 128 bytes, 8-byte aligned (TOS and a timespec).
type ControlBuf = [u64; 16];

/// Up to `capacity` datagrams received with one `recvmmsg` call, each with its metadata.
///
/// The caller reads only when `ppoll` reported the socket readable. A batch that came back
/// less than full emptied the socket, so draining it needs no last call that fails with
/// EAGAIN; a full one may have left more behind ([`RecvBatch::more_may_wait`]).
pub struct RecvBatch {
    bufs: Vec<Vec<u8>>,
    addrs: Vec<libc::sockaddr_storage>,
    controls: Vec<ControlBuf>,
    metas: Vec<RxMeta>,
    received: usize,
    /// `recvmmsg` calls made (for the summaries: calls per packet).
    pub calls: u64,
}

impl RecvBatch {
    /// Room for `capacity` datagrams of up to `buf_bytes` bytes each.
    pub fn new(capacity: usize, buf_bytes: usize) -> Self {
        let capacity = capacity.max(1);
        RecvBatch {
            bufs: vec![vec![0u8; buf_bytes]; capacity],
            // SAFETY: sockaddr_storage is plain data; all zeros is a valid value.
            addrs: vec![unsafe { std::mem::zeroed() }; capacity],
            controls: vec![[0u64; 16]; capacity],
            metas: Vec::with_capacity(capacity),
            received: 0,
            calls: 0,
        }
    }

    /// Receives the datagrams waiting on the socket, as many as the batch holds, without
    /// blocking; returns how many (0 when none was waiting).
    pub fn recv(&mut self, sock: &UdpSocket) -> io::Result<usize> {
        let capacity = self.bufs.len();
        let mut iovs: Vec<libc::iovec> = self
            .bufs
            .iter_mut()
            .map(|b| libc::iovec {
                iov_base: b.as_mut_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            })
            .collect();
        let mut hdrs: Vec<libc::mmsghdr> = (0..capacity)
            .map(|i| {
                // SAFETY: mmsghdr is plain data; the pointers set below stay valid (they
                // point into `self` and `iovs`) until recvmmsg returns.
                let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
                h.msg_hdr.msg_name = &mut self.addrs[i] as *mut _ as *mut libc::c_void;
                h.msg_hdr.msg_namelen =
                    std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
                h.msg_hdr.msg_iov = &mut iovs[i];
                h.msg_hdr.msg_iovlen = 1;
                h.msg_hdr.msg_control = self.controls[i].as_mut_ptr() as *mut libc::c_void;
                h.msg_hdr.msg_controllen = std::mem::size_of::<ControlBuf>() as _;
                h
            })
            .collect();
        self.metas.clear();
        self.received = 0;
        self.calls += 1;
        // SAFETY: a valid fd and `capacity` initialised mmsghdrs; no timeout.
        let n = unsafe {
            libc::recvmmsg(
                sock.as_raw_fd(),
                hdrs.as_mut_ptr(),
                capacity as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            return match err.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
                _ => Err(err),
            };
        }
        for (h, addr) in hdrs.iter().zip(&self.addrs).take(n as usize) {
            let mut meta = RxMeta {
                len: h.msg_len as usize,
                src: sockaddr_to_std(addr).unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0))),
                ecn: None,
                kernel_ns: None,
            };
            parse_control(&h.msg_hdr, &mut meta);
            self.metas.push(meta);
        }
        self.received = n as usize;
        Ok(self.received)
    }

    /// The `i`th datagram of the last [`RecvBatch::recv`] and its metadata.
    pub fn datagram(&self, i: usize) -> (&[u8], RxMeta) {
        let meta = self.metas[i];
        (&self.bufs[i][..meta.len], meta)
    }

    /// The last receive filled the batch: more datagrams may be waiting.
    pub fn more_may_wait(&self) -> bool {
        self.received == self.bufs.len()
    }
}

fn sockaddr_from_std(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data, large enough for either family.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            // SAFETY: the storage is large and aligned enough for a sockaddr_in.
            let sin = unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in) };
            sin.sin_family = libc::AF_INET as libc::sa_family_t;
            sin.sin_port = a.port().to_be();
            sin.sin_addr.s_addr = u32::from(*a.ip()).to_be();
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            // SAFETY: the storage is large and aligned enough for a sockaddr_in6.
            let sin6 = unsafe { &mut *(&mut ss as *mut _ as *mut libc::sockaddr_in6) };
            sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            sin6.sin6_port = a.port().to_be();
            sin6.sin6_addr.s6_addr = a.ip().octets();
            sin6.sin6_flowinfo = a.flowinfo();
            sin6.sin6_scope_id = a.scope_id();
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// What [`send_all`] did: the `sendmmsg` calls it made and the datagrams that failed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendOutcome {
    pub calls: u64,
    pub failed: u64,
}

/// Sends `datagrams`, in order, to `dest` with as few `sendmmsg` calls as the kernel
/// allows (one, normally). A datagram the kernel refuses is counted and skipped, as a
/// failed `send_to` would be, and the rest still go.
pub fn send_all(sock: &UdpSocket, dest: SocketAddr, datagrams: &[&[u8]]) -> SendOutcome {
    let mut out = SendOutcome::default();
    if datagrams.is_empty() {
        return out;
    }
    let (mut addr, addr_len) = sockaddr_from_std(dest);
    let mut iovs: Vec<libc::iovec> = datagrams
        .iter()
        .map(|d| libc::iovec {
            iov_base: d.as_ptr() as *mut libc::c_void,
            iov_len: d.len(),
        })
        .collect();
    let mut hdrs: Vec<libc::mmsghdr> = iovs
        .iter_mut()
        .map(|iov| {
            // SAFETY: mmsghdr is plain data; its pointers stay valid until the last call.
            let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
            h.msg_hdr.msg_name = &mut addr as *mut _ as *mut libc::c_void;
            h.msg_hdr.msg_namelen = addr_len;
            h.msg_hdr.msg_iov = iov;
            h.msg_hdr.msg_iovlen = 1;
            h
        })
        .collect();
    let mut next = 0;
    while next < hdrs.len() {
        out.calls += 1;
        // SAFETY: a valid fd and the initialised headers from `next` on; the kernel only
        // reads the datagrams (the iovecs' mutable pointers are never written through).
        let sent = unsafe {
            libc::sendmmsg(
                sock.as_raw_fd(),
                hdrs[next..].as_mut_ptr(),
                (hdrs.len() - next) as libc::c_uint,
                0,
            )
        };
        if sent > 0 {
            next += sent as usize;
        } else {
            // The datagram at `next` failed (sendmmsg reports an error only for the first).
            out.failed += 1;
            next += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{enable_rx_metadata, set_tos, wait_readable, Ecn};

    #[test]
    fn loopback_carries_ecn_and_timestamps() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable_rx_metadata(&rx, false).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        set_tos(&tx, Ecn::Ect1.bits(), false).unwrap();
        let sent = send_all(&tx, rx.local_addr().unwrap(), &[b"hello", b"world!"]);
        assert_eq!(
            sent,
            SendOutcome {
                calls: 1,
                failed: 0
            }
        );
        assert!(wait_readable(&rx, 1_000_000_000));
        let mut batch = RecvBatch::new(4, 64);
        assert_eq!(batch.recv(&rx).unwrap(), 2);
        for (i, want) in [&b"hello"[..], b"world!"].into_iter().enumerate() {
            let (data, m) = batch.datagram(i);
            assert_eq!(data, want);
            assert_eq!(m.ecn, Some(1));
            assert!(m.kernel_ns.is_some());
            assert_eq!(m.src, tx.local_addr().unwrap());
        }
        assert!(!batch.more_may_wait());
        assert_eq!(batch.recv(&rx).unwrap(), 0);
    }

    /// 70 datagrams waiting come out in batches of 32, 32 and 6, in order; the short
    /// last batch says the socket is empty, so the drain stops without a fourth call.
    #[test]
    fn batches_drain_the_socket_in_order() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let payloads: Vec<[u8; 2]> = (0..70u16).map(|i| i.to_be_bytes()).collect();
        let refs: Vec<&[u8]> = payloads.iter().map(|p| &p[..]).collect();
        assert_eq!(send_all(&tx, rx.local_addr().unwrap(), &refs).failed, 0);
        assert!(wait_readable(&rx, 1_000_000_000));
        let mut batch = RecvBatch::new(32, 16);
        let mut got = Vec::new();
        let mut sizes = Vec::new();
        loop {
            let n = batch.recv(&rx).unwrap();
            sizes.push(n);
            got.extend((0..n).map(|i| u16::from_be_bytes(batch.datagram(i).0.try_into().unwrap())));
            if !batch.more_may_wait() {
                break;
            }
        }
        assert_eq!(sizes, [32, 32, 6]);
        assert_eq!(batch.calls, 3);
        assert_eq!(got, (0..70).collect::<Vec<u16>>());
    }

    /// A datagram the kernel refuses (too large for UDP) is counted, and those after it
    /// still go, as with one send_to each.
    #[test]
    fn a_refused_datagram_does_not_stop_the_rest() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let huge = vec![0u8; 70_000];
        let sent = send_all(&tx, rx.local_addr().unwrap(), &[b"a", &huge, b"c"]);
        assert_eq!(
            sent,
            SendOutcome {
                calls: 3,
                failed: 1
            }
        );
        assert!(wait_readable(&rx, 1_000_000_000));
        let mut batch = RecvBatch::new(8, 16);
        assert_eq!(batch.recv(&rx).unwrap(), 2);
        assert_eq!(batch.datagram(0).0, b"a");
        assert_eq!(batch.datagram(1).0, b"c");
    }
}
