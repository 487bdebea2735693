//! The opcodes that reach the handler: READ, WRITE, FSYNC and FALLOCATE's punch-hole (a trim,
//! split into parts when it is longer than one handler request can carry). Each is checked
//! and clipped to the file here, so the handler only ever sees requests inside the device.

use std::sync::Arc;

use super::Session;
use crate::abi;
use crate::reply::{Joint, Kind, Reply, Route};
use crate::{Command, Request};

/// A trim longer than a handler request can carry is split into parts of at most this many
/// bytes (the largest multiple of 4 KiB that fits in a `u32`).
const TRIM_CHUNK_BYTES: u64 = 0xFFFF_F000;

impl Session {
    fn not_the_file(&self, route: Route, node: u64) {
        let errno = if node == abi::ROOT_ID {
            libc::EISDIR
        } else {
            libc::EBADF
        };
        route.reply_error(errno);
    }

    pub(super) fn submit(
        &self,
        route: Route,
        command: Command,
        offset: u64,
        length: u32,
        data: Vec<u8>,
        kind: Kind,
    ) {
        let reply = Reply::new(route, kind, length);
        self.handler.request(
            Request {
                command,
                offset,
                length,
                data,
            },
            reply,
        );
    }

    pub(super) fn read(&self, route: Route, node: u64, body: &[u8]) {
        if node != abi::FILE_ID {
            return self.not_the_file(route, node);
        }
        let Some(r) = abi::ReadIn::parse(body) else {
            return route.reply_error(libc::EINVAL);
        };
        let size = self.export.size_bytes;
        if r.offset >= size || r.size == 0 {
            return route.reply(&[]);
        }
        // A read running past the end is clipped to it, as a regular file's would be.
        let length = (r.size as u64).min(size - r.offset) as u32;
        self.submit(
            route,
            Command::Read,
            r.offset,
            length,
            Vec::new(),
            Kind::Read,
        );
    }

    pub(super) fn write(&self, route: Route, node: u64, body: &[u8], data: Option<Vec<u8>>) {
        if node != abi::FILE_ID {
            return self.not_the_file(route, node);
        }
        let Some(w) = abi::WriteIn::parse(body) else {
            return route.reply_error(libc::EINVAL);
        };
        let payload_len = match &data {
            Some(data) => data.len(),
            None => body.len() - abi::WRITE_IN_SIZE,
        };
        if payload_len != w.size as usize {
            return route.reply_error(libc::EINVAL);
        }
        if self.export.read_only {
            return route.reply_error(libc::EROFS);
        }
        if w.size == 0 {
            return route.reply(&[&abi::write_out(0)]);
        }
        let size = self.export.size_bytes;
        if w.offset >= size {
            return route.reply_error(libc::ENOSPC);
        }
        // A write straddling the end writes what fits and reports a short count, as writing
        // past the end of a block device does; the caller's retry of the rest gets ENOSPC.
        let length = (w.size as u64).min(size - w.offset) as u32;
        let data = match data {
            Some(mut data) => {
                data.truncate(length as usize);
                data
            }
            None => body[abi::WRITE_IN_SIZE..][..length as usize].to_vec(),
        };
        self.submit(route, Command::Write, w.offset, length, data, Kind::Write);
    }

    pub(super) fn fallocate(&self, route: Route, node: u64, body: &[u8]) {
        use abi::falloc;
        if node != abi::FILE_ID {
            return self.not_the_file(route, node);
        }
        let Some(f) = abi::FallocateIn::parse(body) else {
            return route.reply_error(libc::EINVAL);
        };
        let Some(end) = f.offset.checked_add(f.length) else {
            return route.reply_error(libc::EFBIG);
        };
        if f.length == 0 {
            return route.reply_error(libc::EINVAL);
        }
        if self.export.read_only {
            return route.reply_error(libc::EROFS);
        }
        let size = self.export.size_bytes;
        match f.mode {
            m if m == falloc::PUNCH_HOLE | falloc::KEEP_SIZE => {
                if f.offset >= size {
                    return route.reply(&[]);
                }
                self.trim(route, f.offset, end.min(size));
            }
            // Allocating space in a fixed-size file is a no-op: every byte already exists.
            // Growing it is not possible.
            0 | falloc::KEEP_SIZE => {
                if f.mode & falloc::KEEP_SIZE == 0 && end > size {
                    route.reply_error(libc::ENOSPC);
                } else {
                    route.reply(&[]);
                }
            }
            // EOPNOTSUPP rather than ENOSYS: ENOSYS would make the kernel stop sending
            // FALLOCATE altogether, punch-hole included. ZERO_RANGE lands here, which makes the
            // loop driver and mkfs fall back to writing zeros.
            _ => route.reply_error(libc::EOPNOTSUPP),
        }
    }

    fn trim(&self, route: Route, start: u64, end: u64) {
        let parts = (end - start).div_ceil(TRIM_CHUNK_BYTES);
        if parts == 1 {
            let length = (end - start) as u32;
            return self.submit(route, Command::Trim, start, length, Vec::new(), Kind::Done);
        }
        let joint = Joint::new(route, parts as usize);
        let mut offset = start;
        while offset < end {
            let length = (end - offset).min(TRIM_CHUNK_BYTES) as u32;
            self.handler.request(
                Request {
                    command: Command::Trim,
                    offset,
                    length,
                    data: Vec::new(),
                },
                Reply::part(Arc::clone(&joint)),
            );
            offset += length as u64;
        }
    }
}
