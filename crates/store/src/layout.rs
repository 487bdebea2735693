//! How a byte range maps onto blocks, stripes and lock shards, shared by the memory and file
//! backings.

use crate::BLOCK_BYTES;
use std::hash::{BuildHasherDefault, Hasher};

/// Blocks per stripe. A stripe is the unit of locking: one request takes one shard lock per
/// stripe it touches, so a 64 KiB request takes one or two locks, not sixteen.
pub(crate) const STRIPE_BLOCKS: u64 = 16;

/// Number of lock shards. Stripes are spread over the shards by a hash, so several threads doing
/// I/O at unrelated offsets rarely wait for one another.
pub(crate) const SHARDS: usize = 64;

/// The block size as a `usize`, for indexing buffers.
pub(crate) const BLOCK: usize = BLOCK_BYTES as usize;

/// The splitmix64 finaliser: a cheap bijective mix with good avalanche.
pub(crate) fn mix64(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The shard that guards a stripe.
pub(crate) fn shard_of(stripe: u64) -> usize {
    (mix64(stripe) % SHARDS as u64) as usize
}

/// A hasher for block-number keys. The default SipHash protects against adversarial keys, which
/// block numbers chosen by an emulated guest are not worth defending against at its cost;
/// `mix64` spreads sequential block numbers well.
#[derive(Default)]
pub(crate) struct BlockHasher(u64);

impl Hasher for BlockHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used by u64 keys; this fallback keeps the hasher correct for any
        // other key type.
        for &b in bytes {
            self.0 = mix64(self.0 ^ u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = mix64(n);
    }
}

pub(crate) type BlockMap<V> = std::collections::HashMap<u64, V, BuildHasherDefault<BlockHasher>>;

/// One block's share of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Piece {
    /// Device block number.
    pub block: u64,
    /// Byte offset of the piece inside the block.
    pub in_off: usize,
    /// Length of the piece in bytes (1 ..= 4096).
    pub len: usize,
    /// Byte offset of the piece inside the request's buffer.
    pub buf_off: usize,
    /// The piece covers every byte of the block that lies inside the device (the last block of a
    /// device whose size is not a multiple of 4 KiB counts as whole when covered to the end).
    pub whole: bool,
}

/// A run of the request that stays inside one stripe: `[start, end)` in device bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StripeRun {
    pub stripe: u64,
    pub start: u64,
    pub end: u64,
}

/// Splits `[offset, offset + len)` (already bounds-checked) into runs that stay inside one stripe.
pub(crate) fn stripe_runs(offset: u64, len: u64) -> impl Iterator<Item = StripeRun> {
    let end = offset + len;
    let stripe_bytes = STRIPE_BLOCKS * BLOCK_BYTES;
    let mut pos = offset;
    std::iter::from_fn(move || {
        if pos >= end {
            return None;
        }
        let stripe = pos / stripe_bytes;
        let stripe_end = (stripe + 1).saturating_mul(stripe_bytes);
        let run_end = stripe_end.min(end);
        let run = StripeRun {
            stripe,
            start: pos,
            end: run_end,
        };
        pos = run_end;
        Some(run)
    })
}

/// Splits `[start, end)` into per-block pieces. `request_offset` is where the request's buffer
/// begins on the device and `size` is the device size (for the `whole` flag of the last block).
pub(crate) fn pieces(
    request_offset: u64,
    start: u64,
    end: u64,
    size: u64,
) -> impl Iterator<Item = Piece> {
    let mut pos = start;
    std::iter::from_fn(move || {
        if pos >= end {
            return None;
        }
        let block = pos / BLOCK_BYTES;
        let block_start = block * BLOCK_BYTES;
        let block_end = block_start.saturating_add(BLOCK_BYTES);
        let piece_end = block_end.min(end);
        let piece = Piece {
            block,
            in_off: (pos - block_start) as usize,
            len: (piece_end - pos) as usize,
            buf_off: (pos - request_offset) as usize,
            whole: pos == block_start && (piece_end == block_end || piece_end == size),
        };
        pos = piece_end;
        Some(piece)
    })
}

/// Number of blocks of a device of `size` bytes, counting a partial last block.
pub(crate) fn block_count(size: u64) -> u64 {
    size.div_ceil(BLOCK_BYTES)
}

/// The device blocks `[first, end)` that `[offset, offset + len)` covers whole, and the at most
/// two partial pieces at its edges. Used by trim and write-zeroes, which free whole blocks and
/// zero partial ones in place.
pub(crate) struct ZeroPlan {
    pub whole_first: u64,
    pub whole_end: u64,
    pub partial: Vec<Piece>,
}

pub(crate) fn zero_plan(offset: u64, len: u64, size: u64) -> ZeroPlan {
    let end = offset + len;
    let mut partial = Vec::new();
    let mut whole_first = u64::MAX;
    let mut whole_end = 0;
    let first_block = offset / BLOCK_BYTES;
    let last_block = if len == 0 {
        first_block
    } else {
        (end - 1) / BLOCK_BYTES
    };
    // Only the first and last blocks can be partial, so looking at those two pieces is enough;
    // the blocks between them are whole by construction.
    let edges = [first_block, last_block];
    for (i, &block) in edges.iter().enumerate() {
        if len == 0 || (i == 1 && last_block == first_block) {
            continue;
        }
        let block_start = block * BLOCK_BYTES;
        let start = offset.max(block_start);
        let stop = end.min(block_start.saturating_add(BLOCK_BYTES));
        let piece = pieces(offset, start, stop, size)
            .next()
            .expect("a non-empty range has a piece in its edge block");
        if piece.whole {
            whole_first = whole_first.min(block);
            whole_end = whole_end.max(block + 1);
        } else {
            partial.push(piece);
        }
    }
    if len > 0 && last_block > first_block + 1 {
        whole_first = whole_first.min(first_block + 1);
        whole_end = whole_end.max(last_block);
    }
    if whole_first >= whole_end {
        whole_first = 0;
        whole_end = 0;
    }
    ZeroPlan {
        whole_first,
        whole_end,
        partial,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_range_exactly() {
        let size = 10 * BLOCK_BYTES + 100;
        for &(offset, len) in &[
            (0u64, 1u64),
            (4095, 2),
            (512, 3 * BLOCK_BYTES),
            (0, size),
            (size - 1, 1),
            (3 * BLOCK_BYTES, BLOCK_BYTES),
        ] {
            let mut next = offset;
            for run in stripe_runs(offset, len) {
                assert_eq!(run.start, next);
                for p in pieces(offset, run.start, run.end, size) {
                    assert_eq!(p.block * BLOCK_BYTES + p.in_off as u64, next);
                    assert_eq!(p.buf_off as u64, next - offset);
                    assert!(p.in_off + p.len <= BLOCK);
                    next += p.len as u64;
                }
                assert_eq!(next, run.end);
            }
            assert_eq!(next, offset + len);
        }
    }

    #[test]
    fn stripe_runs_stop_at_stripe_boundaries() {
        let stripe = STRIPE_BLOCKS * BLOCK_BYTES;
        let runs: Vec<_> = stripe_runs(stripe - 10, stripe + 20).collect();
        assert_eq!(runs.len(), 3);
        assert_eq!(runs[0].end, stripe);
        assert_eq!(runs[1].end, 2 * stripe);
        assert_eq!(runs[2].end, 2 * stripe + 10);
    }

    #[test]
    fn last_partial_block_counts_as_whole_to_the_device_end() {
        let size = 2 * BLOCK_BYTES + 512;
        let p: Vec<_> = pieces(2 * BLOCK_BYTES, 2 * BLOCK_BYTES, size, size).collect();
        assert_eq!(p.len(), 1);
        assert!(p[0].whole);
        let p: Vec<_> = pieces(2 * BLOCK_BYTES, 2 * BLOCK_BYTES, size - 1, size).collect();
        assert!(!p[0].whole);
    }

    #[test]
    fn zero_plan_splits_whole_and_partial_blocks() {
        let size = 100 * BLOCK_BYTES;
        let plan = zero_plan(512, 3 * BLOCK_BYTES, size);
        assert_eq!((plan.whole_first, plan.whole_end), (1, 3));
        assert_eq!(plan.partial.len(), 2);
        assert_eq!(plan.partial[0].block, 0);
        assert_eq!(plan.partial[1].block, 3);

        let plan = zero_plan(BLOCK_BYTES, 2 * BLOCK_BYTES, size);
        assert_eq!((plan.whole_first, plan.whole_end), (1, 3));
        assert!(plan.partial.is_empty());

        let plan = zero_plan(100, 200, size);
        assert_eq!(plan.whole_end - plan.whole_first, 0);
        assert_eq!(plan.partial.len(), 1);

        let plan = zero_plan(BLOCK_BYTES - 1, 2, size);
        assert_eq!(plan.whole_end - plan.whole_first, 0);
        assert_eq!(plan.partial.len(), 2);

        let plan = zero_plan(0, 0, size);
        assert_eq!(plan.whole_end - plan.whole_first, 0);
        assert!(plan.partial.is_empty());
    }
}
