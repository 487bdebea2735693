//! The INIT handshake: the protocol version, the features asked for, and whether the
//! io_uring transport is granted.

use std::sync::atomic::Ordering;

use super::{InitState, RingGrant, Session, MAX_IO_BYTES};
use crate::abi;
use crate::reply::Route;

const MAX_PAGES: u16 = (MAX_IO_BYTES / 4096) as u16;
/// Background requests (asynchronous reads and direct I/O from the loop driver or io_uring) the
/// kernel keeps in flight before it makes submitters wait. The default of 12 would cap the
/// queue depth a device model sees; 512 is above the loop driver's own 128 and deep enough for
/// NVMe-like workloads. The kernel lowers it for unprivileged mounts (`max_user_bgreq`).
const MAX_BACKGROUND: u16 = 512;
const CONGESTION_THRESHOLD: u16 = 384;

impl Session {
    fn fail_init(&self, route: Route, reason: String) {
        self.channel.log(&format!("fuse: {reason}"));
        route.reply_error(libc::EPROTO);
        self.lock_state().init = InitState::Failed(reason);
        self.changed.notify_all();
    }

    pub(super) fn init(&self, route: Route, body: &[u8]) {
        // A second INIT, or one through a ring entry, is not the handshake.
        if self.kernel_minor.load(Ordering::Acquire) != 0 || route.is_ring() {
            return route.reply_error(libc::EIO);
        }
        if body.len() < abi::INIT_IN_MIN_SIZE {
            return self.fail_init(route, format!("INIT body of {} bytes", body.len()));
        }
        let Some(init) = abi::InitIn::parse(body) else {
            return self.fail_init(route, "malformed INIT".to_string());
        };
        if init.major != abi::KERNEL_VERSION || init.minor < abi::MIN_KERNEL_MINOR {
            return self.fail_init(
                route,
                format!(
                    "kernel speaks FUSE {}.{}; need {}.{} or later",
                    init.major,
                    init.minor,
                    abi::KERNEL_VERSION,
                    abi::MIN_KERNEL_MINOR
                ),
            );
        }
        use abi::init_flag as f;
        // Asynchronous reads and direct I/O let the kernel keep several requests in flight;
        // big writes and max_pages let one request carry up to 1 MiB. The writeback cache is
        // deliberately not asked for: the page cache must never answer for the device.
        // Neither is atomic O_TRUNC: with it the kernel sets its cached size of the file to
        // zero on every open with O_TRUNC, and direct I/O through other descriptors (a loop
        // device's) would then be clipped at that wrong end of file. Without it, O_TRUNC
        // arrives as a SETATTR of the size, which fails like any other resize.
        let wanted =
            f::ASYNC_READ | f::BIG_WRITES | f::ASYNC_DIO | f::PARALLEL_DIROPS | f::MAX_PAGES;
        let mut flags = wanted & init.flags;
        // FUSE_OVER_IO_URING lives in flags2, which counts only with FUSE_INIT_EXT set on
        // both sides. Granting it is a promise to register the ring right after this reply:
        // the kernel holds every new request until each queue has an entry.
        let offered =
            init.flags & f::INIT_EXT != 0 && init.flags2 & abi::init_flag2::OVER_IO_URING != 0;
        let (flags2, grant) = match (&self.ring, offered) {
            (Some(_), true) => {
                flags |= f::INIT_EXT;
                (abi::init_flag2::OVER_IO_URING, RingGrant::Granted)
            }
            (Some(_), false) => (
                0,
                RingGrant::NotUsed(format!(
                    "the kernel did not offer FUSE_OVER_IO_URING in INIT (flags {:#x}, flags2 \
                     {:#x})",
                    init.flags, init.flags2
                )),
            ),
            (None, _) => (0, RingGrant::NotUsed("no ring was prepared".to_string())),
        };
        let out = abi::InitOut {
            minor: abi::KERNEL_MINOR_VERSION,
            max_readahead: init.max_readahead.min(MAX_IO_BYTES),
            flags,
            flags2,
            max_background: MAX_BACKGROUND,
            congestion_threshold: CONGESTION_THRESHOLD,
            max_write: MAX_IO_BYTES,
            max_pages: MAX_PAGES,
        };
        let payload = abi::init_out(&out, init.minor);
        // The kernel releases queued requests the moment it reads this reply, and another
        // reader may pick one up at once, so the session must count as initialised first.
        self.kernel_minor.store(init.minor, Ordering::Release);
        *self.ring_grant.lock().unwrap_or_else(|e| e.into_inner()) = Some(grant);
        route.reply(&[&payload]);
        self.channel.log(&format!(
            "fuse: INIT kernel {}.{}, answered {}.{}, flags {:#x}, flags2 {:#x}, max_write {}",
            init.major,
            init.minor,
            abi::KERNEL_VERSION,
            abi::KERNEL_MINOR_VERSION,
            flags,
            flags2,
            MAX_IO_BYTES
        ));
        self.lock_state().init = InitState::Done;
        self.changed.notify_all();
    }
}
