//! The memory of the ring entries: per entry, a `struct fuse_uring_req_header` (the FUSE in or
//! out header, the opcode's own header, and `struct fuse_uring_ent_in_out`) and a payload
//! buffer as large as the largest request. The kernel copies requests into them and replies
//! out of them; whoever holds an entry's [`Entry`] may touch its memory, and nobody else.

use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};

/// `FUSE_URING_IN_OUT_HEADER_SZ`: the space for `fuse_in_header` / `fuse_out_header`.
pub(crate) const IN_OUT_BYTES: usize = 128;
/// `FUSE_URING_OP_IN_OUT_SZ`: the space for the opcode's header (`fuse_read_in`, ...).
pub(crate) const OP_IN_BYTES: usize = 128;
/// Where `struct fuse_uring_ent_in_out` starts, and its size.
const ENT_IN_OUT_OFFSET: usize = IN_OUT_BYTES + OP_IN_BYTES;
const ENT_IN_OUT_BYTES: usize = 32;
/// `sizeof(struct fuse_uring_req_header)`: the kernel refuses a smaller header buffer.
pub(crate) const REQ_HEADER_BYTES: usize = ENT_IN_OUT_OFFSET + ENT_IN_OUT_BYTES;
/// Headers are spaced a cache line apart beyond their size, so neighbouring entries that two
/// threads fill at once do not share a line.
const HEADER_STRIDE: usize = 320;

/// What the kernel put in an entry's header when it handed over a request.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RingHeader {
    /// `fuse_in_header`, as bytes.
    pub in_header: [u8; IN_OUT_BYTES],
    /// The opcode's header (`in_args[0]`), as bytes; its length is not transmitted.
    pub op_in: [u8; OP_IN_BYTES],
    /// `fuse_uring_ent_in_out.commit_id`: what a commit names the request by.
    pub commit_id: u64,
    /// `fuse_uring_ent_in_out.payload_sz`: the bytes of the payload buffer in use.
    pub payload_bytes: u32,
}

/// The right to read and write one entry's memory: made when the kernel hands the entry a
/// request, given up when its commit is submitted. Neither `Clone` nor `Copy`.
#[derive(Debug)]
pub(crate) struct Entry {
    index: u32,
}

/// An anonymous private mapping.
struct Region {
    ptr: NonNull<u8>,
    len: usize,
}

impl Region {
    fn new(len: usize) -> io::Result<Region> {
        // SAFETY: a fresh anonymous mapping; no existing memory is touched. MAP_NORESERVE
        // because most of it (payload space for 1 MiB requests) is never touched by 4 KiB I/O.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len.max(1),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(ptr as *mut u8).ok_or_else(|| io::Error::other("mmap gave null"))?;
        Ok(Region {
            ptr,
            len: len.max(1),
        })
    }
}

impl Drop for Region {
    /// Gives the memory back but keeps the address range reserved, never unmapping it. The
    /// kernel may still copy a request into an entry after the ring is closed (a copy queued as
    /// task work on the thread that last committed the entry runs when that thread next
    /// enters the kernel), and there is no way to learn when the last one has run. Were the
    /// range unmapped, a later mapping could land on it and receive those bytes; reserved, a
    /// late copy only faults in a zero page of this dead range.
    fn drop(&mut self) {
        // SAFETY: the range is this region's own mapping; MADV_DONTNEED on private anonymous
        // memory only discards its contents.
        unsafe {
            libc::madvise(
                self.ptr.as_ptr() as *mut libc::c_void,
                self.len,
                libc::MADV_DONTNEED,
            );
        }
    }
}

/// Every entry's header and payload buffer, plus the iovec pairs that register them.
pub(crate) struct Buffers {
    headers: Region,
    payloads: Region,
    /// One `[header, payload]` iovec pair per entry, at a fixed address for as long as the
    /// buffers live: the kernel reads it while registering (possibly from a worker thread
    /// after `io_uring_enter` returned, when it defers the command).
    iovecs: Box<[[libc::iovec; 2]]>,
    /// Which entries are held by someone in user space.
    held: Box<[AtomicBool]>,
    payload_bytes: usize,
}

// SAFETY: the raw pointers inside are to mappings this value owns; access to an entry's bytes
// requires its `Entry`, of which at most one exists at a time (`held`), and the iovecs are
// written once at creation.
unsafe impl Send for Buffers {}
// SAFETY: as for Send.
unsafe impl Sync for Buffers {}

impl Buffers {
    /// Memory for `entries` entries with payload buffers of `payload_bytes` each.
    pub fn new(entries: u32, payload_bytes: usize) -> io::Result<Buffers> {
        let n = entries as usize;
        let too_big = || io::Error::other("ring buffers too large");
        let headers = Region::new(n.checked_mul(HEADER_STRIDE).ok_or_else(too_big)?)?;
        let payloads = Region::new(n.checked_mul(payload_bytes).ok_or_else(too_big)?)?;
        let iovecs = (0..n)
            .map(|i| {
                // SAFETY: both offsets are within their regions: i < n entries of the stride.
                unsafe {
                    [
                        libc::iovec {
                            iov_base: headers.ptr.as_ptr().add(i * HEADER_STRIDE) as *mut _,
                            iov_len: REQ_HEADER_BYTES,
                        },
                        libc::iovec {
                            iov_base: payloads.ptr.as_ptr().add(i * payload_bytes) as *mut _,
                            iov_len: payload_bytes,
                        },
                    ]
                }
            })
            .collect();
        let held = (0..n).map(|_| AtomicBool::new(false)).collect();
        Ok(Buffers {
            headers,
            payloads,
            iovecs,
            held,
            payload_bytes,
        })
    }

    pub fn entries(&self) -> u32 {
        self.held.len() as u32
    }

    pub fn payload_capacity(&self) -> usize {
        self.payload_bytes
    }

    /// The address of entry `index`'s iovec pair, for FUSE_IO_URING_CMD_REGISTER.
    pub fn iovec_addr(&self, index: u32) -> u64 {
        self.iovecs[index as usize].as_ptr() as u64
    }

    /// Takes hold of entry `index`, whose request the kernel has just completed. `None` for an
    /// index out of range or an entry already held: the kernel never hands over an entry
    /// twice, so either means a completion that is not a FUSE request.
    pub fn claim(&self, index: u64) -> Option<Entry> {
        let slot = self.held.get(usize::try_from(index).ok()?)?;
        slot.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()?;
        Some(Entry {
            index: index as u32,
        })
    }

    /// Gives entry `entry` back, just before its commit is submitted: from then on the kernel
    /// owns its memory.
    pub fn release(&self, entry: Entry) -> u32 {
        self.held[entry.index as usize].store(false, Ordering::Release);
        entry.index
    }

    fn header_ptr(&self, entry: &Entry) -> *mut u8 {
        // SAFETY: an Entry's index is below the entry count, so the offset is in the region.
        unsafe {
            self.headers
                .ptr
                .as_ptr()
                .add(entry.index as usize * HEADER_STRIDE)
        }
    }

    fn payload_ptr(&self, entry: &Entry) -> *mut u8 {
        // SAFETY: as in header_ptr, for the payload region.
        unsafe {
            self.payloads
                .ptr
                .as_ptr()
                .add(entry.index as usize * self.payload_bytes)
        }
    }

    /// The header of the request the entry holds.
    pub fn header(&self, entry: &Entry) -> RingHeader {
        let mut raw = [0u8; REQ_HEADER_BYTES];
        // SAFETY: the header is REQ_HEADER_BYTES long, and holding `entry` means the kernel is
        // not writing it.
        unsafe {
            std::ptr::copy_nonoverlapping(self.header_ptr(entry), raw.as_mut_ptr(), raw.len());
        }
        let mut in_header = [0u8; IN_OUT_BYTES];
        in_header.copy_from_slice(&raw[..IN_OUT_BYTES]);
        let mut op_in = [0u8; OP_IN_BYTES];
        op_in.copy_from_slice(&raw[IN_OUT_BYTES..ENT_IN_OUT_OFFSET]);
        let e = &raw[ENT_IN_OUT_OFFSET..];
        RingHeader {
            in_header,
            op_in,
            commit_id: u64::from_ne_bytes(e[8..16].try_into().expect("8 bytes")),
            payload_bytes: u32::from_ne_bytes(e[16..20].try_into().expect("4 bytes")),
        }
    }

    /// The first `len` bytes of the entry's payload buffer; `None` if `len` exceeds it.
    pub fn payload<'a>(&'a self, entry: &'a Entry, len: usize) -> Option<&'a [u8]> {
        if len > self.payload_bytes {
            return None;
        }
        // SAFETY: `len` bytes fit in the entry's buffer; the slice lives no longer than the
        // borrows of `self` (the mapping) and `entry`, and while the entry is held the kernel
        // does not write the buffer.
        Some(unsafe { std::slice::from_raw_parts(self.payload_ptr(entry), len) })
    }

    /// Writes a reply into the entry: `out_header` (16 bytes of `fuse_out_header`) into the
    /// header's in/out part, the concatenated `parts` into the payload buffer, and their
    /// length into `fuse_uring_ent_in_out.payload_sz`. Returns false, writing nothing, if the
    /// parts do not fit.
    pub fn write_reply(&self, entry: &mut Entry, out_header: &[u8], parts: &[&[u8]]) -> bool {
        let total: usize = parts.iter().map(|p| p.len()).sum();
        if total > self.payload_bytes || out_header.len() > IN_OUT_BYTES {
            return false;
        }
        let Ok(total_u32) = u32::try_from(total) else {
            return false;
        };
        let header = self.header_ptr(entry);
        let mut at = self.payload_ptr(entry);
        // SAFETY: every write stays within the entry's header (REQ_HEADER_BYTES) or payload
        // buffer (total <= payload_bytes, checked above); `&mut Entry` makes this the only
        // writer, and the kernel does not read until the commit is submitted.
        unsafe {
            std::ptr::copy_nonoverlapping(out_header.as_ptr(), header, out_header.len());
            let ent = header.add(ENT_IN_OUT_OFFSET);
            // flags and commit_id (echoed in the command, not read back here), payload_sz,
            // padding, reserved.
            std::ptr::copy_nonoverlapping(total_u32.to_ne_bytes().as_ptr(), ent.add(16), 4);
            std::ptr::write_bytes(ent.add(20), 0, 4);
            for part in parts {
                std::ptr::copy_nonoverlapping(part.as_ptr(), at, part.len());
                at = at.add(part.len());
            }
        }
        true
    }

    /// Test support: writes a request into the entry as the kernel would (`payload_sz` set to
    /// the payload's length unless `claimed_payload` says otherwise).
    #[cfg(test)]
    pub fn fake_request(
        &self,
        entry: &mut Entry,
        in_header: &[u8],
        op_in: &[u8],
        payload: &[u8],
        commit_id: u64,
        claimed_payload: Option<u32>,
    ) {
        assert!(in_header.len() <= IN_OUT_BYTES && op_in.len() <= OP_IN_BYTES);
        assert!(payload.len() <= self.payload_bytes);
        let header = self.header_ptr(entry);
        // SAFETY: all writes are within the entry's header and payload, which `&mut Entry`
        // gives exclusive use of.
        unsafe {
            std::ptr::write_bytes(header, 0, REQ_HEADER_BYTES);
            std::ptr::copy_nonoverlapping(in_header.as_ptr(), header, in_header.len());
            std::ptr::copy_nonoverlapping(op_in.as_ptr(), header.add(IN_OUT_BYTES), op_in.len());
            let ent = header.add(ENT_IN_OUT_OFFSET);
            std::ptr::copy_nonoverlapping(commit_id.to_ne_bytes().as_ptr(), ent.add(8), 8);
            let payload_sz = claimed_payload.unwrap_or(payload.len() as u32);
            std::ptr::copy_nonoverlapping(payload_sz.to_ne_bytes().as_ptr(), ent.add(16), 4);
            std::ptr::copy_nonoverlapping(payload.as_ptr(), self.payload_ptr(entry), payload.len());
        }
    }

    /// Test support: what a reply left in the entry (out header, payload_sz, payload).
    #[cfg(test)]
    pub fn read_reply(&self, index: u32) -> (Vec<u8>, Vec<u8>) {
        let entry = Entry { index };
        let header = self.header(&entry);
        let payload = self
            .payload(&entry, header.payload_bytes as usize)
            .expect("payload in range")
            .to_vec();
        (header.in_header[..16].to_vec(), payload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_claimed_once_and_replies_land_where_the_kernel_reads() {
        let b = Buffers::new(4, 8192).unwrap();
        assert!(b.claim(4).is_none(), "out of range");
        let mut e = b.claim(2).unwrap();
        assert!(b.claim(2).is_none(), "already held");
        b.fake_request(&mut e, &[1u8; 40], &[2u8; 40], &[3u8; 100], 77, None);
        let h = b.header(&e);
        assert_eq!((h.commit_id, h.payload_bytes), (77, 100));
        assert_eq!(&h.in_header[..40], &[1u8; 40]);
        assert_eq!(&h.op_in[..40], &[2u8; 40]);
        assert_eq!(b.payload(&e, 100).unwrap(), &[3u8; 100][..]);
        assert!(b.payload(&e, 8193).is_none());
        assert!(
            !b.write_reply(&mut e, &[0u8; 16], &[&[0u8; 8192], &[0u8; 1]]),
            "too large"
        );
        assert!(b.write_reply(&mut e, &[9u8; 16], &[&[5u8; 10], &[6u8; 6]]));
        assert_eq!(b.release(e), 2);
        let (out, payload) = b.read_reply(2);
        assert_eq!(out, vec![9u8; 16]);
        assert_eq!(payload, [[5u8; 10].as_slice(), &[6u8; 6]].concat());
        assert!(
            b.claim(2).is_some(),
            "released entries can be claimed again"
        );
        assert_eq!(
            REQ_HEADER_BYTES, 288,
            "sizeof(struct fuse_uring_req_header)"
        );
        let iov = &b.iovecs[1];
        assert_eq!((iov[0].iov_len, iov[1].iov_len), (288, 8192));
    }
}
