//! Every operation refuses ranges outside the device, including ones whose end overflows, and
//! leaves the store exactly as it was.

mod common;

use common::{Rng, TempDir};
use storsim_store::{Backing, Store, StoreError, BLOCK_BYTES};

const SIZE: u64 = 10 * BLOCK_BYTES + 100;

fn snapshot(s: &Store) -> (Vec<u8>, u64) {
    let mut buf = vec![0u8; SIZE as usize];
    s.read(0, &mut buf).unwrap();
    (buf, s.allocated_bytes())
}

fn assert_out_of_range(r: Result<(), StoreError>, offset: u64, len: u64, what: &str) {
    match r {
        Err(StoreError::OutOfRange {
            offset: o,
            len: l,
            size,
        }) => {
            assert_eq!((o, l, size), (offset, len, SIZE), "{what}");
        }
        other => panic!("{what}: expected OutOfRange, got {other:?}"),
    }
}

fn check(backing: &Backing) {
    let s = Store::open(backing, SIZE).unwrap();
    let mut fill = vec![0u8; SIZE as usize];
    Rng::new(3).fill(&mut fill);
    s.write(0, &fill).unwrap();
    s.trim(2 * BLOCK_BYTES, BLOCK_BYTES).unwrap();
    let before = snapshot(&s);

    let bad: &[(u64, u64)] = &[
        (SIZE, 1),
        (SIZE - 1, 2),
        (SIZE + 1, 0),
        (0, SIZE + 1),
        (u64::MAX, 1),
        (u64::MAX, 0),
        (1, u64::MAX),
        (u64::MAX - 10, 20),
        (SIZE - 100, u64::MAX - SIZE + 200),
    ];
    for &(offset, len) in bad {
        let what = format!("{backing:?} offset {offset} len {len}");
        // Reads and writes take a buffer, so their huge lengths are only tried through trim and
        // write-zeroes; a small buffer still tests the overflow of a huge offset.
        if len <= 2 * SIZE {
            let mut buf = vec![0x77u8; len as usize];
            assert_out_of_range(s.read(offset, &mut buf), offset, len, &what);
            assert!(
                buf.iter().all(|&b| b == 0x77),
                "{what}: refused read wrote the buffer"
            );
            assert_out_of_range(s.write(offset, &buf), offset, len, &what);
        }
        assert_out_of_range(s.trim(offset, len), offset, len, &what);
        assert_out_of_range(s.write_zeroes(offset, len), offset, len, &what);
    }
    assert!(
        snapshot(&s) == before,
        "{backing:?}: a refused operation changed the store"
    );

    // The edges themselves are fine.
    s.read(SIZE, &mut []).unwrap();
    s.write(SIZE, &[]).unwrap();
    s.trim(SIZE, 0).unwrap();
    s.write_zeroes(0, 0).unwrap();
    let mut last = [0u8; 1];
    s.read(SIZE - 1, &mut last).unwrap();
    assert!(
        snapshot(&s) == before,
        "{backing:?}: an empty operation changed the store"
    );
}

#[test]
fn memory_refuses_out_of_range() {
    check(&Backing::Memory);
}

#[test]
fn none_refuses_out_of_range() {
    check(&Backing::None);
}

#[test]
fn file_refuses_out_of_range() {
    let dir = TempDir::new("range");
    check(&Backing::File(dir.join("disk.img")));
}
