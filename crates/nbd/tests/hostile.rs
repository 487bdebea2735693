//! Hostile and malformed input from a hand-driven client. After each case the server must still
//! serve a fresh, well-behaved client, and the handler's data must be untouched.

mod common;

use std::net::Shutdown;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use common::*;

const SIZE: usize = MIB;

/// A server over a buffer filled with 0x5a, so untouched data is recognisable.
fn setup(read_only: bool) -> (TestServer, Arc<MemHandler>) {
    let handler = MemHandler::new(SIZE);
    handler.store.data.lock().unwrap().fill(0x5a);
    let server = start(export("disk", SIZE, read_only), handler.clone());
    (server, handler)
}

fn assert_untouched(handler: &MemHandler) {
    assert!(
        handler.store.snapshot().iter().all(|&b| b == 0x5a),
        "handler data changed"
    );
    assert_eq!(handler.store.writes.load(Ordering::SeqCst), 0);
    assert!(
        handler.store.violations().is_empty(),
        "{:?}",
        handler.store.violations()
    );
}

/// Hostile input checks end with: data untouched, then a proper client works.
fn finish(server: &TestServer, handler: &MemHandler) {
    assert_untouched(handler);
    assert_still_serves(&server.addr, "disk", 8192);
}

#[test]
fn garbage_instead_of_client_flags_closes() {
    let (server, handler) = setup(false);
    let mut c = RawClient::connect(&server.addr);
    c.greeting();
    c.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert!(c.expect_closed());
    assert!(server.wait_for_log("unknown handshake flags"));
    finish(&server, &handler);
}

#[test]
fn garbage_instead_of_an_option_closes() {
    let (server, handler) = setup(false);
    let mut c = RawClient::connect(&server.addr);
    c.greeting();
    c.send(&1u32.to_be_bytes()).unwrap();
    c.send(&random_bytes(7, 64)).unwrap();
    assert!(c.expect_closed());
    assert!(server.wait_for_log("option header has bad magic"));
    finish(&server, &handler);
}

#[test]
fn huge_option_length_closes_without_allocating() {
    let (server, handler) = setup(false);
    let mut c = RawClient::connect(&server.addr);
    c.greeting();
    c.send(&1u32.to_be_bytes()).unwrap();
    let mut header = IHAVEOPT.to_be_bytes().to_vec();
    header.extend_from_slice(&OPT_GO.to_be_bytes());
    header.extend_from_slice(&0xffff_fff0u32.to_be_bytes());
    c.send(&header).unwrap();
    assert!(c.expect_closed());
    assert!(server.wait_for_log("more than the limit"));
    finish(&server, &handler);
}

#[test]
fn unknown_options_are_refused_and_the_handshake_continues() {
    let (server, handler) = setup(false);
    let mut c = RawClient::connect(&server.addr);
    c.greeting();
    c.send(&1u32.to_be_bytes()).unwrap();
    for option in [
        0x7777u32, 8,  /* structured */
        11, /* extended */
        10, /* set meta */
    ] {
        c.send(&option_bytes(option, b"some option data")).unwrap();
        let r = c.option_reply();
        assert_eq!((r.option, r.kind), (option, REP_ERR_UNSUP));
    }
    // An unknown export in NBD_OPT_INFO and NBD_OPT_GO is an error reply, not a close.
    for option in [OPT_INFO, OPT_GO] {
        c.send(&option_bytes(option, &go_data("nope", &[])))
            .unwrap();
        assert_eq!(c.option_reply().kind, REP_ERR_UNKNOWN);
    }
    // NBD_OPT_LIST names the export and its description.
    c.send(&option_bytes(OPT_LIST, &[])).unwrap();
    let r = c.option_reply();
    assert_eq!(r.kind, 2);
    assert_eq!(&r.data[..4], &4u32.to_be_bytes());
    assert_eq!(&r.data[4..8], b"disk");
    assert_eq!(&r.data[8..], b"test export disk");
    assert_eq!(c.option_reply().kind, REP_ACK);
    // NBD_OPT_INFO with name and description requested, then NBD_OPT_GO enters transmission.
    c.send(&option_bytes(OPT_INFO, &go_data("disk", &[1, 2, 3])))
        .unwrap();
    let mut infos = Vec::new();
    loop {
        let r = c.option_reply();
        if r.kind == REP_ACK {
            break;
        }
        assert_eq!(r.kind, REP_INFO);
        infos.push(r.data);
    }
    assert!(infos.iter().any(|d| d[..2] == [0, 0] && d.len() == 12));
    assert!(infos.iter().any(|d| d[..2] == [0, 1] && &d[2..] == b"disk"));
    assert!(infos
        .iter()
        .any(|d| d[..2] == [0, 2] && &d[2..] == b"test export disk"));
    assert!(infos.iter().any(|d| d[..2] == [0, 3] && d.len() == 14));
    c.send(&option_bytes(OPT_GO, &go_data("disk", &[])))
        .unwrap();
    loop {
        if c.option_reply().kind == REP_ACK {
            break;
        }
    }
    let (error, data) = c.read(9, 0, 16);
    assert_eq!(error, 0);
    assert_eq!(data, vec![0x5a; 16]);
    c.disconnect();
    finish(&server, &handler);
}

#[test]
fn abort_is_acknowledged() {
    let (server, handler) = setup(false);
    let mut c = RawClient::connect(&server.addr);
    c.greeting();
    c.send(&1u32.to_be_bytes()).unwrap();
    c.send(&option_bytes(OPT_ABORT, &[])).unwrap();
    let r = c.option_reply();
    assert_eq!((r.option, r.kind), (OPT_ABORT, REP_ACK));
    assert!(c.expect_closed());
    finish(&server, &handler);
}

#[test]
fn export_name_option_with_and_without_zeroes() {
    let (server, handler) = setup(false);
    for (flags, zeroes) in [(1u32, 124usize), (3, 0)] {
        let mut c = RawClient::connect(&server.addr);
        let handshake_flags = c.greeting();
        assert_eq!(handshake_flags, 3, "FIXED_NEWSTYLE | NO_ZEROES");
        c.send(&flags.to_be_bytes()).unwrap();
        c.send(&option_bytes(OPT_EXPORT_NAME, b"disk")).unwrap();
        assert_eq!(c.u64(), SIZE as u64);
        let tflags = c.u16();
        assert_eq!(tflags & 1, 1, "HAS_FLAGS");
        assert_eq!(c.read_exact(zeroes), vec![0; zeroes]);
        let (error, data) = c.read(1, 100, 4);
        assert_eq!(error, 0);
        assert_eq!(data, vec![0x5a; 4]);
        c.disconnect();
    }
    // The empty name selects the default (our only) export.
    let mut c = RawClient::connect(&server.addr);
    c.greeting();
    c.send(&3u32.to_be_bytes()).unwrap();
    c.send(&option_bytes(OPT_EXPORT_NAME, b"")).unwrap();
    assert_eq!(c.u64(), SIZE as u64);
    c.disconnect();
    finish(&server, &handler);
}

#[test]
fn export_name_with_unknown_name_closes() {
    let (server, handler) = setup(false);
    let mut c = RawClient::connect(&server.addr);
    c.greeting();
    c.send(&1u32.to_be_bytes()).unwrap();
    c.send(&option_bytes(OPT_EXPORT_NAME, b"wrong")).unwrap();
    assert!(c.expect_closed());
    assert!(server.wait_for_log("unknown export \"wrong\""));
    finish(&server, &handler);
}

#[test]
fn garbage_after_the_handshake_closes() {
    let (server, handler) = setup(false);
    let mut c = RawClient::connect_go(&server.addr, "disk");
    c.send(&random_bytes(99, 28)).unwrap();
    assert!(c.expect_closed());
    assert!(server.wait_for_log("request header has bad magic"));
    finish(&server, &handler);
}

#[test]
fn bad_request_magic_after_valid_requests_closes() {
    let (server, handler) = setup(false);
    let mut c = RawClient::connect_go(&server.addr, "disk");
    assert_eq!(c.read(1, 0, 8).0, 0);
    let mut bad = request_bytes(0, CMD_READ, 2, 0, 8);
    bad[0] ^= 0x80;
    c.send(&bad).unwrap();
    assert!(c.expect_closed());
    assert!(server.wait_for_log("bad magic 0xa5609513"));
    finish(&server, &handler);
}

#[test]
fn huge_write_length_closes() {
    let (server, handler) = setup(false);
    let mut c = RawClient::connect_go(&server.addr, "disk");
    c.request(0, CMD_WRITE, 1, 0, u32::MAX);
    c.send(&[0xee; 4096]).unwrap();
    assert!(c.expect_closed());
    assert!(server.wait_for_log("more than the limit of 33554432 bytes"));
    finish(&server, &handler);
}

#[test]
fn oversized_reads_and_zeroes_get_einval_and_the_connection_continues() {
    let (server, handler) = setup(false);
    let mut c = RawClient::connect_go(&server.addr, "disk");
    // Lengths beyond the 32 MiB maximum block size, even though the offsets are in range.
    c.request(0, CMD_READ, 1, 0, 64 << 20);
    assert_eq!(c.reply(), (EINVAL, 1));
    c.request(0, CMD_WRITE_ZEROES, 2, 0, u32::MAX);
    assert_eq!(c.reply(), (EINVAL, 2));
    let (error, data) = c.read(3, 0, 8);
    assert_eq!((error, data), (0, vec![0x5a; 8]));
    c.disconnect();
    finish(&server, &handler);
}

#[test]
fn truncated_request_header_closes() {
    let (server, handler) = setup(false);
    let mut c = RawClient::connect_go(&server.addr, "disk");
    c.send(&request_bytes(0, CMD_READ, 1, 0, 8)[..13]).unwrap();
    c.stream.shutdown(Shutdown::Write).unwrap();
    assert!(c.expect_closed());
    assert!(server.wait_for_log("in the middle of a request header (13 of 28 bytes"));
    finish(&server, &handler);
}

#[test]
fn truncated_write_payload_closes_without_reaching_the_handler() {
    let (server, handler) = setup(false);
    let mut c = RawClient::connect_go(&server.addr, "disk");
    c.request(0, CMD_WRITE, 1, 0, 4096);
    c.send(&[0x11; 1000]).unwrap();
    c.stream.shutdown(Shutdown::Write).unwrap();
    assert!(c.expect_closed());
    assert!(server.wait_for_log("in the middle of a write payload (1000 of 4096 bytes"));
    finish(&server, &handler);
}

#[test]
fn truncated_handshake_closes() {
    let (server, handler) = setup(false);
    let mut c = RawClient::connect(&server.addr);
    c.greeting();
    c.send(&1u32.to_be_bytes()).unwrap();
    c.send(&option_bytes(OPT_GO, &go_data("disk", &[]))[..20])
        .unwrap();
    c.stream.shutdown(Shutdown::Write).unwrap();
    assert!(c.expect_closed());
    assert!(server.wait_for_log("in the middle of option data"));
    finish(&server, &handler);
}

#[test]
fn out_of_range_requests_get_the_documented_errors() {
    let (server, handler) = setup(false);
    let mut c = RawClient::connect_go(&server.addr, "disk");
    let end = SIZE as u64;
    assert_eq!(c.read(1, end - 4, 8).0, EINVAL, "read past the end");
    assert_eq!(
        c.read(2, u64::MAX - 2, 8).0,
        EINVAL,
        "offset + length overflows"
    );
    assert_eq!(
        c.write(3, end - 4, &[0x77; 8]),
        ENOSPC,
        "write past the end"
    );
    assert_eq!(
        c.write(4, u64::MAX, &[0x77; 8]),
        ENOSPC,
        "write offset overflows"
    );
    c.request(0, CMD_WRITE_ZEROES, 5, end, 512);
    assert_eq!(c.reply(), (ENOSPC, 5), "write-zeroes past the end");
    c.request(0, CMD_TRIM, 6, end - 1, 2);
    assert_eq!(c.reply(), (EINVAL, 6), "trim past the end");
    c.request(0, CMD_FLUSH, 7, 1, 0);
    assert_eq!(c.reply(), (EINVAL, 7), "flush with nonzero offset");
    c.request(1 << 2, CMD_READ, 8, 0, 8);
    assert_eq!(c.reply(), (EINVAL, 8), "DF flag was not negotiated");
    c.request(1 << 1, CMD_TRIM, 9, 0, 8);
    assert_eq!(c.reply(), (EINVAL, 9), "NO_HOLE is for write-zeroes only");
    c.request(0, CMD_CACHE, 10, 0, 8);
    assert_eq!(c.reply(), (EINVAL, 10), "NBD_CMD_CACHE is not supported");
    // The connection is still in step: the refused writes' payloads were consumed.
    let (error, data) = c.read(11, end - 8, 8);
    assert_eq!((error, data), (0, vec![0x5a; 8]));
    assert_eq!(
        handler.store.requests.load(Ordering::SeqCst),
        1,
        "only the last read"
    );
    c.disconnect();
    finish(&server, &handler);
}

#[test]
fn zero_length_requests_are_answered_without_the_handler() {
    let (server, handler) = setup(false);
    let mut c = RawClient::connect_go(&server.addr, "disk");
    assert_eq!(c.write(1, 0, &[]), 0);
    assert_eq!(c.read(2, 0, 0), (0, Vec::new()));
    c.request(0, CMD_TRIM, 3, 0, 0);
    assert_eq!(c.reply(), (0, 3));
    assert_eq!(handler.store.requests.load(Ordering::SeqCst), 0);
    c.disconnect();
    finish(&server, &handler);
}

#[test]
fn unknown_command_type_closes() {
    let (server, handler) = setup(false);
    let mut c = RawClient::connect_go(&server.addr, "disk");
    c.request(0, 99, 1, 0, 8);
    assert!(c.expect_closed());
    assert!(server.wait_for_log("unknown command type 99"));
    finish(&server, &handler);
}

#[test]
fn read_only_export_refuses_writes_with_eperm() {
    let (server, handler) = setup(true);
    let mut c = RawClient::connect(&server.addr);
    let (size, flags) = c.go("disk");
    assert_eq!(size, SIZE as u64);
    assert_eq!(flags & 2, 2, "READ_ONLY advertised");
    assert_eq!(c.write(1, 0, &[0x11; 4096]), EPERM);
    c.request(0, CMD_TRIM, 2, 0, 4096);
    assert_eq!(c.reply(), (EPERM, 2));
    c.request(0, CMD_WRITE_ZEROES, 3, 0, 4096);
    assert_eq!(c.reply(), (EPERM, 3));
    c.request(0, CMD_FLUSH, 4, 0, 0);
    assert_eq!(c.reply(), (0, 4));
    let (error, data) = c.read(5, 0, 4096);
    assert_eq!((error, data), (0, vec![0x5a; 4096]));
    c.disconnect();
    assert_untouched(&handler);
}

#[test]
fn client_that_stops_reading_is_cut_off_by_the_write_timeout() {
    let handler = MemHandler::new(8 * MIB);
    let server = start_tweaked(export("disk", 8 * MIB, false), handler.clone(), |c| {
        c.write_timeout = Duration::from_millis(300);
    });
    let mut c = RawClient::connect_go(&server.addr, "disk");
    // 64 reads of 8 MiB each: far more than the socket buffers hold, and never read.
    for cookie in 0..64 {
        if c.send(&request_bytes(0, CMD_READ, cookie, 0, 8 << 20))
            .is_err()
        {
            break;
        }
    }
    assert!(
        server.wait_for_log("failed"),
        "the stalled reply write is logged"
    );
    assert!(wait_until(Duration::from_secs(10), || server.connections() == 0));
    assert_still_serves(&server.addr, "disk", 0);
}

#[test]
fn handshake_timeout_closes_idle_clients() {
    let handler = MemHandler::new(MIB);
    let server = start_tweaked(export("disk", MIB, false), handler, |c| {
        c.handshake_timeout = Duration::from_millis(200);
    });
    let mut c = RawClient::connect(&server.addr);
    c.greeting();
    assert!(c.expect_closed());
    assert!(server.wait_for_log("timed out during the client flags"));
    assert_still_serves(&server.addr, "disk", 0);
}

#[test]
fn a_trickling_handshake_is_cut_off_at_the_deadline() {
    let handler = MemHandler::new(MIB);
    let server = start_tweaked(export("disk", MIB, false), handler, |c| {
        c.handshake_timeout = Duration::from_millis(500);
    });
    let mut c = RawClient::connect(&server.addr);
    c.greeting();
    c.send(&1u32.to_be_bytes()).unwrap();
    // One byte every 100 ms: each read succeeds well within any per-read timeout, but the
    // whole option would take over two seconds.
    let started = std::time::Instant::now();
    for byte in option_bytes(OPT_GO, &go_data("disk", &[])) {
        if c.send(&[byte]).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        if server.logs().iter().any(|l| l.contains("timed out")) {
            break;
        }
    }
    assert!(c.expect_closed());
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    assert!(server.wait_for_log("timed out during"));
    assert_still_serves(&server.addr, "disk", 0);
}

#[test]
fn connections_beyond_the_limit_are_refused() {
    let handler = MemHandler::new(MIB);
    let server = start_tweaked(export("disk", MIB, false), handler, |c| {
        c.max_connections = 2;
    });
    let a = RawClient::connect_go(&server.addr, "disk");
    let b = RawClient::connect_go(&server.addr, "disk");
    assert_eq!(server.connections(), 2);
    let mut third = RawClient::connect(&server.addr);
    assert!(third.expect_closed());
    assert!(server.wait_for_log("refused, 2 connections already open"));
    a.disconnect();
    assert!(wait_until(Duration::from_secs(5), || server.connections() == 1));
    assert_still_serves(&server.addr, "disk", 0);
    b.disconnect();
}
