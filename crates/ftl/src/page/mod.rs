//! The `page` FTL: page-level mapping with log-structured allocation striped over channels,
//! dies and planes, garbage collection and wear levelling. See docs/models/ftl-page.md.
//!
//! Every logical page maps to any physical page. Writes go to the write frontier (one open
//! block per plane) of the next plane in striped order ([`Geometry::striped_plane`]), so
//! consecutive writes land on different channels, then dies, then planes. When a plane's free
//! blocks fall below the low watermark, the garbage collector (policy in [`crate::gc`])
//! collects victims in that plane before the host's program, which waits for it.

mod allocation;
pub(crate) mod core;

pub use self::allocation::{Part, PlaneAllocation, NAMES as PLANE_ALLOCATIONS};
use self::core::{base_logical_pages, Core, NoHooks};
use crate::gc::{self, GcPolicy};
use crate::params::{
    self, field, fraction_below_one, Field, Key, Kind, ParamError, Section, Value,
};
use crate::{FlashOp, Ftl, FtlConfig, FtlEntry, FtlError, FtlParams, Keys, SlcCache};
use storsim_core::{CounterDescriptor, DeviceCounter};
use storsim_flash::{Geometry, NandArray, Ppa};

/// Parameters of the `page` FTL (and of the page-mapped data side of `dftl`).
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Fraction of the physical pages hidden from the host:
    /// `logical_pages = floor(physical_pages × (1 − fraction))`. Default 0.07.
    pub over_provisioning_fraction: f64,
    /// How garbage collection picks a victim block. Default greedy.
    pub gc_policy: GcPolicy,
    /// Foreground garbage collection runs in a plane, before a host write to it, while that
    /// plane has fewer free blocks than this. At least 2 (one block for the copies, one for
    /// the host). Default 2.
    pub gc_low_watermark_blocks: u32,
    /// Collect garbage in idle time ([`Ftl::idle`], one victim per call). Default off.
    pub gc_background: bool,
    /// Background garbage collection works on planes with fewer free blocks than this.
    /// Default 8.
    pub gc_high_watermark_blocks: u32,
    /// Dynamic wear levelling: open the least-worn free block of a plane rather than the one
    /// erased longest ago. Default on.
    pub dynamic_wl: bool,
    /// Static wear levelling: when the most- and least-worn live blocks differ by more than
    /// this many erases, move the data out of a cold block. `None` is off. Default 100.
    pub static_wl_threshold_erases: Option<u32>,
    /// Static wear levelling moves at most one block per this many erases (of any cause), so
    /// that it costs at most about 1 / this of the erases. Default 8.
    pub static_wl_erases_per_move: u32,
    /// Seed of the random choices (the random and d-choices victim policies).
    pub seed: u64,
    /// How a host page's plane is chosen: round-robin (default) or by its address (MQSim's
    /// static schemes).
    pub plane_allocation: PlaneAllocation,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            over_provisioning_fraction: 0.07,
            gc_policy: GcPolicy::Greedy,
            gc_low_watermark_blocks: 2,
            gc_background: false,
            gc_high_watermark_blocks: 8,
            dynamic_wl: true,
            static_wl_threshold_erases: Some(100),
            static_wl_erases_per_move: 8,
            seed: 0,
            plane_allocation: PlaneAllocation::Dynamic,
        }
    }
}

/// The `page` FTL's registry entry.
pub const ENTRY: FtlEntry = FtlEntry {
    name: "page",
    description: "page-level mapping, striped log-structured allocation, garbage collection and \
                  wear levelling",
    keys: KEYS,
    defaults: || FtlConfig::new(Params::default()),
    overwrites: true,
    counters: &[self::core::COUNTERS, self::core::SLC_COUNTERS],
};

/// `[ssd.page]`, and DFTL's data side. `gc_background` is not a key: the device's
/// `background_gc` sets it ([`FtlParams::set_background_gc`]), so that the device and its FTL
/// cannot disagree.
pub const KEYS: Keys = Keys(&[&OWN_KEYS, gc::KEYS]);

const OWN_KEYS: [Key; Params::FIELDS.len()] = params::keys(Params::FIELDS);

impl FtlParams for Params {
    const ENTRY: &'static FtlEntry = &ENTRY;

    /// The page FTL's own keys, each with the parameter it states; the victim policy's keys are
    /// the policies' own ([`gc::apply`], [`gc::write`]).
    const FIELDS: &'static [Field<Self>] = &[
        field!(over_provisioning_fraction: f64),
        field!(gc_low_watermark_blocks: u32),
        field!(gc_high_watermark_blocks: u32),
        field!(dynamic_wl: bool),
        Field {
            key: Key::new("static_wl_threshold_erases", Kind::U32),
            // 0 turns static wear levelling off: a threshold of 0 erases would mean moving data
            // on every write, which the FTL refuses, so the value is free to mean "off".
            set: |p, v| {
                let t: u32 = params::scalar(v);
                p.static_wl_threshold_erases = (t > 0).then_some(t);
                Ok(())
            },
            get: |p| Some(Value::U32(p.static_wl_threshold_erases.unwrap_or(0))),
        },
        field!(static_wl_erases_per_move: u32),
        field!(seed: u64),
        Field {
            key: Key::new("plane_allocation", Kind::Name(&allocation::NAMES)),
            set: |p, v| {
                let Value::Name(name) = v else {
                    unreachable!("a name key holds a name")
                };
                p.plane_allocation =
                    PlaneAllocation::from_name(name).expect("the key's kind admits only its names");
                Ok(())
            },
            get: |p| Some(Value::Name(p.plane_allocation.name())),
        },
    ];

    fn apply(&mut self, s: &Section) -> Result<(), ParamError> {
        params::apply(Self::FIELDS, self, s)?;
        gc::apply(s, &mut self.gc_policy)
    }

    fn section(&self) -> Section {
        let mut s = params::section(Self::FIELDS, self);
        gc::write(&self.gc_policy, &mut s);
        s
    }

    fn validate(&self, geometry: &Geometry) -> Result<(), ParamError> {
        fraction_below_one(
            "over_provisioning_fraction",
            self.over_provisioning_fraction,
        )?;
        gc::validate(&self.gc_policy)?;
        let (low, high) = (self.gc_low_watermark_blocks, self.gc_high_watermark_blocks);
        if low < 2 {
            return Err(ParamError::key(
                "gc_low_watermark_blocks",
                format!(
                    "must be at least 2 (garbage collection needs a free block to copy into \
                     and the host one to write to), got {low}"
                ),
            ));
        }
        if low > geometry.blocks_per_plane {
            return Err(ParamError::key(
                "gc_low_watermark_blocks",
                format!(
                    "is {low}, more than the {} blocks of a plane (ssd.geometry.blocks_per_plane)",
                    geometry.blocks_per_plane
                ),
            ));
        }
        if high < low {
            return Err(ParamError::key(
                "gc_high_watermark_blocks",
                format!("is {high}, below gc_low_watermark_blocks ({low})"),
            ));
        }
        if self.static_wl_threshold_erases == Some(0) {
            return Err(ParamError::key(
                "static_wl_threshold_erases",
                "must be at least 1, or 0 for off".into(),
            ));
        }
        if self.static_wl_erases_per_move == 0 {
            return Err(ParamError::key(
                "static_wl_erases_per_move",
                "must be at least 1 (one move per that many erases)".into(),
            ));
        }
        Ok(())
    }

    fn build(&self, geometry: Geometry, endurance: u32) -> Result<Box<dyn Ftl>, FtlError> {
        new(geometry, endurance, self)
    }

    fn set_background_gc(&mut self, on: bool) {
        self.gc_background = on;
    }
}

/// Builds the FTL over a fresh array.
pub fn new(geometry: Geometry, endurance: u32, params: &Params) -> Result<Box<dyn Ftl>, FtlError> {
    let logical = base_logical_pages(&geometry, params);
    let core = Core::new(geometry, endurance, params, logical, 0)?;
    Ok(Box::new(PageFtl { core }))
}

struct PageFtl {
    core: Core,
}

impl Ftl for PageFtl {
    fn name(&self) -> &'static str {
        "page"
    }

    fn logical_pages(&self) -> u64 {
        self.core.logical_pages()
    }

    fn nand(&self) -> &NandArray {
        &self.core.nand
    }

    fn read(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let lpn = self.core.check_lpn(lpn)?;
        let start = ops.len();
        self.core.host_read(lpn, ops, start)
    }

    #[inline]
    fn write(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let lpn = self.core.check_lpn(lpn)?;
        let start = ops.len();
        self.core.host_write(lpn, ops, start, &mut NoHooks)
    }

    fn trim(&mut self, lpn: u64, _ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let lpn = self.core.check_lpn(lpn)?;
        self.core.host_trim(lpn);
        Ok(())
    }

    fn lookup(&self, lpn: u64) -> Option<Ppa> {
        self.core.lookup(lpn)
    }

    fn prefetch(&self, lpn: u64) {
        self.core.prefetch(lpn);
    }

    fn valid_data_pages(&self) -> u64 {
        self.core.valid_data_pages()
    }

    fn idle(&mut self, ops: &mut Vec<FlashOp>) -> Result<bool, FtlError> {
        self.core.idle(ops, &mut NoHooks)
    }

    fn set_write_partitions(&mut self, partitions: &[Vec<u32>]) -> Result<(), FtlError> {
        self.core.set_write_partitions(partitions)
    }

    fn select_write_partition(&mut self, partition: Option<usize>) {
        self.core.select_write_partition(partition);
    }

    fn set_slc_cache(&mut self, cache: &SlcCache) -> Result<(), FtlError> {
        self.core.set_slc_cache(cache)
    }

    fn fold_slc_cache(&mut self, ops: &mut Vec<FlashOp>) -> Result<bool, FtlError> {
        self.core.fold_unit(ops, &mut NoHooks)
    }

    fn housekeeping(&mut self, ops: &mut Vec<FlashOp>) -> Result<bool, FtlError> {
        self.core.fold_for_budget(ops, &mut NoHooks)
    }

    fn reset_counters(&mut self) {
        self.core.reset_counters();
    }

    fn counter_descriptors(&self) -> Vec<&'static CounterDescriptor> {
        self.core.counter_descriptors().collect()
    }

    fn counters(&self) -> Vec<DeviceCounter> {
        let mut out = Vec::with_capacity(12);
        self.core.push_counters(&mut out);
        out
    }

    fn counter_values(&self, values: &mut Vec<f64>) {
        self.core.push_counter_values(values);
    }
}
