//! The page-mapped core that `page` uses directly and `dftl` wraps: the logical→physical map,
//! its reverse, per-block valid counts, log-structured allocation striped over planes, garbage
//! collection and wear levelling. It also stores *metadata pages* (DFTL's translation pages)
//! in blocks of their own, so that one garbage collector serves both kinds of page.
//!
//! Memory per physical page: 4 bytes of reverse map, 4 × (1 − over-provisioning) bytes of
//! forward map, NAND's bit, and about 40 bytes per block spread over its pages.

use super::Params;
use crate::gc::{BlockInfo, VictimIndex};
use crate::table;
use crate::wear::{FreePool, StaticWl};
use crate::{Cause, Dep, FlashOp, FtlError};
use storsim_core::{DeviceCounter, Prng};
use storsim_flash::{BlockId, Divisor, Geometry, NandArray, Ppa};

/// "No page" / "no block" in every u32 table.
pub(crate) const NONE: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockState {
    /// Erased, in its plane's free pool.
    Free,
    /// A write frontier: partly programmed.
    Open,
    /// Fully programmed: a garbage-collection (or wear-levelling) candidate.
    Sealed,
    /// Being collected or moved: its pages are leaving.
    Victim,
    /// Worn out: never programmed or erased again.
    Retired,
}

/// What a block's pages hold; the two kinds never share a block, so collecting a data block
/// never has to move translation pages and the other way round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PageKind {
    /// Host data; the reverse map holds a logical page number.
    Data,
    /// FTL metadata (DFTL translation pages); the reverse map holds a metadata page number.
    Meta,
}

/// What a wrapping FTL learns from the core's garbage collection and wear levelling.
pub(crate) trait Hooks {
    /// Whether [`Hooks::data_moved`] wants to hear about moves at all (the plain page FTL does
    /// not, and then the core does not even record them).
    const WANTS_MOVES: bool;

    /// The data of `lpns` was just copied to new locations (already in the core's map) by
    /// collecting or moving one block. The hook only takes note: metadata writes it needs are
    /// made after the collection (see [`Core::ensure_meta_room`]), never in the middle of it.
    fn data_moved(&mut self, lpns: &[u32]);
}

/// The plain page FTL's hooks: nothing to do.
pub(crate) struct NoHooks;

impl Hooks for NoHooks {
    const WANTS_MOVES: bool = false;
    fn data_moved(&mut self, _: &[u32]) {}
}

/// What the core knows of one block.
#[derive(Clone, Copy, Debug)]
struct BlockMeta {
    /// Host-write count when the block last changed (a program or an invalidation): the clock
    /// of cost-benefit's age.
    modified: u64,
    /// Pages holding current data.
    valid: u32,
    state: BlockState,
    kind: PageKind,
}

impl BlockInfo for [BlockMeta] {
    #[inline]
    fn valid(&self, b: u32) -> u32 {
        self[b as usize].valid
    }
    #[inline]
    fn modified(&self, b: u32) -> u64 {
        self[b as usize].modified
    }
}

/// One plane's allocation state.
struct Plane {
    free: FreePool,
    /// The open data block (the plane's write frontier), or [`NONE`].
    open: u32,
    /// The next page of `open` to program.
    wp: u32,
}

/// Event counts the FTL reports.
#[derive(Clone, Debug, Default)]
pub(crate) struct CoreCounters {
    pub(crate) host_writes: u64,
    pub(crate) gc_invocations: u64,
    pub(crate) gc_victim_blocks: u64,
    pub(crate) gc_copied_pages: u64,
    pub(crate) gc_background_victim_blocks: u64,
    pub(crate) wear_level_moves: u64,
    pub(crate) wear_level_copied_pages: u64,
    pub(crate) host_plane_fallbacks: u64,
}

pub(crate) struct Core {
    pub(crate) nand: NandArray,
    ppb: u32,
    /// `ppb` prepared for division: every program and invalidation finds its page's block.
    ppb_div: Divisor,
    blocks_per_plane: u32,
    planes: u32,
    logical_pages: u32,
    low_watermark: usize,
    high_watermark: usize,
    background_gc: bool,
    /// Logical page → physical page (the authoritative map; [`NONE`] when unmapped).
    l2p: Vec<u32>,
    /// Metadata page → physical page (DFTL's global translation directory).
    meta_l2p: Vec<u32>,
    /// Physical page → owner (logical or metadata page number) of its last program. The page
    /// is valid exactly when the owner's map entry points back at it.
    p2l: Vec<u32>,
    /// Per-block state, in one record so that updating a block costs one cache line.
    blocks: Vec<BlockMeta>,
    plane: Vec<Plane>,
    /// The plane of each position in one round of striped allocation.
    stripe: Vec<u32>,
    stripe_pos: u32,
    /// Resource partitions: each one's planes in striped order and its next position there
    /// ([`Core::set_write_partitions`]); `partition` is the one host writes go to now, `None`
    /// for the whole device.
    partitions: Vec<(Vec<u32>, u32)>,
    partition: Option<usize>,
    meta_open: u32,
    meta_wp: u32,
    meta_cursor: u32,
    background_cursor: u32,
    victims: VictimIndex,
    wear: StaticWl,
    rng: Prng,
    seal_seq: u64,
    data_valid: u64,
    live_blocks: u32,
    /// Fewer live blocks than this cannot hold the logical capacity plus the spare that
    /// garbage collection needs: the device is worn out.
    min_live_blocks: u32,
    worn_out: bool,
    /// Scratch: the data pages one collection moved, for the hooks.
    moved: Vec<u32>,
    /// Scratch: the valid (page, owner) pairs of the block being collected.
    batch: Vec<(u32, u32)>,
    /// Scratch: whether each page of the block being collected is valid.
    valid: Vec<bool>,
    /// Pages that host writes made invalid, with the host-write count at the time, whose
    /// blocks' counts are not updated yet (see [`Core::invalidate_later`]).
    pending: Vec<(u32, u64)>,
    pub(crate) counters: CoreCounters,
}

/// Invalidations held back at most: enough for their cache misses to overlap, few enough to
/// stay in the first-level cache.
const PENDING_MAX: usize = 32;

/// Logical pages of a page-mapped FTL with `params` over `geometry`, before any metadata:
/// `floor(physical × (1 − over-provisioning))`.
pub(crate) fn base_logical_pages(geometry: &Geometry, params: &Params) -> u64 {
    (geometry.pages() as f64 * (1.0 - params.over_provisioning_fraction)).floor() as u64
}

fn rejected(reason: String) -> FtlError {
    FtlError::Rejected { reason }
}

/// Refuses parameters no page-mapped core can run with, and a block that cannot be erased.
fn check_params(geometry: &Geometry, endurance: u32, params: &Params) -> Result<(), FtlError> {
    geometry
        .validate()
        .map_err(|e| rejected(format!("geometry: {e}")))?;
    let op = params.over_provisioning_fraction;
    if !(0.0..1.0).contains(&op) {
        return Err(rejected(format!(
            "over_provisioning_fraction {op} is not in [0, 1)"
        )));
    }
    params.gc_policy.validate().map_err(rejected)?;
    if params.gc_low_watermark_blocks < 2 {
        return Err(rejected(format!(
            "gc_low_watermark_blocks {} is below 2: garbage collection needs one free \
             block per plane to copy into, and the host one to write to",
            params.gc_low_watermark_blocks
        )));
    }
    if params.gc_high_watermark_blocks < params.gc_low_watermark_blocks {
        return Err(rejected(format!(
            "gc_high_watermark_blocks {} is below gc_low_watermark_blocks {}",
            params.gc_high_watermark_blocks, params.gc_low_watermark_blocks
        )));
    }
    if params.static_wl_threshold_erases == Some(0) {
        return Err(rejected(
            "static_wl_threshold_erases must be at least 1 (or off)".into(),
        ));
    }
    if params.static_wl_erases_per_move == 0 {
        return Err(rejected(
            "static_wl_erases_per_move must be at least 1".into(),
        ));
    }
    if endurance == 0 {
        return Err(rejected("block endurance must be at least 1 erase".into()));
    }
    Ok(())
}

/// What the spare space allows garbage collection: the live blocks below which the device
/// is worn out, and the free blocks background collection aims at.
struct SpareSpace {
    min_live_blocks: u32,
    high_watermark: usize,
}

impl SpareSpace {
    /// Refuses spare space too small for garbage collection to make progress.
    fn new(
        geometry: &Geometry,
        params: &Params,
        logical_pages: u64,
        meta_pages: u64,
    ) -> Result<SpareSpace, FtlError> {
        let ppb = geometry.pages_per_block;
        let planes = geometry.planes();
        let pages = geometry.pages() as u64;
        // Garbage collection keeps one free block per plane in reserve and one write frontier
        // per plane; two spare blocks per plane leave it at least one block of invalid pages
        // to gain from, wherever the data sits.
        let needed_pages = logical_pages + meta_pages + 2 * planes as u64 * ppb as u64;
        if logical_pages == 0 || needed_pages > pages {
            return Err(rejected(format!(
                "{logical_pages} logical pages (+{meta_pages} metadata) leave too little spare \
                 space in {pages} physical pages: garbage collection needs two blocks per plane \
                 ({} pages); raise over_provisioning_fraction or use more, smaller blocks",
                2 * planes as u64 * ppb as u64
            )));
        }
        let min_live_blocks = needed_pages.div_ceil(ppb as u64) as u32;
        // Background collection stops at the high watermark, but it can only reach a number
        // of free blocks that the spare space allows. Chasing more would collect blocks with
        // hardly any invalid page over and over, multiplying write amplification; so the
        // target is capped to leave a low watermark's worth of each plane's spare blocks
        // spread as invalid pages (what makes victims worth collecting), and it is never
        // below the low watermark, which foreground collection keeps anyway.
        let spare_blocks_per_plane =
            (pages - logical_pages - meta_pages) / ppb as u64 / planes as u64;
        let low = params.gc_low_watermark_blocks as u64;
        let high_watermark = (params.gc_high_watermark_blocks as u64)
            .min(spare_blocks_per_plane.saturating_sub(low))
            .max(low) as usize;
        Ok(SpareSpace {
            min_live_blocks,
            high_watermark,
        })
    }
}

impl Core {
    /// A core for `logical_pages` of host data and `meta_pages` of metadata; checks that the
    /// parameters are sane and that the spare space lets garbage collection make progress.
    pub(crate) fn new(
        geometry: Geometry,
        endurance: u32,
        params: &Params,
        logical_pages: u64,
        meta_pages: u64,
    ) -> Result<Core, FtlError> {
        check_params(&geometry, endurance, params)?;
        let spare = SpareSpace::new(&geometry, params, logical_pages, meta_pages)?;
        let ppb = geometry.pages_per_block;
        let planes = geometry.planes();
        let blocks = geometry.blocks();
        let pages = geometry.pages() as u64;
        // Every block starts free, in its plane's pool.
        let mut plane: Vec<Plane> = (0..planes)
            .map(|_| Plane {
                free: FreePool::new(params.dynamic_wl),
                open: NONE,
                wp: 0,
            })
            .collect();
        for (p, pl) in plane.iter_mut().enumerate() {
            for i in 0..geometry.blocks_per_plane {
                pl.free.push(p as u32 * geometry.blocks_per_plane + i, 0);
            }
        }
        Ok(Core {
            nand: NandArray::new(geometry, endurance),
            ppb,
            ppb_div: Divisor::new(ppb),
            blocks_per_plane: geometry.blocks_per_plane,
            planes,
            logical_pages: logical_pages as u32,
            low_watermark: params.gc_low_watermark_blocks as usize,
            high_watermark: spare.high_watermark,
            background_gc: params.gc_background,
            l2p: table::filled(logical_pages as usize, NONE),
            meta_l2p: table::filled(meta_pages as usize, NONE),
            p2l: table::filled(pages as usize, NONE),
            blocks: table::filled(
                blocks as usize,
                BlockMeta {
                    modified: 0,
                    valid: 0,
                    state: BlockState::Free,
                    kind: PageKind::Data,
                },
            ),
            plane,
            stripe: (0..planes as u64)
                .map(|n| geometry.striped_plane(n))
                .collect(),
            stripe_pos: 0,
            partitions: Vec::new(),
            partition: None,
            meta_open: NONE,
            meta_wp: 0,
            meta_cursor: 0,
            background_cursor: 0,
            victims: VictimIndex::new(params.gc_policy, planes, geometry.blocks_per_plane, ppb),
            wear: StaticWl::new(
                params.static_wl_threshold_erases,
                params.static_wl_erases_per_move,
                blocks,
            ),
            rng: Prng::new(params.seed),
            seal_seq: 0,
            data_valid: 0,
            live_blocks: blocks,
            min_live_blocks: spare.min_live_blocks,
            worn_out: false,
            moved: Vec::new(),
            batch: Vec::new(),
            valid: Vec::new(),
            pending: Vec::with_capacity(PENDING_MAX),
            counters: CoreCounters::default(),
        })
    }

    pub(crate) fn logical_pages(&self) -> u64 {
        self.logical_pages as u64
    }

    pub(crate) fn valid_data_pages(&self) -> u64 {
        self.data_valid
    }

    /// The error for a host call that needs space when none can be made.
    pub(crate) fn out_of_space(&self) -> FtlError {
        match self.nand.retired_blocks() {
            0 => FtlError::NoSpace,
            retired_blocks => FtlError::WornOut { retired_blocks },
        }
    }

    /// Checks `lpn` against the logical capacity.
    #[inline]
    pub(crate) fn check_lpn(&self, lpn: u64) -> Result<u32, FtlError> {
        if lpn < self.logical_pages as u64 {
            Ok(lpn as u32)
        } else {
            Err(FtlError::OutOfRange {
                lpn,
                logical_pages: self.logical_pages as u64,
            })
        }
    }

    /// Starts loading `lpn`'s map entry (see [`Ftl::prefetch`](crate::Ftl::prefetch)).
    #[inline]
    pub(crate) fn prefetch(&self, lpn: u64) {
        storsim_core::cache::prefetch(&self.l2p, lpn as usize);
    }

    #[inline]
    pub(crate) fn lookup(&self, lpn: u64) -> Option<Ppa> {
        match self.l2p.get(lpn as usize) {
            Some(&p) if p != NONE => Some(Ppa(p)),
            _ => None,
        }
    }

    /// The host's read of `lpn` (a no-op when it has no data). It waits for whatever this call
    /// already emitted (`ops[start..]`, DFTL's translation reads).
    pub(crate) fn host_read(
        &mut self,
        lpn: u32,
        ops: &mut Vec<FlashOp>,
        start: usize,
    ) -> Result<(), FtlError> {
        let ppa = self.l2p[lpn as usize];
        if ppa != NONE {
            self.nand.check_read(Ppa(ppa))?;
            ops.push(FlashOp::read(Ppa(ppa), Cause::Host, dep_after(ops, start)));
        }
        Ok(())
    }

    /// Unmaps `lpn`. Returns whether it had data.
    pub(crate) fn host_trim(&mut self, lpn: u32) -> bool {
        let old = self.l2p[lpn as usize];
        if old == NONE {
            return false;
        }
        self.invalidate(old);
        self.l2p[lpn as usize] = NONE;
        self.data_valid -= 1;
        true
    }

    /// The host's write of `lpn`: [`Core::prepare_host_write`], then
    /// [`Core::finish_host_write`].
    #[inline]
    pub(crate) fn host_write<H: Hooks>(
        &mut self,
        lpn: u32,
        ops: &mut Vec<FlashOp>,
        start: usize,
        hooks: &mut H,
    ) -> Result<(), FtlError> {
        let plane = self.prepare_host_write(ops, hooks)?;
        self.finish_host_write(plane, lpn, ops, start)
    }

    /// Everything a host write does before its program: a static wear-levelling move when one
    /// is due, then foreground garbage collection in the target plane when it is below the
    /// low watermark. Returns the plane the program goes to.
    pub(crate) fn prepare_host_write<H: Hooks>(
        &mut self,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<u32, FtlError> {
        if self.worn_out {
            return Err(self.out_of_space());
        }
        if self.wear.pending() {
            self.static_wl_step(ops, hooks)?;
        }
        self.host_plane(ops, hooks)
    }

    /// Whether plane `p` can take a host page without its last free block.
    #[inline]
    pub(crate) fn can_host(&self, p: u32) -> bool {
        let pl = &self.plane[p as usize];
        (pl.open != NONE && pl.wp < self.ppb) || pl.free.len() >= 2
    }

    /// The host's program of `lpn` in plane `plane` (which [`Core::can_host`]); it waits for
    /// everything this call emitted before it (`ops[start..]`).
    pub(crate) fn finish_host_write(
        &mut self,
        plane: u32,
        lpn: u32,
        ops: &mut Vec<FlashOp>,
        start: usize,
    ) -> Result<(), FtlError> {
        let ppa = self
            .alloc_data_page(plane, 2)
            .expect("the host's plane was checked for room");
        self.nand.program(Ppa(ppa))?;
        ops.push(FlashOp::program(
            Ppa(ppa),
            Cause::Host,
            dep_after(ops, start),
        ));
        self.counters.host_writes += 1;
        self.commit(ppa, lpn, PageKind::Data);
        let old = std::mem::replace(&mut self.l2p[lpn as usize], ppa);
        if old == NONE {
            self.data_valid += 1;
        } else {
            self.invalidate_later(old);
        }
        Ok(())
    }

    /// The plane the next host page goes to: the next one in striped order, after garbage
    /// collection there; if that plane cannot take it (its data is all valid), the next one.
    pub(crate) fn host_plane<H: Hooks>(
        &mut self,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<u32, FtlError> {
        let planes = match self.partition {
            None => self.planes,
            Some(i) => self.partitions[i].0.len() as u32,
        };
        for _ in 0..planes {
            let p = self.next_host_plane();
            if self.plane[p as usize].free.len() < self.low_watermark {
                self.foreground_gc(p, ops, hooks)?;
            }
            if self.can_host(p) {
                return Ok(p);
            }
            self.counters.host_plane_fallbacks += 1;
        }
        Err(self.out_of_space())
    }

    /// The next plane in striped order, over the whole device or the current partition.
    #[inline]
    fn next_host_plane(&mut self) -> u32 {
        match self.partition {
            None => {
                let p = self.stripe[self.stripe_pos as usize];
                self.stripe_pos += 1;
                if self.stripe_pos == self.planes {
                    self.stripe_pos = 0;
                }
                p
            }
            Some(i) => {
                let (stripe, pos) = &mut self.partitions[i];
                let p = stripe[*pos as usize];
                *pos = (*pos + 1) % stripe.len() as u32;
                p
            }
        }
    }

    /// See [`crate::Ftl::set_write_partitions`]: each partition's planes, kept in the device's
    /// striped order. A partition with no plane, or a plane past the device, is refused.
    pub(crate) fn set_write_partitions(&mut self, partitions: &[Vec<u32>]) -> Result<(), FtlError> {
        let mut kept = Vec::with_capacity(partitions.len());
        for (i, planes) in partitions.iter().enumerate() {
            if let Some(&p) = planes.iter().find(|&&p| p >= self.planes) {
                return Err(rejected(format!(
                    "resource partition {i} names plane {p}, but the device has {} planes",
                    self.planes
                )));
            }
            let stripe: Vec<u32> = self
                .stripe
                .iter()
                .copied()
                .filter(|p| planes.contains(p))
                .collect();
            if stripe.is_empty() {
                return Err(rejected(format!("resource partition {i} has no plane")));
            }
            kept.push((stripe, 0));
        }
        self.partitions = kept;
        self.partition = None;
        Ok(())
    }

    /// See [`crate::Ftl::select_write_partition`]; a partition that was not set means the whole
    /// device.
    pub(crate) fn select_write_partition(&mut self, partition: Option<usize>) {
        self.partition = partition.filter(|&i| i < self.partitions.len());
    }

    /// Collects victims in `plane` until it is back at the low watermark or no victim can be
    /// collected.
    fn foreground_gc<H: Hooks>(
        &mut self,
        p: u32,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<(), FtlError> {
        self.apply_invalidations();
        let mut victims = 0;
        while self.plane[p as usize].free.len() < self.low_watermark {
            let now = self.counters.host_writes;
            let Some(mut b) = self.victims.select(p, &self.blocks[..], now, &mut self.rng) else {
                break;
            };
            if !self.room_for(b) {
                match self.victims.fewest_valid(p, &self.blocks[..]) {
                    Some(f) if self.room_for(f) => b = f,
                    _ => break,
                }
            }
            self.collect(b, Cause::Gc, ops, hooks)?;
            victims += 1;
        }
        if victims > 0 {
            self.counters.gc_invocations += 1;
        }
        Ok(())
    }

    /// Background work for an idle device: one victim in the first plane (round robin) below
    /// the high watermark. Returns whether it did any. Static wear levelling is deliberately
    /// not done here: it is paced by host writes (at most one move per write), whereas idle
    /// work is repeated for as long as the device stays idle and would wear blocks out for
    /// nothing; garbage collection, by contrast, runs out of candidates.
    pub(crate) fn idle<H: Hooks>(
        &mut self,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<bool, FtlError> {
        if self.worn_out {
            return Ok(false);
        }
        self.apply_invalidations();
        if self.background_gc {
            for k in 0..self.planes {
                let p = (self.background_cursor + k) % self.planes;
                if self.plane[p as usize].free.len() >= self.high_watermark {
                    continue;
                }
                let now = self.counters.host_writes;
                let Some(b) = self.victims.select(p, &self.blocks[..], now, &mut self.rng) else {
                    continue;
                };
                if !self.room_for(b) {
                    continue;
                }
                self.background_cursor = (p + 1) % self.planes;
                self.collect(b, Cause::Gc, ops, hooks)?;
                self.counters.gc_background_victim_blocks += 1;
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Moves the data out of one cold full block, if one can be found and moved.
    fn static_wl_step<H: Hooks>(
        &mut self,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<bool, FtlError> {
        self.apply_invalidations();
        let blocks = &self.blocks;
        let Some(b) = self.wear.find(self.nand.erase_counts(), |b| {
            blocks[b as usize].state == BlockState::Sealed
        }) else {
            return Ok(false);
        };
        if !self.room_for(b) {
            return Ok(false);
        }
        // Reset the pacing first, so that the move's own erase counts towards the next move.
        self.wear.moved();
        self.collect(b, Cause::WearLevel, ops, hooks)?;
        self.counters.wear_level_moves += 1;
        Ok(true)
    }

    /// Whether the valid pages of block `b` fit where collecting it would copy them: the
    /// same places, in the same order of preference, as the allocation during the copies.
    fn room_for(&self, b: u32) -> bool {
        let need = self.blocks[b as usize].valid as u64;
        let ppb = self.ppb as u64;
        let p = b / self.blocks_per_plane;
        // Blocks other planes can give without going below their one-block reserve.
        let spare_blocks = |q: u32| self.plane[q as usize].free.len().saturating_sub(1) as u64;
        let own_blocks = self.plane[p as usize].free.len() as u64;
        match self.blocks[b as usize].kind {
            PageKind::Data => {
                let mut room = self.plane_room(p);
                if room >= need {
                    return true;
                }
                for q in (0..self.planes).filter(|&q| q != p) {
                    room += self.open_room(q) + spare_blocks(q) * ppb;
                    if room >= need {
                        return true;
                    }
                }
                false
            }
            PageKind::Meta => {
                let mut room = self.meta_open_room() + own_blocks * ppb;
                for q in (0..self.planes).filter(|&q| q != p) {
                    room += spare_blocks(q) * ppb;
                }
                room >= need
            }
        }
    }

    /// Pages left in plane `p`'s data frontier.
    fn open_room(&self, p: u32) -> u64 {
        let pl = &self.plane[p as usize];
        if pl.open != NONE {
            (self.ppb - pl.wp) as u64
        } else {
            0
        }
    }

    /// Pages left in the metadata frontier.
    fn meta_open_room(&self) -> u64 {
        if self.meta_open != NONE {
            (self.ppb - self.meta_wp) as u64
        } else {
            0
        }
    }

    /// Data pages plane `p` can still take: its frontier's rest and its free blocks.
    fn plane_room(&self, p: u32) -> u64 {
        self.open_room(p) + self.plane[p as usize].free.len() as u64 * self.ppb as u64
    }

    /// Copies the valid pages out of block `b` (read, then a program that waits for it),
    /// erases it once every copy is done, and tells the hooks which data moved.
    fn collect<H: Hooks>(
        &mut self,
        b: u32,
        cause: Cause,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<(), FtlError> {
        self.apply_invalidations();
        assert!(
            self.blocks[b as usize].state == BlockState::Sealed,
            "only full blocks are collected (block {b})"
        );
        self.victims.remove(b, self.blocks[b as usize].valid);
        self.blocks[b as usize].state = BlockState::Victim;
        let kind = self.blocks[b as usize].kind;
        let plane = b / self.blocks_per_plane;
        let track = H::WANTS_MOVES && kind == PageKind::Data;

        // First pass: find the valid pages. A page is valid when the map of its owner still
        // points at it. These map reads are independent of each other, so their cache misses
        // overlap, the more so as nothing else in their loop waits for them (the valid pages
        // are gathered afterwards); the copies then find the lines they update cached.
        let mut batch = std::mem::take(&mut self.batch);
        let mut valid = std::mem::take(&mut self.valid);
        let first = b * self.ppb;
        batch.clear();
        batch.extend((first..first + self.ppb).map(|src| (src, self.p2l[src as usize])));
        let map = match kind {
            PageKind::Data => &self.l2p,
            PageKind::Meta => &self.meta_l2p,
        };
        valid.clear();
        valid.extend(
            batch
                .iter()
                .map(|&(src, owner)| map.get(owner as usize) == Some(&src)),
        );
        let mut n = 0;
        for k in 0..batch.len() {
            batch[n] = batch[k];
            n += valid[k] as usize;
        }
        batch.truncate(n);
        self.valid = valid;
        assert!(
            n == self.blocks[b as usize].valid as usize,
            "block {b}: {n} pages mapped, {} counted valid",
            self.blocks[b as usize].valid
        );

        let mut moved = std::mem::take(&mut self.moved);
        moved.clear();
        ops.reserve(2 * n + 1);
        for &(src, owner) in &batch {
            self.nand.check_read(Ppa(src))?;
            ops.push(FlashOp::read(Ppa(src), cause, Dep::None));
            let dst = match kind {
                PageKind::Data => self.alloc_gc_data_page(plane),
                PageKind::Meta => self.alloc_meta_page(Some(plane)),
            }
            .ok_or(FtlError::NoSpace)?;
            self.nand.program(Ppa(dst))?;
            ops.push(FlashOp::copy(Ppa(src), Ppa(dst), cause, Dep::Previous));
            self.commit(dst, owner, kind);
            match kind {
                PageKind::Data => self.l2p[owner as usize] = dst,
                PageKind::Meta => self.meta_l2p[owner as usize] = dst,
            }
            if track {
                moved.push(owner);
            }
        }
        self.blocks[b as usize].valid = 0;
        self.batch = batch;
        match cause {
            Cause::WearLevel => self.counters.wear_level_copied_pages += n as u64,
            _ => {
                self.counters.gc_copied_pages += n as u64;
                self.counters.gc_victim_blocks += 1;
            }
        }
        self.erase(b, cause, ops)?;
        if track && !moved.is_empty() {
            hooks.data_moved(&moved);
        }
        self.moved = moved;
        Ok(())
    }

    /// Erases block `b` after everything before it in this call, then frees or retires it.
    fn erase(&mut self, b: u32, cause: Cause, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        ops.push(FlashOp::erase(Ppa(b * self.ppb), cause, Dep::All));
        let before = self.nand.erase_count(BlockId(b));
        let retired = self.nand.erase(BlockId(b))?;
        self.wear.erased(before, retired);
        if retired {
            self.blocks[b as usize].state = BlockState::Retired;
            self.live_blocks -= 1;
            if self.live_blocks < self.min_live_blocks {
                self.worn_out = true;
            }
        } else {
            self.blocks[b as usize].state = BlockState::Free;
            self.plane[(b / self.blocks_per_plane) as usize]
                .free
                .push(b, before + 1);
        }
        Ok(())
    }

    /// The next page of plane `p`'s data frontier, opening a free block when the frontier is
    /// full and at least `min_free_to_open` blocks are free.
    #[inline]
    fn alloc_data_page(&mut self, p: u32, min_free_to_open: usize) -> Option<u32> {
        let pl = &mut self.plane[p as usize];
        if pl.open != NONE && pl.wp < self.ppb {
            let ppa = pl.open * self.ppb + pl.wp;
            pl.wp += 1;
            return Some(ppa);
        }
        if pl.free.len() < min_free_to_open {
            return None;
        }
        let b = pl.free.pop()?;
        pl.open = b;
        pl.wp = 1;
        self.blocks[b as usize].state = BlockState::Open;
        self.blocks[b as usize].kind = PageKind::Data;
        Some(b * self.ppb)
    }

    /// Where a copy out of a data block of plane `p` goes: that plane's frontier (it may use
    /// the plane's last free block, which the victim's erase gives back), else another
    /// plane's frontier or spare block, so that a plane left without free blocks (by a
    /// retirement) can still be collected.
    fn alloc_gc_data_page(&mut self, p: u32) -> Option<u32> {
        if let Some(ppa) = self.alloc_data_page(p, 1) {
            return Some(ppa);
        }
        (1..self.planes).find_map(|k| self.alloc_data_page((p + k) % self.planes, 2))
    }

    /// The plane a new metadata block would come from: the one with the most free blocks
    /// (ties: round robin from the last one used), so metadata never drains one plane.
    fn meta_plane(&self) -> Option<(u32, usize)> {
        let mut best: Option<(u32, usize)> = None;
        for k in 0..self.planes {
            let q = (self.meta_cursor + k) % self.planes;
            let n = self.plane[q as usize].free.len();
            let better = match best {
                None => true,
                Some((_, m)) => n > m,
            };
            if better {
                best = Some((q, n));
            }
        }
        best
    }

    /// The next page of the metadata frontier. A new metadata block comes from
    /// [`Core::meta_plane`] if that leaves it a free block, else from `own` (the plane being
    /// collected, whose victim's erase gives the block back) if it has one.
    fn alloc_meta_page(&mut self, own: Option<u32>) -> Option<u32> {
        if self.meta_open != NONE && self.meta_wp < self.ppb {
            let ppa = self.meta_open * self.ppb + self.meta_wp;
            self.meta_wp += 1;
            return Some(ppa);
        }
        let q = match (self.meta_plane(), own) {
            (Some((q, n)), _) if n >= 2 => q,
            (_, Some(o)) if !self.plane[o as usize].free.is_empty() => o,
            _ => return None,
        };
        self.meta_cursor = (q + 1) % self.planes;
        let b = self.plane[q as usize].free.pop()?;
        self.meta_open = b;
        self.meta_wp = 1;
        self.blocks[b as usize].state = BlockState::Open;
        self.blocks[b as usize].kind = PageKind::Meta;
        Some(b * self.ppb)
    }

    /// Makes sure the next metadata page can be allocated without taking any plane's last
    /// free block: when the metadata frontier is full and no plane has two free blocks, it
    /// collects garbage (as before a host write) in the planes with the most free blocks
    /// first. Call it before each metadata write outside a collection.
    pub(crate) fn ensure_meta_room<H: Hooks>(
        &mut self,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<(), FtlError> {
        if self.meta_open_room() > 0 {
            return Ok(());
        }
        let mut order: Vec<(usize, u32)> = (0..self.planes)
            .map(|q| (self.plane[q as usize].free.len(), q))
            .collect();
        if order.iter().any(|&(n, _)| n >= 2) {
            return Ok(());
        }
        order.sort_by_key(|&(n, q)| (std::cmp::Reverse(n), q));
        for (_, q) in order {
            self.foreground_gc(q, ops, hooks)?;
            // The collection may have opened a metadata block itself (copying translation
            // pages), which is room enough.
            if self.plane[q as usize].free.len() >= 2 || self.meta_open_room() > 0 {
                return Ok(());
            }
        }
        Err(self.out_of_space())
    }

    /// Records that physical page `ppa` (just programmed) holds `owner`; seals its block when
    /// it was the block's last page.
    #[inline]
    fn commit(&mut self, ppa: u32, owner: u32, kind: PageKind) {
        self.p2l[ppa as usize] = owner;
        let b = self.ppb_div.quotient(ppa);
        self.blocks[b as usize].valid += 1;
        self.blocks[b as usize].modified = self.counters.host_writes;
        if ppa - b * self.ppb == self.ppb - 1 {
            // The block joins the victim index with its count: earlier invalidations first.
            self.apply_invalidations();
            self.blocks[b as usize].state = BlockState::Sealed;
            match kind {
                PageKind::Data => {
                    let pl = &mut self.plane[(b / self.blocks_per_plane) as usize];
                    assert!(
                        pl.open == b,
                        "sealed block {b} was not its plane's frontier"
                    );
                    pl.open = NONE;
                }
                PageKind::Meta => {
                    assert!(
                        self.meta_open == b,
                        "sealed block {b} was not the metadata frontier"
                    );
                    self.meta_open = NONE;
                }
            }
            self.seal_seq += 1;
            self.victims
                .sealed(b, self.blocks[b as usize].valid, self.seal_seq);
        }
    }

    /// Physical page `ppa` no longer holds current data. Its reverse-map entry stays: a page
    /// is valid only while its owner's map points at it, so the caller's map update is what
    /// invalidates it, and the host path saves a cache miss on the reverse map.
    fn invalidate(&mut self, ppa: u32) {
        self.apply_invalidations();
        self.apply_invalidation(ppa, self.counters.host_writes);
    }

    /// [`Core::invalidate`] for a host write, deferred. The block's count lives in a table
    /// too large for the cache, and the block is known only once the map's old entry is read,
    /// itself a cache miss: done at once, the two misses come one after the other on every
    /// host write. Deferred, the counts of a few dozen writes are updated together and their
    /// misses overlap. Nothing observes the difference: every reader of block counts or of
    /// the victim index, and every other change to them (sealing a block, another
    /// invalidation, collecting), applies the pending invalidations first, in order.
    #[inline]
    fn invalidate_later(&mut self, ppa: u32) {
        self.pending.push((ppa, self.counters.host_writes));
        if self.pending.len() == PENDING_MAX {
            self.apply_invalidations();
        }
    }

    /// Applies the invalidations [`Core::invalidate_later`] held back, in order.
    fn apply_invalidations(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        // Reading every block's record first starts all their cache misses at once; the
        // updates then find them cached.
        let mut touched = 0;
        for &(ppa, _) in &pending {
            let b = self.ppb_div.quotient(ppa);
            touched ^= self.blocks[b as usize].valid ^ self.victims.touch(b);
        }
        std::hint::black_box(touched);
        for &(ppa, stamp) in &pending {
            self.apply_invalidation(ppa, stamp);
        }
        self.pending = pending;
        self.pending.clear();
    }

    /// Invalidates `ppa` as of host-write count `stamp`.
    #[inline]
    fn apply_invalidation(&mut self, ppa: u32, stamp: u64) {
        let b = self.ppb_div.quotient(ppa);
        let meta = &mut self.blocks[b as usize];
        assert!(
            meta.valid > 0,
            "invalidating a page of block {b}, which has no valid page"
        );
        meta.valid -= 1;
        // Later changes to the block (a program) may have been recorded already: the last
        // change is the latest.
        meta.modified = meta.modified.max(stamp);
        if meta.state == BlockState::Sealed {
            let v = meta.valid;
            self.victims.invalidated(b, v);
        }
    }

    /// Where metadata page `m` lives, if it was ever written.
    pub(crate) fn meta_location(&self, m: u32) -> Option<Ppa> {
        match self.meta_l2p[m as usize] {
            NONE => None,
            p => Some(Ppa(p)),
        }
    }

    /// Reads metadata page `m` (cause Mapping) if it exists; returns whether it did.
    pub(crate) fn read_meta(&mut self, m: u32, ops: &mut Vec<FlashOp>) -> Result<bool, FtlError> {
        let Some(ppa) = self.meta_location(m) else {
            return Ok(false);
        };
        self.nand.check_read(ppa)?;
        ops.push(FlashOp::read(ppa, Cause::Mapping, Dep::None));
        Ok(true)
    }

    /// Rewrites metadata page `m` out of place (cause Mapping): a read of its old copy, if it
    /// has one, then a program that waits for the read. Returns the number of reads (0 or 1).
    /// Call [`Core::ensure_meta_room`] first.
    pub(crate) fn rewrite_meta(&mut self, m: u32, ops: &mut Vec<FlashOp>) -> Result<u64, FtlError> {
        let old = self.meta_l2p[m as usize];
        let read = self.read_meta(m, ops)?;
        let ppa = self
            .alloc_meta_page(None)
            .ok_or_else(|| self.out_of_space())?;
        self.nand.program(Ppa(ppa))?;
        let dep = if read { Dep::Previous } else { Dep::None };
        ops.push(FlashOp::program(Ppa(ppa), Cause::Mapping, dep));
        self.commit(ppa, m, PageKind::Meta);
        if old != NONE {
            self.invalidate(old);
        }
        self.meta_l2p[m as usize] = ppa;
        Ok(read as u64)
    }

    /// Whether the device is worn out (writes fail with [`FtlError::WornOut`]).
    pub(crate) fn check_not_worn_out(&self) -> Result<(), FtlError> {
        if self.worn_out {
            Err(self.out_of_space())
        } else {
            Ok(())
        }
    }

    /// The core's counters, appended in a fixed order.
    pub(crate) fn push_counters(&self, out: &mut Vec<DeviceCounter>) {
        self.each_counter(|name, value| out.push(DeviceCounter::new(name, value)));
    }

    /// The values of [`Core::push_counters`] alone, in its order.
    pub(crate) fn push_counter_values(&self, values: &mut Vec<f64>) {
        self.each_counter(|_, value| values.push(value));
    }

    fn each_counter(&self, mut f: impl FnMut(&'static str, f64)) {
        let c = &self.counters;
        let free: usize = self.plane.iter().map(|p| p.free.len()).sum();
        for (name, value) in [
            ("host_writes", c.host_writes as f64),
            ("gc_invocations", c.gc_invocations as f64),
            ("gc_victim_blocks", c.gc_victim_blocks as f64),
            ("gc_copied_pages", c.gc_copied_pages as f64),
            (
                "gc_background_victim_blocks",
                c.gc_background_victim_blocks as f64,
            ),
            ("wear_level_moves", c.wear_level_moves as f64),
            ("wear_level_copied_pages", c.wear_level_copied_pages as f64),
            ("retired_blocks", self.nand.retired_blocks() as f64),
            ("free_blocks", free as f64),
            ("host_plane_fallbacks", c.host_plane_fallbacks as f64),
            ("valid_data_pages", self.data_valid as f64),
            ("worn_out", self.worn_out as u8 as f64),
        ] {
            f(name, value);
        }
    }
}

/// A host operation waits for everything its call emitted before it, if anything.
#[inline]
fn dep_after(ops: &[FlashOp], start: usize) -> Dep {
    if ops.len() > start {
        Dep::All
    } else {
        Dep::None
    }
}
