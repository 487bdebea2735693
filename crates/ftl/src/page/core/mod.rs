//! The page-mapped core that `page` uses directly and `dftl` wraps: the logical→physical map,
//! its reverse, per-block valid counts, log-structured allocation striped over planes, garbage
//! collection and wear levelling. It also stores *metadata pages* (DFTL's translation pages)
//! in blocks of their own, so that one garbage collector serves both kinds of page.
//!
//! Memory per physical page: 4 bytes of reverse map, 4 × (1 − over-provisioning) bytes of
//! forward map, NAND's bit, and about 40 bytes per block spread over its pages.
//!
//! Here: the state, construction, host operations and counters; `gc.rs` collection and wear
//! levelling; `pages.rs` allocation, commits, invalidation and metadata pages.

mod gc;
mod pages;
mod slc;

use super::allocation::static_order;
use super::{Params, PlaneAllocation};
use crate::gc::{BlockInfo, VictimIndex};
pub(crate) use crate::slc_cache::COUNTERS as SLC_COUNTERS;
use crate::table;
use crate::wear::{FreePool, StaticWl};
use crate::{Cause, Dep, FlashOp, FtlError};
use slc::{Slc, SlcRole};
use storsim_core::{CounterDescriptor, DeviceCounter, Prng, Unit};
use storsim_flash::{Divisor, Geometry, NandArray, Ppa};

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
    /// Being collected, moved or folded: its pages are leaving.
    Victim,
    /// A full SLC cache block waiting to be folded: never a victim of garbage collection.
    Cached,
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
    slc: SlcRole,
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
    /// The plane of each position in one round of striped allocation: the round-robin's order,
    /// or with static allocation the order a page's address indexes.
    stripe: Vec<u32>,
    stripe_pos: u32,
    /// Whether a host page's address chooses its plane (MQSim's static allocation) rather
    /// than the round-robin.
    static_allocation: bool,
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
    /// The SLC write cache, when the device has one.
    slc: Option<Box<Slc>>,
}

/// Where a host page is programmed: a plane, in its SLC cache block or its native frontier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HostTarget {
    pub(crate) plane: u32,
    pub(crate) slc: bool,
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

/// The core's counters, in the order `each_counter` lists them: every page-mapped FTL's.
pub(crate) const COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new("host_writes", Unit::Pages, "Host page writes done."),
    CounterDescriptor::new(
        "gc_invocations",
        Unit::Count,
        "Host writes (or metadata writes) that ran foreground GC.",
    ),
    CounterDescriptor::new(
        "gc_victim_blocks",
        Unit::Blocks,
        "Blocks collected (foreground and background).",
    ),
    CounterDescriptor::new("gc_copied_pages", Unit::Pages, "Pages copied by GC."),
    CounterDescriptor::new(
        "gc_background_victim_blocks",
        Unit::Blocks,
        "Blocks collected in idle time.",
    ),
    CounterDescriptor::new(
        "wear_level_moves",
        Unit::Count,
        "Static wear-levelling moves.",
    ),
    CounterDescriptor::new(
        "wear_level_copied_pages",
        Unit::Pages,
        "Pages those moves copied.",
    ),
    CounterDescriptor::new("retired_blocks", Unit::Blocks, "Worn-out blocks."),
    CounterDescriptor::new(
        "free_blocks",
        Unit::Blocks,
        "Erased blocks in the free pools now.",
    ),
    CounterDescriptor::new(
        "host_plane_fallbacks",
        Unit::Count,
        "Host writes that skipped a full plane.",
    ),
    CounterDescriptor::new("valid_data_pages", Unit::Pages, "Logical pages with data."),
    CounterDescriptor::new("worn_out", Unit::Flag, "1 once writes fail with `WornOut`."),
];

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
                    slc: SlcRole::Native,
                },
            ),
            plane,
            stripe: match params.plane_allocation {
                PlaneAllocation::Dynamic => (0..planes as u64)
                    .map(|n| geometry.striped_plane(n))
                    .collect(),
                PlaneAllocation::Static(order) => static_order(&geometry, order),
            },
            stripe_pos: 0,
            static_allocation: params.plane_allocation != PlaneAllocation::Dynamic,
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
            slc: None,
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
            let mut op = FlashOp::read(Ppa(ppa), Cause::Host, dep_after(ops, start));
            if self.slc.is_some()
                && self.blocks[self.ppb_div.quotient(ppa) as usize].slc != SlcRole::Native
            {
                op = op.in_slc_mode();
            }
            ops.push(op);
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
        let target = self.prepare_host_write(lpn, ops, hooks)?;
        self.finish_host_write(target, lpn, ops, start)
    }

    /// Everything a host write does before its program: a static wear-levelling move when one
    /// is due, then foreground garbage collection in the target plane when it is below the
    /// low watermark (and with an SLC cache, the folding a full cache may need). Returns
    /// where the program goes.
    pub(crate) fn prepare_host_write<H: Hooks>(
        &mut self,
        lpn: u32,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<HostTarget, FtlError> {
        if self.worn_out {
            return Err(self.out_of_space());
        }
        if self.wear.pending() {
            self.static_wl_step(ops, hooks)?;
        }
        if self.slc.is_some() {
            return self.slc_target(lpn, ops, hooks);
        }
        let plane = self.host_plane(lpn, ops, hooks)?;
        Ok(HostTarget { plane, slc: false })
    }

    /// Whether plane `p` can take a host page without its last free block.
    #[inline]
    pub(crate) fn can_host(&self, p: u32) -> bool {
        let pl = &self.plane[p as usize];
        (pl.open != NONE && pl.wp < self.ppb) || pl.free.len() >= 2
    }

    /// Whether `target` can still take a host page: [`Core::can_host`] for a native one, room
    /// in the plane's open cache block for an SLC one.
    pub(crate) fn can_host_target(&self, target: HostTarget) -> bool {
        if target.slc {
            self.slc_room(target.plane)
        } else {
            self.can_host(target.plane)
        }
    }

    /// The host's program of `lpn` where `target` says (which [`Core::can_host_target`]); it
    /// waits for everything this call emitted before it (`ops[start..]`).
    pub(crate) fn finish_host_write(
        &mut self,
        target: HostTarget,
        lpn: u32,
        ops: &mut Vec<FlashOp>,
        start: usize,
    ) -> Result<(), FtlError> {
        let dep = dep_after(ops, start);
        let ppa = if target.slc {
            self.program_slc(target.plane, lpn, ops, dep)?
        } else {
            let ppa = self
                .alloc_data_page(target.plane, 2)
                .expect("the host's plane was checked for room");
            self.nand.program(Ppa(ppa))?;
            ops.push(FlashOp::program(Ppa(ppa), Cause::Host, dep));
            self.count_direct_write();
            self.commit(ppa, lpn, PageKind::Data);
            ppa
        };
        self.counters.host_writes += 1;
        let old = std::mem::replace(&mut self.l2p[lpn as usize], ppa);
        if old == NONE {
            self.data_valid += 1;
        } else {
            self.invalidate_later(old);
        }
        Ok(())
    }

    /// The plane host page `lpn` goes to: with static allocation the one its address
    /// chooses, otherwise the next one in striped order; after garbage collection there. If
    /// that plane cannot take it (its data is all valid), the next one in striped order.
    pub(crate) fn host_plane<H: Hooks>(
        &mut self,
        lpn: u32,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<u32, FtlError> {
        let p = self.first_host_plane(lpn);
        self.host_plane_from(p, ops, hooks)
    }

    /// The planes host writes may go to now: the whole device's or the partition's.
    #[inline]
    fn host_planes(&self) -> u32 {
        match self.partition {
            None => self.planes,
            Some(i) => self.partitions[i].0.len() as u32,
        }
    }

    /// The plane host page `lpn` goes to first: with static allocation the one its address
    /// chooses, otherwise the next one in striped order.
    #[inline]
    fn first_host_plane(&mut self, lpn: u32) -> u32 {
        if self.static_allocation {
            let stripe = match self.partition {
                None => &self.stripe,
                Some(i) => &self.partitions[i].0,
            };
            stripe[(lpn % stripe.len() as u32) as usize]
        } else {
            self.next_host_plane()
        }
    }

    /// Plane `p` for a host page after garbage collection there, or if it cannot take the
    /// page, the next plane in striped order that can.
    pub(crate) fn host_plane_from<H: Hooks>(
        &mut self,
        mut p: u32,
        ops: &mut Vec<FlashOp>,
        hooks: &mut H,
    ) -> Result<u32, FtlError> {
        // With static allocation the address chose the first plane, and every plane may
        // follow; otherwise the first was the stripe's next, which the rest follow.
        let tries = self.host_planes() - u32::from(!self.static_allocation);
        for k in 0..=tries {
            if k > 0 {
                p = self.next_host_plane();
            }
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

    /// The core's counters' descriptors, the SLC cache's included when there is one, in the
    /// order [`Core::push_counters`] lists them.
    pub(crate) fn counter_descriptors(&self) -> impl Iterator<Item = &'static CounterDescriptor> {
        let slc: &'static [CounterDescriptor] = if self.slc.is_some() {
            SLC_COUNTERS
        } else {
            &[]
        };
        COUNTERS.iter().chain(slc)
    }

    /// Starts the event counters from zero again.
    pub(crate) fn reset_counters(&mut self) {
        self.counters = CoreCounters::default();
        self.reset_slc_counters();
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
        self.each_slc_counter(f);
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
