//! A connection's requests received by a polling thread (`ConnectionPoller`) and by the
//! connection's reader thread, handed between them: a request split across the hand-over, many
//! requests in one receive, a connection ending and hostile bytes arriving while polled, the
//! server shutting down with the reader parked, and a long random run of hand-overs where no
//! request may be lost, duplicated or reordered. Over TCP and Unix sockets.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::*;
use storsim_nbd::{ConnectionPoller, Handler, Listen, Polled, Reply, Request};

const SIZE: usize = MIB;

/// Executes requests against a [`Store`], records the order of their cookies and the thread
/// that handed each over, and keeps the pollers it is offered for the test to drive.
struct PollHandler {
    store: Arc<Store>,
    /// Cookies in the order the handler saw them, with the name of the calling thread.
    seen: Mutex<Vec<(u64, String)>>,
    pollers: Mutex<mpsc::Sender<ConnectionPoller>>,
    /// Activate each poller as it is offered, so that the reader thread parks at once.
    activate: AtomicBool,
}

impl Handler for PollHandler {
    fn request(&self, request: Request, reply: Reply) {
        let thread = thread::current().name().unwrap_or("").to_string();
        self.seen.lock().unwrap().push((request.cookie, thread));
        self.store.execute(request, reply);
    }
    fn connection_opened(&self, _connection: u64, _peer: &str) {
        self.store.opened.fetch_add(1, Ordering::SeqCst);
    }
    fn connection_closed(&self, _connection: u64) {
        self.store.closed.fetch_add(1, Ordering::SeqCst);
    }
    fn connection_poller(&self, poller: ConnectionPoller) {
        if self.activate.load(Ordering::SeqCst) {
            poller.set_active(true);
        }
        let _ = self.pollers.lock().unwrap().send(poller);
    }
}

/// Either transport, for one test body run over both.
#[derive(Clone, Copy, Debug)]
enum Transport {
    Tcp,
    Unix,
}

enum Sock {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Read for Sock {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.read(buf),
            Sock::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Sock {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sock::Tcp(s) => s.write(buf),
            Sock::Unix(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Sock {
    fn try_clone(&self) -> Sock {
        match self {
            Sock::Tcp(s) => Sock::Tcp(s.try_clone().unwrap()),
            Sock::Unix(s) => Sock::Unix(s.try_clone().unwrap()),
        }
    }
    fn shutdown_write(&self) {
        let _ = match self {
            Sock::Tcp(s) => s.shutdown(Shutdown::Write),
            Sock::Unix(s) => s.shutdown(Shutdown::Write),
        };
    }
    fn u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        self.read_exact(&mut b).expect("read from server");
        u32::from_be_bytes(b)
    }
    fn u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.read_exact(&mut b).expect("read from server");
        u64::from_be_bytes(b)
    }
    /// One simple reply header: (error, cookie).
    fn reply(&mut self) -> (u32, u64) {
        assert_eq!(self.u32(), SIMPLE_REPLY_MAGIC);
        let error = self.u32();
        (error, self.u64())
    }
    fn data(&mut self, n: usize) -> Vec<u8> {
        let mut b = vec![0u8; n];
        self.read_exact(&mut b).expect("read from server");
        b
    }
    /// True once the server has closed the connection, discarding what it still sends.
    fn closed(&mut self) -> bool {
        drain_until_closed(self)
    }
}

struct Harness {
    server: TestServer,
    handler: Arc<PollHandler>,
    pollers: mpsc::Receiver<ConnectionPoller>,
    transport: Transport,
    /// Keeps the socket's directory for the server's life.
    _dir: Option<TempDir>,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Harness {
    fn new(transport: Transport, activate: bool) -> Harness {
        let (tx, rx) = mpsc::channel();
        let store = Arc::new(Store::new(SIZE));
        store.data.lock().unwrap().fill(0x5a);
        let handler = Arc::new(PollHandler {
            store,
            seen: Mutex::new(Vec::new()),
            pollers: Mutex::new(tx),
            activate: AtomicBool::new(activate),
        });
        let (listen, dir) = match transport {
            Transport::Tcp => (Listen::Tcp("127.0.0.1:0".parse().unwrap()), None),
            Transport::Unix => {
                static NEXT: AtomicUsize = AtomicUsize::new(0);
                let dir = std::env::temp_dir().join(format!(
                    "storsim-nbd-handover-{}-{}",
                    std::process::id(),
                    NEXT.fetch_add(1, Ordering::SeqCst)
                ));
                std::fs::create_dir_all(&dir).unwrap();
                (Listen::Unix(dir.join("nbd.sock")), Some(TempDir(dir)))
            }
        };
        let server = start_on(listen, export("disk", SIZE, false), handler.clone(), |_| {});
        Harness {
            server,
            handler,
            pollers: rx,
            transport,
            _dir: dir,
        }
    }

    /// Connects, runs the handshake and returns the socket and the connection's poller.
    fn connect(&self) -> (Sock, ConnectionPoller) {
        let mut sock = match self.transport {
            Transport::Tcp => {
                let s = TcpStream::connect(&self.server.addr).unwrap();
                s.set_nodelay(true).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                Sock::Tcp(s)
            }
            Transport::Unix => {
                let s = UnixStream::connect(&self.server.addr).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                Sock::Unix(s)
            }
        };
        let mut greeting = [0u8; 18];
        sock.read_exact(&mut greeting).unwrap();
        assert_eq!(
            u64::from_be_bytes(greeting[..8].try_into().unwrap()),
            NBD_MAGIC
        );
        // Fixed newstyle, no zero padding; NBD_OPT_EXPORT_NAME ends the handshake at once.
        sock.write_all(&3u32.to_be_bytes()).unwrap();
        sock.write_all(&option_bytes(OPT_EXPORT_NAME, b"disk"))
            .unwrap();
        let mut export = [0u8; 10];
        sock.read_exact(&mut export).unwrap();
        assert_eq!(
            u64::from_be_bytes(export[..8].try_into().unwrap()),
            SIZE as u64
        );
        let poller = self
            .pollers
            .recv_timeout(Duration::from_secs(10))
            .expect("the handler is offered a poller");
        (sock, poller)
    }

    fn seen(&self) -> Vec<(u64, String)> {
        self.handler.seen.lock().unwrap().clone()
    }
}

/// Polls until `served` requests have been served in all, or the connection closed; returns
/// the requests served and whether it closed.
fn poll_until(poller: &mut ConnectionPoller, served: usize) -> (usize, bool) {
    let mut total = 0;
    let mut closed = false;
    wait_until(Duration::from_secs(10), || {
        match poller.poll(usize::MAX) {
            Polled::Open { requests } => total += requests,
            Polled::Closed { requests } => {
                total += requests;
                closed = true;
            }
        }
        closed || total >= served
    });
    (total, closed)
}

fn write_frame(cookie: u64, offset: u64, data: &[u8]) -> Vec<u8> {
    let mut frame = request_bytes(0, CMD_WRITE, cookie, offset, data.len() as u32);
    frame.extend_from_slice(data);
    frame
}

fn on_reader_thread(name: &str) -> bool {
    name.starts_with("nbd-conn-")
}

/// The reader thread receives a write's header and the start of its payload, a poller has
/// become active meanwhile, and the poller receives the rest and hands the write over.
fn header_by_the_reader_payload_by_the_poller(transport: Transport) {
    let h = Harness::new(transport, false);
    let payload = random_bytes(11, 8192);
    let frame = write_frame(7, 4096, &payload);
    let mut split_seen = false;
    // The reader must already wait in its receive when the poller becomes active, or it parks
    // before the bytes come and the poller receives all of them: then the request must still
    // be served correctly, and the attempt is repeated on a fresh connection.
    for attempt in 0..5 {
        let (mut sock, mut poller) = h.connect();
        // A round trip through the reader thread, which then waits for the next request.
        sock.write_all(&request_bytes(0, CMD_READ, 1, 0, 512))
            .unwrap();
        assert_eq!(sock.reply(), (0, 1));
        assert_eq!(sock.data(512), vec![0x5a; 512]);
        thread::sleep(Duration::from_millis(20 + 30 * attempt));
        poller.set_active(true);
        sock.write_all(&frame[..28 + 1000]).unwrap();
        let reader_took_it = wait_until(Duration::from_secs(2), || {
            poller.stats().reader.bytes == 28 + 28 + 1000
        });
        sock.write_all(&frame[28 + 1000..]).unwrap();
        let (served, closed) = poll_until(&mut poller, 1);
        assert_eq!((served, closed), (1, false));
        assert_eq!(sock.reply(), (0, 7));
        let stats = poller.stats();
        assert_eq!(
            stats.reader.requests + stats.poller.requests,
            2,
            "{stats:?}"
        );
        assert_eq!(
            stats.reader.bytes + stats.poller.bytes,
            (28 + frame.len()) as u64,
            "{stats:?}"
        );
        assert_eq!(&h.handler.store.snapshot()[4096..4096 + 8192], &payload[..]);
        if reader_took_it {
            assert_eq!(stats.poller.bytes, (frame.len() - 28 - 1000) as u64);
            assert_eq!(stats.poller.requests, 1, "the poller finished the write");
            let seen = h.seen();
            let (cookie, thread) = seen.last().unwrap();
            assert_eq!(*cookie, 7);
            assert!(!on_reader_thread(thread), "handed over on {thread}");
            split_seen = true;
        }
        sock.write_all(&request_bytes(0, CMD_DISC, 0, 0, 0))
            .unwrap();
        let _ = poll_until(&mut poller, usize::MAX);
        assert!(sock.closed());
        if split_seen {
            break;
        }
    }
    assert!(split_seen, "the reader never received the header itself");
    assert!(h.handler.store.violations().is_empty());
}

#[test]
fn header_by_the_reader_payload_by_the_poller_tcp() {
    header_by_the_reader_payload_by_the_poller(Transport::Tcp);
}

#[test]
fn header_by_the_reader_payload_by_the_poller_unix() {
    header_by_the_reader_payload_by_the_poller(Transport::Unix);
}

/// A poller receives a write's header and the start of its payload, then goes inactive (or
/// is dropped), and the reader thread receives the rest and hands the write over.
fn header_by_the_poller_payload_by_the_reader(transport: Transport, drop_poller: bool) {
    let h = Harness::new(transport, true);
    let (mut sock, mut poller) = h.connect();
    let payload = random_bytes(12, 100_000);
    let frame = write_frame(9, 65536, &payload);
    sock.write_all(&frame[..28 + 5000]).unwrap();
    assert!(wait_until(Duration::from_secs(10), || {
        assert_eq!(poller.poll(usize::MAX), Polled::Open { requests: 0 });
        poller.stats().poller.bytes == 28 + 5000
    }));
    let stats = poller.stats();
    assert_eq!(stats.reader.bytes, 0, "the reader stayed parked: {stats:?}");
    let watch = if drop_poller {
        drop(poller);
        None
    } else {
        poller.set_active(false);
        Some(poller)
    };
    // The rest arrives in pieces, and a read follows the write in the same stream.
    sock.write_all(&frame[28 + 5000..60_000]).unwrap();
    thread::sleep(Duration::from_millis(5));
    let mut rest = frame[60_000..].to_vec();
    rest.extend_from_slice(&request_bytes(0, CMD_READ, 10, 65536 + 99_000, 1000));
    sock.write_all(&rest).unwrap();
    assert_eq!(sock.reply(), (0, 9));
    assert_eq!(sock.reply(), (0, 10));
    assert_eq!(sock.data(1000), payload[99_000..]);
    let seen = h.seen();
    assert_eq!(
        seen.iter().map(|(c, _)| *c).collect::<Vec<_>>(),
        vec![9, 10]
    );
    assert!(
        seen.iter().all(|(_, t)| on_reader_thread(t)),
        "the reader thread handed both over: {seen:?}"
    );
    if let Some(poller) = &watch {
        let stats = poller.stats();
        assert_eq!(stats.poller.requests, 0, "{stats:?}");
        assert_eq!(stats.reader.requests, 2, "{stats:?}");
        assert_eq!(
            stats.reader.bytes,
            (frame.len() - 28 - 5000 + 28) as u64,
            "{stats:?}"
        );
    }
    assert_eq!(
        &h.handler.store.snapshot()[65536..65536 + payload.len()],
        &payload[..]
    );
    sock.write_all(&request_bytes(0, CMD_DISC, 0, 0, 0))
        .unwrap();
    assert!(sock.closed());
    assert!(wait_until(Duration::from_secs(10), || {
        h.handler.store.closed.load(Ordering::SeqCst) == 1
    }));
    drop(watch);
}

#[test]
fn header_by_the_poller_payload_by_the_reader_tcp() {
    header_by_the_poller_payload_by_the_reader(Transport::Tcp, false);
}

#[test]
fn header_by_the_poller_payload_by_the_reader_unix() {
    header_by_the_poller_payload_by_the_reader(Transport::Unix, false);
}

#[test]
fn a_dropped_poller_hands_the_rest_to_the_reader() {
    header_by_the_poller_payload_by_the_reader(Transport::Tcp, true);
}

/// Twenty requests sent in one write arrive in one receive; a poll serves at most the number
/// it is asked for and leaves the rest buffered, in order.
fn many_requests_in_one_receive(transport: Transport) {
    let h = Harness::new(transport, true);
    let (mut sock, mut poller) = h.connect();
    let burst: Vec<u8> = (0..20u64)
        .flat_map(|i| request_bytes(0, CMD_READ, 100 + i, i * 512, 512))
        .collect();
    sock.write_all(&burst).unwrap();
    let mut counts = Vec::new();
    assert!(wait_until(Duration::from_secs(10), || {
        match poller.poll(3) {
            Polled::Open { requests: 0 } => {}
            Polled::Open { requests } => counts.push(requests),
            Polled::Closed { .. } => panic!("closed"),
        }
        counts.iter().sum::<usize>() == 20
    }));
    assert_eq!(counts, vec![3, 3, 3, 3, 3, 3, 2]);
    let stats = poller.stats();
    assert_eq!(stats.poller.receives, 1, "{stats:?}");
    assert_eq!(stats.poller.bytes, burst.len() as u64);
    assert_eq!(stats.reader.bytes, 0);
    for i in 0..20u64 {
        assert_eq!(sock.reply(), (0, 100 + i));
        assert_eq!(sock.data(512), vec![0x5a; 512]);
    }
    let cookies: Vec<u64> = h.seen().iter().map(|(c, _)| *c).collect();
    assert_eq!(cookies, (100..120).collect::<Vec<_>>());
}

#[test]
fn many_requests_in_one_receive_tcp() {
    many_requests_in_one_receive(Transport::Tcp);
}

#[test]
fn many_requests_in_one_receive_unix() {
    many_requests_in_one_receive(Transport::Unix);
}

/// The client sends a request and closes while a poller serves the connection: the request is
/// answered, the poller reports the end, and the reader thread closes the connection with the
/// usual log line and tells the handler.
fn closing_while_polled(transport: Transport) {
    let h = Harness::new(transport, true);
    let (mut sock, mut poller) = h.connect();
    sock.write_all(&request_bytes(0, CMD_READ, 5, 0, 4096))
        .unwrap();
    sock.shutdown_write();
    let (served, closed) = poll_until(&mut poller, usize::MAX);
    assert_eq!((served, closed), (1, true));
    assert_eq!(
        poller.poll(1),
        Polled::Closed { requests: 0 },
        "closed stays closed"
    );
    assert_eq!(sock.reply(), (0, 5));
    assert_eq!(sock.data(4096), vec![0x5a; 4096]);
    assert!(sock.closed());
    assert!(h
        .server
        .wait_for_log("client closed the connection without NBD_CMD_DISC"));
    assert!(wait_until(Duration::from_secs(10), || {
        h.handler.store.closed.load(Ordering::SeqCst) == 1 && h.server.connections() == 0
    }));

    // The same in the middle of a header, and in the middle of a write's payload.
    let (mut sock, mut poller) = h.connect();
    sock.write_all(&request_bytes(0, CMD_READ, 6, 0, 512)[..10])
        .unwrap();
    sock.shutdown_write();
    assert!(poll_until(&mut poller, usize::MAX).1);
    assert!(sock.closed());
    assert!(h.server.wait_for_log(
        "closing: connection closed in the middle of a request header (10 of 28 bytes received)"
    ));
    let (mut sock, mut poller) = h.connect();
    let frame = write_frame(8, 0, &[1u8; 4096]);
    sock.write_all(&frame[..28 + 1000]).unwrap();
    sock.shutdown_write();
    assert!(poll_until(&mut poller, usize::MAX).1);
    assert!(sock.closed());
    assert!(h.server.wait_for_log(
        "closing: connection closed in the middle of a write payload (1000 of 4096 bytes received)"
    ));
    assert!(wait_until(Duration::from_secs(10), || {
        h.handler.store.closed.load(Ordering::SeqCst) == 3 && h.server.connections() == 0
    }));
    assert!(h.handler.store.snapshot().iter().all(|&b| b == 0x5a));
}

#[test]
fn closing_while_polled_tcp() {
    closing_while_polled(Transport::Tcp);
}

#[test]
fn closing_while_polled_unix() {
    closing_while_polled(Transport::Unix);
}

/// Hostile bytes received by a poller close that connection with the same log line as on the
/// reader thread; a refused write's payload split across polls and the hand-over keeps the
/// stream in step; the data stays untouched and a fresh client is served.
#[test]
fn hostile_bytes_while_polled() {
    let h = Harness::new(Transport::Tcp, true);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (random_bytes(3, 28), "closing: request header has bad magic"),
        (
            request_bytes(0, 99, 1, 0, 0),
            "closing: unknown command type 99",
        ),
        (
            request_bytes(0, CMD_WRITE, 1, 0, u32::MAX),
            "closing: write announces a 4294967295-byte payload, more than the limit of \
             33554432 bytes",
        ),
    ];
    for (bytes, log) in cases {
        let (mut sock, mut poller) = h.connect();
        // A valid request first, in the same receive: it is served before the close.
        let mut stream = request_bytes(0, CMD_READ, 2, 0, 512);
        stream.extend_from_slice(&bytes);
        sock.write_all(&stream).unwrap();
        let (served, closed) = poll_until(&mut poller, usize::MAX);
        assert_eq!((served, closed), (1, true), "{log}");
        assert_eq!(sock.reply(), (0, 2));
        assert_eq!(sock.data(512), vec![0x5a; 512]);
        assert!(sock.closed(), "{log}");
        assert!(h.server.wait_for_log(log), "{log}");
    }

    // A write past the end is refused, its payload read and dropped: part by a poller, the
    // rest by the reader thread, and the next request is in step.
    let (mut sock, mut poller) = h.connect();
    let frame = write_frame(20, SIZE as u64, &[7u8; 70_000]);
    sock.write_all(&frame[..30_000]).unwrap();
    assert!(wait_until(Duration::from_secs(10), || {
        poller.poll(usize::MAX);
        poller.stats().poller.bytes == 30_000
    }));
    poller.set_active(false);
    let mut rest = frame[30_000..].to_vec();
    rest.extend_from_slice(&request_bytes(0, CMD_READ, 21, 0, 512));
    sock.write_all(&rest).unwrap();
    assert_eq!(sock.reply(), (ENOSPC, 20));
    assert_eq!(sock.reply(), (0, 21));
    assert_eq!(sock.data(512), vec![0x5a; 512]);
    sock.write_all(&request_bytes(0, CMD_DISC, 0, 0, 0))
        .unwrap();
    assert!(sock.closed());
    drop(poller);

    assert!(h.handler.store.snapshot().iter().all(|&b| b == 0x5a));
    assert_eq!(h.handler.store.writes.load(Ordering::SeqCst), 0);
    assert!(h.handler.store.violations().is_empty());
    // A fresh client, left to its reader thread, is served.
    h.handler.activate.store(false, Ordering::SeqCst);
    assert_still_serves(&h.server.addr, "disk", 8192);
}

/// Shutting the server down wakes a reader thread parked while a poller serves its connection;
/// the connection closes and the handler is told.
#[test]
fn shutdown_wakes_a_parked_reader() {
    let mut h = Harness::new(Transport::Unix, true);
    let (mut sock, mut poller) = h.connect();
    sock.write_all(&request_bytes(0, CMD_READ, 1, 0, 512))
        .unwrap();
    assert_eq!(poll_until(&mut poller, 1), (1, false));
    assert_eq!(sock.reply(), (0, 1));
    let (done_tx, done_rx) = mpsc::channel();
    let handle = h.server.handle.take().unwrap();
    thread::spawn(move || {
        handle.shutdown();
        let _ = done_tx.send(());
    });
    done_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("shutdown returned with the reader parked");
    assert_eq!(h.handler.store.closed.load(Ordering::SeqCst), 1);
    assert!(sock.closed());
    assert_eq!(poller.poll(1), Polled::Closed { requests: 0 });
}

/// What the client expects back for one request.
enum Expect {
    Ok,
    Error(u32),
    Data(Vec<u8>),
}

/// A client's requests for [`random_handovers`], and what they must come to.
struct Script {
    /// The device's contents once every request is served.
    model: Vec<u8>,
    /// The requests' bytes, ending with a disconnect.
    stream: Vec<u8>,
    /// Each request's cookie and the reply it must get, in order.
    expected: Vec<(u64, Expect)>,
    /// The cookies of the requests that reach the handler, in order.
    handled: Vec<u64>,
}

/// 3000 random requests drawn from `rng`: writes (some past the end), reads, flushes and
/// unsupported commands, of lengths from zero to 128 KiB.
fn random_script(rng: &mut Rng) -> Script {
    let mut model = vec![0x5au8; SIZE];
    let mut stream = Vec::new();
    let mut expected = Vec::new();
    let mut handled = Vec::new();
    for cookie in 0..3000u64 {
        let length = match rng.below(10) {
            0 => 65536 + rng.below(65536) as u32,
            1 => 0,
            _ => 1 + rng.below(8192) as u32,
        };
        let offset = rng.below((SIZE - 131_072) as u64);
        match rng.below(12) {
            0..=4 => {
                let data = random_bytes(rng.next(), length as usize);
                model[offset as usize..offset as usize + length as usize].copy_from_slice(&data);
                stream.extend_from_slice(&write_frame(cookie, offset, &data));
                expected.push((cookie, Expect::Ok));
                if length > 0 {
                    handled.push(cookie);
                }
            }
            5..=8 => {
                stream.extend_from_slice(&request_bytes(0, CMD_READ, cookie, offset, length));
                let data = model[offset as usize..offset as usize + length as usize].to_vec();
                expected.push((cookie, Expect::Data(data)));
                if length > 0 {
                    handled.push(cookie);
                }
            }
            9 => {
                // Past the end: refused, its payload dropped.
                let data = vec![1u8; length as usize];
                stream.extend_from_slice(&write_frame(cookie, SIZE as u64 - 1, &data));
                let error = if length > 1 { ENOSPC } else { 0 };
                expected.push((
                    cookie,
                    if error == 0 {
                        Expect::Ok
                    } else {
                        Expect::Error(error)
                    },
                ));
                if length == 1 {
                    model[SIZE - 1] = 1;
                    handled.push(cookie);
                }
            }
            10 => {
                stream.extend_from_slice(&request_bytes(0, CMD_FLUSH, cookie, 0, 0));
                expected.push((cookie, Expect::Ok));
                handled.push(cookie);
            }
            _ => {
                stream.extend_from_slice(&request_bytes(0, CMD_CACHE, cookie, 0, 512));
                expected.push((cookie, Expect::Error(EINVAL)));
            }
        }
    }
    stream.extend_from_slice(&request_bytes(0, CMD_DISC, 0, 0, 0));
    Script {
        model,
        stream,
        expected,
        handled,
    }
}

/// Thousands of random requests (reads, writes up to 128 KiB, refused writes, flushes, trims,
/// zero-length and unsupported commands), sent in random pieces, while a thread switches the
/// poller on and off at random and polls with random budgets: every request reaches the
/// handler exactly once and in order, every reply is right, and the data ends as written.
fn random_handovers(transport: Transport, seed: u64) {
    eprintln!("random_handovers seed {seed} over {transport:?}");
    let h = Harness::new(transport, false);
    let (sock, mut poller) = h.connect();
    let mut rng = Rng(seed);
    let Script {
        model,
        stream,
        expected,
        handled,
    } = random_script(&mut rng);

    let stop = Arc::new(AtomicBool::new(false));
    let polling = {
        let stop = Arc::clone(&stop);
        let mut rng = Rng(seed ^ 0x55);
        thread::spawn(move || {
            let mut active = false;
            let mut closed = false;
            while !stop.load(Ordering::SeqCst) {
                if rng.below(50) == 0 {
                    active = !active;
                    poller.set_active(active);
                }
                if active && !closed {
                    closed = matches!(
                        poller.poll(1 + rng.below(8) as usize),
                        Polled::Closed { .. }
                    );
                }
                if rng.below(20) == 0 {
                    thread::sleep(Duration::from_micros(rng.below(300)));
                }
            }
            poller
        })
    };
    let replies = {
        let mut sock = sock.try_clone();
        thread::spawn(move || {
            for (cookie, expect) in expected {
                let (error, got) = sock.reply();
                assert_eq!(got, cookie, "replies in order");
                match expect {
                    Expect::Ok => assert_eq!(error, 0, "cookie {cookie}"),
                    Expect::Error(e) => assert_eq!(error, e, "cookie {cookie}"),
                    Expect::Data(data) => {
                        assert_eq!(error, 0, "cookie {cookie}");
                        assert!(sock.data(data.len()) == data, "data of cookie {cookie}");
                    }
                }
            }
            assert!(sock.closed());
        })
    };
    let mut writer = sock;
    let mut at = 0;
    while at < stream.len() {
        let most = if rng.below(4) == 0 { 40 } else { 20_000 };
        let piece = (1 + rng.below(most)) as usize;
        let end = (at + piece).min(stream.len());
        writer.write_all(&stream[at..end]).unwrap();
        at = end;
        if rng.below(10) == 0 {
            thread::sleep(Duration::from_micros(rng.below(200)));
        }
    }
    replies.join().expect("every reply right and in order");
    stop.store(true, Ordering::SeqCst);
    let poller = polling.join().unwrap();
    let stats = poller.stats();
    eprintln!("{stats:?}");
    let cookies: Vec<u64> = h.seen().iter().map(|(c, _)| *c).collect();
    assert_eq!(cookies, handled, "each request handed over once, in order");
    assert!(h.handler.store.snapshot() == model, "data as written");
    assert!(h.handler.store.violations().is_empty());
    assert!(
        stats.reader.requests > 0 && stats.poller.requests > 0,
        "{stats:?}"
    );
    assert_eq!(
        stats.reader.bytes + stats.poller.bytes,
        stream.len() as u64,
        "{stats:?}"
    );
}

#[test]
fn random_handovers_tcp() {
    let seed = std::env::var("NBD_HANDOVER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0001);
    random_handovers(Transport::Tcp, seed);
}

#[test]
fn random_handovers_unix() {
    let seed = std::env::var("NBD_HANDOVER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0002);
    random_handovers(Transport::Unix, seed);
}
