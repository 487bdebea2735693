//! The `anand` FTL: M-Systems' ANAND as the hybrid-disk thesis simulates it (Konanki,
//! Figs. 4.4–4.5). Each virtual unit (a logical block) maps to a chain of physical units. A page
//! keeps its offset in every unit; a write goes to the first unit of the chain whose page at that
//! offset is still erased, or to a unit appended to the chain. So for every offset the units
//! holding a copy form a prefix of the chain, and the latest copy is the last of them. When no
//! unit can be appended, a chain is folded: the latest copy of every page moves into the chain's
//! last unit and the other units are erased. See docs/models/ftl-anand.md.

use crate::params::{self, field, fraction_below_one, Field, Key, ParamError};
use crate::rewrite::{erase_retires, rewrite_block};
use crate::{Cause, Dep, FlashOp, Ftl, FtlConfig, FtlEntry, FtlError, FtlParams, Keys};
use std::collections::{BTreeSet, VecDeque};
use storsim_core::{CounterDescriptor, DeviceCounter, Unit};
use storsim_flash::{BlockId, Geometry, NandArray, Ppa};

/// Parameters of the `anand` FTL.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Fraction of the physical blocks kept out of the logical space (0.0 ≤ x < 1.0) as free
    /// units for chains to grow into. At least one block is always kept: without it a fold could
    /// not free anything.
    pub over_provisioning: f64,
    /// Units a chain may have before a write that needs one more unit folds it instead
    /// (1 ..= 255). The thesis names such a threshold without giving a value; 4 lets every page
    /// of a unit be rewritten three times between folds.
    pub max_chain_length: u32,
    /// Find a page's latest copy the way Fig. 4.5 does, by reading the page at that offset in
    /// each unit of the chain in turn (one extra read, cause `mapping`, per older copy passed),
    /// instead of from a table in controller RAM. Applies to host reads and to writes looking
    /// for their unit.
    pub scan_chain: bool,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            over_provisioning: 0.07,
            max_chain_length: 4,
            scan_chain: true,
        }
    }
}

struct Anand {
    nand: NandArray,
    ppb: u32,
    /// Units of each virtual unit's chain, oldest first.
    chains: Vec<Vec<BlockId>>,
    /// Virtual units by chain length (index = length), to find the longest chain in O(log n).
    by_length: Vec<BTreeSet<u32>>,
    /// Erased units, in the order they became free: the oldest free unit is used first.
    free: VecDeque<BlockId>,
    /// Whether each logical page holds host data (trim clears it; the copy stays on flash until
    /// a fold or a rewrite drops it).
    valid: Vec<bool>,
    valid_pages: u64,
    params: Params,
    folds: u64,
    fold_copied_pages: u64,
    in_place_rewrites: u64,
    chain_scan_reads: u64,
    max_chain_length_seen: u32,
}

/// The `anand` FTL's registry entry.
pub const ENTRY: FtlEntry = FtlEntry {
    name: "anand",
    description: "M-Systems' ANAND (the hybrid-disk thesis, Figs. 4.4-4.5): a chain of units per \
                  logical block, folded when it grows too long",
    keys: Keys(&[&KEYS]),
    defaults: || FtlConfig::new(Params::default()),
    overwrites: true,
    counters: &[COUNTERS],
};

const KEYS: [Key; Params::FIELDS.len()] = params::keys(Params::FIELDS);

impl FtlParams for Params {
    const ENTRY: &'static FtlEntry = &ENTRY;

    /// The keys of `[ssd.anand]`, each with the parameter it states.
    const FIELDS: &'static [Field<Self>] = &[
        field!(over_provisioning: f64),
        field!(max_chain_length: u32),
        field!(scan_chain: bool),
    ];

    fn validate(&self, _geometry: &Geometry) -> Result<(), ParamError> {
        fraction_below_one("over_provisioning", self.over_provisioning)?;
        if !(1..=255).contains(&self.max_chain_length) {
            return Err(ParamError::key(
                "max_chain_length",
                format!("must be 1..=255 units, got {}", self.max_chain_length),
            ));
        }
        Ok(())
    }

    fn build(&self, geometry: Geometry, endurance: u32) -> Result<Box<dyn Ftl>, FtlError> {
        new(geometry, endurance, self)
    }
}

/// Builds the FTL over a fresh array.
pub fn new(geometry: Geometry, endurance: u32, params: &Params) -> Result<Box<dyn Ftl>, FtlError> {
    let reject = |reason: String| FtlError::Rejected {
        reason: format!("anand: {reason}"),
    };
    geometry.validate().map_err(|e| reject(e.to_string()))?;
    let op = params.over_provisioning;
    if !(0.0..1.0).contains(&op) {
        return Err(reject(format!(
            "over_provisioning {op} is outside 0.0 ..< 1.0"
        )));
    }
    if !(1..=255).contains(&params.max_chain_length) {
        return Err(reject(format!(
            "max_chain_length {} is outside 1 ..= 255",
            params.max_chain_length
        )));
    }
    let blocks = geometry.blocks();
    if blocks < 2 {
        return Err(reject(
            "needs at least two blocks (one spare unit to fold into)".into(),
        ));
    }
    let virtual_units = ((blocks as f64 * (1.0 - op)) as u32).clamp(1, blocks - 1);
    let logical = virtual_units as usize * geometry.pages_per_block as usize;
    Ok(Box::new(Anand {
        nand: NandArray::new(geometry, endurance),
        ppb: geometry.pages_per_block,
        chains: vec![Vec::new(); virtual_units as usize],
        by_length: vec![BTreeSet::new(); params.max_chain_length as usize + 1],
        free: (0..blocks).map(BlockId).collect(),
        valid: vec![false; logical],
        valid_pages: 0,
        params: params.clone(),
        folds: 0,
        fold_copied_pages: 0,
        in_place_rewrites: 0,
        chain_scan_reads: 0,
        max_chain_length_seen: 0,
    }))
}

impl Anand {
    fn split(&self, lpn: u64) -> Result<(usize, u32), FtlError> {
        let logical_pages = self.valid.len() as u64;
        if lpn >= logical_pages {
            return Err(FtlError::OutOfRange { lpn, logical_pages });
        }
        Ok((
            (lpn / self.ppb as u64) as usize,
            (lpn % self.ppb as u64) as u32,
        ))
    }

    fn ppa(&self, unit: BlockId, offset: u32) -> Ppa {
        Ppa(unit.0 * self.ppb + offset)
    }

    /// Index in `v`'s chain of the first unit whose page at `offset` is erased (the chain's
    /// length if there is none). The units before it hold copies of the page, the last of them
    /// the latest.
    fn first_erased(&self, v: usize, offset: u32) -> usize {
        let chain = &self.chains[v];
        chain
            .iter()
            .position(|&u| !self.nand.is_programmed(self.ppa(u, offset)))
            .unwrap_or(chain.len())
    }

    /// Appends the reads of Fig. 4.5's scan: the page at `offset` in each of the first `count`
    /// units of the chain, each read deciding whether to look at the next unit.
    fn scan(&mut self, v: usize, offset: u32, count: usize, ops: &mut Vec<FlashOp>) {
        if !self.params.scan_chain {
            return;
        }
        for i in 0..count {
            let ppa = self.ppa(self.chains[v][i], offset);
            let dep = if i == 0 { Dep::None } else { Dep::Previous };
            ops.push(FlashOp::read(ppa, Cause::Mapping, dep));
            self.chain_scan_reads += 1;
        }
    }

    fn set_chain(&mut self, v: usize, chain: Vec<BlockId>) {
        let old = self.chains[v].len();
        if old > 0 {
            self.by_length[old].remove(&(v as u32));
        }
        let new = chain.len();
        assert!(
            new <= self.params.max_chain_length as usize,
            "chain of {new} units"
        );
        if new > 0 {
            self.by_length[new].insert(v as u32);
        }
        self.max_chain_length_seen = self.max_chain_length_seen.max(new as u32);
        self.chains[v] = chain;
    }

    fn out_of_units(&self) -> FtlError {
        match self.nand.retired_blocks() {
            0 => FtlError::NoSpace,
            retired_blocks => FtlError::WornOut { retired_blocks },
        }
    }

    /// Folds `v`'s chain into its last unit: copies the latest copy of every live page that is
    /// not there yet, then erases the other units and returns them to the free pool (the last
    /// unit already has the newest data of every page it holds, and an erased page wherever an
    /// older unit has the latest copy).
    fn fold(&mut self, v: usize, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let chain = self.chains[v].clone();
        assert!(chain.len() >= 2, "folding a chain of {} units", chain.len());
        let last = *chain.last().expect("chain is not empty");
        for offset in 0..self.ppb {
            let lpn = v * self.ppb as usize + offset as usize;
            if !self.valid[lpn] {
                continue;
            }
            let holders = self.first_erased(v, offset);
            assert!(holders > 0, "live page {lpn} has no copy");
            if holders == chain.len() {
                continue;
            }
            let from = self.ppa(chain[holders - 1], offset);
            let to = self.ppa(last, offset);
            self.nand.check_read(from)?;
            ops.push(FlashOp::read(from, Cause::Merge, Dep::None));
            self.nand.program(to)?;
            ops.push(FlashOp::copy(from, to, Cause::Merge, Dep::Previous));
            self.fold_copied_pages += 1;
        }
        for &unit in &chain[..chain.len() - 1] {
            let retired = self.nand.erase(unit)?;
            ops.push(FlashOp::erase(self.ppa(unit, 0), Cause::Merge, Dep::All));
            if !retired {
                self.free.push_back(unit);
            }
        }
        self.set_chain(v, vec![last]);
        self.folds += 1;
        Ok(())
    }

    /// Folds the longest chain (the lowest-numbered virtual unit among equals) to free units.
    /// Returns whether there was a chain of two or more units to fold.
    fn fold_longest(&mut self, ops: &mut Vec<FlashOp>) -> Result<bool, FtlError> {
        let longest = (2..self.by_length.len())
            .rev()
            .find_map(|len| self.by_length[len].first().copied());
        match longest {
            Some(v) => {
                self.fold(v as usize, ops)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// A free unit, folding the longest chain first if the pool is empty.
    fn take_free(&mut self, ops: &mut Vec<FlashOp>) -> Result<BlockId, FtlError> {
        if self.free.is_empty() {
            self.fold_longest(ops)?;
        }
        self.free.pop_front().ok_or_else(|| self.out_of_units())
    }

    /// Fig. 4.4's branch for a chain of one unit that cannot grow: read the unit, erase it and
    /// program it back with the new page. If that erase would retire the unit, its pages move to
    /// a free unit instead.
    fn rewrite(&mut self, v: usize, offset: u32, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        assert_eq!(
            self.chains[v].len(),
            1,
            "in-place rewrite of a longer chain"
        );
        let unit = self.chains[v][0];
        let dst = if erase_retires(&self.nand, unit) {
            self.take_free(ops)?
        } else {
            unit
        };
        let base = v * self.ppb as usize;
        let valid = &self.valid;
        rewrite_block(
            &mut self.nand,
            ops,
            unit,
            dst,
            |page| valid[base + page as usize],
            offset,
            Cause::Merge,
        )?;
        self.set_chain(v, vec![dst]);
        self.in_place_rewrites += 1;
        Ok(())
    }

    /// Appends a free unit to `v`'s chain and programs the page at `offset` in it.
    fn grow(&mut self, v: usize, offset: u32, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let unit = self.free.pop_front().expect("caller checked the pool");
        let mut chain = self.chains[v].clone();
        chain.push(unit);
        self.set_chain(v, chain);
        let ppa = self.ppa(unit, offset);
        self.nand.program(ppa)?;
        ops.push(FlashOp::program(ppa, Cause::Host, Dep::All));
        Ok(())
    }
}

/// The FTL's counters, in the order `counters` lists them: the SSD reports them as `ftl_NAME`.
pub(crate) const COUNTERS: &[CounterDescriptor] = &[
    CounterDescriptor::new("folds", Unit::Count, "Chains folded."),
    CounterDescriptor::new(
        "fold_copied_pages",
        Unit::Pages,
        "Pages copied into last units by folds.",
    ),
    CounterDescriptor::new(
        "in_place_rewrites",
        Unit::Count,
        "Read-erase-write cycles of single-unit chains.",
    ),
    CounterDescriptor::new(
        "chain_scan_reads",
        Unit::Count,
        "Mapping reads of the chain walk.",
    ),
    CounterDescriptor::new(
        "max_chain_length_seen",
        Unit::Count,
        "Longest chain so far, in units.",
    ),
    CounterDescriptor::new("free_units", Unit::Count, "Units in the free pool now."),
];

impl Ftl for Anand {
    fn name(&self) -> &'static str {
        "anand"
    }

    fn logical_pages(&self) -> u64 {
        self.valid.len() as u64
    }

    fn nand(&self) -> &NandArray {
        &self.nand
    }

    fn read(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let (v, offset) = self.split(lpn)?;
        if !self.valid[lpn as usize] {
            return Ok(());
        }
        let holders = self.first_erased(v, offset);
        assert!(holders > 0, "live page {lpn} has no copy");
        self.scan(v, offset, holders - 1, ops);
        let ppa = self.ppa(self.chains[v][holders - 1], offset);
        self.nand.check_read(ppa)?;
        let dep = if holders > 1 && self.params.scan_chain {
            Dep::Previous
        } else {
            Dep::None
        };
        ops.push(FlashOp::read(ppa, Cause::Host, dep));
        Ok(())
    }

    fn write(&mut self, lpn: u64, ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        let (v, offset) = self.split(lpn)?;
        if self.chains[v].is_empty() {
            // Fig. 4.4: a virtual unit without a chain gets a free unit, folding the longest
            // chain first when the pool is empty.
            let unit = self.take_free(ops)?;
            self.set_chain(v, vec![unit]);
        }
        let slot = self.first_erased(v, offset);
        self.scan(v, offset, slot, ops);
        let len = self.chains[v].len();
        let max = self.params.max_chain_length as usize;
        if slot < len {
            let ppa = self.ppa(self.chains[v][slot], offset);
            self.nand.program(ppa)?;
            ops.push(FlashOp::program(ppa, Cause::Host, Dep::All));
        } else if !self.free.is_empty() && len < max {
            self.grow(v, offset, ops)?;
        } else if len == 1 {
            self.rewrite(v, offset, ops)?;
        } else {
            // Fold this chain, then write the page into a unit appended to what is left: the
            // fold kept the old copy at this offset in the last unit, and freed at least one
            // unit unless every erase retired its block.
            self.fold(v, ops)?;
            if !self.free.is_empty() && max > 1 {
                self.grow(v, offset, ops)?;
            } else {
                self.rewrite(v, offset, ops)?;
            }
        }
        if !self.valid[lpn as usize] {
            self.valid[lpn as usize] = true;
            self.valid_pages += 1;
        }
        Ok(())
    }

    fn trim(&mut self, lpn: u64, _ops: &mut Vec<FlashOp>) -> Result<(), FtlError> {
        self.split(lpn)?;
        if self.valid[lpn as usize] {
            self.valid[lpn as usize] = false;
            self.valid_pages -= 1;
        }
        Ok(())
    }

    fn lookup(&self, lpn: u64) -> Option<Ppa> {
        let (v, offset) = self.split(lpn).ok()?;
        if !self.valid[lpn as usize] {
            return None;
        }
        let holders = self.first_erased(v, offset);
        (holders > 0).then(|| self.ppa(self.chains[v][holders - 1], offset))
    }

    fn valid_data_pages(&self) -> u64 {
        self.valid_pages
    }

    fn reset_counters(&mut self) {
        self.folds = 0;
        self.fold_copied_pages = 0;
        self.in_place_rewrites = 0;
        self.chain_scan_reads = 0;
        self.max_chain_length_seen = 0;
    }

    fn counters(&self) -> Vec<DeviceCounter> {
        vec![
            DeviceCounter::new("folds", self.folds as f64),
            DeviceCounter::new("fold_copied_pages", self.fold_copied_pages as f64),
            DeviceCounter::new("in_place_rewrites", self.in_place_rewrites as f64),
            DeviceCounter::new("chain_scan_reads", self.chain_scan_reads as f64),
            DeviceCounter::new("max_chain_length_seen", self.max_chain_length_seen as f64),
            DeviceCounter::new("free_units", self.free.len() as f64),
        ]
    }
}
