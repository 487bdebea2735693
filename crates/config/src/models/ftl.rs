//! `ssd.ftl` and the per-FTL sections `[ssd.page]`, `[ssd.dftl]`, `[ssd.fast]`, ...: which
//! flash translation layer an SSD runs and its parameters. Each section is named after its FTL
//! and its keys are the fields of that FTL's `Params`, so docs/models/ftl-*.md describe them.

use super::{fraction_below_one, fraction_up_to_one, invalid};
use crate::ConfigError;
use serde::Deserialize;
use storsim_flash::Geometry;
use storsim_ftl::gc::GcPolicy;
use storsim_ftl::{anand, block, dftl, fast, fmax, log_block, page, page_static, raw, FtlConfig};

/// An FTL as named in `ssd.ftl` and in `flashsim-2009:NAME` variants.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum FtlName {
    Page,
    PageStatic,
    Block,
    LogBlock,
    Fast,
    Dftl,
    Anand,
    Fmax,
    Raw,
}

impl FtlName {
    pub(crate) const ALL: [FtlName; 9] = [
        FtlName::Page,
        FtlName::PageStatic,
        FtlName::Block,
        FtlName::LogBlock,
        FtlName::Fast,
        FtlName::Dftl,
        FtlName::Anand,
        FtlName::Fmax,
        FtlName::Raw,
    ];

    pub(crate) fn of(config: &FtlConfig) -> FtlName {
        match config {
            FtlConfig::Page(_) => FtlName::Page,
            FtlConfig::PageStatic(_) => FtlName::PageStatic,
            FtlConfig::Block(_) => FtlName::Block,
            FtlConfig::LogBlock(_) => FtlName::LogBlock,
            FtlConfig::Fast(_) => FtlName::Fast,
            FtlConfig::Dftl(_) => FtlName::Dftl,
            FtlConfig::Anand(_) => FtlName::Anand,
            FtlConfig::Fmax(_) => FtlName::Fmax,
            FtlConfig::Raw(_) => FtlName::Raw,
        }
    }

    /// The FTL with its own crate's default parameters.
    pub(crate) fn defaults(self) -> FtlConfig {
        match self {
            FtlName::Page => FtlConfig::Page(page::Params::default()),
            FtlName::PageStatic => FtlConfig::PageStatic(page_static::Params::default()),
            FtlName::Block => FtlConfig::Block(block::Params::default()),
            FtlName::LogBlock => FtlConfig::LogBlock(log_block::Params::default()),
            FtlName::Fast => FtlConfig::Fast(fast::Params::default()),
            FtlName::Dftl => FtlConfig::Dftl(dftl::Params::default()),
            FtlName::Anand => FtlConfig::Anand(anand::Params::default()),
            FtlName::Fmax => FtlConfig::Fmax(fmax::Params::default()),
            FtlName::Raw => FtlConfig::Raw(raw::Params::default()),
        }
    }

    /// The name files use. It comes from the FTL crate, so the two cannot drift apart.
    pub(crate) fn name(self) -> &'static str {
        self.defaults().name()
    }

    /// The FTL named `name`, ignoring case (for preset variants, which are not parsed by serde).
    pub(crate) fn parse(name: &str) -> Option<FtlName> {
        FtlName::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name))
    }

    /// Every name, for messages: "page, page-static, ...".
    pub(crate) fn list() -> String {
        FtlName::ALL.map(FtlName::name).join(", ")
    }
}

/// `gc_policy` as written in files.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum GcPolicyName {
    Greedy,
    Random,
    Fifo,
    CostBenefit,
    DChoices,
}

/// `[ssd.page]`, and `[ssd.dftl.page]` for DFTL's data side. `gc_background` is not here: the
/// SSD's `background_gc` sets it, so that the device and its FTL cannot disagree.
#[derive(Deserialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct PageSection {
    over_provisioning_fraction: Option<f64>,
    gc_policy: Option<GcPolicyName>,
    gc_fraction_searched: Option<f64>,
    gc_low_watermark_blocks: Option<u32>,
    gc_high_watermark_blocks: Option<u32>,
    dynamic_wl: Option<bool>,
    /// 0 turns static wear levelling off: a threshold of 0 erases would mean moving data on
    /// every write, which the FTL refuses, so the value is free to mean "off".
    static_wl_threshold_erases: Option<u32>,
    static_wl_erases_per_move: Option<u32>,
    seed: Option<u64>,
}

/// Bytes of SRAM one cached mapping entry takes: a 4-byte logical and a 4-byte physical page
/// number, as in the DFTL paper.
const CMT_ENTRY_BYTES: u64 = 8;

#[derive(Deserialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct DftlSection {
    cmt_entries: Option<u32>,
    /// The CMT's size as controller SRAM: [`CMT_ENTRY_BYTES`] an entry.
    cmt_bytes: Option<u64>,
    /// The data side nests, mirroring `dftl::Params`, so that it shares `[ssd.page]`'s keys and
    /// checks instead of repeating them.
    page: Option<PageSection>,
}

#[derive(Deserialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct PageStaticSection {
    prewrite_probability: Option<f64>,
    prewrite_seed: Option<u64>,
}

#[derive(Deserialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct BlockSection {
    over_provisioning_fraction: Option<f64>,
}

#[derive(Deserialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct LogBlockSection {
    log_blocks: Option<u32>,
    partial_merge: Option<bool>,
}

#[derive(Deserialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct FastSection {
    log_fraction: Option<f64>,
}

#[derive(Deserialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct AnandSection {
    over_provisioning: Option<f64>,
    max_chain_length: Option<u32>,
    scan_chain: Option<bool>,
}

#[derive(Deserialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct FmaxSection {
    over_provisioning: Option<f64>,
}

/// The raw FTL has no parameters; its section exists so that `[ssd.raw]` is not reported as an
/// unknown key, and any key in it is.
#[derive(Deserialize, Clone, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSection {}

/// One per-FTL section found in a file.
#[derive(Clone, Copy)]
pub(crate) enum Section<'a> {
    Page(&'a PageSection),
    PageStatic(&'a PageStaticSection),
    Block(&'a BlockSection),
    LogBlock(&'a LogBlockSection),
    Fast(&'a FastSection),
    Dftl(&'a DftlSection),
    Anand(&'a AnandSection),
    Fmax(&'a FmaxSection),
    Raw(&'a RawSection),
}

impl Section<'_> {
    fn ftl(self) -> FtlName {
        match self {
            Section::Page(_) => FtlName::Page,
            Section::PageStatic(_) => FtlName::PageStatic,
            Section::Block(_) => FtlName::Block,
            Section::LogBlock(_) => FtlName::LogBlock,
            Section::Fast(_) => FtlName::Fast,
            Section::Dftl(_) => FtlName::Dftl,
            Section::Anand(_) => FtlName::Anand,
            Section::Fmax(_) => FtlName::Fmax,
            Section::Raw(_) => FtlName::Raw,
        }
    }
}

/// Overrides the FTL's parameters with `section`, which must belong to that FTL: a section for
/// another FTL would otherwise be ignored silently (a copied block, a forgotten `ssd.ftl`).
pub(crate) fn apply(
    section: Section,
    config: &mut FtlConfig,
    file: &str,
) -> Result<(), ConfigError> {
    match (section, config) {
        (Section::Page(s), FtlConfig::Page(p)) => apply_page(s, p, "ssd.page", file)?,
        (Section::Dftl(s), FtlConfig::Dftl(p)) => {
            if s.cmt_entries.is_some() && s.cmt_bytes.is_some() {
                return Err(invalid(
                    file,
                    "ssd.dftl.cmt_bytes",
                    "give cmt_entries or cmt_bytes, not both".into(),
                ));
            }
            set(&mut p.cmt_entries, s.cmt_entries);
            if let Some(bytes) = s.cmt_bytes {
                p.cmt_entries = u32::try_from(bytes / CMT_ENTRY_BYTES)
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| {
                        invalid(
                            file,
                            "ssd.dftl.cmt_bytes",
                            format!(
                                "must hold 1 to {} entries of {CMT_ENTRY_BYTES} bytes, got {bytes} bytes",
                                u32::MAX
                            ),
                        )
                    })?;
            }
            if let Some(page) = &s.page {
                apply_page(page, &mut p.page, "ssd.dftl.page", file)?;
            }
        }
        (Section::PageStatic(s), FtlConfig::PageStatic(p)) => {
            set(&mut p.prewrite_probability, s.prewrite_probability);
            set(&mut p.prewrite_seed, s.prewrite_seed);
        }
        (Section::Block(s), FtlConfig::Block(p)) => {
            set(
                &mut p.over_provisioning_fraction,
                s.over_provisioning_fraction,
            );
        }
        (Section::LogBlock(s), FtlConfig::LogBlock(p)) => {
            if let Some(n) = s.log_blocks {
                p.log_blocks = Some(n);
            }
            set(&mut p.partial_merge, s.partial_merge);
        }
        (Section::Fast(s), FtlConfig::Fast(p)) => set(&mut p.log_fraction, s.log_fraction),
        (Section::Anand(s), FtlConfig::Anand(p)) => {
            set(&mut p.over_provisioning, s.over_provisioning);
            set(&mut p.max_chain_length, s.max_chain_length);
            set(&mut p.scan_chain, s.scan_chain);
        }
        (Section::Fmax(s), FtlConfig::Fmax(p)) => {
            set(&mut p.over_provisioning, s.over_provisioning)
        }
        (Section::Raw(RawSection {}), FtlConfig::Raw(_)) => {}
        (section, config) => {
            let name = section.ftl().name();
            // The one likely mix-up has its own hint: DFTL's data side takes the page keys.
            let hint = match (section, &*config) {
                (Section::Page(_), FtlConfig::Dftl(_)) => {
                    "; DFTL's page keys go in [ssd.dftl.page]"
                }
                _ => "",
            };
            return Err(invalid(
                file,
                &format!("ssd.{name}"),
                format!(
                    "a [ssd.{name}] section does not apply to the `{}` FTL (set \
                     `ftl = \"{name}\"` in [ssd] to use that FTL{hint})",
                    config.name()
                ),
            ));
        }
    }
    Ok(())
}

fn set<T>(target: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *target = v;
    }
}

fn apply_page(
    s: &PageSection,
    p: &mut page::Params,
    prefix: &str,
    file: &str,
) -> Result<(), ConfigError> {
    set(
        &mut p.over_provisioning_fraction,
        s.over_provisioning_fraction,
    );
    p.gc_policy = gc_policy(s, p.gc_policy, prefix, file)?;
    set(&mut p.gc_low_watermark_blocks, s.gc_low_watermark_blocks);
    set(&mut p.gc_high_watermark_blocks, s.gc_high_watermark_blocks);
    set(&mut p.dynamic_wl, s.dynamic_wl);
    if let Some(t) = s.static_wl_threshold_erases {
        p.static_wl_threshold_erases = (t > 0).then_some(t);
    }
    set(
        &mut p.static_wl_erases_per_move,
        s.static_wl_erases_per_move,
    );
    set(&mut p.seed, s.seed);
    Ok(())
}

/// The victim policy after the section: `gc_fraction_searched` belongs to d-choices only, and
/// d-choices needs it unless the policy already is d-choices (then the fraction is kept).
fn gc_policy(
    s: &PageSection,
    current: GcPolicy,
    prefix: &str,
    file: &str,
) -> Result<GcPolicy, ConfigError> {
    let fraction_key = format!("{prefix}.gc_fraction_searched");
    let only_d_choices = || {
        invalid(
            file,
            &fraction_key,
            "applies to gc_policy = \"d-choices\" only".into(),
        )
    };
    let current_fraction = match current {
        GcPolicy::DChoices { fraction_searched } => Some(fraction_searched),
        _ => None,
    };
    Ok(match (s.gc_policy, s.gc_fraction_searched) {
        (None, None) => current,
        (None, Some(f)) => {
            current_fraction.ok_or_else(only_d_choices)?;
            GcPolicy::DChoices {
                fraction_searched: f,
            }
        }
        (Some(GcPolicyName::DChoices), f) => GcPolicy::DChoices {
            fraction_searched: f.or(current_fraction).ok_or_else(|| {
                invalid(
                    file,
                    &fraction_key,
                    "is required with gc_policy = \"d-choices\" (the share of a plane's \
                     candidates searched, 0 to 1)"
                        .into(),
                )
            })?,
        },
        (Some(_), Some(_)) => return Err(only_d_choices()),
        (Some(GcPolicyName::Greedy), None) => GcPolicy::Greedy,
        (Some(GcPolicyName::Random), None) => GcPolicy::Random,
        (Some(GcPolicyName::Fifo), None) => GcPolicy::Fifo,
        (Some(GcPolicyName::CostBenefit), None) => GcPolicy::CostBenefit,
    })
}

/// The page-mapped FTLs collect garbage in idle time only when their own flag says so, and the
/// SSD only offers them idle time when its flag says so. Files have one switch for both
/// (`ssd.background_gc`); this copies it into the FTL.
pub(crate) fn set_background_gc(config: &mut FtlConfig, on: bool) {
    match config {
        FtlConfig::Page(p) => p.gc_background = on,
        FtlConfig::Dftl(p) => p.page.gc_background = on,
        _ => {}
    }
}

/// Checks the FTL's parameters the way the FTL would when it is built, but naming the key.
/// What depends on the whole geometry (whether the spare space suffices) is left to the FTL,
/// whose message `DeviceSpec::build` passes on.
pub(crate) fn validate(
    config: &FtlConfig,
    geometry: &Geometry,
    file: &str,
) -> Result<(), ConfigError> {
    match config {
        FtlConfig::Page(p) => validate_page(p, geometry, "ssd.page", file),
        FtlConfig::Dftl(p) => {
            if p.cmt_entries == 0 {
                return Err(invalid(
                    file,
                    "ssd.dftl.cmt_entries",
                    "must be at least 1".into(),
                ));
            }
            if geometry.page_bytes < 4 {
                return Err(invalid(
                    file,
                    "ssd.geometry.page_bytes",
                    format!(
                        "is {}, but DFTL's translation pages need room for a 4-byte entry",
                        geometry.page_bytes
                    ),
                ));
            }
            validate_page(&p.page, geometry, "ssd.dftl.page", file)
        }
        FtlConfig::PageStatic(p) => fraction_up_to_one(
            file,
            "ssd.page-static.prewrite_probability",
            p.prewrite_probability,
        ),
        FtlConfig::Block(p) => fraction_below_one(
            file,
            "ssd.block.over_provisioning_fraction",
            p.over_provisioning_fraction,
        ),
        FtlConfig::LogBlock(p) => match p.log_blocks {
            Some(0) => Err(invalid(
                file,
                "ssd.log-block.log_blocks",
                "must be at least 1 (leave it out for 3 % of the data blocks)".into(),
            )),
            _ => Ok(()),
        },
        FtlConfig::Fast(p) => fraction_up_to_one(file, "ssd.fast.log_fraction", p.log_fraction),
        FtlConfig::Anand(p) => {
            fraction_below_one(file, "ssd.anand.over_provisioning", p.over_provisioning)?;
            if !(1..=255).contains(&p.max_chain_length) {
                return Err(invalid(
                    file,
                    "ssd.anand.max_chain_length",
                    format!("must be 1..=255 units, got {}", p.max_chain_length),
                ));
            }
            Ok(())
        }
        FtlConfig::Fmax(p) => {
            fraction_below_one(file, "ssd.fmax.over_provisioning", p.over_provisioning)
        }
        FtlConfig::Raw(raw::Params {}) => Ok(()),
    }
}

fn validate_page(
    p: &page::Params,
    geometry: &Geometry,
    prefix: &str,
    file: &str,
) -> Result<(), ConfigError> {
    let key = |name: &str| format!("{prefix}.{name}");
    fraction_below_one(
        file,
        &key("over_provisioning_fraction"),
        p.over_provisioning_fraction,
    )?;
    if let GcPolicy::DChoices { fraction_searched } = p.gc_policy {
        fraction_up_to_one(file, &key("gc_fraction_searched"), fraction_searched)?;
    }
    let (low, high) = (p.gc_low_watermark_blocks, p.gc_high_watermark_blocks);
    if low < 2 {
        return Err(invalid(
            file,
            &key("gc_low_watermark_blocks"),
            format!(
                "must be at least 2 (garbage collection needs a free block to copy into and \
                 the host one to write to), got {low}"
            ),
        ));
    }
    if low > geometry.blocks_per_plane {
        return Err(invalid(
            file,
            &key("gc_low_watermark_blocks"),
            format!(
                "is {low}, more than the {} blocks of a plane (ssd.geometry.blocks_per_plane)",
                geometry.blocks_per_plane
            ),
        ));
    }
    if high < low {
        return Err(invalid(
            file,
            &key("gc_high_watermark_blocks"),
            format!("is {high}, below gc_low_watermark_blocks ({low})"),
        ));
    }
    if p.static_wl_threshold_erases == Some(0) {
        return Err(invalid(
            file,
            &key("static_wl_threshold_erases"),
            "must be at least 1, or 0 for off".into(),
        ));
    }
    if p.static_wl_erases_per_move == 0 {
        return Err(invalid(
            file,
            &key("static_wl_erases_per_move"),
            "must be at least 1 (one move per that many erases)".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_the_ftl_crate_and_serde() {
        for f in FtlName::ALL {
            assert_eq!(FtlName::of(&f.defaults()), f);
            assert_eq!(FtlName::parse(&f.name().to_uppercase()), Some(f));
            let parsed: FtlName =
                serde::Deserialize::deserialize(serde::de::value::StrDeserializer::<
                    serde::de::value::Error,
                >::new(f.name()))
                .unwrap();
            assert_eq!(parsed, f);
        }
        assert_eq!(FtlName::list().split(", ").count(), FtlConfig::NAMES.len());
    }
}
