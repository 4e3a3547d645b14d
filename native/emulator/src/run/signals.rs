//! The signals that stop the emulator, received through a signalfd.

use super::{fail, RunError};

pub struct Signals {
    pub fd: libc::c_int,
}

impl Signals {
    /// Blocks SIGTERM, SIGINT and SIGHUP and receives them through a signalfd, so a signal
    /// can never slip in between checking for it and going to sleep.
    pub fn install() -> Result<Self, RunError> {
        // SAFETY: sigset manipulation on a local set; signalfd on it.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for s in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
                libc::sigaddset(&mut set, s);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            let fd = libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
            if fd < 0 {
                return Err(fail(
                    1,
                    format!("signalfd: {}", std::io::Error::last_os_error()),
                ));
            }
            Ok(Signals { fd })
        }
    }

    pub fn pending(&self) -> bool {
        let mut buf = [0u8; 128];
        // SAFETY: reading into a local buffer of the size we pass.
        let n = unsafe { libc::read(self.fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
        n > 0
    }
}
