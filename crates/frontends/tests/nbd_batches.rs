//! The emulator behind its NBD front end, driven by a raw protocol client. NBD replies leave
//! through the pacing thread's batches (one write per connection for the replies due at once);
//! pipelined requests finishing close together must all arrive whole, with the right data, none
//! before its instant, each counted and recorded once. Timing checks are lower bounds only.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use support::{assert_record, recorded_emulator, serve_nbd};

const EXPORT_BYTES: u64 = 1 << 20;
const SERVICE_US: u64 = 3000;
const NBD_MAGIC: u64 = 0x4e42_444d_4147_4943;
const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
const REQUEST_MAGIC: u32 = 0x2560_9513;
const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
const CMD_READ: u16 = 0;
const CMD_WRITE: u16 = 1;

fn u32_of(b: &[u8]) -> u32 {
    u32::from_be_bytes(b.try_into().unwrap())
}

fn u64_of(b: &[u8]) -> u64 {
    u64::from_be_bytes(b.try_into().unwrap())
}

/// The fixed newstyle handshake with NBD_OPT_EXPORT_NAME.
fn connect(addr: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut greeting = [0u8; 18];
    s.read_exact(&mut greeting).unwrap();
    assert_eq!(u64_of(&greeting[0..8]), NBD_MAGIC);
    assert_eq!(u64_of(&greeting[8..16]), IHAVEOPT);
    // Fixed newstyle, and no zero padding after the export's flags.
    s.write_all(&3u32.to_be_bytes()).unwrap();
    let name = b"storsim";
    let mut option = Vec::new();
    option.extend_from_slice(&IHAVEOPT.to_be_bytes());
    option.extend_from_slice(&1u32.to_be_bytes());
    option.extend_from_slice(&(name.len() as u32).to_be_bytes());
    option.extend_from_slice(name);
    s.write_all(&option).unwrap();
    let mut export = [0u8; 10];
    s.read_exact(&mut export).unwrap();
    assert_eq!(u64_of(&export[0..8]), EXPORT_BYTES);
    s
}

fn request(kind: u16, cookie: u64, offset: u64, length: u32) -> Vec<u8> {
    let mut r = Vec::with_capacity(28);
    r.extend_from_slice(&REQUEST_MAGIC.to_be_bytes());
    r.extend_from_slice(&0u16.to_be_bytes());
    r.extend_from_slice(&kind.to_be_bytes());
    r.extend_from_slice(&cookie.to_be_bytes());
    r.extend_from_slice(&offset.to_be_bytes());
    r.extend_from_slice(&length.to_be_bytes());
    r
}

/// Reads one simple reply header: (error, cookie).
fn reply(s: &mut TcpStream) -> (u32, u64) {
    let mut header = [0u8; 16];
    s.read_exact(&mut header).unwrap();
    assert_eq!(u32_of(&header[0..4]), SIMPLE_REPLY_MAGIC);
    (u32_of(&header[4..8]), u64_of(&header[8..16]))
}

#[test]
fn replies_due_together_arrive_whole_and_never_before_their_instant() {
    let (emulator, record) = recorded_emulator(EXPORT_BYTES, SERVICE_US);
    let server = serve_nbd(
        &emulator,
        EXPORT_BYTES,
        storsim_nbd::Listen::Tcp("127.0.0.1:0".parse().unwrap()),
    );
    let addr = server.local_addr().to_string();

    let mut client = connect(&addr);
    let pattern: Vec<u8> = (0..64 * 1024u32).map(|i| (i * 13 % 251) as u8).collect();
    let mut write = request(CMD_WRITE, 100, 0, pattern.len() as u32);
    write.extend_from_slice(&pattern);
    client.write_all(&write).unwrap();
    assert_eq!(reply(&mut client), (0, 100));

    // Sixteen reads sent in one go reach sixteen servers at once, so their completions fall
    // due within microseconds of each other; one of them is larger than the rest.
    let reads: Vec<(u64, u64, u32)> = (0..16u64)
        .map(|i| {
            let length = if i == 5 { 64 * 1024 } else { 4096 };
            let offset = if i == 5 { 0 } else { i * 4096 };
            (i, offset, length)
        })
        .collect();
    let pipeline: Vec<u8> = reads
        .iter()
        .flat_map(|&(cookie, offset, length)| request(CMD_READ, cookie, offset, length))
        .collect();
    let sent = Instant::now();
    client.write_all(&pipeline).unwrap();
    let mut seen = Vec::new();
    for _ in 0..reads.len() {
        let (error, cookie) = reply(&mut client);
        assert_eq!(error, 0, "cookie {cookie}");
        let (_, offset, length) = reads[cookie as usize];
        let mut data = vec![0u8; length as usize];
        client.read_exact(&mut data).unwrap();
        let at = offset as usize;
        assert!(
            data == pattern[at..at + length as usize],
            "data of cookie {cookie}"
        );
        seen.push(cookie);
    }
    assert!(
        sent.elapsed() >= Duration::from_micros(SERVICE_US),
        "replies came after {:?}",
        sent.elapsed()
    );
    seen.sort_unstable();
    assert_eq!(seen, (0..16).collect::<Vec<_>>());
    drop(client);
    server.shutdown();
    let report = emulator.shutdown().unwrap();
    assert_eq!(report.lateness.replies, 17);
    assert_eq!(report.failed, 0);
    assert_eq!(report.in_flight, 0);

    assert_record(&record, 17, SERVICE_US);
}
