use super::*;
use crate::policy::StampOrder;

const B: u64 = 4096;

fn map(slots: u64, pinned: &[ByteRange]) -> CacheMap {
    CacheMap::new(B, slots, 1 << 30, pinned, Box::new(StampOrder::lru())).unwrap()
}

/// Writes whole block `block` into the next free slot, as a cache write does.
fn write_new(cache: &mut CacheMap, block: u64) -> u32 {
    let s = cache.next_free().expect("a free slot");
    assert!(cache.write(s, block, block * B, (block + 1) * B));
    s
}

#[test]
fn written_ranges_merge_touching_and_overlapping_pieces() {
    let mut w = Written::default();
    w.add(10, 20);
    w.add(30, 40);
    assert_eq!(w.0, [(10, 20), (30, 40)]);
    w.add(20, 30);
    assert_eq!(w.0, [(10, 40)]);
    w.add(0, 5);
    assert_eq!(w.0, [(0, 5), (10, 40)]);
    assert!(!w.covers(40));
    w.add(3, 12);
    assert!(w.covers(40));
}

#[test]
fn written_stretches_end_where_the_written_state_changes() {
    let mut w = Written::default();
    w.add(100, 200);
    assert_eq!(w.stretch(0, 4096), (false, 100));
    assert_eq!(w.stretch(150, 4096), (true, 200));
    assert_eq!(w.stretch(150, 160), (true, 160));
    assert_eq!(w.stretch(200, 4096), (false, 4096));
}

#[test]
fn pinned_blocks_take_the_first_slots_once_each() {
    let pinned = [
        ByteRange {
            start_bytes: 0,
            end_bytes: 2 * B,
        },
        ByteRange {
            start_bytes: B,
            end_bytes: 3 * B - 1,
        },
    ];
    let cache = map(8, &pinned);
    assert_eq!(cache.unpinned_slots(), 5);
    assert_eq!(cache.free_slots(), 5);
    assert_eq!(cache.next_free(), Some(3));
    for block in 0..3 {
        assert_eq!(cache.slot_of(block), Some(block as u32));
        assert!(cache.slot(block as u32).pinned);
        // Before their first write, pinned blocks are read from the disk.
        assert_eq!(cache.locate(block * B), Location::Disk);
    }
}

#[test]
fn pinned_ranges_that_do_not_fit_are_refused() {
    let past_end = ByteRange {
        start_bytes: 0,
        end_bytes: (1 << 30) + 1,
    };
    let err = CacheMap::new(B, 8, 1 << 30, &[past_end], Box::new(StampOrder::lru()));
    assert!(err.err().unwrap().contains("past the end of the disk"));
    let too_many = ByteRange {
        start_bytes: 0,
        end_bytes: 9 * B,
    };
    let err = CacheMap::new(B, 8, 1 << 30, &[too_many], Box::new(StampOrder::lru()));
    assert!(err
        .err()
        .unwrap()
        .contains("more than the flash's 8 cache blocks"));
}

#[test]
fn a_partly_written_pinned_block_is_read_from_the_flash_only_where_written() {
    let pinned = [ByteRange {
        start_bytes: 0,
        end_bytes: B,
    }];
    let mut cache = map(4, &pinned);
    assert!(!cache.write(0, 0, 512, 1024));
    assert_eq!(cache.slot(0).state, SlotState::Partial);
    assert_eq!(cache.locate(0), Location::Disk);
    assert!(matches!(
        cache.locate(600),
        Location::Flash {
            flash_offset_bytes: 600,
            dirty: true,
            pinned: true
        }
    ));
    assert_eq!(cache.written_stretch(0, 0, 0, B), (false, 512));
    assert_eq!(cache.written_stretch(0, 0, 512, B), (true, 1024));
    // Covering the rest makes it an ordinary dirty block; pinned ones are not counted.
    assert!(!cache.write(0, 0, 0, 512));
    assert!(cache.write(0, 0, 1024, B));
    assert_eq!(cache.slot(0).state, SlotState::Dirty);
    assert_eq!(cache.dirty_blocks(), 0);
}

#[test]
fn a_flush_run_takes_dirty_neighbours_on_both_sides_up_to_its_limit() {
    let mut cache = map(16, &[]);
    for block in 10..15 {
        write_new(&mut cache, block);
    }
    assert_eq!(cache.dirty_blocks(), 5);
    // LRU's first victim is block 10; the run grows forward from it.
    let run = cache.start_flush_run(3).unwrap();
    assert_eq!(
        run,
        BlockRun {
            first_block: 10,
            first_slot: 0,
            count: 3
        }
    );
    assert_eq!(cache.flushing_blocks(), 3);
    let rest = cache.start_flush_run(64).unwrap();
    assert_eq!((rest.first_block, rest.count), (13, 2));
    assert_eq!(cache.start_flush_run(64), None);
    cache.flushed(run);
    assert_eq!((cache.dirty_blocks(), cache.flushing_blocks()), (2, 2));
    assert!(matches!(
        cache.locate(10 * B),
        Location::Flash { dirty: false, .. }
    ));
}

#[test]
fn a_write_during_a_flush_keeps_the_block_dirty() {
    let mut cache = map(4, &[]);
    let s = write_new(&mut cache, 7);
    let run = cache.start_flush_run(64).unwrap();
    assert!(cache.write(s, 7, 7 * B, 7 * B + 512));
    cache.flushed(run);
    assert_eq!(cache.dirty_blocks(), 1);
    assert!(matches!(
        cache.locate(7 * B),
        Location::Flash { dirty: true, .. }
    ));
}

#[test]
fn a_failed_flush_keeps_the_block_dirty_until_its_attempts_run_out() {
    let mut cache = map(4, &[]);
    let s = write_new(&mut cache, 7);
    for attempt in 1..=DESTAGE_ATTEMPTS_MAX {
        let run = cache
            .start_flush_run(64)
            .expect("the block is flushed again");
        let given_up = cache.flush_failed(run);
        assert_eq!(given_up, u64::from(attempt == DESTAGE_ATTEMPTS_MAX));
        assert_eq!((cache.dirty_blocks(), cache.flushing_blocks()), (1, 0));
    }
    assert_eq!(cache.unflushable_blocks(), 1);
    assert_eq!(cache.flushable_dirty_blocks(), 0);
    assert!(cache.start_flush_run(64).is_none(), "no more attempts");
    assert!(matches!(
        cache.locate(7 * B),
        Location::Flash { dirty: true, .. }
    ));
    // New data starts again, and a write during a failing flush does not use up an
    // attempt of the data the flush did not carry.
    assert!(cache.write(s, 7, 7 * B, 7 * B + 512));
    assert_eq!(cache.unflushable_blocks(), 0);
    for _ in 0..DESTAGE_ATTEMPTS_MAX {
        let run = cache.start_flush_run(64).unwrap();
        assert!(cache.write(s, 7, 7 * B, 7 * B + 512));
        assert_eq!(cache.flush_failed(run), 0);
    }
    assert!(cache.start_flush_run(64).is_some());
}

#[test]
fn eviction_takes_clean_unused_blocks_outside_the_protected_range() {
    let mut cache = map(4, &[]);
    let slots: Vec<u32> = (0..4).map(|block| write_new(&mut cache, block)).collect();
    let run = cache.start_flush_run(64).unwrap();
    assert_eq!(run.count, 4);
    cache.flushed(run);
    assert_eq!(cache.free_slots(), 0);
    // Block 0 is protected by the range, block 1 is in use: blocks 2 and 3 go.
    cache.use_slot(slots[1]);
    cache.evict(4, 0, 0);
    assert_eq!(cache.evicted_blocks(), 2);
    assert_eq!(cache.free_slots(), 2);
    assert_eq!(cache.slot_of(2), None);
    assert_eq!(cache.slot_of(1), Some(slots[1]));
    cache.unuse_slot(slots[1]);
    cache.evict(4, 0, 0);
    assert_eq!(cache.slot_of(1), None);
    assert_eq!(cache.slot_of(0), Some(slots[0]));
}

#[test]
fn an_invalidated_block_in_use_waits_as_an_orphan() {
    let mut cache = map(4, &[]);
    assert!(cache.reserve(5, 1, 5, 5));
    let s = cache.filling_for(5, 1).unwrap();
    assert_eq!(
        cache.filling_for(5, 2),
        None,
        "another read does not fill it"
    );
    let run = BlockRun::one(5, s);
    cache.mark_promoting(run);
    cache.invalidate_range(0, 10);
    assert_eq!(cache.invalidated_blocks(), 1);
    assert_eq!(cache.slot(s).state, SlotState::Orphan);
    assert_eq!(cache.free_slots(), 3, "the promotion still holds the slot");
    assert!(cache.drop_orphaned_promotion(run));
    assert_eq!(cache.free_slots(), 4);
}

#[test]
fn a_promotion_makes_a_clean_copy_and_a_failed_one_frees_the_slot() {
    let mut cache = map(4, &[]);
    assert!(cache.reserve(5, 1, 5, 5));
    assert!(cache.reserve(6, 1, 6, 6));
    let (s5, s6) = (cache.slot_of(5).unwrap(), cache.slot_of(6).unwrap());
    assert!(cache.promoted(5, s5, false));
    assert!(matches!(
        cache.locate(5 * B),
        Location::Flash { dirty: false, .. }
    ));
    assert!(!cache.promoted(6, s6, true));
    assert_eq!(cache.slot_of(6), None);
    assert_eq!(cache.free_slots(), 3);
}

#[test]
fn block_runs_continue_only_when_contiguous_on_both_sides() {
    let run = BlockRun {
        first_block: 10,
        first_slot: 3,
        count: 2,
    };
    assert!(run.continues_with(12, 5, 64));
    assert!(!run.continues_with(12, 6, 64));
    assert!(!run.continues_with(13, 5, 64));
    assert!(!run.continues_with(12, 5, 2));
    assert_eq!(run.slots(), 3..5);
}
