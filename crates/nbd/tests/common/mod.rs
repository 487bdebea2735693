//! Shared test fixtures: in-memory handlers, a server wrapper that captures log lines, a raw
//! protocol client for hostile input, and helpers for the real client binaries.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Command as Process, Output};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use storsim_nbd::{
    Command, Errno, Export, Handler, Listen, Reply, Request, Server, ServerConfig, ServerHandle,
};

pub const MIB: usize = 1024 * 1024;

/// Storage plus bookkeeping shared by both test handlers.
pub struct Store {
    pub data: Mutex<Vec<u8>>,
    /// Requests that broke the server's promise (out of bounds, wrong payload size). Any
    /// entry fails the test that checks it.
    pub violations: Mutex<Vec<String>>,
    pub requests: AtomicUsize,
    pub writes: AtomicUsize,
    pub connections_seen: Mutex<BTreeSet<u64>>,
    pub opened: AtomicUsize,
    pub closed: AtomicUsize,
    /// Longest trim seen, to show which lengths real clients send.
    pub max_trim: AtomicU64,
}

impl Store {
    pub fn new(size: usize) -> Store {
        Store {
            data: Mutex::new(vec![0; size]),
            violations: Mutex::new(Vec::new()),
            requests: AtomicUsize::new(0),
            writes: AtomicUsize::new(0),
            connections_seen: Mutex::new(BTreeSet::new()),
            opened: AtomicUsize::new(0),
            closed: AtomicUsize::new(0),
            max_trim: AtomicU64::new(0),
        }
    }

    pub fn snapshot(&self) -> Vec<u8> {
        self.data.lock().unwrap().clone()
    }

    pub fn violations(&self) -> Vec<String> {
        self.violations.lock().unwrap().clone()
    }

    /// Executes a request against the buffer and answers it.
    pub fn execute(&self, request: Request, reply: Reply) {
        self.requests.fetch_add(1, Ordering::SeqCst);
        self.connections_seen
            .lock()
            .unwrap()
            .insert(request.connection);
        let mut data = self.data.lock().unwrap();
        let size = data.len() as u64;
        let start = request.offset;
        let end = request.offset + u64::from(request.length);
        let in_bounds = end <= size && request.length > 0;
        if request.command != Command::Flush && !in_bounds {
            self.violations
                .lock()
                .unwrap()
                .push(format!("out of bounds: {request:?}"));
            reply.error(Errno::Inval);
            return;
        }
        let (start, end) = (start as usize, end as usize);
        match request.command {
            Command::Read => {
                let bytes = data[start..end].to_vec();
                drop(data);
                reply.data(&bytes);
            }
            Command::Write => {
                if request.data.len() != request.length as usize {
                    self.violations
                        .lock()
                        .unwrap()
                        .push(format!("payload size mismatch: {request:?}"));
                    reply.error(Errno::Inval);
                    return;
                }
                self.writes.fetch_add(1, Ordering::SeqCst);
                data[start..end].copy_from_slice(&request.data);
                reply.ok();
            }
            Command::WriteZeroes => {
                self.writes.fetch_add(1, Ordering::SeqCst);
                data[start..end].fill(0);
                reply.ok();
            }
            Command::Trim => {
                self.max_trim
                    .fetch_max(u64::from(request.length), Ordering::SeqCst);
                reply.ok();
            }
            Command::Flush => reply.ok(),
        }
    }
}

/// Answers every request immediately on the reader thread.
pub struct MemHandler {
    pub store: Arc<Store>,
}

impl MemHandler {
    pub fn new(size: usize) -> Arc<MemHandler> {
        Arc::new(MemHandler {
            store: Arc::new(Store::new(size)),
        })
    }
}

impl Handler for MemHandler {
    fn request(&self, request: Request, reply: Reply) {
        self.store.execute(request, reply);
    }
    fn connection_opened(&self, _connection: u64, _peer: &str) {
        self.store.opened.fetch_add(1, Ordering::SeqCst);
    }
    fn connection_closed(&self, _connection: u64) {
        self.store.closed.fetch_add(1, Ordering::SeqCst);
    }
}

type Pending = Vec<(Request, Reply)>;

/// Collects requests and answers them from a worker thread after a delay, each batch in
/// reverse arrival order, so replies on a connection go out of order.
pub struct DelayedHandler {
    pub store: Arc<Store>,
    pending: Arc<(Mutex<Pending>, Condvar)>,
    /// Most answers sent in reverse order; recorded to prove reordering really happened.
    pub reversed_batches: Arc<AtomicUsize>,
}

impl DelayedHandler {
    pub fn new(size: usize, delay: Duration) -> Arc<DelayedHandler> {
        let store = Arc::new(Store::new(size));
        let pending: Arc<(Mutex<Pending>, Condvar)> = Arc::default();
        let reversed_batches = Arc::new(AtomicUsize::new(0));
        let worker_store = Arc::clone(&store);
        let worker_pending = Arc::clone(&pending);
        let worker_reversed = Arc::clone(&reversed_batches);
        // The worker exits once the handler (and so the server) is gone and nothing is
        // pending: then it holds the only reference to the queue.
        thread::Builder::new()
            .name("delayed-handler".into())
            .spawn(move || loop {
                let batch: Pending = {
                    let (lock, cv) = &*worker_pending;
                    let mut queue = lock.lock().unwrap();
                    while queue.is_empty() {
                        if Arc::strong_count(&worker_pending) == 1 {
                            return;
                        }
                        queue = cv.wait_timeout(queue, Duration::from_millis(50)).unwrap().0;
                    }
                    drop(queue);
                    // Let more requests arrive so each batch has several to reorder.
                    thread::sleep(delay);
                    std::mem::take(&mut *lock.lock().unwrap())
                };
                if batch.len() > 1 {
                    worker_reversed.fetch_add(1, Ordering::SeqCst);
                }
                for (request, reply) in batch.into_iter().rev() {
                    worker_store.execute(request, reply);
                }
            })
            .unwrap();
        Arc::new(DelayedHandler {
            store,
            pending,
            reversed_batches,
        })
    }
}

impl Handler for DelayedHandler {
    fn request(&self, request: Request, reply: Reply) {
        let (lock, cv) = &*self.pending;
        lock.lock().unwrap().push((request, reply));
        cv.notify_one();
    }
    fn connection_opened(&self, _connection: u64, _peer: &str) {
        self.store.opened.fetch_add(1, Ordering::SeqCst);
    }
    fn connection_closed(&self, _connection: u64) {
        self.store.closed.fetch_add(1, Ordering::SeqCst);
    }
}

/// A running server whose log lines are captured.
pub struct TestServer {
    pub handle: Option<ServerHandle>,
    pub addr: String,
    pub logs: Arc<Mutex<Vec<String>>>,
}

impl TestServer {
    pub fn logs(&self) -> Vec<String> {
        self.logs.lock().unwrap().clone()
    }

    /// Waits until a log line containing `needle` appears.
    pub fn wait_for_log(&self, needle: &str) -> bool {
        wait_until(Duration::from_secs(10), || {
            self.logs().iter().any(|l| l.contains(needle))
        })
    }

    pub fn connections(&self) -> usize {
        self.handle.as_ref().map_or(0, |h| h.connections())
    }

    pub fn shutdown(&mut self) {
        if let Some(h) = self.handle.take() {
            h.shutdown();
        }
    }

    pub fn tcp_uri(&self, name: &str) -> String {
        format!("nbd://{}/{}", self.addr, name)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

pub fn export(name: &str, size: usize, read_only: bool) -> Export {
    Export {
        name: name.into(),
        description: format!("test export {name}"),
        size_bytes: size as u64,
        read_only,
    }
}

pub fn start_on(
    listen: Listen,
    export: Export,
    handler: Arc<dyn Handler>,
    tweak: impl FnOnce(&mut ServerConfig),
) -> TestServer {
    let logs: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = Arc::clone(&logs);
    let mut config = ServerConfig::new(export);
    config.log = Arc::new(move |line: &str| {
        eprintln!("[server log] {line}");
        sink.lock().unwrap().push(line.to_string());
    });
    tweak(&mut config);
    let server = Server::bind(&listen, config, handler).expect("bind");
    let addr = server.local_addr();
    TestServer {
        handle: Some(server.spawn()),
        addr,
        logs,
    }
}

pub fn start(export: Export, handler: Arc<dyn Handler>) -> TestServer {
    start_tweaked(export, handler, |_| {})
}

pub fn start_tweaked(
    export: Export,
    handler: Arc<dyn Handler>,
    tweak: impl FnOnce(&mut ServerConfig),
) -> TestServer {
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    start_on(Listen::Tcp(addr), export, handler, tweak)
}

pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        thread::sleep(Duration::from_millis(10));
    }
    cond()
}

/// Finds a client binary on PATH. When it is missing the caller skips its test, saying so.
pub fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let found = std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        storsim_testenv::missing(&format!(
            "`{name}` is not installed (apt-get install qemu-utils libnbd-bin)"
        ));
    }
    found
}

/// Runs a client binary with a generous timeout so a server bug shows as a failure, not a hang.
pub fn run(program: &PathBuf, args: &[&str]) -> Output {
    let mut child = Process::new("timeout");
    child.arg("120").arg(program).args(args);
    let out = child.output().expect("run client");
    eprintln!(
        "$ {} {}\n--- status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        program.display(),
        args.join(" "),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A small deterministic generator (splitmix64) so tests need no dependencies.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

pub fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0; len];
    Rng(seed).fill(&mut v);
    v
}

// Protocol constants for the raw client, written out here independently of the crate.
pub const NBD_MAGIC: u64 = 0x4e42_444d_4147_4943;
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
pub const REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
pub const OPT_EXPORT_NAME: u32 = 1;
pub const OPT_ABORT: u32 = 2;
pub const OPT_LIST: u32 = 3;
pub const OPT_INFO: u32 = 6;
pub const OPT_GO: u32 = 7;
pub const REP_ACK: u32 = 1;
pub const REP_INFO: u32 = 3;
pub const REP_ERR_UNSUP: u32 = 0x8000_0001;
pub const REP_ERR_UNKNOWN: u32 = 0x8000_0006;
pub const CMD_READ: u16 = 0;
pub const CMD_WRITE: u16 = 1;
pub const CMD_DISC: u16 = 2;
pub const CMD_FLUSH: u16 = 3;
pub const CMD_TRIM: u16 = 4;
pub const CMD_CACHE: u16 = 5;
pub const CMD_WRITE_ZEROES: u16 = 6;
pub const EPERM: u32 = 1;
pub const EIO: u32 = 5;
pub const EINVAL: u32 = 22;
pub const ENOSPC: u32 = 28;

/// A hand-driven NBD client over TCP for sending exactly the bytes a test wants.
pub struct RawClient {
    pub stream: TcpStream,
}

pub fn option_bytes(option: u32, data: &[u8]) -> Vec<u8> {
    let mut v = IHAVEOPT.to_be_bytes().to_vec();
    v.extend_from_slice(&option.to_be_bytes());
    v.extend_from_slice(&(data.len() as u32).to_be_bytes());
    v.extend_from_slice(data);
    v
}

pub fn go_data(name: &str, infos: &[u16]) -> Vec<u8> {
    let mut d = (name.len() as u32).to_be_bytes().to_vec();
    d.extend_from_slice(name.as_bytes());
    d.extend_from_slice(&(infos.len() as u16).to_be_bytes());
    for i in infos {
        d.extend_from_slice(&i.to_be_bytes());
    }
    d
}

pub fn request_bytes(flags: u16, kind: u16, cookie: u64, offset: u64, length: u32) -> Vec<u8> {
    let mut v = REQUEST_MAGIC.to_be_bytes().to_vec();
    v.extend_from_slice(&flags.to_be_bytes());
    v.extend_from_slice(&kind.to_be_bytes());
    v.extend_from_slice(&cookie.to_be_bytes());
    v.extend_from_slice(&offset.to_be_bytes());
    v.extend_from_slice(&length.to_be_bytes());
    v
}

pub struct OptionReply {
    pub option: u32,
    pub kind: u32,
    pub data: Vec<u8>,
}

impl RawClient {
    pub fn connect(addr: &str) -> RawClient {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        RawClient { stream }
    }

    pub fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
    }

    pub fn read_exact(&mut self, n: usize) -> Vec<u8> {
        let mut buf = vec![0; n];
        self.stream.read_exact(&mut buf).expect("read from server");
        buf
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_be_bytes(self.read_exact(2).try_into().unwrap())
    }
    pub fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.read_exact(4).try_into().unwrap())
    }
    pub fn u64(&mut self) -> u64 {
        u64::from_be_bytes(self.read_exact(8).try_into().unwrap())
    }

    /// Reads the greeting and checks its magic numbers; returns the handshake flags.
    pub fn greeting(&mut self) -> u16 {
        assert_eq!(self.u64(), NBD_MAGIC);
        assert_eq!(self.u64(), IHAVEOPT);
        self.u16()
    }

    pub fn option_reply(&mut self) -> OptionReply {
        assert_eq!(self.u64(), REPLY_MAGIC);
        let option = self.u32();
        let kind = self.u32();
        let len = self.u32() as usize;
        let data = self.read_exact(len);
        OptionReply { option, kind, data }
    }

    /// Greeting, client flags, and NBD_OPT_GO for `name`; returns (size, transmission flags).
    pub fn go(&mut self, name: &str) -> (u64, u16) {
        self.greeting();
        self.send(&3u32.to_be_bytes()).unwrap();
        self.send(&option_bytes(OPT_GO, &go_data(name, &[])))
            .unwrap();
        let mut export = None;
        loop {
            let r = self.option_reply();
            assert_eq!(r.option, OPT_GO);
            match r.kind {
                REP_INFO => {
                    if r.data[..2] == [0, 0] {
                        let size = u64::from_be_bytes(r.data[2..10].try_into().unwrap());
                        let flags = u16::from_be_bytes(r.data[10..12].try_into().unwrap());
                        export = Some((size, flags));
                    }
                }
                REP_ACK => return export.expect("NBD_INFO_EXPORT before ACK"),
                other => panic!("unexpected reply {other:#x} to NBD_OPT_GO"),
            }
        }
    }

    pub fn connect_go(addr: &str, name: &str) -> RawClient {
        let mut c = RawClient::connect(addr);
        c.go(name);
        c
    }

    pub fn request(&mut self, flags: u16, kind: u16, cookie: u64, offset: u64, length: u32) {
        self.send(&request_bytes(flags, kind, cookie, offset, length))
            .unwrap();
    }

    /// Reads one simple reply header; returns (error, cookie).
    pub fn reply(&mut self) -> (u32, u64) {
        assert_eq!(self.u32(), SIMPLE_REPLY_MAGIC);
        let error = self.u32();
        let cookie = self.u64();
        (error, cookie)
    }

    pub fn write(&mut self, cookie: u64, offset: u64, data: &[u8]) -> u32 {
        let mut frame = request_bytes(0, CMD_WRITE, cookie, offset, data.len() as u32);
        frame.extend_from_slice(data);
        self.send(&frame).unwrap();
        let (error, c) = self.reply();
        assert_eq!(c, cookie);
        error
    }

    /// Reads `length` bytes; returns the error and, on success, the data.
    pub fn read(&mut self, cookie: u64, offset: u64, length: u32) -> (u32, Vec<u8>) {
        self.request(0, CMD_READ, cookie, offset, length);
        let (error, c) = self.reply();
        assert_eq!(c, cookie);
        if error == 0 {
            (0, self.read_exact(length as usize))
        } else {
            (error, Vec::new())
        }
    }

    pub fn disconnect(mut self) {
        let _ = self.send(&request_bytes(0, CMD_DISC, 0, 0, 0));
        self.expect_closed();
    }

    /// True once the server has closed the connection (EOF or reset), reading and discarding
    /// anything it still sends.
    pub fn expect_closed(&mut self) -> bool {
        drain_until_closed(&mut self.stream)
    }
}

/// Reads and discards what the server sends until it closes the connection (EOF or reset):
/// true then; false when a read times out (the stream's read timeout) or the server is still
/// sending after 10 s.
pub fn drain_until_closed(stream: &mut impl Read) -> bool {
    let mut buf = [0u8; 16384];
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                return false
            }
            Err(_) => return true,
        }
    }
    false
}

/// A fresh, well-behaved client writes and reads back a pattern: the server still serves.
pub fn assert_still_serves(addr: &str, name: &str, offset: u64) {
    let mut c = RawClient::connect_go(addr, name);
    let pattern: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
    assert_eq!(c.write(1, offset, &pattern), 0, "write after hostile input");
    let (error, back) = c.read(2, offset, 4096);
    assert_eq!(error, 0);
    assert_eq!(back, pattern, "read-back after hostile input");
    c.disconnect();
}
