//! The file backing: persistence, recovery from torn journals, refusal of foreign or mismatched
//! files, and space that follows the data written.

mod common;

use common::{Rng, TempDir};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use storsim_store::{Backing, Store, StoreError, BLOCK_BYTES};

const MIB: u64 = 1 << 20;
const TIB: u64 = 1 << 40;
const ENTRY: u64 = 32;
const MAP_HEADER: u64 = 64;

fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    Rng::new(seed).fill(&mut v);
    v
}

fn read(store: &Store, offset: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0xeeu8; len];
    store.read(offset, &mut buf).unwrap();
    buf
}

fn open(path: &Path, size: u64) -> Result<Store, StoreError> {
    Store::open(&Backing::File(path.to_path_buf()), size)
}

#[test]
fn write_flush_drop_reopen_gives_the_same_bytes() {
    let dir = TempDir::new("reopen");
    let path = dir.join("disk.img");
    let size = 64 * MIB + 1000;
    let writes = [
        (0u64, pattern(1, 4096)),
        (512, pattern(2, 100)),
        (3 * BLOCK_BYTES - 7, pattern(3, 20_000)),
        (size - 1500, pattern(4, 1500)),
        (40 * MIB + 333, pattern(5, 70_000)),
    ];
    {
        let s = open(&path, size).unwrap();
        assert!(s.recovery().unwrap().created);
        for (off, data) in &writes {
            s.write(*off, data).unwrap();
        }
        s.flush().unwrap();
    }
    let s = open(&path, size).unwrap();
    let r = s.recovery().unwrap();
    assert!(!r.created);
    assert_eq!(r.discarded_bytes, 0);
    let mut shadow = vec![0u8; size as usize];
    for (off, data) in &writes {
        shadow[*off as usize..*off as usize + data.len()].copy_from_slice(data);
    }
    assert!(
        read(&s, 0, size as usize) == shadow,
        "reopened bytes differ"
    );
}

#[test]
fn dropping_without_flush_still_keeps_the_data() {
    let dir = TempDir::new("drop");
    let path = dir.join("disk.img");
    {
        let s = open(&path, MIB).unwrap();
        s.write(5000, &pattern(7, 9000)).unwrap();
    }
    let s = open(&path, MIB).unwrap();
    assert_eq!(read(&s, 5000, 9000), pattern(7, 9000));
}

#[test]
fn reopening_with_another_size_is_refused_and_changes_nothing() {
    let dir = TempDir::new("size");
    let path = dir.join("disk.img");
    {
        let s = open(&path, 8 * MIB).unwrap();
        s.write(0, &pattern(9, 8192)).unwrap();
    }
    let data_before = fs::read(&path).unwrap();
    let map_before = fs::read(Store::map_path(&path)).unwrap();
    for size in [8 * MIB - 1, 8 * MIB + 1, 16 * MIB] {
        match open(&path, size) {
            Err(StoreError::SizeMismatch {
                path: p,
                stored,
                requested,
            }) => {
                assert_eq!(p, path);
                assert_eq!(stored, 8 * MIB);
                assert_eq!(requested, size);
            }
            other => panic!("expected a size mismatch, got {other:?}"),
        }
    }
    let msg = open(&path, 4 * MIB).unwrap_err().to_string();
    assert!(
        msg.contains("disk.img") && msg.contains(&(8 * MIB).to_string()),
        "{msg}"
    );
    assert_eq!(fs::read(&path).unwrap(), data_before);
    assert_eq!(fs::read(Store::map_path(&path)).unwrap(), map_before);
    let s = open(&path, 8 * MIB).unwrap();
    assert_eq!(read(&s, 0, 8192), pattern(9, 8192));
}

#[test]
fn a_file_that_is_not_a_store_is_refused_and_left_alone() {
    let dir = TempDir::new("foreign");
    for (name, contents) in [
        ("text.img", b"hello, this is not a disk image\n".repeat(300)),
        ("short.img", b"0123456789".to_vec()),
        ("zeros.img", vec![0u8; 8192]),
    ] {
        let path = dir.join(name);
        fs::write(&path, &contents).unwrap();
        let err = open(&path, MIB).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{name}: {msg}");
        assert!(
            msg.contains(name) && msg.contains("not a storsim store"),
            "{msg}"
        );
        assert_eq!(fs::read(&path).unwrap(), contents, "{name} was modified");
        assert!(
            !Store::map_path(&path).exists(),
            "{name}: a map was created"
        );
    }
}

#[test]
fn a_damaged_header_is_refused() {
    let dir = TempDir::new("header");
    let path = dir.join("disk.img");
    drop(open(&path, MIB).unwrap());
    let mut bytes = fs::read(&path).unwrap();
    bytes[20] ^= 0x01;
    fs::write(&path, &bytes).unwrap();
    let msg = open(&path, MIB).unwrap_err().to_string();
    assert!(msg.contains("corrupt"), "{msg}");
}

#[test]
fn a_map_from_another_store_is_refused() {
    let dir = TempDir::new("other-map");
    let a = dir.join("a.img");
    let b = dir.join("b.img");
    drop(open(&a, MIB).unwrap());
    drop(open(&b, MIB).unwrap());
    fs::copy(Store::map_path(&a), Store::map_path(&b)).unwrap();
    let msg = open(&b, MIB).unwrap_err().to_string();
    assert!(
        msg.contains("different store") && msg.contains("b.img.map"),
        "{msg}"
    );
}

#[test]
fn a_missing_map_or_missing_data_file_is_refused() {
    let dir = TempDir::new("missing");
    let path = dir.join("disk.img");
    {
        let s = open(&path, MIB).unwrap();
        s.write(0, &[1u8; 10]).unwrap();
    }
    let map = Store::map_path(&path);
    let saved = fs::read(&map).unwrap();
    fs::remove_file(&map).unwrap();
    let msg = open(&path, MIB).unwrap_err().to_string();
    assert!(msg.contains("map file is missing"), "{msg}");

    fs::write(&map, &saved).unwrap();
    fs::remove_file(&path).unwrap();
    let msg = open(&path, MIB).unwrap_err().to_string();
    assert!(
        msg.contains("data file") && msg.contains("does not"),
        "{msg}"
    );
    assert!(!path.exists(), "the refused open created the data file");
}

#[test]
fn a_second_open_of_an_open_store_is_refused() {
    let dir = TempDir::new("in-use");
    let path = dir.join("disk.img");
    let first = open(&path, MIB).unwrap();
    assert!(matches!(open(&path, MIB), Err(StoreError::InUse { .. })));
    drop(first);
    assert!(open(&path, MIB).is_ok());
}

/// Two flushed batches: blocks 0..4 (first), blocks 10..12 (second).
fn two_batches(path: &Path) {
    let s = open(path, MIB).unwrap();
    s.write(0, &pattern(1, 4 * BLOCK_BYTES as usize)).unwrap();
    s.flush().unwrap();
    s.write(10 * BLOCK_BYTES, &pattern(2, 2 * BLOCK_BYTES as usize))
        .unwrap();
    s.flush().unwrap();
    // Entries 0..5: four maps and a commit; entries 5..8: two maps and a commit.
    let map_len = fs::metadata(Store::map_path(path)).unwrap().len();
    assert_eq!(map_len, MAP_HEADER + 8 * ENTRY);
}

#[test]
fn a_torn_last_entry_discards_only_the_last_batch() {
    let dir = TempDir::new("torn");
    let path = dir.join("disk.img");
    two_batches(&path);
    let map = Store::map_path(&path);
    let len = fs::metadata(&map).unwrap().len();
    // Cut the commit of the second batch in the middle, as a crash during its append would.
    fs::OpenOptions::new()
        .write(true)
        .open(&map)
        .unwrap()
        .set_len(len - 13)
        .unwrap();
    {
        let s = open(&path, MIB).unwrap();
        let r = s.recovery().unwrap();
        assert_eq!(r.discarded_bytes, 3 * ENTRY - 13);
        assert_eq!(r.journal_entries, 5);
        assert_eq!(read(&s, 0, 4 * BLOCK_BYTES as usize), pattern(1, 16384));
        assert!(read(&s, 10 * BLOCK_BYTES, 8192).iter().all(|&b| b == 0));
        assert_eq!(s.allocated_bytes(), 4 * BLOCK_BYTES);
        // The store goes on working, and what it writes now survives the next reopen.
        s.write(20 * BLOCK_BYTES, &pattern(3, 100)).unwrap();
        s.flush().unwrap();
    }
    let s = open(&path, MIB).unwrap();
    assert_eq!(s.recovery().unwrap().discarded_bytes, 0);
    assert_eq!(read(&s, 0, 16384), pattern(1, 16384));
    assert_eq!(read(&s, 20 * BLOCK_BYTES, 100), pattern(3, 100));
}

#[test]
fn garbage_after_the_last_commit_is_ignored() {
    let dir = TempDir::new("garbage");
    let path = dir.join("disk.img");
    two_batches(&path);
    let map = Store::map_path(&path);
    let mut bytes = fs::read(&map).unwrap();
    bytes.extend_from_slice(&pattern(99, 100));
    fs::write(&map, &bytes).unwrap();
    let s = open(&path, MIB).unwrap();
    assert_eq!(s.recovery().unwrap().discarded_bytes, 100);
    assert_eq!(read(&s, 0, 16384), pattern(1, 16384));
    assert_eq!(read(&s, 10 * BLOCK_BYTES, 8192), pattern(2, 8192));
}

#[test]
fn a_damaged_entry_inside_the_last_batch_discards_that_batch() {
    // Pages of one append can reach the disk out of order: a bad entry followed by the valid
    // commit of the same batch is a crash, not damage.
    let dir = TempDir::new("torn-middle");
    let path = dir.join("disk.img");
    two_batches(&path);
    let map = Store::map_path(&path);
    let mut bytes = fs::read(&map).unwrap();
    let sixth = (MAP_HEADER + 6 * ENTRY) as usize;
    bytes[sixth..sixth + ENTRY as usize].fill(0);
    fs::write(&map, &bytes).unwrap();
    let s = open(&path, MIB).unwrap();
    assert_eq!(s.recovery().unwrap().discarded_bytes, 3 * ENTRY);
    assert_eq!(read(&s, 0, 16384), pattern(1, 16384));
    assert!(read(&s, 10 * BLOCK_BYTES, 8192).iter().all(|&b| b == 0));
}

#[test]
fn damage_before_a_later_flush_is_an_error() {
    let dir = TempDir::new("damage");
    let path = dir.join("disk.img");
    two_batches(&path);
    let map = Store::map_path(&path);
    let mut bytes = fs::read(&map).unwrap();
    let before = bytes.clone();
    // Entry 1 belongs to the first batch, which the second flush proves had been durable.
    bytes[(MAP_HEADER + ENTRY + 9) as usize] ^= 0x40;
    fs::write(&map, &bytes).unwrap();
    let err = open(&path, MIB).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{msg}");
    assert!(
        msg.contains("disk.img.map") && msg.contains("entry 1"),
        "{msg}"
    );
    // A refused open repairs nothing behind the user's back.
    assert_eq!(fs::read(&map).unwrap(), bytes);
    fs::write(&map, &before).unwrap();
    assert!(open(&path, MIB).is_ok());
}

#[test]
fn a_truncated_data_file_is_an_error() {
    let dir = TempDir::new("short-data");
    let path = dir.join("disk.img");
    two_batches(&path);
    let len = fs::metadata(&path).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - BLOCK_BYTES)
        .unwrap();
    let msg = open(&path, MIB).unwrap_err().to_string();
    assert!(msg.contains("truncated"), "{msg}");
}

#[test]
fn a_copy_taken_before_flush_holds_every_flushed_block() {
    // Copying the files of an open store sees what a crash of the process (not of the machine)
    // would leave: every flushed write, and later writes only where they overwrote blocks that
    // were already allocated.
    let dir = TempDir::new("copy");
    let path = dir.join("disk.img");
    let copy = dir.join("copy.img");
    let s = open(&path, MIB).unwrap();
    s.write(0, &pattern(1, 3 * BLOCK_BYTES as usize)).unwrap();
    s.flush().unwrap();
    s.write(100, &pattern(2, 50)).unwrap();
    s.write(50 * BLOCK_BYTES, &pattern(3, 4096)).unwrap();
    s.trim(2 * BLOCK_BYTES, BLOCK_BYTES).unwrap();
    fs::copy(&path, &copy).unwrap();
    fs::copy(Store::map_path(&path), Store::map_path(&copy)).unwrap();
    let c = open(&copy, MIB).unwrap();
    let mut want = pattern(1, 3 * BLOCK_BYTES as usize);
    want[100..150].copy_from_slice(&pattern(2, 50));
    // The unflushed trim is not in the copy: block 2 still holds its flushed bytes.
    assert_eq!(read(&c, 0, 3 * BLOCK_BYTES as usize), want);
    // The unflushed allocation is not in the copy either.
    assert!(read(&c, 50 * BLOCK_BYTES, 4096).iter().all(|&b| b == 0));
    assert_eq!(c.allocated_bytes(), 3 * BLOCK_BYTES);
}

#[test]
fn file_size_follows_the_data_written_not_the_device_size() {
    let dir = TempDir::new("sparse");
    let path = dir.join("disk.img");
    let s = open(&path, TIB).unwrap();
    let mut rng = Rng::new(42);
    let mut offsets = Vec::new();
    for i in 0..256u64 {
        let off = rng.below(TIB / BLOCK_BYTES) * BLOCK_BYTES;
        s.write(off, &pattern(i, 4096)).unwrap();
        offsets.push(off);
    }
    s.flush().unwrap();
    let distinct = {
        let mut o = offsets.clone();
        o.sort_unstable();
        o.dedup();
        o.len() as u64
    };
    assert_eq!(s.allocated_bytes(), distinct * BLOCK_BYTES);
    let meta = fs::metadata(&path).unwrap();
    assert_eq!(meta.len(), BLOCK_BYTES + distinct * BLOCK_BYTES);
    // Space actually held on disk, not just the apparent length.
    assert!(
        meta.blocks() * 512 <= 2 * MIB,
        "{} bytes held",
        meta.blocks() * 512
    );
    let map_len = fs::metadata(Store::map_path(&path)).unwrap().len();
    assert!(map_len < 16 * 1024, "map is {map_len} bytes");
    drop(s);
    let s = open(&path, TIB).unwrap();
    for (i, &off) in offsets.iter().enumerate() {
        // A later write to the same offset wins.
        let last = offsets.iter().rposition(|&o| o == off).unwrap();
        if last == i {
            assert_eq!(read(&s, off, 4096), pattern(i as u64, 4096));
        }
    }
}

#[test]
fn freed_slots_are_reused_so_the_file_does_not_grow() {
    let dir = TempDir::new("reuse");
    let path = dir.join("disk.img");
    let s = open(&path, 64 * MIB).unwrap();
    s.write(0, &pattern(1, 64 * BLOCK_BYTES as usize)).unwrap();
    s.flush().unwrap();
    let len = fs::metadata(&path).unwrap().len();
    assert_eq!(s.allocated_bytes(), 64 * BLOCK_BYTES);
    s.trim(0, 64 * BLOCK_BYTES).unwrap();
    assert_eq!(s.allocated_bytes(), 0);
    s.flush().unwrap();
    s.write(32 * MIB, &pattern(2, 64 * BLOCK_BYTES as usize))
        .unwrap();
    s.flush().unwrap();
    assert_eq!(fs::metadata(&path).unwrap().len(), len);
    assert!(read(&s, 0, 64 * BLOCK_BYTES as usize)
        .iter()
        .all(|&b| b == 0));
    drop(s);
    let s = open(&path, 64 * MIB).unwrap();
    assert!(read(&s, 0, 64 * BLOCK_BYTES as usize)
        .iter()
        .all(|&b| b == 0));
    assert_eq!(
        read(&s, 32 * MIB, 64 * BLOCK_BYTES as usize),
        pattern(2, 64 * BLOCK_BYTES as usize)
    );
}

#[test]
fn trailing_free_slots_are_given_back_on_reopen() {
    let dir = TempDir::new("shrink");
    let path = dir.join("disk.img");
    {
        let s = open(&path, 64 * MIB).unwrap();
        s.write(0, &pattern(1, 40 * BLOCK_BYTES as usize)).unwrap();
        s.write_zeroes(10 * BLOCK_BYTES, 30 * BLOCK_BYTES).unwrap();
    }
    assert_eq!(fs::metadata(&path).unwrap().len(), 41 * BLOCK_BYTES);
    let s = open(&path, 64 * MIB).unwrap();
    assert_eq!(fs::metadata(&path).unwrap().len(), 11 * BLOCK_BYTES);
    assert_eq!(
        read(&s, 0, 10 * BLOCK_BYTES as usize),
        pattern(1, 40 * BLOCK_BYTES as usize)[..10 * BLOCK_BYTES as usize]
    );
}

#[test]
fn a_long_journal_is_compacted_on_open() {
    let dir = TempDir::new("compact");
    let path = dir.join("disk.img");
    {
        let s = open(&path, MIB).unwrap();
        for i in 0..1500u64 {
            s.write(0, &pattern(i, 4096)).unwrap();
            s.trim(0, 4096).unwrap();
            s.write(BLOCK_BYTES, &pattern(i, 10)).unwrap();
            s.flush().unwrap();
        }
        s.write(0, &pattern(7, 4096)).unwrap();
    }
    let map = Store::map_path(&path);
    assert!(fs::metadata(&map).unwrap().len() > 1500 * 3 * ENTRY);
    let s = open(&path, MIB).unwrap();
    let r = s.recovery().unwrap();
    assert!(r.compacted);
    assert_eq!(r.journal_entries, 3);
    assert_eq!(fs::metadata(&map).unwrap().len(), MAP_HEADER + 3 * ENTRY);
    assert_eq!(read(&s, 0, 4096), pattern(7, 4096));
    assert_eq!(read(&s, BLOCK_BYTES, 10), pattern(1499, 10));
    drop(s);
    let s = open(&path, MIB).unwrap();
    assert!(!s.recovery().unwrap().compacted);
    assert_eq!(read(&s, 0, 4096), pattern(7, 4096));
}

#[test]
fn an_empty_existing_file_becomes_a_new_store() {
    let dir = TempDir::new("empty");
    let path = dir.join("disk.img");
    fs::write(&path, b"").unwrap();
    let s = open(&path, MIB).unwrap();
    assert!(s.recovery().unwrap().created);
    s.write(0, b"abc").unwrap();
    drop(s);
    assert_eq!(read(&open(&path, MIB).unwrap(), 0, 3), b"abc");
}

#[test]
fn io_errors_name_the_path() {
    let dir = TempDir::new("io");
    let path = dir.join("no-such-dir").join("disk.img");
    let err = open(&path, MIB).unwrap_err();
    assert!(matches!(err, StoreError::Io { .. }));
    assert!(err.to_string().contains("no-such-dir"), "{err}");
    assert!(std::error::Error::source(&err).is_some());
}

#[test]
fn a_crash_while_creating_the_store_is_recovered() {
    // The data header is written first; a crash before the map's header is complete leaves a
    // store without blocks, which can safely start with an empty map.
    let dir = TempDir::new("create-crash");
    let path = dir.join("disk.img");
    drop(open(&path, MIB).unwrap());
    let map = Store::map_path(&path);
    for map_len in [None, Some(0u64), Some(20)] {
        match map_len {
            None => fs::remove_file(&map).unwrap(),
            Some(n) => fs::OpenOptions::new()
                .write(true)
                .open(&map)
                .unwrap()
                .set_len(n)
                .unwrap(),
        }
        let s = open(&path, MIB).unwrap();
        assert!(s.recovery().unwrap().created, "{map_len:?}");
        assert_eq!(fs::metadata(&map).unwrap().len(), MAP_HEADER);
    }
    // With blocks in the data file the same damage is an error: the map was needed.
    {
        let s = open(&path, MIB).unwrap();
        s.write(0, b"data").unwrap();
    }
    fs::OpenOptions::new()
        .write(true)
        .open(&map)
        .unwrap()
        .set_len(20)
        .unwrap();
    let msg = open(&path, MIB).unwrap_err().to_string();
    assert!(msg.contains("truncated inside its header"), "{msg}");
}

#[test]
fn a_device_node_is_refused_untouched() {
    // /dev/null reports length 0 like a fresh file; it must not be mistaken for one.
    let dev = Path::new("/dev/null");
    if !dev.exists() {
        return;
    }
    let err = open(dev, MIB).unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
    assert!(!Path::new("/dev/null.map").exists());
}
