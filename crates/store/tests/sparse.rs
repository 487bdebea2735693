//! Storage follows the data: sparse huge devices, and trim / write-zeroes releasing whole
//! blocks while zeroing partial ones in place.

mod common;

use common::TempDir;
use storsim_store::{Backing, Store, BLOCK_BYTES, MAX_SIZE_BYTES};

const TIB: u64 = 1 << 40;

fn zeros(s: &Store, offset: u64, len: usize) -> bool {
    let mut buf = vec![0xffu8; len];
    s.read(offset, &mut buf).unwrap();
    buf.iter().all(|&b| b == 0)
}

#[test]
fn a_one_tib_memory_store_holds_only_what_was_written() {
    let s = Store::open(&Backing::Memory, TIB).unwrap();
    assert_eq!(s.allocated_bytes(), 0);
    let offsets = [0, 7 * BLOCK_BYTES + 1, TIB / 2, TIB - 10];
    for (i, &off) in offsets.iter().enumerate() {
        s.write(off, &[i as u8 + 1; 10]).unwrap();
    }
    // The write 10 bytes before the end of the 4 KiB-aligned device stays in one block; the one
    // at 7 blocks + 1 byte does too.
    assert_eq!(s.allocated_bytes(), 4 * BLOCK_BYTES);
    for (i, &off) in offsets.iter().enumerate() {
        let mut buf = [0u8; 10];
        s.read(off, &mut buf).unwrap();
        assert_eq!(buf, [i as u8 + 1; 10]);
    }
    assert!(zeros(&s, TIB / 4, 1 << 20));
}

#[test]
fn the_largest_device_is_usable_at_both_ends() {
    // A table sized by the device would need 2^50 entries here; only a sparse map can open it.
    for backing in [Backing::Memory, Backing::None] {
        let s = Store::open(&backing, MAX_SIZE_BYTES).unwrap();
        s.write(MAX_SIZE_BYTES - 3, b"end").unwrap();
        s.write(0, b"start").unwrap();
        let mut buf = [0u8; 3];
        s.read(MAX_SIZE_BYTES - 3, &mut buf).unwrap();
        let want: &[u8; 3] = if backing == Backing::None {
            &[0; 3]
        } else {
            b"end"
        };
        assert_eq!(&buf, want);
        // A discard of the whole device (mkfs does one) must not walk every block.
        s.trim(0, MAX_SIZE_BYTES).unwrap();
        assert_eq!(s.allocated_bytes(), 0);
        s.read(MAX_SIZE_BYTES - 3, &mut buf).unwrap();
        assert_eq!(buf, [0; 3]);
    }
}

fn trim_and_zero_release_whole_blocks(backing: &Backing) {
    let size = 64 * BLOCK_BYTES + 512;
    let s = Store::open(backing, size).unwrap();
    s.write(0, &vec![0xabu8; size as usize]).unwrap();
    assert_eq!(s.allocated_bytes(), 65 * BLOCK_BYTES);

    // Blocks 1 and 2 whole, half of blocks 0 and 3.
    s.trim(BLOCK_BYTES / 2, 3 * BLOCK_BYTES).unwrap();
    assert_eq!(s.allocated_bytes(), 63 * BLOCK_BYTES, "{backing:?}");
    assert!(zeros(&s, BLOCK_BYTES / 2, 3 * BLOCK_BYTES as usize));
    let mut edge = vec![0u8; BLOCK_BYTES as usize / 2];
    s.read(0, &mut edge).unwrap();
    assert!(
        edge.iter().all(|&b| b == 0xab),
        "{backing:?}: bytes before the trim"
    );
    s.read(3 * BLOCK_BYTES + BLOCK_BYTES / 2, &mut edge)
        .unwrap();
    assert!(
        edge.iter().all(|&b| b == 0xab),
        "{backing:?}: bytes after the trim"
    );

    // Write-zeroes does the same; a range inside one block frees nothing.
    s.write_zeroes(10 * BLOCK_BYTES, 8 * BLOCK_BYTES).unwrap();
    assert_eq!(s.allocated_bytes(), 55 * BLOCK_BYTES, "{backing:?}");
    s.write_zeroes(30 * BLOCK_BYTES + 1, BLOCK_BYTES - 2)
        .unwrap();
    assert_eq!(s.allocated_bytes(), 55 * BLOCK_BYTES, "{backing:?}");
    assert!(zeros(&s, 30 * BLOCK_BYTES + 1, BLOCK_BYTES as usize - 2));
    let mut b = [0u8; 1];
    s.read(30 * BLOCK_BYTES, &mut b).unwrap();
    assert_eq!(b, [0xab]);
    s.read(31 * BLOCK_BYTES - 1, &mut b).unwrap();
    assert_eq!(b, [0xab]);

    // The partial last block is whole once covered to the device end.
    s.trim(64 * BLOCK_BYTES, 512).unwrap();
    assert_eq!(s.allocated_bytes(), 54 * BLOCK_BYTES, "{backing:?}");

    // Trimming what is already free changes nothing; writing back re-allocates.
    s.trim(BLOCK_BYTES, 2 * BLOCK_BYTES).unwrap();
    assert_eq!(s.allocated_bytes(), 54 * BLOCK_BYTES);
    s.write(BLOCK_BYTES + 5, b"x").unwrap();
    assert_eq!(s.allocated_bytes(), 55 * BLOCK_BYTES);
    assert!(zeros(&s, BLOCK_BYTES, 5));

    s.trim(0, size).unwrap();
    assert_eq!(s.allocated_bytes(), 0);
    assert!(zeros(&s, 0, size as usize));
}

#[test]
fn memory_trim_and_zero_release_whole_blocks() {
    trim_and_zero_release_whole_blocks(&Backing::Memory);
}

#[test]
fn file_trim_and_zero_release_whole_blocks() {
    let dir = TempDir::new("trim");
    trim_and_zero_release_whole_blocks(&Backing::File(dir.join("disk.img")));
}

#[test]
fn a_large_discard_over_a_sparse_file_store_frees_its_blocks() {
    let dir = TempDir::new("big-trim");
    let path = dir.join("disk.img");
    let s = Store::open(&Backing::File(path.clone()), TIB).unwrap();
    for i in 0..100u64 {
        s.write(i * (TIB / 100 / BLOCK_BYTES * BLOCK_BYTES), &[1u8; 4096])
            .unwrap();
    }
    s.write(TIB - 4096, &[2u8; 4096]).unwrap();
    assert_eq!(s.allocated_bytes(), 101 * BLOCK_BYTES);
    // Leave the first and last block, discard everything between.
    s.trim(BLOCK_BYTES, TIB - 2 * BLOCK_BYTES).unwrap();
    assert_eq!(s.allocated_bytes(), 2 * BLOCK_BYTES);
    drop(s);
    let s = Store::open(&Backing::File(path), TIB).unwrap();
    assert_eq!(s.allocated_bytes(), 2 * BLOCK_BYTES);
    let mut buf = [0u8; 4096];
    s.read(TIB - 4096, &mut buf).unwrap();
    assert_eq!(buf, [2u8; 4096]);
}
