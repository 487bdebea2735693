//! The memory backing: a sparse set of 4 KiB blocks held in hash maps, one per lock shard.

use crate::layout::{
    pieces, shard_of, stripe_runs, zero_plan, BlockMap, BLOCK, SHARDS, STRIPE_BLOCKS,
};
use crate::{read_lock, write_lock, BLOCK_BYTES};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

type Block = Box<[u8; BLOCK]>;

pub(crate) struct MemoryStore {
    size: u64,
    /// Each shard maps device block number to its bytes. A block absent from its shard reads as
    /// zeros, so memory grows with the blocks written, not with the device size.
    shards: Box<[RwLock<BlockMap<Block>>]>,
    /// Blocks held across all shards, kept apart so `allocated_bytes` takes no lock.
    blocks: AtomicU64,
}

impl MemoryStore {
    pub fn new(size: u64) -> MemoryStore {
        MemoryStore {
            size,
            shards: (0..SHARDS).map(|_| RwLock::default()).collect(),
            blocks: AtomicU64::new(0),
        }
    }

    pub fn allocated_bytes(&self) -> u64 {
        self.blocks.load(Ordering::Relaxed) * BLOCK_BYTES
    }

    pub fn read(&self, offset: u64, buf: &mut [u8]) {
        for run in stripe_runs(offset, buf.len() as u64) {
            let shard = read_lock(&self.shards[shard_of(run.stripe)]);
            for p in pieces(offset, run.start, run.end, self.size) {
                let dst = &mut buf[p.buf_off..p.buf_off + p.len];
                match shard.get(&p.block) {
                    Some(b) => dst.copy_from_slice(&b[p.in_off..p.in_off + p.len]),
                    None => dst.fill(0),
                }
            }
        }
    }

    pub fn write(&self, offset: u64, data: &[u8]) {
        for run in stripe_runs(offset, data.len() as u64) {
            let mut shard = write_lock(&self.shards[shard_of(run.stripe)]);
            for p in pieces(offset, run.start, run.end, self.size) {
                let block = shard.entry(p.block).or_insert_with(|| {
                    self.blocks.fetch_add(1, Ordering::Relaxed);
                    Box::new([0u8; BLOCK])
                });
                block[p.in_off..p.in_off + p.len]
                    .copy_from_slice(&data[p.buf_off..p.buf_off + p.len]);
            }
        }
    }

    /// Trim and write-zeroes: whole blocks are dropped, partial ones zeroed in place.
    pub fn zero(&self, offset: u64, len: u64) {
        let plan = zero_plan(offset, len, self.size);
        for p in &plan.partial {
            let stripe = p.block / STRIPE_BLOCKS;
            let mut shard = write_lock(&self.shards[shard_of(stripe)]);
            if let Some(b) = shard.get_mut(&p.block) {
                b[p.in_off..p.in_off + p.len].fill(0);
            }
        }
        let (first, end) = (plan.whole_first, plan.whole_end);
        if first >= end {
            return;
        }
        // A discard of a whole large device (mkfs does one) would cost a hash lookup per block
        // if walked block by block; when the range has many more blocks than the store holds,
        // sweeping the held blocks is far cheaper.
        let held = self.blocks.load(Ordering::Relaxed);
        if end - first > 4 * held + 4 * SHARDS as u64 * STRIPE_BLOCKS {
            for shard in self.shards.iter() {
                let mut shard = write_lock(shard);
                let before = shard.len();
                shard.retain(|&b, _| !(first..end).contains(&b));
                self.blocks
                    .fetch_sub((before - shard.len()) as u64, Ordering::Relaxed);
            }
            return;
        }
        let mut block = first;
        while block < end {
            let stripe = block / STRIPE_BLOCKS;
            let stripe_end = ((stripe + 1) * STRIPE_BLOCKS).min(end);
            let mut shard = write_lock(&self.shards[shard_of(stripe)]);
            for b in block..stripe_end {
                if shard.remove(&b).is_some() {
                    self.blocks.fetch_sub(1, Ordering::Relaxed);
                }
            }
            block = stripe_end;
        }
    }
}
