//! The dispatcher fed with hand-made messages over a socket pair instead of `/dev/fuse`: a
//! `SOCK_SEQPACKET` socket keeps each reply one message, as the kernel device does.

use super::*;
use crate::abi::{init_flag, Out};
use crate::reply::Reply;
use crate::{Command, Request};

struct Recorder {
    held: Mutex<Vec<(Request, Reply)>>,
}

impl Handler for Recorder {
    fn request(&self, request: Request, reply: Reply) {
        self.held.lock().unwrap().push((request, reply));
    }
}

struct Rig {
    session: Session,
    peer: OwnedFd,
    recorder: Arc<Recorder>,
}

fn rig(size_bytes: u64, read_only: bool) -> Rig {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two descriptors for socketpair to fill.
    let rc = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    assert_eq!(rc, 0);
    // SAFETY: socketpair succeeded; both descriptors are new and unowned.
    let (ours, peer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let recorder = Arc::new(Recorder {
        held: Mutex::new(Vec::new()),
    });
    let export = FileExport {
        file_name: "disk".to_string(),
        size_bytes,
        read_only,
    };
    let channel = Arc::new(Channel::new(ours, Arc::new(|_| {})));
    let session = Session::new(channel, export, recorder.clone(), None).unwrap();
    Rig {
        session,
        peer,
        recorder,
    }
}

fn message(opcode: u32, unique: u64, nodeid: u64, body: &[u8]) -> Vec<u8> {
    let mut out = Out::default();
    out.u32((abi::IN_HEADER_SIZE + body.len()) as u32)
        .u32(opcode)
        .u64(unique)
        .u64(nodeid)
        .zeros(16);
    out.0.extend_from_slice(body);
    out.0
}

fn init_body(minor: u32) -> Vec<u8> {
    let mut b = Out::default();
    b.u32(7)
        .u32(minor)
        .u32(128 * 1024)
        .u32(0xFFFF_FFFF)
        .zeros(48);
    b.0
}

impl Rig {
    /// The next reply as (error, unique, payload), or None if nothing was sent.
    fn reply(&self) -> Option<(i32, u64, Vec<u8>)> {
        let mut buf = vec![0u8; 1 << 16];
        // SAFETY: `buf` is live and writable for its length.
        let n = unsafe {
            libc::recv(
                self.peer.as_raw_fd(),
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            return None;
        }
        let n = n as usize;
        assert!(n >= abi::OUT_HEADER_SIZE, "reply shorter than its header");
        let len = u32::from_ne_bytes(buf[0..4].try_into().unwrap()) as usize;
        assert_eq!(len, n, "out header length differs from the bytes sent");
        let error = i32::from_ne_bytes(buf[4..8].try_into().unwrap());
        let unique = u64::from_ne_bytes(buf[8..16].try_into().unwrap());
        Some((error, unique, buf[16..n].to_vec()))
    }

    fn send(&self, opcode: u32, unique: u64, nodeid: u64, body: &[u8]) {
        self.session
            .dispatch(&message(opcode, unique, nodeid, body));
    }

    fn init(&self) {
        self.send(opcode::INIT, 1, 0, &init_body(45));
        let (error, unique, payload) = self.reply().expect("INIT reply");
        assert_eq!((error, unique, payload.len()), (0, 1, abi::INIT_OUT_SIZE));
    }

    fn take_held(&self) -> Vec<(Request, Reply)> {
        std::mem::take(&mut *self.recorder.held.lock().unwrap())
    }
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(bytes[at..at + 4].try_into().unwrap())
}

#[test]
fn init_negotiates_only_offered_flags_and_big_requests() {
    let r = rig(1 << 30, false);
    let mut body = Out::default();
    body.u32(7)
        .u32(45)
        .u32(1 << 30)
        .u32(init_flag::ASYNC_READ | init_flag::MAX_PAGES | (1 << 16));
    r.send(opcode::INIT, 5, 0, &body.0);
    let (error, unique, p) = r.reply().unwrap();
    assert_eq!((error, unique), (0, 5));
    assert_eq!(p.len(), abi::INIT_OUT_SIZE);
    assert_eq!(u32_at(&p, 0), 7);
    assert_eq!(u32_at(&p, 4), abi::KERNEL_MINOR_VERSION);
    assert_eq!(u32_at(&p, 8), MAX_IO_BYTES, "readahead capped");
    assert_eq!(
        u32_at(&p, 12),
        init_flag::ASYNC_READ | init_flag::MAX_PAGES,
        "the writeback cache (bit 16) is never taken"
    );
    assert_eq!(u32_at(&p, 20), MAX_IO_BYTES, "max_write");
    assert_eq!(u16::from_ne_bytes([p[28], p[29]]), 256, "max_pages");
}

#[test]
fn old_kernels_get_the_short_init_reply_and_ancient_ones_eproto() {
    let r = rig(1 << 20, false);
    r.send(opcode::INIT, 1, 0, &init_body(22));
    assert_eq!(r.reply().unwrap().2.len(), 24);
    let r = rig(1 << 20, false);
    r.send(opcode::INIT, 1, 0, &init_body(8));
    assert_eq!(r.reply().unwrap().0, -libc::EPROTO);
    assert!(r.session.wait_init(Duration::ZERO).is_err());
    let r = rig(1 << 20, false);
    r.send(opcode::INIT, 1, 0, &[0u8; 12]);
    assert_eq!(r.reply().unwrap().0, -libc::EPROTO);
}

#[test]
fn requests_before_init_and_malformed_requests_fail_cleanly() {
    let r = rig(1 << 20, false);
    r.send(opcode::GETATTR, 2, abi::ROOT_ID, &[0u8; 16]);
    assert_eq!(r.reply().unwrap().0, -libc::EIO);
    r.init();
    // The header claims more bytes than arrived.
    let mut m = message(opcode::GETATTR, 3, abi::ROOT_ID, &[0u8; 16]);
    m[0] = m[0].wrapping_add(8);
    r.session.dispatch(&m);
    assert_eq!(r.reply().unwrap(), (-libc::EINVAL, 3, vec![]));
    r.send(opcode::READ, 4, abi::FILE_ID, &[0u8; 20]);
    assert_eq!(r.reply().unwrap().0, -libc::EINVAL);
    r.send(opcode::SETATTR, 5, abi::FILE_ID, &[0u8; 30]);
    assert_eq!(r.reply().unwrap().0, -libc::EINVAL);
    let mut w = Out::default();
    w.u64(0).u64(0).u32(4096).u32(0).u64(0).u32(0).u32(0);
    w.0.extend_from_slice(&[1u8; 100]);
    r.send(opcode::WRITE, 6, abi::FILE_ID, &w.0);
    assert_eq!(
        r.reply().unwrap().0,
        -libc::EINVAL,
        "payload shorter than size"
    );
    r.send(9999, 7, abi::ROOT_ID, &[]);
    assert_eq!(r.reply().unwrap(), (-libc::ENOSYS, 7, vec![]));
    r.session.dispatch(&[0u8; 10]);
    assert!(r.reply().is_none(), "a headerless scrap cannot be answered");
    r.send(opcode::FORGET, 8, abi::FILE_ID, &[0u8; 8]);
    r.send(opcode::INTERRUPT, 9, 0, &[0u8; 8]);
    assert!(r.reply().is_none(), "FORGET and INTERRUPT get no reply");
    assert!(
        r.take_held().is_empty(),
        "nothing malformed reached the handler"
    );
}

#[test]
fn random_messages_never_panic_and_every_reply_is_well_formed() {
    let r = rig(1 << 20, false);
    r.init();
    let mut x: u64 = 0x1234_5678_9ABC_DEF1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..20_000u64 {
        let op = (next() % 60) as u32;
        let node = next() % 4;
        let len = (next() % 200) as usize;
        let body: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let mut m = message(op, 100 + i, node, &body);
        if next() % 16 == 0 {
            let cut = (next() as usize) % m.len();
            m.truncate(cut);
        }
        r.session.dispatch(&m);
        while let Some((error, _, payload)) = r.reply() {
            assert!(error <= 0 && error > -512, "errno {error}");
            assert!(error == 0 || payload.is_empty());
        }
        for (request, reply) in r.take_held() {
            let end = request.offset + request.length as u64;
            assert!(end <= 1 << 20, "{request:?} is outside the device");
            drop(reply);
            while r.reply().is_some() {}
        }
    }
}

#[test]
fn reads_and_writes_are_clipped_before_the_handler() {
    let size = 10_000u64;
    let r = rig(size, false);
    r.init();
    let read = |offset: u64, len: u32| {
        let mut b = Out::default();
        b.u64(0).u64(offset).u32(len).u32(0).u64(0).u32(0).u32(0);
        b.0
    };
    r.send(opcode::READ, 10, abi::FILE_ID, &read(size, 4096));
    assert_eq!(
        r.reply().unwrap(),
        (0, 10, vec![]),
        "read at the end: 0 bytes"
    );
    r.send(opcode::READ, 11, abi::FILE_ID, &read(8192, 4096));
    let held = r.take_held();
    assert_eq!(held.len(), 1);
    assert_eq!((held[0].0.offset, held[0].0.length), (8192, 1808));
    let (_, reply) = held.into_iter().next().unwrap();
    reply.data(&[7u8; 4096]);
    let (error, unique, payload) = r.reply().unwrap();
    assert_eq!(
        (error, unique, payload.len()),
        (0, 11, 1808),
        "extra bytes cut"
    );

    let write = |offset: u64, len: usize| {
        let mut b = Out::default();
        b.u64(0)
            .u64(offset)
            .u32(len as u32)
            .u32(0)
            .u64(0)
            .u32(0)
            .u32(0);
        b.0.extend_from_slice(&vec![9u8; len]);
        b.0
    };
    r.send(opcode::WRITE, 12, abi::FILE_ID, &write(size, 10));
    assert_eq!(r.reply().unwrap().0, -libc::ENOSPC);
    r.send(opcode::WRITE, 13, abi::FILE_ID, &write(size - 4, 10));
    let (request, reply) = r.take_held().pop().unwrap();
    assert_eq!(
        (request.offset, request.length, request.data.len()),
        (size - 4, 4, 4)
    );
    reply.ok();
    let (error, unique, payload) = r.reply().unwrap();
    assert_eq!((error, unique, u32_at(&payload, 0)), (0, 13, 4));
}

#[test]
fn replies_may_go_back_in_any_order() {
    let r = rig(1 << 20, false);
    r.init();
    for unique in 20..24u64 {
        let mut b = Out::default();
        b.u64(0)
            .u64(unique * 4096)
            .u32(4096)
            .u32(0)
            .u64(0)
            .u32(0)
            .u32(0);
        r.send(opcode::READ, unique, abi::FILE_ID, &b.0);
    }
    let held = r.take_held();
    assert_eq!(held.len(), 4);
    let mut order = Vec::new();
    for (request, reply) in held.into_iter().rev() {
        std::thread::spawn(move || reply.data(&vec![0u8; request.length as usize]))
            .join()
            .unwrap();
        order.push(r.reply().unwrap().1);
    }
    assert_eq!(order, vec![23, 22, 21, 20]);
}

#[test]
fn a_huge_punch_is_split_and_answered_once_all_parts_are() {
    let size = 16u64 << 30;
    let r = rig(size, false);
    r.init();
    let mut b = Out::default();
    b.u64(0)
        .u64(4096)
        .u64(10 << 30)
        .u32(abi::falloc::PUNCH_HOLE | abi::falloc::KEEP_SIZE)
        .u32(0);
    r.send(opcode::FALLOCATE, 30, abi::FILE_ID, &b.0);
    let held = r.take_held();
    assert_eq!(held.len(), 3);
    let total: u64 = held.iter().map(|(q, _)| q.length as u64).sum();
    assert_eq!(total, 10 << 30);
    assert!(held.iter().all(|(q, _)| q.command == Command::Trim));
    let mut parts = held.into_iter();
    parts.next().unwrap().1.ok();
    parts.next().unwrap().1.error(libc::EIO);
    assert!(r.reply().is_none(), "answered before the last part");
    drop(parts);
    assert_eq!(r.reply().unwrap(), (-libc::EIO, 30, vec![]));

    b = Out::default();
    b.u64(0).u64(0).u64(4096).u32(0x10).u32(0);
    r.send(opcode::FALLOCATE, 31, abi::FILE_ID, &b.0);
    assert_eq!(r.reply().unwrap().0, -libc::EOPNOTSUPP, "zero range");
}

#[test]
fn a_read_only_export_refuses_every_write_path() {
    let r = rig(1 << 20, true);
    r.init();
    let mut open = Out::default();
    open.u32(libc::O_RDWR as u32).u32(0);
    r.send(opcode::OPEN, 40, abi::FILE_ID, &open.0);
    assert_eq!(r.reply().unwrap().0, -libc::EROFS);
    let mut open = Out::default();
    open.u32(libc::O_RDONLY as u32).u32(0);
    r.send(opcode::OPEN, 41, abi::FILE_ID, &open.0);
    let (error, _, payload) = r.reply().unwrap();
    assert_eq!(error, 0);
    assert_eq!(u32_at(&payload, 8) & abi::open_flag::DIRECT_IO, 1);
    let mut w = Out::default();
    w.u64(0).u64(0).u32(1).u32(0).u64(0).u32(0).u32(0);
    w.0.push(1);
    r.send(opcode::WRITE, 42, abi::FILE_ID, &w.0);
    assert_eq!(r.reply().unwrap().0, -libc::EROFS);
    let mut access = Out::default();
    access.u32(libc::W_OK as u32).u32(0);
    r.send(opcode::ACCESS, 43, abi::FILE_ID, &access.0);
    assert_eq!(r.reply().unwrap().0, -libc::EROFS);
    assert!(r.take_held().is_empty());
}

/// A ring beside the socket-pair rig. Its commands go to /dev/null, which has no ring
/// commands and fails each with EOPNOTSUPP: a reply left in an entry stays there to be
/// read, and each commit shows up as one completion for its entry.
struct RingRig {
    rig: Rig,
    ring: Arc<FuseRing>,
}

const RING_PAYLOAD: usize = 64 * 1024;

fn ring_rig(entries: u32) -> Option<RingRig> {
    let rig = rig(1 << 20, false);
    rig.init();
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .unwrap();
    let channel = Arc::new(Channel::new(OwnedFd::from(null), Arc::new(|_| {})));
    match FuseRing::new(channel, 1, entries, RING_PAYLOAD) {
        Ok(ring) => Some(RingRig { rig, ring }),
        Err(e) => {
            storsim_testenv::kernel_lacks(&format!(
                "io_uring_setup failed ({e}); the ring dispatch is not tested"
            ));
            None
        }
    }
}

/// A ring request's parts: the header's `len` field (None: the consistent value), opcode,
/// node, the opcode's header and the payload.
struct RingMsg<'a> {
    len: Option<u32>,
    opcode: u32,
    nodeid: u64,
    op: &'a [u8],
    payload: &'a [u8],
}

impl RingRig {
    /// Puts `msg` into entry `index` as request `unique` and dispatches it. Returns the
    /// reply if the request was answered at once, after checking its commit was
    /// submitted exactly once.
    fn send(&self, index: u64, unique: u64, msg: RingMsg<'_>) -> Option<(i32, u64, Vec<u8>)> {
        let len = msg
            .len
            .unwrap_or((abi::IN_HEADER_SIZE + msg.op.len() + msg.payload.len()) as u32);
        let mut header = message(msg.opcode, unique, msg.nodeid, &[]);
        header[0..4].copy_from_slice(&len.to_ne_bytes());
        let entry = self
            .ring
            .fake_request(index, &header, msg.op, msg.payload, unique, None);
        self.rig.session.dispatch_ring(&self.ring, entry);
        self.reply(index)
    }

    /// The reply committed for entry `index`, if one was.
    fn reply(&self, index: u64) -> Option<(i32, u64, Vec<u8>)> {
        let done = self.ring.completions();
        if done.is_empty() {
            return None;
        }
        assert_eq!(done.len(), 1, "one commit per request: {done:?}");
        assert_eq!(done[0].user_data, index, "the commit names its entry");
        let (out, payload) = self.ring.reply_in(index as u32);
        let len = u32::from_ne_bytes(out[0..4].try_into().unwrap()) as usize;
        assert_eq!(
            len,
            abi::OUT_HEADER_SIZE + payload.len(),
            "out header length"
        );
        let error = i32::from_ne_bytes(out[4..8].try_into().unwrap());
        let unique = u64::from_ne_bytes(out[8..16].try_into().unwrap());
        Some((error, unique, payload))
    }
}

fn read_in(offset: u64, size: u32) -> Vec<u8> {
    let mut b = Out::default();
    b.u64(0).u64(offset).u32(size).u32(0).u64(0).u32(0).u32(0);
    b.0
}

fn write_in(offset: u64, size: u32) -> Vec<u8> {
    read_in(offset, size)
}

fn msg<'a>(opcode: u32, nodeid: u64, op: &'a [u8], payload: &'a [u8]) -> RingMsg<'a> {
    RingMsg {
        len: None,
        opcode,
        nodeid,
        op,
        payload,
    }
}

#[test]
fn ring_requests_are_answered_in_their_entry() {
    let Some(r) = ring_rig(4) else { return };
    let (error, unique, payload) = r
        .send(0, 70, msg(opcode::GETATTR, abi::ROOT_ID, &[0u8; 16], &[]))
        .expect("GETATTR is answered at once");
    assert_eq!((error, unique, payload.len()), (0, 70, abi::ATTR_OUT_SIZE));
    // LOOKUP's name travels in the payload behind an empty opcode header.
    let (error, _, payload) = r
        .send(1, 71, msg(opcode::LOOKUP, abi::ROOT_ID, &[], b"disk\0"))
        .unwrap();
    assert_eq!((error, payload.len()), (0, abi::ENTRY_OUT_SIZE));
    assert_eq!(
        r.send(2, 72, msg(opcode::LOOKUP, abi::ROOT_ID, &[], b"nope\0"))
            .unwrap()
            .0,
        -libc::ENOENT
    );
    assert!(r.rig.reply().is_none(), "nothing went to /dev/fuse");
}

#[test]
fn ring_reads_and_writes_reach_the_handler_and_commit_their_replies() {
    let Some(r) = ring_rig(4) else { return };
    assert!(r
        .send(
            0,
            80,
            msg(opcode::READ, abi::FILE_ID, &read_in(8192, 4096), &[])
        )
        .is_none());
    let data = vec![0x5Au8; 4096];
    assert!(r
        .send(
            1,
            81,
            msg(opcode::WRITE, abi::FILE_ID, &write_in(0, 4096), &data)
        )
        .is_none());
    let mut held = r.rig.take_held();
    assert_eq!(held.len(), 2);
    let (write, write_reply) = held.pop().unwrap();
    let (read, read_reply) = held.pop().unwrap();
    assert_eq!(
        (read.command, read.offset, read.length),
        (Command::Read, 8192, 4096)
    );
    assert_eq!(
        (write.command, write.offset, write.length),
        (Command::Write, 0, 4096)
    );
    assert_eq!(write.data, data, "the payload reaches the handler");
    assert!(
        r.ring.completions().is_empty(),
        "nothing committed before the replies"
    );

    // Batched replies leave with one submission, answered out of order.
    let mut batch = crate::ReplyBatch::new();
    assert_eq!(batch.ok(write_reply), Some(0));
    assert_eq!(
        batch.data(read_reply, &[7u8; 5000]),
        Some(0),
        "one ring, one write"
    );
    assert!(r.ring.completions().is_empty(), "a batch waits for send");
    let mut writes = Vec::new();
    batch.send(|w| writes.push(w));
    assert_eq!(writes, vec![0]);
    let mut done: Vec<u64> = r.ring.completions().iter().map(|c| c.user_data).collect();
    done.sort();
    assert_eq!(done, vec![0, 1], "both entries committed");
    let (out, payload) = r.ring.reply_in(0);
    assert_eq!(u64::from_ne_bytes(out[8..16].try_into().unwrap()), 80);
    assert_eq!(
        payload,
        vec![7u8; 4096],
        "a read reply is cut to the length asked"
    );
    let (out, payload) = r.ring.reply_in(1);
    assert_eq!(u64::from_ne_bytes(out[8..16].try_into().unwrap()), 81);
    assert_eq!(u32_at(&payload, 0), 4096, "fuse_write_out.size");
}

#[test]
fn hostile_ring_requests_are_refused_and_never_lose_their_entry() {
    let Some(r) = ring_rig(2) else { return };
    let init = init_body(45);
    let (w64, w100, read) = (write_in(0, 64), write_in(0, 100), read_in(0, 4096));
    let cases: Vec<(&str, RingMsg<'_>, i32)> = vec![
        (
            "an unknown opcode",
            msg(9999, abi::ROOT_ID, &[], &[]),
            -libc::ENOSYS,
        ),
        (
            "FORGET",
            msg(opcode::FORGET, abi::FILE_ID, &[0u8; 8], &[]),
            -libc::ENOSYS,
        ),
        (
            "INTERRUPT",
            msg(opcode::INTERRUPT, 0, &[0u8; 8], &[]),
            -libc::ENOSYS,
        ),
        (
            "BATCH_FORGET",
            msg(opcode::BATCH_FORGET, 0, &[0u8; 8], &[]),
            -libc::ENOSYS,
        ),
        (
            "a second INIT",
            msg(opcode::INIT, 0, &init, &[]),
            -libc::EIO,
        ),
        (
            "a length shorter than header and payload",
            RingMsg {
                len: Some(abi::IN_HEADER_SIZE as u32 + 10),
                ..msg(opcode::WRITE, abi::FILE_ID, &w64, &[1u8; 64])
            },
            -libc::EINVAL,
        ),
        (
            "an opcode header longer than the ring's 128 bytes",
            RingMsg {
                len: Some(abi::IN_HEADER_SIZE as u32 + 200 + 64),
                ..msg(opcode::WRITE, abi::FILE_ID, &w64, &[1u8; 64])
            },
            -libc::EINVAL,
        ),
        (
            "a write whose payload differs from its size",
            msg(opcode::WRITE, abi::FILE_ID, &w100, &[1u8; 64]),
            -libc::EINVAL,
        ),
        (
            "a truncated read header",
            msg(opcode::READ, abi::FILE_ID, &read[..20], &[]),
            -libc::EINVAL,
        ),
    ];
    for (i, (what, m, expected)) in cases.into_iter().enumerate() {
        let unique = 100 + i as u64;
        let (error, got_unique, payload) = r
            .send(i as u64 % 2, unique, m)
            .unwrap_or_else(|| panic!("{what}: not answered"));
        assert_eq!((error, got_unique), (expected, unique), "{what}");
        assert!(payload.is_empty(), "{what}: an error carries no payload");
    }
    // A payload size beyond the entry's buffer.
    let mut header = message(opcode::WRITE, 200, abi::FILE_ID, &[]);
    let len = (abi::IN_HEADER_SIZE + 40 + RING_PAYLOAD + 1) as u32;
    header[0..4].copy_from_slice(&len.to_ne_bytes());
    let entry = r.ring.fake_request(
        0,
        &header,
        &write_in(0, RING_PAYLOAD as u32 + 1),
        &[],
        200,
        Some(RING_PAYLOAD as u32 + 1),
    );
    r.rig.session.dispatch_ring(&r.ring, entry);
    assert_eq!(r.reply(0).unwrap().0, -libc::EINVAL, "oversized payload");
    assert!(
        r.rig.take_held().is_empty(),
        "nothing hostile reached the handler"
    );
}

#[test]
fn random_ring_requests_never_panic_and_each_entry_is_committed_once() {
    let Some(r) = ring_rig(8) else { return };
    let mut x: u64 = 0x0DDB_1A5E_5BAD_5EED;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..5_000u64 {
        let index = i % 8;
        let opcode = (next() % 60) as u32;
        let node = next() % 4;
        let op: Vec<u8> = (0..(next() % 129) as usize).map(|_| next() as u8).collect();
        let payload: Vec<u8> = (0..(next() % 300) as usize).map(|_| next() as u8).collect();
        let len = match next() % 8 {
            0 => Some(next() as u32),
            1 => Some((abi::IN_HEADER_SIZE + op.len()) as u32),
            _ => None,
        };
        let m = RingMsg {
            len,
            opcode,
            nodeid: node,
            op: &op,
            payload: &payload,
        };
        let answered = r.send(index, 1000 + i, m);
        if let Some((error, unique, payload)) = &answered {
            let (error, unique) = (*error, *unique);
            assert!(error <= 0 && error > -512, "errno {error}");
            assert!(error == 0 || payload.is_empty());
            assert_eq!(unique, 1000 + i);
        }
        for (request, reply) in r.rig.take_held() {
            assert!(answered.is_none(), "answered and held at once");
            let end = request.offset + request.length as u64;
            assert!(end <= 1 << 20, "{request:?} is outside the device");
            drop(reply);
            let (error, _, _) = r.reply(index).expect("a dropped reply commits EIO");
            assert_eq!(error, -libc::EIO);
        }
    }
    assert!(r.rig.reply().is_none(), "nothing went to /dev/fuse");
}

#[test]
fn init_grants_io_uring_only_when_a_ring_exists_and_the_kernel_offers_it() {
    let offer = |flags: u32, flags2: u32| {
        let mut b = Out::default();
        b.u32(7)
            .u32(45)
            .u32(1 << 20)
            .u32(flags)
            .u32(flags2)
            .zeros(44);
        b.0
    };
    let ext = init_flag::INIT_EXT;
    let io_uring = abi::init_flag2::OVER_IO_URING;
    // No ring prepared: never granted, whatever the kernel offers.
    let r = rig(1 << 20, false);
    r.send(opcode::INIT, 1, 0, &offer(ext, io_uring));
    let (_, _, p) = r.reply().unwrap();
    assert_eq!(u32_at(&p, 12) & ext, 0);
    assert_eq!(u32_at(&p, 32), 0, "flags2");
    assert!(matches!(
        r.session.ring_grant(),
        Some(RingGrant::NotUsed(_))
    ));

    let Some(rr) = ring_rig(1) else { return };
    let null = rr.ring;
    for (flags, flags2, granted) in [(ext, io_uring, true), (ext, 0, false), (0, io_uring, false)] {
        let r = rig(1 << 20, false);
        let session = Session::new(
            Arc::clone(r.session.channel()),
            r.session.export.clone(),
            r.recorder.clone(),
            Some(Arc::clone(&null)),
        )
        .unwrap();
        session.dispatch(&message(opcode::INIT, 1, 0, &offer(flags, flags2)));
        let (error, _, p) = r.reply().unwrap();
        assert_eq!(error, 0);
        assert_eq!(
            u32_at(&p, 12) & ext != 0,
            granted,
            "INIT_EXT for {flags:#x}/{flags2:#x}"
        );
        assert_eq!(u32_at(&p, 32), if granted { io_uring } else { 0 }, "flags2");
        assert_eq!(session.ring_grant() == Some(RingGrant::Granted), granted);
    }
}
