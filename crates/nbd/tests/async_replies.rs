//! Replies answered later, from other threads, out of order, or never; backpressure; and how
//! disconnects and shutdown wait for requests in flight.

mod common;

use std::io::Read;
use std::net::Shutdown;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use storsim_nbd::{
    Command, Errno, Handler, Listen, Reply, ReplyBatch, Request, Server, ServerConfig,
};

/// Holds every request until the test answers or drops it.
struct Holding {
    store: Store,
    held: Mutex<Vec<(Request, Reply)>>,
    changed: Condvar,
    peers: Mutex<Vec<String>>,
}

impl Holding {
    fn new(size: usize) -> Arc<Holding> {
        Arc::new(Holding {
            store: Store::new(size),
            held: Mutex::new(Vec::new()),
            changed: Condvar::new(),
            peers: Mutex::new(Vec::new()),
        })
    }

    fn held(&self) -> usize {
        self.held.lock().unwrap().len()
    }

    fn wait_held(&self, n: usize) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut held = self.held.lock().unwrap();
        while held.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            held = self.changed.wait_timeout(held, left).unwrap().0;
        }
        true
    }

    fn take(&self) -> Vec<(Request, Reply)> {
        std::mem::take(&mut *self.held.lock().unwrap())
    }

    /// Answers everything held, from another thread, newest first.
    fn answer_all(self: &Arc<Self>) {
        let batch = self.take();
        let me = Arc::clone(self);
        thread::spawn(move || {
            for (request, reply) in batch.into_iter().rev() {
                me.store.execute(request, reply);
            }
        })
        .join()
        .unwrap();
    }
}

impl Handler for Holding {
    fn request(&self, request: Request, reply: Reply) {
        self.held.lock().unwrap().push((request, reply));
        self.changed.notify_all();
    }
    fn connection_opened(&self, _connection: u64, peer: &str) {
        self.peers.lock().unwrap().push(peer.to_string());
        self.store.opened.fetch_add(1, Ordering::SeqCst);
    }
    fn connection_closed(&self, _connection: u64) {
        self.store.closed.fetch_add(1, Ordering::SeqCst);
    }
}

fn fill_pattern(store: &Store) {
    let mut data = store.data.lock().unwrap();
    for (i, b) in data.iter_mut().enumerate() {
        *b = (i / 4096) as u8 ^ (i as u8);
    }
}

/// True if nothing arrives from the server within `wait` (the connection is open and quiet).
fn quiet_for(c: &mut RawClient, wait: Duration) -> bool {
    c.stream.set_read_timeout(Some(wait)).unwrap();
    let mut byte = [0u8; 1];
    let quiet = matches!(
        c.stream.read(&mut byte),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut
    );
    c.stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    quiet
}

#[test]
fn replies_go_out_in_the_order_the_handler_answers() {
    let handler = DelayedHandler::new(MIB, Duration::from_millis(50));
    fill_pattern(&handler.store);
    let expected = handler.store.snapshot();
    let server = start(export("disk", MIB, false), handler.clone());
    let mut c = RawClient::connect_go(&server.addr, "disk");
    let mut pipeline = Vec::new();
    for cookie in 1..=8u64 {
        pipeline.extend(request_bytes(0, CMD_READ, cookie, cookie * 4096, 4096));
    }
    c.send(&pipeline).unwrap();
    let mut order = Vec::new();
    for _ in 0..8 {
        let (error, cookie) = c.reply();
        assert_eq!(error, 0);
        let data = c.read_exact(4096);
        let at = cookie as usize * 4096;
        assert_eq!(data, expected[at..at + 4096], "data of cookie {cookie}");
        order.push(cookie);
    }
    assert_eq!(order, (1..=8).rev().collect::<Vec<_>>(), "reverse order");
    c.disconnect();
}

#[test]
fn replies_from_many_threads_never_interleave() {
    /// Answers each request from its own thread after a pseudo-random pause.
    struct Scattered {
        store: Arc<Store>,
    }
    impl Handler for Scattered {
        fn request(&self, request: Request, reply: Reply) {
            let store = Arc::clone(&self.store);
            thread::spawn(move || {
                let pause = (request.cookie * 7919) % 5;
                thread::sleep(Duration::from_millis(pause));
                store.execute(request, reply);
            });
        }
    }
    let store = Arc::new(Store::new(8 * MIB));
    fill_pattern(&store);
    let expected = store.snapshot();
    let server = start(
        export("disk", 8 * MIB, false),
        Arc::new(Scattered {
            store: Arc::clone(&store),
        }),
    );
    let mut c = RawClient::connect_go(&server.addr, "disk");
    let mut pipeline = Vec::new();
    // Large reads are written as header plus data in two writes; the lock must keep each
    // reply whole while other threads answer concurrently.
    for cookie in 0..64u64 {
        pipeline.extend(request_bytes(
            0,
            CMD_READ,
            cookie,
            cookie * 128 * 1024,
            128 * 1024,
        ));
    }
    c.send(&pipeline).unwrap();
    let mut seen = Vec::new();
    for _ in 0..64 {
        let (error, cookie) = c.reply();
        assert_eq!(error, 0);
        let data = c.read_exact(128 * 1024);
        let at = cookie as usize * 128 * 1024;
        assert!(data == expected[at..at + 128 * 1024], "cookie {cookie}");
        seen.push(cookie);
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..64).collect::<Vec<_>>());
    c.disconnect();
}

#[test]
fn a_batch_writes_each_connections_replies_together_and_frees_their_slots() {
    let handler = Holding::new(MIB);
    fill_pattern(&handler.store);
    let expected = handler.store.snapshot();
    let server = start_tweaked(export("disk", MIB, false), handler.clone(), |c| {
        c.max_in_flight = 4;
    });
    let mut first = RawClient::connect_go(&server.addr, "disk");
    let mut second = RawClient::connect_go(&server.addr, "disk");
    // Reads of several sizes, a flush, and a second connection: each connection's replies
    // must arrive whole and in the order they were added.
    let reads: [(u64, u64, u32); 3] = [(1, 0, 4096), (2, 8192, 128 * 1024), (3, 4096, 512)];
    for &(cookie, offset, length) in &reads {
        first.request(0, CMD_READ, cookie, offset, length);
    }
    first.request(0, CMD_FLUSH, 4, 0, 0);
    second.request(0, CMD_READ, 5, 0, 16);
    second.request(0, CMD_TRIM, 6, 0, 16);
    assert!(handler.wait_held(6));
    let mut held = handler.take();
    // Answer in cookie order, so each connection's replies are added in the order sent.
    held.sort_by_key(|(request, _)| request.cookie);
    let mut batch = ReplyBatch::new();
    let mut writes = Vec::new();
    for (request, reply) in held {
        let write = match (request.command, request.cookie) {
            // The wrong length becomes EIO, as with Reply::data.
            (Command::Read, 5) => batch.data(reply, vec![0; 3]),
            (Command::Read, _) => {
                let at = request.offset as usize;
                batch.data(reply, expected[at..at + request.length as usize].to_vec())
            }
            (Command::Flush, _) => batch.ok(reply),
            _ => batch.error(reply, Errno::NotSup),
        };
        writes.push((request.cookie, write));
    }
    assert_eq!(
        writes,
        vec![(1, 0), (2, 0), (3, 0), (4, 0), (5, 1), (6, 1)],
        "one write per connection, numbered in the order first seen"
    );
    assert!(!batch.is_empty());
    let mut before = Vec::new();
    batch.send(|write| before.push(write));
    assert_eq!(before, vec![0, 1]);
    assert!(batch.is_empty());
    for &(cookie, offset, length) in &reads {
        assert_eq!(first.reply(), (0, cookie));
        let at = offset as usize;
        assert!(
            first.read_exact(length as usize) == expected[at..at + length as usize],
            "data of cookie {cookie}"
        );
    }
    assert_eq!(first.reply(), (0, 4));
    assert_eq!(second.reply(), (EIO, 5));
    assert_eq!(second.reply(), (95, 6));
    assert!(server.wait_for_log("with 3 bytes; sending EIO"));
    // Sending released the slots: a full window of new requests reaches the handler, and a
    // dropped batch still sends what it holds.
    for cookie in 10..14 {
        first.request(0, CMD_FLUSH, cookie, 0, 0);
    }
    assert!(handler.wait_held(4));
    let mut batch = ReplyBatch::new();
    for (_, reply) in handler.take() {
        batch.ok(reply);
    }
    drop(batch);
    let mut cookies: Vec<u64> = (0..4)
        .map(|_| first.reply())
        .map(|(e, c)| {
            assert_eq!(e, 0);
            c
        })
        .collect();
    cookies.sort_unstable();
    assert_eq!(cookies, vec![10, 11, 12, 13]);
    first.disconnect();
    second.disconnect();
}

#[test]
fn at_most_max_in_flight_requests_reach_the_handler() {
    let handler = Holding::new(MIB);
    let server = start_tweaked(export("disk", MIB, false), handler.clone(), |c| {
        c.max_in_flight = 4;
    });
    let mut c = RawClient::connect_go(&server.addr, "disk");
    let mut pipeline = Vec::new();
    for cookie in 0..10u64 {
        pipeline.extend(request_bytes(0, CMD_READ, cookie, 0, 512));
    }
    c.send(&pipeline).unwrap();
    assert!(handler.wait_held(4));
    thread::sleep(Duration::from_millis(200));
    assert_eq!(handler.held(), 4, "the reader stops at the limit");
    let mut answered = 0;
    while answered < 10 {
        assert!(handler.wait_held(1));
        let before = handler.held();
        assert!(before <= 4, "never more than 4 in flight (saw {before})");
        answered += before;
        handler.answer_all();
    }
    let mut cookies: Vec<u64> = (0..10)
        .map(|_| {
            let (error, cookie) = c.reply();
            assert_eq!(error, 0);
            c.read_exact(512);
            cookie
        })
        .collect();
    cookies.sort_unstable();
    assert_eq!(cookies, (0..10).collect::<Vec<_>>());
    c.disconnect();
}

#[test]
fn the_byte_budget_limits_data_in_flight() {
    let handler = Holding::new(4 * MIB);
    let server = start_tweaked(export("disk", 4 * MIB, false), handler.clone(), |c| {
        c.max_in_flight_bytes = 64 * 1024;
    });
    let mut c = RawClient::connect_go(&server.addr, "disk");
    let mut pipeline = Vec::new();
    for cookie in 0..4u64 {
        pipeline.extend(request_bytes(0, CMD_READ, cookie, 0, 32 * 1024));
    }
    // One read larger than the whole budget: admitted once nothing else is in flight.
    pipeline.extend(request_bytes(0, CMD_READ, 4, 0, 1024 * 1024));
    c.send(&pipeline).unwrap();
    assert!(handler.wait_held(2));
    thread::sleep(Duration::from_millis(150));
    assert_eq!(handler.held(), 2, "two 32 KiB reads fill the 64 KiB budget");
    handler.answer_all();
    assert!(handler.wait_held(2));
    thread::sleep(Duration::from_millis(100));
    assert_eq!(handler.held(), 2);
    handler.answer_all();
    assert!(handler.wait_held(1), "the oversized read is admitted alone");
    handler.answer_all();
    for _ in 0..5 {
        let (error, cookie) = c.reply();
        assert_eq!(error, 0);
        c.read_exact(if cookie == 4 { 1024 * 1024 } else { 32 * 1024 });
    }
    c.disconnect();
}

#[test]
fn disconnect_waits_for_replies_in_flight() {
    let handler = Holding::new(MIB);
    let server = start(export("disk", MIB, false), handler.clone());
    let mut c = RawClient::connect_go(&server.addr, "disk");
    let mut pipeline = Vec::new();
    for cookie in 1..=3u64 {
        pipeline.extend(request_bytes(0, CMD_READ, cookie, 0, 512));
    }
    pipeline.extend(request_bytes(0, CMD_DISC, 0, 0, 0));
    c.send(&pipeline).unwrap();
    assert!(handler.wait_held(3));
    assert!(quiet_for(&mut c, Duration::from_millis(200)), "still open");
    assert_eq!(handler.store.closed.load(Ordering::SeqCst), 0);
    handler.answer_all();
    for _ in 0..3 {
        assert_eq!(c.reply().0, 0);
        c.read_exact(512);
    }
    assert!(c.expect_closed());
    assert!(wait_until(Duration::from_secs(5), || {
        handler.store.closed.load(Ordering::SeqCst) == 1
    }));
    assert!(wait_until(Duration::from_secs(5), || server.connections() == 0));
}

#[test]
fn a_dropped_reply_sends_eio() {
    let handler = Holding::new(MIB);
    let server = start(export("disk", MIB, false), handler.clone());
    let mut c = RawClient::connect_go(&server.addr, "disk");
    c.request(0, CMD_READ, 1, 0, 512);
    c.request(0, CMD_FLUSH, 2, 0, 0);
    assert!(handler.wait_held(2));
    drop(handler.take());
    let mut replies = vec![c.reply(), c.reply()];
    replies.sort_unstable();
    assert_eq!(replies, vec![(EIO, 1), (EIO, 2)]);
    assert!(server.wait_for_log("dropped the reply"));
    // The connection is still usable.
    c.request(0, CMD_FLUSH, 3, 0, 0);
    assert!(handler.wait_held(1));
    handler.answer_all();
    assert_eq!(c.reply(), (0, 3));
    c.disconnect();
}

#[test]
fn misused_replies_send_eio() {
    struct Misuse;
    impl Handler for Misuse {
        fn request(&self, request: Request, reply: Reply) {
            assert_eq!(reply.cookie(), request.cookie);
            assert_eq!(reply.command(), request.command);
            assert_eq!(reply.length(), request.length);
            match (request.command, request.cookie) {
                (Command::Read, 1) => reply.data(&[0; 3]),
                (Command::Read, 2) => reply.ok(),
                (Command::Write, _) => reply.data(&[1]),
                (Command::Read, _) => reply.data(&vec![7; request.length as usize]),
                _ => reply.error(Errno::NotSup),
            }
        }
    }
    let server = start(export("disk", MIB, false), Arc::new(Misuse));
    let mut c = RawClient::connect_go(&server.addr, "disk");
    assert_eq!(c.read(1, 0, 512).0, EIO, "wrong length");
    assert_eq!(c.read(2, 0, 512).0, EIO, "ok() for a read");
    assert_eq!(c.write(3, 0, &[1; 16]), EIO, "data() for a write");
    assert_eq!(
        c.read(4, 0, 16),
        (0, vec![7; 16]),
        "the stream is still in step"
    );
    c.request(0, CMD_TRIM, 5, 0, 16);
    assert_eq!(c.reply(), (95, 5), "error() sends the given errno");
    c.disconnect();
    assert!(server.wait_for_log("with 3 bytes; sending EIO"));
}

#[test]
fn replies_after_the_client_vanished_are_discarded() {
    let handler = Holding::new(MIB);
    let server = start(export("disk", MIB, false), handler.clone());
    let mut c = RawClient::connect_go(&server.addr, "disk");
    for cookie in 0..4 {
        c.request(0, CMD_READ, cookie, 0, 256 * 1024);
    }
    assert!(handler.wait_held(4));
    c.stream.shutdown(Shutdown::Both).unwrap();
    drop(c);
    thread::sleep(Duration::from_millis(100));
    // The connection waits for its requests; answering them into a dead socket is harmless.
    handler.answer_all();
    assert!(wait_until(Duration::from_secs(5), || server.connections() == 0));
    assert_eq!(handler.store.closed.load(Ordering::SeqCst), 1);
    let mut fresh = RawClient::connect_go(&server.addr, "disk");
    fresh.request(0, CMD_FLUSH, 9, 0, 0);
    assert!(handler.wait_held(1));
    handler.answer_all();
    assert_eq!(fresh.reply(), (0, 9));
    fresh.disconnect();
}

#[test]
fn a_reply_kept_past_the_connection_is_discarded() {
    let handler = Holding::new(MIB);
    let server = start(export("disk", MIB, false), handler.clone());
    let mut c = RawClient::connect_go(&server.addr, "disk");
    c.request(0, CMD_FLUSH, 1, 0, 0);
    assert!(handler.wait_held(1));
    let (_request, reply) = handler.take().pop().unwrap();
    // The client goes away; the connection is closed only after the held reply is answered,
    // and that answer goes nowhere without harm.
    drop(c);
    thread::sleep(Duration::from_millis(50));
    assert_eq!(server.connections(), 1, "waiting for the reply in flight");
    reply.ok();
    assert!(wait_until(Duration::from_secs(5), || server.connections() == 0));
}

#[test]
fn shutdown_finishes_requests_in_flight_then_closes() {
    let handler = Holding::new(MIB);
    let mut server = start(export("disk", MIB, false), handler.clone());
    let mut c = RawClient::connect_go(&server.addr, "disk");
    let mut idle = RawClient::connect(&server.addr);
    idle.greeting();
    c.request(0, CMD_READ, 1, 0, 512);
    c.request(0, CMD_READ, 2, 512, 512);
    assert!(handler.wait_held(2));
    let handle = server.handle.take().unwrap();
    let stopper = thread::spawn(move || handle.shutdown());
    thread::sleep(Duration::from_millis(200));
    assert!(
        !stopper.is_finished(),
        "shutdown waits for the replies in flight"
    );
    assert!(
        idle.expect_closed(),
        "a connection in the handshake is closed at once"
    );
    handler.answer_all();
    for _ in 0..2 {
        assert_eq!(c.reply().0, 0);
        c.read_exact(512);
    }
    assert!(c.expect_closed());
    stopper.join().unwrap();
    assert_eq!(handler.store.closed.load(Ordering::SeqCst), 1);
    assert!(
        std::net::TcpStream::connect(&server.addr).is_err(),
        "no longer listening"
    );
    server.shutdown();
}

#[test]
fn a_panicking_handler_closes_only_its_connection() {
    struct Panicky {
        store: Arc<Store>,
    }
    impl Handler for Panicky {
        fn request(&self, request: Request, reply: Reply) {
            if request.offset == 4096 {
                panic!("deliberate handler panic for the test");
            }
            self.store.execute(request, reply);
        }
    }
    let store = Arc::new(Store::new(MIB));
    let server = start(
        export("disk", MIB, false),
        Arc::new(Panicky {
            store: Arc::clone(&store),
        }),
    );
    let mut c = RawClient::connect_go(&server.addr, "disk");
    c.request(0, CMD_READ, 1, 4096, 512);
    assert_eq!(c.reply(), (EIO, 1), "the dropped reply answers EIO");
    assert!(c.expect_closed());
    assert!(server.wait_for_log("the handler panicked"));
    assert_still_serves(&server.addr, "disk", 0);
}

#[test]
fn callbacks_see_each_connection_once() {
    let handler = Holding::new(MIB);
    let server = start(export("disk", MIB, false), handler.clone());
    for _ in 0..3 {
        let c = RawClient::connect_go(&server.addr, "disk");
        c.disconnect();
    }
    // A connection that never finishes the handshake is not reported to the handler.
    let mut c = RawClient::connect(&server.addr);
    c.greeting();
    drop(c);
    assert!(wait_until(Duration::from_secs(5), || {
        handler.store.closed.load(Ordering::SeqCst) == 3 && server.connections() == 0
    }));
    assert_eq!(handler.store.opened.load(Ordering::SeqCst), 3);
    for peer in handler.peers.lock().unwrap().iter() {
        assert!(peer.starts_with("127.0.0.1:"), "{peer}");
    }
}

#[test]
fn unix_socket_binding_rules() {
    let tmp = tempfile::Builder::new()
        .prefix(&format!("storsim-nbd-bind-{}-", std::process::id()))
        .tempdir()
        .unwrap();
    let dir = tmp.path();
    let config = || {
        let mut c = ServerConfig::new(export("disk", MIB, false));
        c.log = Arc::new(|_| {});
        c
    };
    let handler = || -> Arc<dyn Handler> { MemHandler::new(MIB) };

    // A stale socket file (nobody listening) is replaced.
    let stale = dir.join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    let server = Server::bind(&Listen::Unix(stale.clone()), config(), handler()).unwrap();
    let running = server.spawn();
    let mut c = std::os::unix::net::UnixStream::connect(&stale).unwrap();
    let mut magic = [0u8; 8];
    c.read_exact(&mut magic).unwrap();
    assert_eq!(u64::from_be_bytes(magic), NBD_MAGIC);
    drop(c);

    // A live socket is not taken over.
    let err = Server::bind(&Listen::Unix(stale.clone()), config(), handler()).err();
    assert_eq!(err.map(|e| e.kind()), Some(std::io::ErrorKind::AddrInUse));
    running.shutdown();
    assert!(!stale.exists(), "removed at shutdown");

    // Shutdown returns even when the socket file was deleted under the server, so the
    // wake-up connection to it cannot be made.
    let gone = dir.join("gone.sock");
    let running = Server::bind(&Listen::Unix(gone.clone()), config(), handler())
        .unwrap()
        .spawn();
    std::fs::remove_file(&gone).unwrap();
    let stopper = thread::spawn(move || running.shutdown());
    assert!(wait_until(Duration::from_secs(5), || stopper.is_finished()));
    stopper.join().unwrap();

    // A regular file is never removed.
    let file = dir.join("not-a-socket");
    std::fs::write(&file, b"precious").unwrap();
    let err = Server::bind(&Listen::Unix(file.clone()), config(), handler()).err();
    assert_eq!(
        err.map(|e| e.kind()),
        Some(std::io::ErrorKind::AlreadyExists)
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"precious");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn invalid_configuration_is_refused_at_bind() {
    let mut config = ServerConfig::new(export("disk", MIB, false));
    config.max_in_flight = 0;
    let err = Server::bind(
        &Listen::Tcp("127.0.0.1:0".parse().unwrap()),
        config,
        MemHandler::new(MIB),
    )
    .err();
    assert_eq!(
        err.map(|e| e.kind()),
        Some(std::io::ErrorKind::InvalidInput)
    );
}

#[test]
fn minimum_block_size_is_advertised_and_enforced() {
    let handler = MemHandler::new(MIB);
    let server = start_tweaked(export("disk", MIB, false), handler.clone(), |c| {
        c.block_size.minimum = 512;
    });
    let mut c = RawClient::connect(&server.addr);
    c.greeting();
    c.send(&1u32.to_be_bytes()).unwrap();
    c.send(&option_bytes(OPT_GO, &go_data("disk", &[3])))
        .unwrap();
    let mut block = None;
    loop {
        let r = c.option_reply();
        if r.kind == REP_ACK {
            break;
        }
        if r.data[..2] == [0, 3] {
            block = Some(r.data[2..].to_vec());
        }
    }
    let block = block.expect("NBD_INFO_BLOCK_SIZE");
    assert_eq!(&block[..4], &512u32.to_be_bytes());
    assert_eq!(c.read(1, 100, 512).0, EINVAL);
    assert_eq!(c.read(2, 512, 100).0, EINVAL);
    assert_eq!(c.read(3, 512, 512).0, 0);
    c.disconnect();
    assert!(handler.store.violations().is_empty());
}
