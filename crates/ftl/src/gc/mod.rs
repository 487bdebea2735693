//! Garbage-collection victim selection, shared by the page-mapped FTLs (`page` and `dftl`).
//!
//! A *candidate* is a full (sealed) block that holds at least one invalid page: collecting it
//! frees at least one page. Blocks that are fully valid are never candidates, so no policy can
//! pick a block whose collection gains nothing. Candidates are kept per plane because the
//! page-mapped FTLs collect garbage plane by plane (see docs/models/gc.md).
//!
//! Each policy keeps only the index it needs:
//! - greedy: buckets of blocks by valid-page count, so a victim is found in O(pages per block)
//!   at worst and usually O(1), independent of the number of blocks;
//! - random, random-threshold, cost-benefit: a dense array of candidates (O(1) sampling, O(n)
//!   cost-benefit scan);
//! - FIFO: candidates ordered by the sequence number of their sealing (O(log n));
//! - d-choices: the dense array, plus the greedy buckets for a fraction of 1.0.

use crate::params::{fraction_up_to_one, Key, Kind, ParamError, Section, Value};
use std::collections::BTreeSet;
use storsim_core::Prng;

/// How the garbage collector picks a victim among a plane's candidates.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum GcPolicy {
    /// The block with the fewest valid pages (least copying now).
    #[default]
    Greedy,
    /// A uniformly random candidate.
    Random,
    /// The candidate that was filled first (a circular log that skips fully valid blocks).
    Fifo,
    /// The largest `age × (1 − u) / 2u`, with `u` the valid fraction and `age` the host writes
    /// since the block last changed (Kawaguchi et al.): old, cold blocks go first even when
    /// they hold a little more valid data.
    CostBenefit,
    /// FlashSim's "fraction of blocks searched": `ceil(fraction × candidates)` candidates are
    /// drawn at random (with replacement) and the one with the fewest valid pages wins. 0.0 is
    /// exactly [`GcPolicy::Random`] (one draw), 1.0 is exactly [`GcPolicy::Greedy`] (a full
    /// search).
    DChoices { fraction_searched: f64 },
    /// A random candidate holding at least `floor(min_invalid_fraction × pages per block)`
    /// invalid pages: candidates are drawn until one does, at most as many times as the plane
    /// has candidates, and the last draw stands when none did (MQSim's RANDOM_PP, whose
    /// threshold is its flows' highest initial occupancy).
    RandomThreshold { min_invalid_fraction: f64 },
}

/// Every victim policy, in the order docs/models/gc.md lists them: one entry each. The FTL
/// sections that take a policy (the page-mapped FTLs') read it through [`KEYS`] and
/// [`apply`], so no reader of device files names a policy.
pub const POLICIES: &[GcEntry] = &[
    GcEntry {
        name: "greedy",
        description: "the block with the fewest valid pages (least copying now)",
        keys: &[],
        read: |_, _| Ok(GcPolicy::Greedy),
        write: |_, _| {},
        validate: |_| Ok(()),
    },
    GcEntry {
        name: "random",
        description: "a uniformly random candidate",
        keys: &[],
        read: |_, _| Ok(GcPolicy::Random),
        write: |_, _| {},
        validate: |_| Ok(()),
    },
    GcEntry {
        name: "fifo",
        description: "the candidate filled first (a circular log skipping fully valid blocks)",
        keys: &[],
        read: |_, _| Ok(GcPolicy::Fifo),
        write: |_, _| {},
        validate: |_| Ok(()),
    },
    GcEntry {
        name: "cost-benefit",
        description: "the largest age × (1 − u) / 2u (Kawaguchi et al.): old, cold blocks first",
        keys: &[],
        read: |_, _| Ok(GcPolicy::CostBenefit),
        write: |_, _| {},
        validate: |_| Ok(()),
    },
    GcEntry {
        name: "d-choices",
        description: "the fewest valid pages among a random sample of a fraction of the \
                      candidates (FlashSim's fraction of blocks searched)",
        keys: &[FRACTION_SEARCHED],
        read: |section, current| {
            let current = match *current {
                GcPolicy::DChoices { fraction_searched } => Some(fraction_searched),
                _ => None,
            };
            let fraction_searched = section
                .scalar(FRACTION_SEARCHED.name)
                .or(current)
                .ok_or_else(|| {
                    ParamError::key(
                        FRACTION_SEARCHED.name,
                        "is required with gc_policy = \"d-choices\" (the share of a plane's \
                         candidates searched, 0 to 1)"
                            .into(),
                    )
                })?;
            Ok(GcPolicy::DChoices { fraction_searched })
        },
        write: |policy, section| {
            if let GcPolicy::DChoices { fraction_searched } = *policy {
                section.insert(FRACTION_SEARCHED.name, Value::F64(fraction_searched));
            }
        },
        validate: |policy| match *policy {
            GcPolicy::DChoices { fraction_searched } => {
                fraction_up_to_one(FRACTION_SEARCHED.name, fraction_searched)
            }
            _ => Ok(()),
        },
    },
    GcEntry {
        name: "random-threshold",
        description: "a random candidate with at least a share of its pages invalid, drawn again \
                      up to as many times as there are candidates (MQSim's RANDOM_PP)",
        keys: &[MIN_INVALID_FRACTION],
        read: |section, current| {
            let current = match *current {
                GcPolicy::RandomThreshold {
                    min_invalid_fraction,
                } => Some(min_invalid_fraction),
                _ => None,
            };
            let min_invalid_fraction = section
                .scalar(MIN_INVALID_FRACTION.name)
                .or(current)
                .ok_or_else(|| {
                    ParamError::key(
                        MIN_INVALID_FRACTION.name,
                        "is required with gc_policy = \"random-threshold\" (the share of a \
                         block's pages that must be invalid, 0 to 1)"
                            .into(),
                    )
                })?;
            Ok(GcPolicy::RandomThreshold {
                min_invalid_fraction,
            })
        },
        write: |policy, section| {
            if let GcPolicy::RandomThreshold {
                min_invalid_fraction,
            } = *policy
            {
                section.insert(MIN_INVALID_FRACTION.name, Value::F64(min_invalid_fraction));
            }
        },
        validate: |policy| match *policy {
            GcPolicy::RandomThreshold {
                min_invalid_fraction,
            } => fraction_up_to_one(MIN_INVALID_FRACTION.name, min_invalid_fraction),
            _ => Ok(()),
        },
    },
];

/// random-threshold's share of a block's pages that must be invalid.
const MIN_INVALID_FRACTION: Key = Key::new("gc_min_invalid_fraction", Kind::F64);

/// d-choices' share of the candidates searched.
const FRACTION_SEARCHED: Key = Key::new("gc_fraction_searched", Kind::F64);

/// The keys an FTL section that takes a victim policy gains: `gc_policy` and every policy's
/// own keys.
pub const KEYS: &[Key] = &[
    Key::new("gc_policy", Kind::Name(&GcPolicy::NAMES)),
    FRACTION_SEARCHED,
    MIN_INVALID_FRACTION,
];

/// One victim policy: its name in files, what it does, and its keys.
#[derive(Debug)]
pub struct GcEntry {
    /// The name files use (`gc_policy = "NAME"`).
    pub name: &'static str,
    /// One line for listings.
    pub description: &'static str,
    /// Keys of the FTL's section that belong to this policy only.
    pub keys: &'static [Key],
    /// The policy from the section; `current` is the policy before it, whose parameters are
    /// kept where the section leaves them out (when it is this policy too).
    pub read: fn(&Section, &GcPolicy) -> Result<GcPolicy, ParamError>,
    /// Adds the policy's own keys to a section.
    pub write: fn(&GcPolicy, &mut Section),
    /// Checks the policy's parameters, naming the key.
    pub validate: fn(&GcPolicy) -> Result<(), ParamError>,
}

/// The policy after an FTL section's keys: `gc_policy` picks the entry (or the current policy
/// stays), and a key of another policy is an error, since it would be ignored silently.
pub fn apply(section: &Section, policy: &mut GcPolicy) -> Result<(), ParamError> {
    let name = section.name(KEYS[0].name).unwrap_or(policy.name());
    let entry = entry(name);
    if let Some((owner, key)) = POLICIES
        .iter()
        .filter(|e| e.name != entry.name)
        .flat_map(|e| e.keys.iter().map(move |k| (e.name, k.name)))
        .find(|(_, key)| section.get(key).is_some())
    {
        return Err(ParamError::key(
            key,
            format!("applies to gc_policy = \"{owner}\" only"),
        ));
    }
    *policy = (entry.read)(section, policy)?;
    Ok(())
}

/// Adds `gc_policy` and the policy's own keys to a section.
pub fn write(policy: &GcPolicy, section: &mut Section) {
    section.insert(KEYS[0].name, Value::Name(policy.name()));
    (entry(policy.name()).write)(policy, section);
}

/// Checks the policy's parameters, naming the key.
pub fn validate(policy: &GcPolicy) -> Result<(), ParamError> {
    (entry(policy.name()).validate)(policy)
}

/// The entry of a policy name taken from [`GcPolicy::NAMES`], which the tests keep equal to
/// the entries' names.
fn entry(name: &str) -> &'static GcEntry {
    POLICIES
        .iter()
        .find(|e| e.name == name)
        .expect("every policy name has an entry")
}

impl GcPolicy {
    /// The names device files use, in the order of [`POLICIES`].
    pub const NAMES: [&'static str; 6] = [
        "greedy",
        "random",
        "fifo",
        "cost-benefit",
        "d-choices",
        "random-threshold",
    ];

    pub fn name(&self) -> &'static str {
        match self {
            GcPolicy::Greedy => Self::NAMES[0],
            GcPolicy::Random => Self::NAMES[1],
            GcPolicy::Fifo => Self::NAMES[2],
            GcPolicy::CostBenefit => Self::NAMES[3],
            GcPolicy::DChoices { .. } => Self::NAMES[4],
            GcPolicy::RandomThreshold { .. } => Self::NAMES[5],
        }
    }

    /// Whether the policy's parameters make sense; the error names the problem.
    pub fn validate(&self) -> Result<(), String> {
        validate(self).map_err(|e| format!("gc policy {}: {e}", self.name()))
    }

    fn uses_buckets(&self) -> bool {
        matches!(self, GcPolicy::Greedy | GcPolicy::DChoices { .. })
    }
    fn uses_dense(&self) -> bool {
        matches!(
            self,
            GcPolicy::Random
                | GcPolicy::CostBenefit
                | GcPolicy::DChoices { .. }
                | GcPolicy::RandomThreshold { .. }
        )
    }
}

const NONE: u32 = u32::MAX;

/// What victim selection reads about a block.
pub(crate) trait BlockInfo {
    /// Pages of block `b` holding current data.
    fn valid(&self, b: u32) -> u32;
    /// Host-write count when block `b` last changed.
    fn modified(&self, b: u32) -> u64;
}

/// Greedy's index: per plane, one intrusive doubly linked list of blocks per valid count.
struct Buckets {
    /// `plane * pages_per_block + valid` → first block of that list.
    heads: Vec<u32>,
    /// Per block, the next and the previous block of its list, side by side: unlinking a
    /// block reads both, and its neighbours' entries, at random places in a large table.
    links: Vec<Link>,
    /// Per plane, no list below this valid count is non-empty.
    min_hint: Vec<u32>,
}

#[derive(Clone, Copy, Debug)]
struct Link {
    next: u32,
    prev: u32,
}

/// Random and cost-benefit's index: per plane, the candidates in an array (swap-remove).
struct Dense {
    members: Vec<Vec<u32>>,
    pos: Vec<u32>,
}

/// FIFO's index: per plane, candidates ordered by when they were sealed.
struct Fifo {
    order: Vec<BTreeSet<(u64, u32)>>,
    sealed_seq: Vec<u64>,
}

/// The candidates of every plane, indexed for one policy.
pub(crate) struct VictimIndex {
    policy: GcPolicy,
    pages_per_block: u32,
    blocks_per_plane: u32,
    buckets: Option<Buckets>,
    dense: Option<Dense>,
    fifo: Option<Fifo>,
}

impl VictimIndex {
    pub(crate) fn new(policy: GcPolicy, planes: u32, blocks_per_plane: u32, ppb: u32) -> Self {
        let blocks = (planes * blocks_per_plane) as usize;
        let buckets = policy.uses_buckets().then(|| Buckets {
            heads: vec![NONE; planes as usize * ppb as usize],
            links: vec![
                Link {
                    next: NONE,
                    prev: NONE
                };
                blocks
            ],
            min_hint: vec![ppb; planes as usize],
        });
        let dense = policy.uses_dense().then(|| Dense {
            members: vec![Vec::new(); planes as usize],
            pos: vec![NONE; blocks],
        });
        let fifo = matches!(policy, GcPolicy::Fifo).then(|| Fifo {
            order: vec![BTreeSet::new(); planes as usize],
            sealed_seq: vec![0; blocks],
        });
        VictimIndex {
            policy,
            pages_per_block: ppb,
            blocks_per_plane,
            buckets,
            dense,
            fifo,
        }
    }

    fn plane(&self, block: u32) -> u32 {
        block / self.blocks_per_plane
    }

    /// A block was filled (sealed) with `valid` valid pages; `seq` orders sealings.
    pub(crate) fn sealed(&mut self, block: u32, valid: u32, seq: u64) {
        if let Some(f) = &mut self.fifo {
            f.sealed_seq[block as usize] = seq;
        }
        if valid < self.pages_per_block {
            self.insert(block, valid);
        }
    }

    /// A page of sealed block `block` became invalid; it now has `valid` valid pages.
    #[inline]
    pub(crate) fn invalidated(&mut self, block: u32, valid: u32) {
        if valid + 1 == self.pages_per_block {
            self.insert(block, valid);
            return;
        }
        let plane = self.plane(block);
        let ppb = self.pages_per_block;
        if let Some(b) = &mut self.buckets {
            b.unlink(plane, ppb, block, valid + 1);
            b.link(plane, ppb, block, valid);
        }
    }

    /// Reads what [`VictimIndex::invalidated`] on `block` will read, and returns a value
    /// made from it: a caller about to invalidate many blocks calls this for each first, so
    /// that their cache misses overlap (see `Core::apply_invalidations`).
    #[inline]
    pub(crate) fn touch(&self, block: u32) -> u32 {
        let Some(b) = &self.buckets else {
            return 0;
        };
        let Link { next, prev } = b.links[block as usize];
        let mut seen = next ^ prev;
        if next != NONE {
            seen ^= b.links[next as usize].prev;
        }
        if prev != NONE {
            seen ^= b.links[prev as usize].next;
        }
        seen
    }

    /// Sealed block `block` (with `valid` valid pages) leaves the index: it is being collected
    /// or moved by wear levelling.
    pub(crate) fn remove(&mut self, block: u32, valid: u32) {
        if valid >= self.pages_per_block {
            return;
        }
        let plane = self.plane(block);
        let ppb = self.pages_per_block;
        if let Some(b) = &mut self.buckets {
            b.unlink(plane, ppb, block, valid);
        }
        if let Some(d) = &mut self.dense {
            let list = &mut d.members[plane as usize];
            let at = d.pos[block as usize] as usize;
            assert!(
                list[at] == block,
                "victim index out of step for block {block}"
            );
            let last = *list.last().expect("a member implies a non-empty list");
            list.swap_remove(at);
            if last != block {
                d.pos[last as usize] = at as u32;
            }
            d.pos[block as usize] = NONE;
        }
        if let Some(f) = &mut self.fifo {
            let removed = f.order[plane as usize].remove(&(f.sealed_seq[block as usize], block));
            assert!(removed, "FIFO index out of step for block {block}");
        }
    }

    fn insert(&mut self, block: u32, valid: u32) {
        let plane = self.plane(block);
        let ppb = self.pages_per_block;
        if let Some(b) = &mut self.buckets {
            b.link(plane, ppb, block, valid);
        }
        if let Some(d) = &mut self.dense {
            let list = &mut d.members[plane as usize];
            d.pos[block as usize] = list.len() as u32;
            list.push(block);
        }
        if let Some(f) = &mut self.fifo {
            f.order[plane as usize].insert((f.sealed_seq[block as usize], block));
        }
    }

    /// The victim the policy picks in `plane`, or `None` when the plane has no candidate.
    /// `now` is the current host-write count.
    pub(crate) fn select<I: BlockInfo + ?Sized>(
        &mut self,
        plane: u32,
        info: &I,
        now: u64,
        rng: &mut Prng,
    ) -> Option<u32> {
        match self.policy {
            GcPolicy::Greedy => self.greedy(plane),
            GcPolicy::DChoices { fraction_searched } if fraction_searched >= 1.0 => {
                self.greedy(plane)
            }
            GcPolicy::Random => {
                let list = &self.dense.as_ref()?.members[plane as usize];
                if list.is_empty() {
                    return None;
                }
                Some(list[rng.below(list.len() as u64) as usize])
            }
            GcPolicy::DChoices { fraction_searched } => {
                let list = &self.dense.as_ref()?.members[plane as usize];
                let n = list.len() as u64;
                if n == 0 {
                    return None;
                }
                let draws = ((fraction_searched * n as f64).ceil() as u64).clamp(1, n);
                let mut best = list[rng.below(n) as usize];
                for _ in 1..draws {
                    let b = list[rng.below(n) as usize];
                    if info.valid(b) < info.valid(best) {
                        best = b;
                    }
                }
                Some(best)
            }
            GcPolicy::RandomThreshold {
                min_invalid_fraction,
            } => {
                let list = &self.dense.as_ref()?.members[plane as usize];
                let n = list.len() as u64;
                if n == 0 {
                    return None;
                }
                let ppb = self.pages_per_block;
                let min_invalid = (min_invalid_fraction * ppb as f64).floor() as u32;
                let mut pick = list[rng.below(n) as usize];
                for _ in 0..n {
                    if ppb - info.valid(pick) >= min_invalid {
                        break;
                    }
                    pick = list[rng.below(n) as usize];
                }
                Some(pick)
            }
            GcPolicy::Fifo => self.fifo.as_ref()?.order[plane as usize]
                .first()
                .map(|&(_, b)| b),
            GcPolicy::CostBenefit => {
                let list = &self.dense.as_ref()?.members[plane as usize];
                let ppb = self.pages_per_block as u128;
                let mut best: Option<(u32, u128, u128)> = None;
                for &b in list {
                    let v = info.valid(b) as u128;
                    let age = now.saturating_sub(info.modified(b)) as u128;
                    // Score age × (1 − u) / 2u as the fraction num / den, compared by cross
                    // multiplication so no float rounding decides a tie; u = 0 is infinite.
                    let (num, den) = (age * (ppb - v), 2 * v);
                    let better = match best {
                        None => true,
                        Some((bb, bnum, bden)) => {
                            let lhs = num * bden;
                            let rhs = bnum * den;
                            lhs > rhs || (lhs == rhs && b < bb)
                        }
                    };
                    if better {
                        best = Some((b, num, den));
                    }
                }
                best.map(|(b, _, _)| b)
            }
        }
    }

    /// The candidate of `plane` with the fewest valid pages, whatever the policy: the fallback
    /// when the policy's own pick does not fit in the space left. O(1) with greedy's buckets,
    /// a scan of the plane's candidates otherwise (only in that tight spot).
    pub(crate) fn fewest_valid<I: BlockInfo + ?Sized>(
        &mut self,
        plane: u32,
        info: &I,
    ) -> Option<u32> {
        if self.buckets.is_some() {
            return self.greedy(plane);
        }
        let key = |&b: &u32| (info.valid(b), b);
        if let Some(d) = &self.dense {
            return d.members[plane as usize].iter().copied().min_by_key(key);
        }
        let f = self.fifo.as_ref()?;
        f.order[plane as usize]
            .iter()
            .map(|&(_, b)| b)
            .min_by_key(key)
    }

    fn greedy(&mut self, plane: u32) -> Option<u32> {
        let ppb = self.pages_per_block;
        let b = self.buckets.as_mut()?;
        let base = (plane * ppb) as usize;
        let mut v = b.min_hint[plane as usize];
        while v < ppb {
            let head = b.heads[base + v as usize];
            if head != NONE {
                b.min_hint[plane as usize] = v;
                return Some(head);
            }
            v += 1;
        }
        b.min_hint[plane as usize] = ppb;
        None
    }
}

impl Buckets {
    #[inline]
    fn link(&mut self, plane: u32, ppb: u32, block: u32, valid: u32) {
        let h = (plane * ppb + valid) as usize;
        let old = self.heads[h];
        self.links[block as usize] = Link {
            next: old,
            prev: NONE,
        };
        if old != NONE {
            self.links[old as usize].prev = block;
        }
        self.heads[h] = block;
        let hint = &mut self.min_hint[plane as usize];
        if valid < *hint {
            *hint = valid;
        }
    }

    #[inline]
    fn unlink(&mut self, plane: u32, ppb: u32, block: u32, valid: u32) {
        let Link { next: n, prev: p } = self.links[block as usize];
        if p == NONE {
            let h = (plane * ppb + valid) as usize;
            assert!(
                self.heads[h] == block,
                "greedy bucket out of step for block {block}"
            );
            self.heads[h] = n;
        } else {
            self.links[p as usize].next = n;
        }
        if n != NONE {
            self.links[n as usize].prev = p;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Per-block valid counts and stamps, as the tests lay them out.
    struct Blocks<'a>(&'a [u32], &'a [u64]);

    impl BlockInfo for Blocks<'_> {
        fn valid(&self, b: u32) -> u32 {
            self.0[b as usize]
        }
        fn modified(&self, b: u32) -> u64 {
            self.1[b as usize]
        }
    }

    fn index(policy: GcPolicy) -> VictimIndex {
        // One plane of 8 blocks of 4 pages.
        VictimIndex::new(policy, 1, 8, 4)
    }

    #[test]
    fn greedy_takes_the_fewest_valid_and_follows_invalidations() {
        let mut ix = index(GcPolicy::Greedy);
        let mut valid = vec![4u32; 8];
        let stamps = vec![0u64; 8];
        let mut rng = Prng::new(1);
        for (b, v) in [(0, 3), (1, 2), (2, 4), (3, 1)] {
            valid[b as usize] = v;
            ix.sealed(b, v, b as u64);
        }
        assert_eq!(ix.select(0, &Blocks(&valid, &stamps), 0, &mut rng), Some(3));
        // Block 2 (fully valid, not a candidate) loses three pages: it becomes the best.
        for v in [3, 2, 1, 0] {
            valid[2] = v;
            ix.invalidated(2, v);
        }
        assert_eq!(ix.select(0, &Blocks(&valid, &stamps), 0, &mut rng), Some(2));
        ix.remove(2, 0);
        ix.remove(3, 1);
        assert_eq!(ix.select(0, &Blocks(&valid, &stamps), 0, &mut rng), Some(1));
        ix.remove(1, 2);
        ix.remove(0, 3);
        assert_eq!(ix.select(0, &Blocks(&valid, &stamps), 0, &mut rng), None);
    }

    #[test]
    fn fifo_takes_the_earliest_sealed_candidate() {
        let mut ix = index(GcPolicy::Fifo);
        let valid = [3, 4, 1, 4, 4, 4, 4, 4];
        let stamps = [0u64; 8];
        let mut rng = Prng::new(1);
        ix.sealed(1, 4, 10); // full: not a candidate yet
        ix.sealed(2, 1, 11);
        ix.sealed(0, 3, 12);
        assert_eq!(ix.select(0, &Blocks(&valid, &stamps), 0, &mut rng), Some(2));
        // Block 1 becomes a candidate; it was sealed first, so it goes first.
        ix.invalidated(1, 3);
        assert_eq!(ix.select(0, &Blocks(&valid, &stamps), 0, &mut rng), Some(1));
    }

    #[test]
    fn cost_benefit_weighs_age_against_utilisation() {
        let mut ix = index(GcPolicy::CostBenefit);
        let mut rng = Prng::new(1);
        // Block 0: 3 of 4 valid, unchanged for 1000 writes: 1000 × 0.25 / 1.5 = 166.7.
        // Block 1: 1 of 4 valid, changed 10 writes ago: 10 × 0.75 / 0.5 = 15.
        let valid = [3, 1, 4, 4, 4, 4, 4, 4];
        let stamps = [0, 990, 0, 0, 0, 0, 0, 0];
        ix.sealed(0, 3, 0);
        ix.sealed(1, 1, 1);
        assert_eq!(
            ix.select(0, &Blocks(&valid, &stamps), 1000, &mut rng),
            Some(0)
        );
        // The same blocks at equal age: the emptier one wins.
        let stamps = [500, 500, 0, 0, 0, 0, 0, 0];
        assert_eq!(
            ix.select(0, &Blocks(&valid, &stamps), 1000, &mut rng),
            Some(1)
        );
    }

    #[test]
    fn d_choices_extremes_are_random_and_greedy() {
        let valid = [3, 1, 2, 3, 2, 3, 1, 2];
        let stamps = [0u64; 8];
        for fraction in [0.0, 1.0] {
            let other = if fraction == 0.0 {
                GcPolicy::Random
            } else {
                GcPolicy::Greedy
            };
            let mut a = index(GcPolicy::DChoices {
                fraction_searched: fraction,
            });
            let mut b = index(other);
            for blk in 0..8 {
                a.sealed(blk, valid[blk as usize], blk as u64);
                b.sealed(blk, valid[blk as usize], blk as u64);
            }
            let (mut ra, mut rb) = (Prng::new(5), Prng::new(5));
            for _ in 0..20 {
                assert_eq!(
                    a.select(0, &Blocks(&valid, &stamps), 0, &mut ra),
                    b.select(0, &Blocks(&valid, &stamps), 0, &mut rb)
                );
            }
        }
    }
}
