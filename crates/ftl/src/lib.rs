//! Flash translation layers. An FTL turns host page reads, writes and trims into NAND
//! operations (page read, page program, block erase) including the garbage-collection, merge,
//! mapping-table and wear-levelling traffic they cause. It decides *what* happens, never *when*:
//! no FTL sees a clock; the SSD model places the operations on channel and die timelines.
//!
//! Every FTL keeps a [`NandArray`] and applies its own operations to it, so NAND's rules (one
//! program per page between erases, worn-out blocks retired) are enforced for every FTL alike,
//! and one conformance suite ([`conformance`]) checks them all.

pub mod anand;
pub mod block;
mod blockmap;
pub mod conformance;
pub mod dftl;
pub mod fast;
pub mod fmax;
pub mod gc;
pub mod log_block;
mod op;
pub mod page;
pub mod page_static;
pub mod params;
pub mod raw;
mod rewrite;
pub mod slc_cache;
mod table;
pub mod wear;

pub use op::{Cause, Dep, FlashOp, FtlError};
pub use slc_cache::{SlcCache, WhenFull};

pub use params::Keys;
use params::{Field, ParamError, Section};
use std::any::Any;
use std::fmt;
use storsim_core::{CounterDescriptor, DeviceCounter};
use storsim_flash::{Geometry, NandArray, Ppa};

/// Every FTL, in the order device files and `storsim presets` list them: one entry each, defined
/// in the FTL's own directory. Nothing else names an FTL; adding one is its directory, a line
/// here, its page in docs/models/ and its tests (ARCHITECTURE.md, "Add an FTL").
pub const FTLS: &[&FtlEntry] = &[
    &page::ENTRY,
    &page_static::ENTRY,
    &block::ENTRY,
    &log_block::ENTRY,
    &fast::ENTRY,
    &dftl::ENTRY,
    &anand::ENTRY,
    &fmax::ENTRY,
    &raw::ENTRY,
];

/// What the registry knows of one FTL: enough to read its section of a device file, to describe
/// it and to build it.
#[derive(Debug)]
pub struct FtlEntry {
    /// The name device files use (`ftl = "NAME"`, `[ssd.NAME]`).
    pub name: &'static str,
    /// One line for listings.
    pub description: &'static str,
    /// The keys of its section.
    pub keys: Keys,
    /// The FTL with its default parameters.
    pub defaults: fn() -> FtlConfig,
    /// Whether the host may rewrite a logical page without trimming it first: every FTL but
    /// raw flash hides erase-before-write. The conformance suite draws its writes accordingly.
    pub overwrites: bool,
    /// What each of its counters is (see [`Ftl::counters`]): its tables of descriptors, in the
    /// order it lists them. The registry holds them so that a reader of a document that names
    /// the FTL (the report) can describe its counters without building one.
    pub counters: &'static [&'static [CounterDescriptor]],
}

impl FtlEntry {
    /// Its counters' descriptors, in order.
    pub fn counter_descriptors(&self) -> impl Iterator<Item = &'static CounterDescriptor> {
        self.counters.iter().flat_map(|table| table.iter())
    }
}

/// The FTL named exactly `name`.
pub fn find(name: &str) -> Option<&'static FtlEntry> {
    FTLS.iter().copied().find(|e| e.name == name)
}

/// An FTL's parameter struct: what it reads from its section, how it checks itself, and how it
/// builds the FTL. Each FTL implements it on its own `Params`.
pub trait FtlParams: Clone + fmt::Debug + PartialEq + Send + Sync + 'static {
    /// The FTL's registry entry.
    const ENTRY: &'static FtlEntry;

    /// The keys of its section, each with the parameter it states: the FTL's one list of its
    /// keys, from which its entry's [`FtlEntry::keys`] ([`params::keys`]) and the default
    /// [`FtlParams::apply`] and [`FtlParams::section`] come.
    const FIELDS: &'static [Field<Self>];

    /// Overrides the parameters the section states; the section holds only keys of
    /// [`FtlEntry::keys`], with values of their kinds. The default reads [`FtlParams::FIELDS`];
    /// an FTL with keys beyond them (a victim policy's) or a rule across keys reads those too.
    fn apply(&mut self, section: &Section) -> Result<(), ParamError> {
        params::apply(Self::FIELDS, self, section)
    }

    /// Every parameter as a section, such that [`FtlParams::apply`] on the defaults gives
    /// these parameters back. The default writes [`FtlParams::FIELDS`].
    fn section(&self) -> Section {
        params::section(Self::FIELDS, self)
    }

    /// Checks the parameters the way the FTL would when it is built, but naming the key. What
    /// depends on the whole geometry (whether the spare space suffices) is left to `build`.
    fn validate(&self, geometry: &Geometry) -> Result<(), ParamError>;

    /// Builds the FTL over a fresh NAND array of `geometry` whose blocks survive `endurance`
    /// erases.
    fn build(&self, geometry: Geometry, endurance: u32) -> Result<Box<dyn Ftl>, FtlError>;

    /// Whether the FTL collects garbage in idle time. Files have one switch for the device and
    /// its FTL (`ssd.background_gc`); FTLs without idle work ignore it.
    fn set_background_gc(&mut self, _on: bool) {}
}

/// [`FtlParams`] behind a pointer: what [`FtlConfig`] holds.
trait AnyParams: fmt::Debug + Send + Sync {
    fn entry(&self) -> &'static FtlEntry;
    fn clone_box(&self) -> Box<dyn AnyParams>;
    fn eq_any(&self, other: &dyn AnyParams) -> bool;
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
    fn apply(&mut self, section: &Section) -> Result<(), ParamError>;
    fn section(&self) -> Section;
    fn validate(&self, geometry: &Geometry) -> Result<(), ParamError>;
    fn build(&self, geometry: Geometry, endurance: u32) -> Result<Box<dyn Ftl>, FtlError>;
    fn set_background_gc(&mut self, on: bool);
}

impl<P: FtlParams> AnyParams for P {
    fn entry(&self) -> &'static FtlEntry {
        P::ENTRY
    }
    fn clone_box(&self) -> Box<dyn AnyParams> {
        Box::new(self.clone())
    }
    fn eq_any(&self, other: &dyn AnyParams) -> bool {
        other.as_any().downcast_ref::<P>() == Some(self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn apply(&mut self, section: &Section) -> Result<(), ParamError> {
        FtlParams::apply(self, section)
    }
    fn section(&self) -> Section {
        FtlParams::section(self)
    }
    fn validate(&self, geometry: &Geometry) -> Result<(), ParamError> {
        FtlParams::validate(self, geometry)
    }
    fn build(&self, geometry: Geometry, endurance: u32) -> Result<Box<dyn Ftl>, FtlError> {
        FtlParams::build(self, geometry, endurance)
    }
    fn set_background_gc(&mut self, on: bool) {
        FtlParams::set_background_gc(self, on)
    }
}

/// Which FTL, with its parameters: what a device description chooses. Comparing two compares
/// the FTL and every parameter.
pub struct FtlConfig(Box<dyn AnyParams>);

impl FtlConfig {
    /// The FTL whose parameters these are.
    pub fn new<P: FtlParams>(params: P) -> FtlConfig {
        FtlConfig(Box::new(params))
    }

    /// The FTL with default parameters, by its exact name.
    pub fn default_for(name: &str) -> Option<FtlConfig> {
        find(name).map(|e| (e.defaults)())
    }

    /// The FTL's registry entry.
    pub fn entry(&self) -> &'static FtlEntry {
        self.0.entry()
    }

    /// The name device files use.
    pub fn name(&self) -> &'static str {
        self.entry().name
    }

    /// The parameters, if they are `P` (the FTL whose `Params` `P` is).
    pub fn params<P: FtlParams>(&self) -> Option<&P> {
        self.0.as_any().downcast_ref()
    }

    /// The parameters to change, if they are `P`.
    pub fn params_mut<P: FtlParams>(&mut self) -> Option<&mut P> {
        self.0.as_any_mut().downcast_mut()
    }

    /// See [`FtlParams::apply`].
    pub fn apply(&mut self, section: &Section) -> Result<(), ParamError> {
        self.0.apply(section)
    }

    /// See [`FtlParams::section`].
    pub fn section(&self) -> Section {
        self.0.section()
    }

    /// See [`FtlParams::validate`].
    pub fn validate(&self, geometry: &Geometry) -> Result<(), ParamError> {
        self.0.validate(geometry)
    }

    /// See [`FtlParams::set_background_gc`].
    pub fn set_background_gc(&mut self, on: bool) {
        self.0.set_background_gc(on)
    }

    /// Builds the FTL over a fresh NAND array of `geometry` whose blocks survive `endurance`
    /// erases.
    pub fn build(&self, geometry: Geometry, endurance: u32) -> Result<Box<dyn Ftl>, FtlError> {
        self.0.build(geometry, endurance)
    }
}

impl Clone for FtlConfig {
    fn clone(&self) -> FtlConfig {
        FtlConfig(self.0.clone_box())
    }
}

impl PartialEq for FtlConfig {
    fn eq(&self, other: &FtlConfig) -> bool {
        self.0.eq_any(&*other.0)
    }
}

impl fmt::Debug for FtlConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple(self.name()).field(&self.0).finish()
    }
}

/// A flash translation layer over one NAND array.
///
/// Logical pages are numbered `0..logical_pages()`; each is one flash page of data. Operations
/// are appended to `ops` in an order the SSD can execute: see [`Dep`]. FTLs are `Send` because
/// the devices holding them are (see `storsim_core::Device`).
pub trait Ftl: Send {
    /// The FTL's name as used in device files (`page`, `dftl`, ...).
    fn name(&self) -> &'static str;

    /// Logical pages the host can address (physical pages minus over-provisioning and whatever
    /// the FTL reserves for itself).
    fn logical_pages(&self) -> u64;

    /// The NAND array as the FTL has left it.
    fn nand(&self) -> &NandArray;

    /// Reads logical page `lpn`. A page never written (or trimmed) needs no flash read.
    fn read(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError>;

    /// Writes logical page `lpn`, including any garbage collection or merge it forces first.
    fn write(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError>;

    /// A hint that logical page `lpn` is about to be read or written: the FTL may start
    /// loading the mapping state that access will touch, so that it finds it in the
    /// processor's caches. It changes nothing the FTL computes. The default does nothing.
    fn prefetch(&self, _lpn: u64) {}

    /// Whether the SSD should hand this FTL each host write whole, through
    /// [`Ftl::write_request`], instead of calling [`Ftl::write`] once per page.
    ///
    /// Most FTLs decide page by page, and the SSD schedules each page's operations as a call of
    /// its own, so that a [`Dep::All`] in one page's operations waits only for that page's work.
    /// An FTL whose algorithm is defined on whole requests says yes here: the hybrid-disk
    /// thesis' page-level FTL (`page-static`, Fig. 4.1) reads, erases and rewrites a block at
    /// most once per request, which it cannot know when it sees one page at a time (a request
    /// of `n` pages into a programmed block would erase that block `n` times). The default
    /// keeps the page-by-page calls, and with them every other FTL's operations and timing.
    fn takes_whole_requests(&self) -> bool {
        false
    }

    /// Writes the `pages` logical pages from `first_lpn` on as one host request, appending the
    /// operations of the whole request to `ops` as one call: their [`Dep`]s are relative to
    /// this list, and the SSD schedules it at once.
    ///
    /// The default writes page by page with [`Ftl::write`] and stops at the first error (the
    /// pages before it stay written). Its operations are what the per-page calls would emit,
    /// but scheduled as one list a [`Dep::All`] would also wait for the earlier pages' work,
    /// so the SSD only calls this when [`Ftl::takes_whole_requests`] says so; tests and tools
    /// that count operations may call it on any FTL.
    fn write_request(
        &mut self,
        first_lpn: u64,
        pages: u64,
        ops: &mut Vec<FlashOp>,
    ) -> Result<(), FtlError> {
        for lpn in first_lpn..first_lpn.saturating_add(pages) {
            self.write(lpn, ops)?;
        }
        Ok(())
    }

    /// Forgets logical page `lpn`: later reads need no flash access and its physical page is
    /// no longer valid. FTLs that cannot unmap cheaply may keep the data; reads of a trimmed
    /// page must still not return a location (see [`Ftl::lookup`]).
    fn trim(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError>;

    /// Where the current data of `lpn` lives, or `None` if it has none. The conformance suite
    /// checks this against a shadow map of every write.
    fn lookup(&self, lpn: u64) -> Option<Ppa>;

    /// Physical pages holding current data. With the FTL's own metadata pages excluded, this
    /// equals the number of logical pages that have data.
    fn valid_data_pages(&self) -> u64;

    /// Pins host writes to resource partitions (MQSim's per-flow `Channel_IDs`, `Chip_IDs`,
    /// `Die_IDs` and `Plane_IDs`): `partitions[i]` lists the planes, numbered across the device
    /// as [`storsim_flash::Geometry::plane_of`] numbers them, that partition `i`'s writes go to,
    /// striped over them in the device's striped order. Garbage collection before such a write
    /// works in the plane the write goes to, so a partition's collection stays in it too.
    /// [`Ftl::select_write_partition`] then says which partition the following writes belong
    /// to. The default refuses: only an FTL that places each page freely can do it.
    fn set_write_partitions(&mut self, _partitions: &[Vec<u32>]) -> Result<(), FtlError> {
        Err(FtlError::Rejected {
            reason: format!(
                "the `{}` FTL cannot pin writes to resource partitions (the page and dftl FTLs \
                 can)",
                self.name()
            ),
        })
    }

    /// The partition the host writes that follow belong to: an index into the list given to
    /// [`Ftl::set_write_partitions`], or `None` for the whole device (as before any partition
    /// was set). The default, for FTLs without partitions, does nothing.
    fn select_write_partition(&mut self, _partition: Option<usize>) {}

    /// Runs part of the flash as an SLC write cache (docs/models/slc-cache.md): host writes go
    /// into blocks programmed one bit a cell and are folded into native blocks in idle time
    /// ([`Ftl::idle`], [`Ftl::fold_slc_cache`]) or, by `cache.when_full`, before a write that
    /// finds the cache full. The SSD calls it once, on the FTL as built, before any write. The
    /// default refuses: only an FTL that places each page freely can do it.
    fn set_slc_cache(&mut self, _cache: &SlcCache) -> Result<(), FtlError> {
        Err(FtlError::Rejected {
            reason: format!(
                "the `{}` FTL has no SLC cache (the page and dftl FTLs have)",
                self.name()
            ),
        })
    }

    /// Folds part of the SLC cache: at most one block of each plane, oldest first. Returns
    /// whether it folded anything; preconditioning calls it until it does not, which leaves
    /// the cache empty, as a drive is after a long idle time. The default has no cache.
    fn fold_slc_cache(&mut self, _ops: &mut Vec<FlashOp>) -> Result<bool, FtlError> {
        Ok(false)
    }

    /// Work the FTL must do while the host keeps the device busy, beside the host's work
    /// rather than before it (folding SLC cache blocks whose space the filling logical space
    /// needs back). The SSD calls it after each host write and places what it appends without
    /// holding any request for it: the work delays the host only where it shares a die or a
    /// channel. Returns whether it appended anything. The default has none.
    fn housekeeping(&mut self, _ops: &mut Vec<FlashOp>) -> Result<bool, FtlError> {
        Ok(false)
    }

    /// Work the FTL wants to do while the device is idle (folding the SLC cache, background
    /// garbage collection). Appends at most one unit of work (for example one victim block)
    /// and returns whether it did anything; the SSD calls it again while the device stays
    /// idle.
    fn idle(&mut self, _ops: &mut Vec<FlashOp>) -> Result<bool, FtlError> {
        Ok(false)
    }

    /// FTL-specific counters (GC invocations, merges by kind, mapping-cache hits, ...), with
    /// units in their names, in a fixed order.
    fn counters(&self) -> Vec<DeviceCounter>;

    /// What each of [`Ftl::counters`] is, declared next to where the FTL counts it and listed
    /// in its registry entry ([`FtlEntry::counters`]); the SSD lists them under `ftl_` (and
    /// `precondition_ftl_`) among its own.
    fn counter_descriptors(&self) -> Vec<&'static CounterDescriptor> {
        find(self.name())
            .map(|entry| entry.counter_descriptors().collect())
            .unwrap_or_default()
    }

    /// Starts the counters that count events (merges, copies, cache hits: everything but the
    /// state gauges such as free blocks) from zero again. The SSD calls it when
    /// preconditioning ends, so that every `ftl_*` counter describes the measured run alone,
    /// as the SSD's own counters do.
    fn reset_counters(&mut self);

    /// Appends the values of [`Ftl::counters`], in the same order, to `values`: what the SSD's
    /// `Device::counter_values` reads at the end of every window of a time series. The default
    /// takes them from `counters()`.
    fn counter_values(&self, values: &mut Vec<f64>) {
        values.extend(self.counters().into_iter().map(|c| c.value));
    }
}
