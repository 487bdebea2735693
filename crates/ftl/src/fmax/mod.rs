//! The `fmax` FTL: M-Systems' FMAX as the hybrid-disk thesis simulates it (Konanki,
//! Figs. 4.6–4.7). Each virtual unit (a logical block) has a primary unit, where a page sits at
//! its own offset, and at most one replacement unit, where updates go to any erased page: the
//! search starts at the page's offset and wraps around, and the page's offset is kept with the
//! copy (the spare area on a real device, a table here). When the replacement unit is full, the
//! chain folds into a new primary unit. Chains never grow past two units, which bounds a fold's
//! cost. See docs/models/ftl-fmax.md.

use crate::params::{self, field, fraction_below_one, Field, Key, ParamError};
use crate::rewrite::{erase_retires, rewrite_block};
use crate::{Cause, Dep, FlashOp, Ftl, FtlConfig, FtlEntry, FtlError, FtlParams, Keys};
use std::collections::{BTreeSet, VecDeque};
use storsim_core::{CounterDescriptor, DeviceCounter, Unit};
use storsim_flash::{BlockId, Geometry, NandArray, Ppa};

/// Parameters of the `fmax` FTL.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Fraction of the physical blocks kept out of the logical space (0.0 ≤ x < 1.0) as free
    /// units for replacement units and folds. At least one block is always kept.
    pub over_provisioning: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            over_provisioning: 0.07,
        }
    }
}

/// Where a logical page's latest copy is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Location {
    /// No host data (never written, or trimmed).
    Nowhere,
    /// At its own offset in the primary unit.
    Primary,
    /// At this page of the replacement unit.
    Replacement(u32),
}

struct Fmax {
    nand: NandArray,
    ppb: u32,
    primary: Vec<Option<BlockId>>,
    replacement: Vec<Option<BlockId>>,
    /// Virtual units that have a replacement unit: Fig. 4.6 folds the first of them.
    with_replacement: BTreeSet<u32>,
    /// Erased units, in the order they became free: the oldest free unit is used first.
    free: VecDeque<BlockId>,
    location: Vec<Location>,
    valid_pages: u64,
    folds: u64,
    fold_copied_pages: u64,
    in_place_rewrites: u64,
    replacement_units: u64,
}

/// The `fmax` FTL's registry entry.
pub const ENTRY: FtlEntry = FtlEntry {
    name: "fmax",
    description:
        "M-Systems' FMAX (the hybrid-disk thesis, Figs. 4.6-4.7): a primary and at most one \
         replacement unit per logical block",
    keys: Keys(&[&KEYS]),
    defaults: || FtlConfig::new(Params::default()),
    overwrites: true,
    counters: &[COUNTERS],
};

const KEYS: [Key; Params::FIELDS.len()] = params::keys(Params::FIELDS);

impl FtlParams for Params {
    const ENTRY: &'static FtlEntry = &ENTRY;

    /// The keys of `[ssd.fmax]`, each with the parameter it states.
    const FIELDS: &'static [Field<Self>] = &[field!(over_provisioning: f64)];

    fn validate(&self, _geometry: &Geometry) -> Result<(), ParamError> {
        fraction_below_one("over_provisioning", self.over_provisioning)
    }

    fn build(&self, geometry: Geometry, endurance: u32) -> Result<Box<dyn Ftl>, FtlError> {
        new(geometry, endurance, self)
    }
}

/// Builds the FTL over a fresh array.
pub fn new(geometry: Geometry, endurance: u32, params: &Params) -> Result<Box<dyn Ftl>, FtlError> {
    let reject = |reason: String| FtlError::Rejected {
        reason: format!("fmax: {reason}"),
    };
    geometry.validate().map_err(|e| reject(e.to_string()))?;
    let op = params.over_provisioning;
    if !(0.0..1.0).contains(&op) {
        return Err(reject(format!(
            "over_provisioning {op} is outside 0.0 ..< 1.0"
        )));
    }
    let blocks = geometry.blocks();
    if blocks < 2 {
        return Err(reject(
            "needs at least two blocks (one spare unit to fold into)".into(),
        ));
    }
    let virtual_units = ((blocks as f64 * (1.0 - op)) as u32).clamp(1, blocks - 1) as usize;
    Ok(Box::new(Fmax {
        nand: NandArray::new(geometry, endurance),
        ppb: geometry.pages_per_block,
        primary: vec![None; virtual_units],
        replacement: vec![None; virtual_units],
        with_replacement: BTreeSet::new(),
        free: (0..blocks).map(BlockId).collect(),
        location: vec![Location::Nowhere; virtual_units * geometry.pages_per_block as usize],
        valid_pages: 0,
        folds: 0,
        fold_copied_pages: 0,
        in_place_rewrites: 0,
        replacement_units: 0,
    }))
}

impl Fmax {
    fn split(&self, lpn: u64) -> Result<(usize, u32), FtlError> {
        let logical_pages = self.location.len() as u64;
        if lpn >= logical_pages {
            return Err(FtlError::OutOfRange { lpn, logical_pages });
        }
        Ok((
            (lpn / self.ppb as u64) as usize,
            (lpn % self.ppb as u64) as u32,
        ))
    }

    fn ppa(&self, unit: BlockId, page: u32) -> Ppa {
        Ppa(unit.0 * self.ppb + page)
    }

    /// The physical page of a location in virtual unit `v`, page `offset`.
    fn place(&self, v: usize, offset: u32, at: Location) -> Option<Ppa> {
        match at {
            Location::Nowhere => None,
            Location::Primary => Some(self.ppa(self.primary[v]?, offset)),
            Location::Replacement(page) => Some(self.ppa(self.replacement[v]?, page)),
        }
    }

    fn out_of_units(&self) -> FtlError {
        match self.nand.retired_blocks() {
            0 => FtlError::NoSpace,
            retired_blocks => FtlError::WornOut { retired_blocks },
        }
    }

    /// Folds `v`'s primary and replacement units into a new primary unit: the latest copy of
    /// every live page moves to its own offset, and `pending` (a page the host is writing, if
    /// any) is programmed there instead of copied. Then both old units are erased.
    fn fold(
        &mut self,
        v: usize,
        pending: Option<u32>,
        ops: &mut Vec<FlashOp>,
    ) -> Result<(), FtlError> {
        let old_primary = self.primary[v].expect("a folded chain has a primary unit");
        let old_replacement = self.replacement[v].expect("a folded chain has a replacement");
        let Some(new) = self.free.pop_front() else {
            return Err(self.out_of_units());
        };
        let base = v * self.ppb as usize;
        for offset in 0..self.ppb {
            let to = self.ppa(new, offset);
            if pending == Some(offset) {
                self.nand.program(to)?;
                ops.push(FlashOp::program(to, Cause::Host, Dep::Previous));
            } else if let Some(from) = self.place(v, offset, self.location[base + offset as usize])
            {
                self.nand.check_read(from)?;
                ops.push(FlashOp::read(from, Cause::Merge, Dep::None));
                self.nand.program(to)?;
                ops.push(FlashOp::copy(from, to, Cause::Merge, Dep::Previous));
                self.fold_copied_pages += 1;
            } else {
                continue;
            }
            self.location[base + offset as usize] = Location::Primary;
        }
        for unit in [old_primary, old_replacement] {
            let retired = self.nand.erase(unit)?;
            ops.push(FlashOp::erase(self.ppa(unit, 0), Cause::Merge, Dep::All));
            if !retired {
                self.free.push_back(unit);
            }
        }
        self.primary[v] = Some(new);
        self.replacement[v] = None;
        self.with_replacement.remove(&(v as u32));
        self.folds += 1;
        Ok(())
    }

    /// Folds the lowest-numbered virtual unit that has a replacement unit, if there is one.
    fn fold_first(&mut self, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        match self.with_replacement.first().copied() {
            Some(v) => self.fold(v as usize, None, ops),
            None => Ok(()),
        }
    }

    /// Fig. 4.6's branch for a chain without a replacement unit when fewer than two units are
    /// free: read the primary unit, erase it and program it back with the new page. If that erase
    /// would retire the unit, its pages move to a free unit instead.
    fn rewrite(&mut self, v: usize, offset: u32, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let unit = self.primary[v].expect("rewritten chain has a primary unit");
        assert!(
            self.replacement[v].is_none(),
            "in-place rewrite of a chain of two"
        );
        let dst = if erase_retires(&self.nand, unit) {
            if self.free.is_empty() {
                self.fold_first(ops)?;
            }
            self.free.pop_front().ok_or_else(|| self.out_of_units())?
        } else {
            unit
        };
        let base = v * self.ppb as usize;
        let location = &self.location;
        rewrite_block(
            &mut self.nand,
            ops,
            unit,
            dst,
            |page| location[base + page as usize] == Location::Primary,
            offset,
            Cause::Merge,
        )?;
        self.primary[v] = Some(dst);
        self.in_place_rewrites += 1;
        Ok(())
    }
}

/// The FTL's counters, in the order `counters` lists them: the SSD reports them as `ftl_NAME`.
pub(crate) const COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new(
        "folds",
        Unit::Count,
        "Chains folded into a new primary unit.",
    ),
    CounterDescriptor::new("fold_copied_pages", Unit::Pages, "Pages copied by folds."),
    CounterDescriptor::new(
        "in_place_rewrites",
        Unit::Count,
        "Read-erase-write cycles of primary units.",
    ),
    CounterDescriptor::new(
        "replacement_units",
        Unit::Count,
        "Replacement units assigned.",
    ),
    CounterDescriptor::new("free_units", Unit::Count, "Units in the free pool now."),
];

impl Ftl for Fmax {
    fn name(&self) -> &'static str {
        "fmax"
    }

    fn logical_pages(&self) -> u64 {
        self.location.len() as u64
    }

    fn nand(&self) -> &NandArray {
        &self.nand
    }

    fn read(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let (v, offset) = self.split(lpn)?;
        // Fig. 4.7: the replacement unit first, then the primary unit; the location table
        // already says which holds the latest copy.
        if let Some(ppa) = self.place(v, offset, self.location[lpn as usize]) {
            self.nand.check_read(ppa)?;
            ops.push(FlashOp::read(ppa, Cause::Host, Dep::None));
        }
        Ok(())
    }

    fn write(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let (v, offset) = self.split(lpn)?;
        // A fold below may already record the page in its new place, so note now whether the
        // page had data.
        let had_data = self.location[lpn as usize] != Location::Nowhere;
        if self.primary[v].is_none() {
            // Fig. 4.6: keep a unit in reserve for folds by folding a chain before the last
            // free unit would go to a new primary.
            if self.free.len() < 2 {
                self.fold_first(ops)?;
            }
            let unit = self.free.pop_front().ok_or_else(|| self.out_of_units())?;
            self.primary[v] = Some(unit);
        }
        let primary = self.primary[v].expect("assigned above");
        let home = self.ppa(primary, offset);
        let at = if !self.nand.is_programmed(home) {
            self.nand.program(home)?;
            ops.push(FlashOp::program(home, Cause::Host, Dep::All));
            Location::Primary
        } else if let Some(unit) = self.replacement[v] {
            let ppb = self.ppb;
            let page = (0..ppb)
                .map(|i| (offset + i) % ppb)
                .find(|&page| !self.nand.is_programmed(self.ppa(unit, page)));
            match page {
                Some(page) => {
                    let ppa = self.ppa(unit, page);
                    self.nand.program(ppa)?;
                    ops.push(FlashOp::program(ppa, Cause::Host, Dep::All));
                    Location::Replacement(page)
                }
                None => {
                    self.fold(v, Some(offset), ops)?;
                    Location::Primary
                }
            }
        } else if self.free.len() < 2 {
            self.rewrite(v, offset, ops)?;
            Location::Primary
        } else {
            let unit = self.free.pop_front().expect("two units are free");
            self.replacement[v] = Some(unit);
            self.with_replacement.insert(v as u32);
            self.replacement_units += 1;
            let ppa = self.ppa(unit, offset);
            self.nand.program(ppa)?;
            ops.push(FlashOp::program(ppa, Cause::Host, Dep::All));
            Location::Replacement(offset)
        };
        if !had_data {
            self.valid_pages += 1;
        }
        self.location[lpn as usize] = at;
        Ok(())
    }

    fn trim(&mut self, lpn: u64, _ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        self.split(lpn)?;
        if self.location[lpn as usize] != Location::Nowhere {
            self.location[lpn as usize] = Location::Nowhere;
            self.valid_pages -= 1;
        }
        Ok(())
    }

    fn lookup(&self, lpn: u64) -> Option<Ppa> {
        let (v, offset) = self.split(lpn).ok()?;
        self.place(v, offset, self.location[lpn as usize])
    }

    fn valid_data_pages(&self) -> u64 {
        self.valid_pages
    }

    fn reset_counters(&mut self) {
        self.folds = 0;
        self.fold_copied_pages = 0;
        self.in_place_rewrites = 0;
        self.replacement_units = 0;
    }

    fn counters(&self) -> Vec<DeviceCounter> {
        vec![
            DeviceCounter::new("folds", self.folds as f64),
            DeviceCounter::new("fold_copied_pages", self.fold_copied_pages as f64),
            DeviceCounter::new("in_place_rewrites", self.in_place_rewrites as f64),
            DeviceCounter::new("replacement_units", self.replacement_units as f64),
            DeviceCounter::new("free_units", self.free.len() as f64),
        ]
    }
}
