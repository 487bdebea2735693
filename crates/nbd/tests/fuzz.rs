//! Feeds thousands of random and mutated client byte streams to one server. The server must
//! never panic, never hang on a stream the client has finished sending, never hand the handler
//! an invalid request, and must keep serving proper clients throughout.
//!
//! The same streams run a second time with every connection also served by a polling thread
//! (`ConnectionPoller`) that a background thread switches on and off at random, so that either
//! side, or both in turn, receive the damaged bytes.
//!
//! The seed is printed; set NBD_FUZZ_SEED to replay a run, NBD_FUZZ_CASES to change its length.

mod common;

use std::io::Write;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use storsim_nbd::{ConnectionPoller, Handler, Polled, Reply, Request};

static PANICS: AtomicUsize = AtomicUsize::new(0);

const SIZE: usize = MIB;
const CMD_FLAGS: [u16; 4] = [0, 1, 2, 4];

/// A plausible client stream: handshake options, then a mix of requests.
fn valid_stream(rng: &mut Rng) -> Vec<u8> {
    let mut s = Vec::new();
    s.extend_from_slice(&(if rng.below(2) == 0 { 1u32 } else { 3 }).to_be_bytes());
    for _ in 0..rng.below(3) {
        match rng.below(4) {
            0 => s.extend(option_bytes(OPT_LIST, &[])),
            1 => s.extend(option_bytes(OPT_INFO, &go_data("disk", &[0, 1, 2, 3]))),
            2 => s.extend(option_bytes(8, &[])),
            _ => s.extend(option_bytes(rng.below(20) as u32, b"xyz")),
        }
    }
    if rng.below(4) == 0 {
        s.extend(option_bytes(OPT_EXPORT_NAME, b"disk"));
    } else {
        s.extend(option_bytes(OPT_GO, &go_data("disk", &[])));
    }
    for cookie in 0..rng.below(8) {
        let kind = [
            CMD_READ,
            CMD_WRITE,
            CMD_FLUSH,
            CMD_TRIM,
            CMD_WRITE_ZEROES,
            CMD_CACHE,
        ][rng.below(6) as usize];
        let length = rng.below(4096) as u32;
        let offset = rng.below(SIZE as u64 + 8192);
        let (offset, length) = if kind == CMD_FLUSH {
            (0, 0)
        } else {
            (offset, length)
        };
        let flags = CMD_FLAGS[rng.below(4) as usize];
        s.extend(request_bytes(flags, kind, cookie, offset, length));
        if kind == CMD_WRITE {
            let mut payload = vec![0u8; length as usize];
            rng.fill(&mut payload);
            s.extend(payload);
        }
    }
    if rng.below(2) == 0 {
        s.extend(request_bytes(0, CMD_DISC, 0, 0, 0));
    }
    s
}

/// Damages a stream in one of several ways.
fn mutate(rng: &mut Rng, mut s: Vec<u8>) -> Vec<u8> {
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        if s.is_empty() {
            break;
        }
        let at = rng.below(s.len() as u64) as usize;
        match rng.below(6) {
            0 => s[at] ^= 1 << rng.below(8),
            1 => s[at] = rng.next() as u8,
            2 => s.truncate(at),
            3 => {
                let extra: Vec<u8> = (0..1 + rng.below(32)).map(|_| rng.next() as u8).collect();
                s.splice(at..at, extra);
            }
            4 => {
                // Plant an extreme length or offset where a 32-bit field might be.
                let value = [0u32, 1, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff, 0x0200_0001]
                    [rng.below(6) as usize];
                let end = (at + 4).min(s.len());
                s[at..end].copy_from_slice(&value.to_be_bytes()[..end - at]);
            }
            _ => {
                let end = (at + 1 + rng.below(16) as usize).min(s.len());
                let chunk = s[at..end].to_vec();
                s.splice(at..at, chunk);
            }
        }
    }
    s
}

fn random_stream(rng: &mut Rng) -> Vec<u8> {
    let len = rng.below(512) as usize;
    let mut s = vec![0u8; len];
    rng.fill(&mut s);
    // Half the time, start with valid client flags so the garbage reaches option parsing.
    if rng.below(2) == 0 && len >= 4 {
        s[..4].copy_from_slice(&1u32.to_be_bytes());
    }
    s
}

/// Sends one stream, half-closes, and drains the server's output until it closes. Returns
/// false if the server did not close within the timeout.
fn feed(addr: &str, bytes: &[u8]) -> bool {
    let Ok(mut stream) = TcpStream::connect(addr) else {
        return false;
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    // The server may close before reading everything; a failed send is expected then.
    let _ = stream.write_all(bytes);
    let _ = stream.shutdown(Shutdown::Write);
    drain_until_closed(&mut stream)
}

/// A [`MemHandler`] whose connections a background thread also polls, switching each poller
/// on and off at random.
struct PolledHandler {
    store: Arc<Store>,
    fresh: Arc<Mutex<Vec<ConnectionPoller>>>,
    stop: Arc<AtomicBool>,
    polling: Mutex<Option<thread::JoinHandle<()>>>,
    /// Requests the polling thread served, counted as their connections end.
    polled: Arc<AtomicUsize>,
}

impl PolledHandler {
    fn new(size: usize, seed: u64) -> Arc<PolledHandler> {
        let fresh: Arc<Mutex<Vec<ConnectionPoller>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let polled = Arc::new(AtomicUsize::new(0));
        let polling = {
            let fresh = Arc::clone(&fresh);
            let stop = Arc::clone(&stop);
            let polled = Arc::clone(&polled);
            thread::spawn(move || {
                let mut rng = Rng(seed);
                let mut pollers: Vec<ConnectionPoller> = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    pollers.append(&mut fresh.lock().unwrap());
                    pollers.retain_mut(|p| {
                        if rng.below(8) == 0 {
                            p.set_active(rng.below(3) != 0);
                        }
                        let closed =
                            matches!(p.poll(1 + rng.below(4) as usize), Polled::Closed { .. });
                        if closed {
                            let served = p.stats().poller.requests as usize;
                            polled.fetch_add(served, Ordering::SeqCst);
                        }
                        !closed
                    });
                    if rng.below(64) == 0 {
                        thread::sleep(Duration::from_micros(100));
                    }
                }
            })
        };
        Arc::new(PolledHandler {
            store: Arc::new(Store::new(size)),
            fresh,
            stop,
            polling: Mutex::new(Some(polling)),
            polled,
        })
    }

    fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.polling.lock().unwrap().take() {
            t.join().unwrap();
        }
    }
}

impl Handler for PolledHandler {
    fn request(&self, request: Request, reply: Reply) {
        self.store.execute(request, reply);
    }
    fn connection_opened(&self, _connection: u64, _peer: &str) {
        self.store.opened.fetch_add(1, Ordering::SeqCst);
    }
    fn connection_closed(&self, _connection: u64) {
        self.store.closed.fetch_add(1, Ordering::SeqCst);
    }
    fn connection_poller(&self, poller: ConnectionPoller) {
        poller.set_active(true);
        self.fresh.lock().unwrap().push(poller);
    }
}

#[test]
fn random_and_mutated_streams_never_break_the_server() {
    let handler = MemHandler::new(SIZE);
    let store = Arc::clone(&handler.store);
    fuzz(handler, &store, 0);
}

#[test]
fn random_and_mutated_streams_never_break_a_polled_server() {
    let handler = PolledHandler::new(SIZE, 0x706f_6c6c);
    let store = Arc::clone(&handler.store);
    fuzz(handler.clone(), &store, 1);
    handler.stop();
    assert!(
        handler.polled.load(Ordering::SeqCst) > 0,
        "the polling thread served requests"
    );
}

fn fuzz(handler: Arc<dyn Handler>, store: &Store, variant: u64) {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            default_hook(info);
        }));
    });

    let seed = std::env::var("NBD_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5354_4f52_5349_4d00u64)
        ^ variant;
    let cases: u64 = std::env::var("NBD_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4000);
    println!("fuzz seed: {seed} (set NBD_FUZZ_SEED={seed} to replay), cases: {cases}");

    let server = start_tweaked(export("disk", SIZE, false), handler, |c| {
        c.handshake_timeout = Duration::from_secs(5);
    });
    let addr = server.addr.clone();
    let hangs = Arc::new(AtomicUsize::new(0));
    let workers = 4u64;
    let started = Instant::now();
    let threads: Vec<_> = (0..workers)
        .map(|w| {
            let addr = addr.clone();
            let hangs = Arc::clone(&hangs);
            thread::spawn(move || {
                for case in (w..cases).step_by(workers as usize) {
                    let mut rng = Rng(seed ^ case.wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    let bytes = match rng.below(3) {
                        0 => random_stream(&mut rng),
                        1 => {
                            let valid = valid_stream(&mut rng);
                            mutate(&mut rng, valid)
                        }
                        _ => valid_stream(&mut rng),
                    };
                    if !feed(&addr, &bytes) {
                        eprintln!("case {case} (seed {seed}) did not close: {bytes:02x?}");
                        hangs.fetch_add(1, Ordering::SeqCst);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    println!("{cases} cases in {:?}", started.elapsed());

    assert_eq!(
        hangs.load(Ordering::SeqCst),
        0,
        "streams the server did not close"
    );
    assert_eq!(PANICS.load(Ordering::SeqCst), 0, "panics in the server");
    assert!(
        store.violations().is_empty(),
        "invalid requests reached the handler: {:?}",
        store.violations()
    );
    assert!(
        store.requests.load(Ordering::SeqCst) > 0,
        "some valid requests got through"
    );
    let logs = server.logs();
    for needle in ["bad magic", "unknown handshake flags", "in the middle of"] {
        assert!(
            logs.iter().any(|l| l.contains(needle)),
            "expected some `{needle}` closes"
        );
    }
    assert!(wait_until(Duration::from_secs(10), || server.connections() == 0));
    assert_eq!(
        store.opened.load(Ordering::SeqCst),
        store.closed.load(Ordering::SeqCst)
    );
    assert_still_serves(&addr, "disk", 0);
}
