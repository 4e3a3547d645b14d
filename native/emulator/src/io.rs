//! AF_PACKET sockets: one per interface, bound to it, promiscuous, reading through a
//! memory-mapped TPACKET_V2 ring (no system call per frame, and a kernel receive time
//! stamp with every frame) and writing with sendmmsg.
//!
//! PACKET_IGNORE_OUTGOING (and a check of the packet type) keeps a socket from reading the
//! frames the emulator itself writes to the same interface.

use std::ffi::CString;
use std::io;

const ETH_P_ALL: u16 = 0x0003;
const SOL_PACKET: libc::c_int = 263;
const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
const PACKET_RX_RING: libc::c_int = 5;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_VERSION: libc::c_int = 10;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const PACKET_MR_PROMISC: libc::c_ushort = 1;
const TPACKET_V2: libc::c_int = 1;
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_CSUMNOTREADY: u32 = 1 << 3;
const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;
const PACKET_OUTGOING: u8 = 4;
const SIOCGIFMTU: libc::c_ulong = 0x8921;
const TPACKET2_HDRLEN: usize = 32;

#[repr(C)]
struct Tpacket2Hdr {
    tp_status: u32,
    tp_len: u32,
    tp_snaplen: u32,
    tp_mac: u16,
    tp_net: u16,
    tp_sec: u32,
    tp_nsec: u32,
    tp_vlan_tci: u16,
    tp_vlan_tpid: u16,
    tp_padding: [u8; 4],
}

#[repr(C)]
struct TpacketReq {
    tp_block_size: libc::c_uint,
    tp_block_nr: libc::c_uint,
    tp_frame_size: libc::c_uint,
    tp_frame_nr: libc::c_uint,
}

#[repr(C)]
#[derive(Default)]
struct TpacketStats {
    tp_packets: libc::c_uint,
    tp_drops: libc::c_uint,
}

#[repr(C)]
struct PacketMreq {
    mr_ifindex: libc::c_int,
    mr_type: libc::c_ushort,
    mr_alen: libc::c_ushort,
    mr_address: [u8; 8],
}

#[repr(C)]
struct IfreqMtu {
    name: [libc::c_char; libc::IFNAMSIZ],
    mtu: libc::c_int,
    _pad: [u8; 20],
}

/// Why a socket could not be opened: the interface does not exist (a configuration error)
/// or the system refused (permissions, memory).
pub enum OpenError {
    NoSuchInterface,
    Os(String),
}

/// A received frame, valid until the callback returns.
pub struct Frame<'a> {
    pub data: &'a [u8],
    /// Kernel receive time, CLOCK_REALTIME ns.
    pub ts_real_ns: i64,
    /// The sender left the transport checksum to offload; it must be completed.
    pub csum_not_ready: bool,
    /// The frame was longer than a ring slot (TSO/GSO/GRO super-packet) and is cut short.
    pub truncated: bool,
    /// An 802.1Q tag the kernel stripped (TCI, TPID), to put back.
    pub vlan: Option<(u16, u16)>,
}

pub struct PacketSocket {
    pub fd: libc::c_int,
    pub ifname: String,
    pub mtu: u32,
    ring: *mut u8,
    ring_len: usize,
    frame_size: usize,
    frame_nr: usize,
    cur: usize,
}

fn os_err(what: &str, ifname: &str) -> OpenError {
    OpenError::Os(format!(
        "{what} on {ifname}: {}",
        io::Error::last_os_error()
    ))
}

fn setsockopt<T>(fd: libc::c_int, level: libc::c_int, name: libc::c_int, val: &T) -> libc::c_int {
    // SAFETY: `val` points to a live T of the size we pass.
    unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            val as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    }
}

impl PacketSocket {
    pub fn open(ifname: &str, ring_bytes: usize) -> Result<Self, OpenError> {
        let cname = CString::new(ifname).map_err(|_| OpenError::NoSuchInterface)?;
        // SAFETY: plain libc calls on a name we own.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) } as libc::c_int;
        if ifindex == 0 {
            return Err(OpenError::NoSuchInterface);
        }
        // Protocol 0 until bound: the socket must not collect frames of other interfaces.
        // SAFETY: socket() has no memory-safety preconditions.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                0,
            )
        };
        if fd < 0 {
            return Err(os_err(
                "cannot open an AF_PACKET socket (needs root or CAP_NET_RAW)",
                ifname,
            ));
        }
        let mut sock = PacketSocket {
            fd,
            ifname: ifname.to_string(),
            mtu: 1500,
            ring: std::ptr::null_mut(),
            ring_len: 0,
            frame_size: 0,
            frame_nr: 0,
            cur: 0,
        };
        sock.mtu = sock.read_mtu().unwrap_or(1500);
        let one: libc::c_int = 1;
        // Older kernels lack it; the packet-type check in poll_rx covers them.
        setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one);
        let version: libc::c_int = TPACKET_V2;
        if setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version) != 0 {
            return Err(os_err("cannot select TPACKET_V2", ifname));
        }
        // A slot holds the header, the address and a whole frame (MTU + Ethernet + VLAN).
        let needed = TPACKET2_HDRLEN + 32 + 16 + sock.mtu as usize + 18;
        let frame_size = needed.next_power_of_two().max(2048);
        let block_size = frame_size.max(1 << 16);
        let block_nr = (ring_bytes / block_size).max(1);
        let req = TpacketReq {
            tp_block_size: block_size as u32,
            tp_block_nr: block_nr as u32,
            tp_frame_size: frame_size as u32,
            tp_frame_nr: (block_nr * (block_size / frame_size)) as u32,
        };
        if setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req) != 0 {
            return Err(os_err("cannot set up the receive ring", ifname));
        }
        let ring_len = block_size * block_nr;
        // SAFETY: mapping the ring the kernel just allocated for this socket.
        let ring = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ring_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if ring == libc::MAP_FAILED {
            return Err(os_err("cannot map the receive ring", ifname));
        }
        sock.ring = ring as *mut u8;
        sock.ring_len = ring_len;
        sock.frame_size = frame_size;
        sock.frame_nr = req.tp_frame_nr as usize;
        let sndbuf: libc::c_int = 8 << 20;
        if setsockopt(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &sndbuf) != 0 {
            setsockopt(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, &sndbuf);
        }
        // SAFETY: zero is a valid sockaddr_ll bit pattern; we fill the fields we need.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ETH_P_ALL.to_be();
        sll.sll_ifindex = ifindex;
        // SAFETY: binding to an address struct we own, of the right size.
        let rc = unsafe {
            libc::bind(
                fd,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(os_err("cannot bind the AF_PACKET socket", ifname));
        }
        let mreq = PacketMreq {
            mr_ifindex: ifindex,
            mr_type: PACKET_MR_PROMISC,
            mr_alen: 0,
            mr_address: [0; 8],
        };
        if setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq) != 0 {
            return Err(os_err("cannot enable promiscuous mode", ifname));
        }
        Ok(sock)
    }

    fn read_mtu(&self) -> Option<u32> {
        let mut req = IfreqMtu {
            name: [0; libc::IFNAMSIZ],
            mtu: 0,
            _pad: [0; 20],
        };
        for (d, s) in req.name.iter_mut().zip(self.ifname.bytes()) {
            *d = s as libc::c_char;
        }
        // SAFETY: SIOCGIFMTU reads the name and writes the MTU into our ifreq-sized struct.
        let rc = unsafe { libc::ioctl(self.fd, SIOCGIFMTU as _, &mut req as *mut IfreqMtu) };
        (rc == 0 && req.mtu > 0).then_some(req.mtu as u32)
    }

    /// Hands every frame waiting in the ring (at most `max`) to `f`, oldest first, and
    /// returns how many there were.
    pub fn poll_rx(&mut self, max: usize, mut f: impl FnMut(Frame)) -> usize {
        let mut n = 0;
        while n < max {
            // SAFETY: cur < frame_nr, so the header lies inside the mapping; the kernel hands
            // a slot to us by setting TP_STATUS_USER and we hand it back with KERNEL.
            let hdr = unsafe { self.ring.add(self.cur * self.frame_size) } as *mut Tpacket2Hdr;
            let status = unsafe { std::ptr::read_volatile(&(*hdr).tp_status) };
            if status & TP_STATUS_USER == 0 {
                break;
            }
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
            let h = unsafe { &*hdr };
            // sockaddr_ll follows the aligned header; sll_pkttype is at byte 10 of it.
            let pkttype = unsafe {
                *self
                    .ring
                    .add(self.cur * self.frame_size + TPACKET2_HDRLEN + 10)
            };
            if pkttype != PACKET_OUTGOING {
                let mac = h.tp_mac as usize;
                let snap = (h.tp_snaplen as usize).min(self.frame_size.saturating_sub(mac));
                // SAFETY: tp_mac + tp_snaplen lies within the slot (the kernel guarantees it;
                // we clamp anyway).
                let data = unsafe {
                    std::slice::from_raw_parts(
                        self.ring.add(self.cur * self.frame_size + mac),
                        snap,
                    )
                };
                let vlan = (status & TP_STATUS_VLAN_VALID != 0).then(|| {
                    let tpid = if status & TP_STATUS_VLAN_TPID_VALID != 0 {
                        h.tp_vlan_tpid
                    } else {
                        0x8100
                    };
                    (h.tp_vlan_tci, tpid)
                });
                f(Frame {
                    data,
                    ts_real_ns: h.tp_sec as i64 * 1_000_000_000 + h.tp_nsec as i64,
                    csum_not_ready: status & TP_STATUS_CSUMNOTREADY != 0,
                    truncated: h.tp_len as usize > snap,
                    vlan,
                });
                n += 1;
            }
            std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
            unsafe { std::ptr::write_volatile(&mut (*hdr).tp_status, TP_STATUS_KERNEL) };
            self.cur = (self.cur + 1) % self.frame_nr;
        }
        n
    }

    /// Writes frames out of this interface; returns how many failed (and the first error).
    pub fn send_batch(&self, frames: &[&[u8]]) -> (usize, Option<io::Error>) {
        let mut failed = 0;
        let mut first_err = None;
        let mut i = 0;
        while i < frames.len() {
            let chunk = &frames[i..frames.len().min(i + 256)];
            let mut iovs: Vec<libc::iovec> = chunk
                .iter()
                .map(|f| libc::iovec {
                    iov_base: f.as_ptr() as *mut libc::c_void,
                    iov_len: f.len(),
                })
                .collect();
            // SAFETY: zeroed mmsghdr is valid; we point each at one iovec we own.
            let mut msgs: Vec<libc::mmsghdr> = iovs
                .iter_mut()
                .map(|iov| {
                    let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                    m.msg_hdr.msg_iov = iov as *mut libc::iovec;
                    m.msg_hdr.msg_iovlen = 1;
                    m
                })
                .collect();
            // SAFETY: msgs and the iovecs and frames they point to outlive the call.
            let rc = unsafe {
                libc::sendmmsg(
                    self.fd,
                    msgs.as_mut_ptr(),
                    msgs.len() as _,
                    libc::MSG_DONTWAIT,
                )
            };
            if rc < 0 {
                // The first frame failed: skip it and carry on with the rest.
                if first_err.is_none() {
                    first_err = Some(io::Error::last_os_error());
                }
                failed += 1;
                i += 1;
            } else {
                i += (rc as usize).max(1);
                if rc == 0 {
                    failed += 1;
                }
            }
        }
        (failed, first_err)
    }

    /// Frames the kernel dropped because the ring was full (since the last call).
    pub fn ring_drops(&self) -> u64 {
        let mut st = TpacketStats::default();
        let mut len = std::mem::size_of::<TpacketStats>() as libc::socklen_t;
        // SAFETY: getsockopt writes at most `len` bytes into `st`.
        let rc = unsafe {
            libc::getsockopt(
                self.fd,
                SOL_PACKET,
                PACKET_STATISTICS,
                &mut st as *mut TpacketStats as *mut libc::c_void,
                &mut len,
            )
        };
        if rc == 0 {
            st.tp_drops as u64
        } else {
            0
        }
    }
}

impl Drop for PacketSocket {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping and closing our own descriptor, once.
        unsafe {
            if !self.ring.is_null() {
                libc::munmap(self.ring as *mut libc::c_void, self.ring_len);
            }
            libc::close(self.fd);
        }
    }
}
