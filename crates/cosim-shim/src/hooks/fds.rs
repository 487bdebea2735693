//! Which descriptors refer to files on the simulated device.
//!
//! Each descriptor number has a slot: unknown, not on the device, or the controller's id of the
//! file. A descriptor is classified by the path `/proc/self/fd/N` links to, the first time a
//! hook sees it, so descriptors inherited across `exec` (a shell's `> DIR/file`) are found
//! without any bookkeeping of their own. Opening, closing and duplicating reset the slot.

use super::{conn, sys, Inside, Shim};
use crate::proto::{Kind, Msg};
use std::sync::atomic::{AtomicU32, Ordering};

const SLOTS: usize = 65536;
const UNKNOWN: u32 = 0;
const ELSEWHERE: u32 = 1;
/// Slot values from here on are file ids plus this.
const ID_BASE: u32 = 2;

static FDS: [AtomicU32; SLOTS] = [const { AtomicU32::new(UNKNOWN) }; SLOTS];

/// Forgets what was known about descriptor `fd` (it was opened, closed or replaced).
pub fn forget(fd: i32) {
    if fd >= 0 && (fd as usize) < SLOTS {
        FDS[fd as usize].store(UNKNOWN, Ordering::Relaxed);
    }
}

/// The canonical path descriptor `fd` refers to, as the kernel says.
pub fn fd_path(fd: i32) -> Option<Vec<u8>> {
    let link = format!("/proc/self/fd/{fd}\0");
    let mut buf = vec![0u8; 4097];
    // SAFETY: `link` ends in a NUL; readlink writes at most `buf.len()` bytes into `buf`.
    let n = unsafe { sys::readlink(link.as_ptr().cast(), buf.as_mut_ptr().cast(), buf.len()) };
    if n <= 0 || n as usize >= buf.len() {
        return None;
    }
    buf.truncate(n as usize);
    Some(buf)
}

/// Asks the controller for the id of the file at canonical `path`, creating it if needed.
pub fn file_id(shim: &Shim, path: &[u8]) -> Option<u64> {
    let m = Msg::new(Kind::Open, 0, 0);
    conn::call(shim, &m, path).map(|r| r.value)
}

/// The controller's id of the file behind `fd`, or `None` if it is not on the device.
pub fn classify(shim: &Shim, fd: i32) -> Option<u64> {
    if fd < 0 {
        return None;
    }
    let slot = FDS.get(fd as usize);
    if let Some(s) = slot {
        match s.load(Ordering::Relaxed) {
            UNKNOWN => {}
            ELSEWHERE => return None,
            v => return Some(u64::from(v - ID_BASE)),
        }
    }
    if conn::is_ours(fd) {
        return None;
    }
    let _inside = Inside::enter();
    let id = match fd_path(fd) {
        Some(path) if shim.covers(&path) => file_id(shim, &path),
        _ => None,
    };
    if let Some(s) = slot {
        let v = match id {
            Some(id) if id < u64::from(u32::MAX - ID_BASE) => id as u32 + ID_BASE,
            _ => ELSEWHERE,
        };
        s.store(v, Ordering::Relaxed);
    }
    id
}
