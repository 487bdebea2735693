//! Built-in devices. Each preset is a complete description that a device file may start from.
//! Some presets also take a variant after a colon (`uhs1-sd:ch4-x2`, `flashsim-2009:fast`), for
//! parameter sweeps without writing a file.

use crate::models::ftl;
use crate::models::ssd::consistent;
use crate::models::table::{check_channels, speedup_milli};
use crate::DeviceSpec;
use storsim_blackbox::{linear, step, table};
use storsim_core::SimDuration;
use storsim_ftl::FtlConfig;
use storsim_hostif::{Arbitration, Encoding, HostInterfaceParams, LinkParams, Protocol};
use storsim_ssd::presets as ssd;
use storsim_ssd::SsdParams;

/// FlashSim's evaluation is about DFTL, so that is the FTL `flashsim-2009` runs unless a
/// variant names another.
const FLASHSIM_DEFAULT_FTL: &str = "dftl";

/// Turns a preset's spec into the variant named after the colon, or says why it cannot.
type ApplyVariant = fn(DeviceSpec, &str) -> Result<DeviceSpec, String>;

/// One line of `storsim presets`.
#[derive(Clone, Copy, Debug)]
pub struct PresetInfo {
    pub name: &'static str,
    pub summary: &'static str,
    build: Build,
    /// Applies the text after `name:`; `None` for presets without variants.
    variant: Option<ApplyVariant>,
}

/// Where a preset's parameters come from.
#[derive(Clone, Copy, Debug)]
enum Build {
    /// Set in code, in the model's crate or here.
    Code(fn() -> DeviceSpec),
    /// A device file kept in `crates/config/presets/`, for models whose description is long (a
    /// disk's zones) or is a choice of children (a hybrid). A file that starts from such a
    /// preset may override its keys one by one on top of this text.
    File(&'static str),
}

impl PresetInfo {
    pub fn spec(&self) -> DeviceSpec {
        match self.build {
            Build::Code(build) => build(),
            Build::File(text) => embedded(self.name, text),
        }
    }

    /// The preset's device model (`linear`, `ssd`, ...), as its description names it.
    pub fn model(&self) -> &'static str {
        self.spec().model_name()
    }

    /// The device file the preset is kept as, if it is kept as one.
    pub(crate) fn file_text(&self) -> Option<&'static str> {
        match self.build {
            Build::Code(_) => None,
            Build::File(text) => Some(text),
        }
    }
}

const PRESETS: &[PresetInfo] = &[
    PresetInfo {
        name: "stec-zeus",
        summary: "STEC Zeus 70 GB SSD, IBM linear fit A + n*B (El Maghraoui et al.), one request \
                  at a time",
        build: Build::Code(|| DeviceSpec::new(linear::stec_zeus())),
        variant: None,
    },
    PresetInfo {
        name: "uhs1-sd",
        summary: "Baseline device of the co-simulation thesis (Wu, Table 5.3: Transcend UHS-I SD \
                  card), 400 MiB, Ch1-x1; `uhs1-sd:chN-xS` gives N channels and speedup S",
        build: Build::Code(|| DeviceSpec::new(table::uhs1_sd())),
        variant: Some(channels_and_speedup),
    },
    PresetInfo {
        name: "wisconsin-usb",
        summary: "32 MiB USB stick of the Wisconsin RAM-disk emulator (Aderhold & Field): the \
                  seed's step schedules and write compensation, illustrative delays",
        build: Build::Code(|| DeviceSpec::new(step::wisconsin_usb())),
        variant: None,
    },
    PresetInfo {
        name: "flashsim-2009",
        summary: "FlashSim's SLC SSD (Kim et al. 2009, Table 2): 2 KiB pages, 64-page blocks, \
                  8 GiB raw (layout assumed), DFTL; `flashsim-2009:FTL` runs another FTL: \
                  page, page-static, block, log-block, fast, dftl, anand, fmax, raw",
        build: Build::Code(|| {
            DeviceSpec::new(consistent(ssd::flashsim_2009(
                FtlConfig::default_for(FLASHSIM_DEFAULT_FTL).expect("the FTL is registered"),
            )))
        }),
        variant: Some(ftl_variant),
    },
    PresetInfo {
        name: "bench2g",
        summary: "The ../shared/bench comparison SSD: 2 GiB raw MLC, 32 planes, MQSim's \
                  timings, page FTL with 7 % over-provisioning and GC below 5 % free blocks \
                  per plane, 256 MiB DRAM cache; `bench2g:nvme` puts MQSim's default NVMe host \
                  interface in front (PCIe x4 at 1 GB/s a lane, queue fetch size 512)",
        build: Build::Code(bench2g),
        variant: Some(bench2g_interface),
    },
    PresetInfo {
        name: "sandisk-usb-anand",
        summary: "1 GB SanDisk USB stick under ANAND, the FTL that modelled it best (Konanki's \
                  hybrid-disk thesis, §5); geometry and timings assumed from 1 Gbit SLC \
                  datasheets",
        build: Build::Code(|| DeviceSpec::new(consistent(ssd::sandisk_usb_anand()))),
        variant: None,
    },
    PresetInfo {
        name: "tlc-nvme",
        summary: "Representative 3D TLC NVMe SSD, about 600 GB raw, timings typical of ISSCC \
                  2018-2020 parts, page FTL, 1 GiB DRAM buffer, background GC; no specific \
                  product; `tlc-nvme:nvme` adds its NVMe interface (PCIe 3.0 x4, 8 queue \
                  pairs of 1024, weighted round robin)",
        build: Build::Code(|| DeviceSpec::new(consistent(ssd::tlc_nvme()))),
        variant: Some(tlc_nvme_interface),
    },
    PresetInfo {
        name: "hdd-laptop-2007",
        summary: "2.5-inch 5400 rpm laptop disk of the first hybrid drives' generation, 160 GB, \
                  8 MB cache; seek figures of a Travelstar 5K320, zones and overheads assumed",
        build: Build::File(include_str!("../presets/hdd-laptop-2007.toml")),
        variant: None,
    },
    PresetInfo {
        name: "hdd-momentus-7200",
        summary: "2.5-inch 7200 rpm disk of a first-generation Momentus XT, 500 GB, 32 MB \
                  cache; 11 ms average seek, zones and overheads assumed",
        build: Build::File(include_str!("../presets/hdd-momentus-7200.toml")),
        variant: None,
    },
    PresetInfo {
        name: "hybrid-2007-flash",
        summary: "The 256 MiB flash of `hybrid-laptop-2007`: the thesis' ANAND-managed SLC \
                  module (`sandisk-usb-anand`) scaled from 1 GiB to 256 MiB",
        build: Build::File(include_str!("../presets/hybrid-2007-flash.toml")),
        variant: None,
    },
    PresetInfo {
        name: "hybrid-laptop-2007",
        summary: "2007 hybrid laptop drive (Konanki's configuration 2): 256 MiB flash write \
                  cache over `hdd-laptop-2007` (5400 rpm, 160 GB, 8 MB DRAM); writes under \
                  64 KiB to flash, on-demand full flush, LRU",
        build: Build::File(include_str!("../presets/hybrid-laptop-2007.toml")),
        variant: None,
    },
    PresetInfo {
        name: "hybrid-cheetah15k5",
        summary: "The hybrid-disk thesis' drive in configuration 2 (Konanki §5.5): 256 MiB flash \
                  write cache (`hybrid-2007-flash`) managed by the controller in front of the \
                  Seagate Cheetah 15K.5 (`disksim-cheetah15k5`), on-demand flush, LRU",
        build: Build::File(include_str!("../presets/hybrid-cheetah15k5.toml")),
        variant: None,
    },
    PresetInfo {
        name: "hybrid-cheetah15k5-host",
        summary: "The hybrid-disk thesis' configuration 1 (Konanki §5.3): its 1 GB SanDisk stick \
                  (`sandisk-usb-anand`) and the Seagate Cheetah 15K.5 (`disksim-cheetah15k5`) \
                  side by side, placed by the host",
        build: Build::File(include_str!("../presets/hybrid-cheetah15k5-host.toml")),
        variant: None,
    },
    PresetInfo {
        name: "momentus-xt-flash",
        summary: "The 4 GiB SLC flash of `momentus-xt`: FlashSim's SLC timings (`flashsim-2009`) \
                  at half the size, page FTL; timings assumed",
        build: Build::File(include_str!("../presets/momentus-xt-flash.toml")),
        variant: None,
    },
    PresetInfo {
        name: "momentus-xt",
        summary: "First-generation Seagate Momentus XT: 4 GiB SLC read cache (read misses \
                  promoted, writes to disk) over `hdd-momentus-7200` (7200 rpm, 500 GB, 32 MB \
                  DRAM), LRU",
        build: Build::File(include_str!("../presets/momentus-xt.toml")),
        variant: None,
    },
    PresetInfo {
        name: "disksim-cheetah9lp",
        summary: "Seagate Cheetah 9LP (ST39102LW), 9.1 GB, 10,045 rpm: DiskSim 4.0's validated parameters (valid/cheetah9LP.parv)",
        build: Build::File(include_str!("../presets/disksim/disksim-cheetah9lp.toml")),
        variant: None,
    },
    PresetInfo {
        name: "disksim-ibm18es",
        summary: "IBM Ultrastar 18ES (DNES-309170W), 9.1 GB, 7,200 rpm: DiskSim 4.0's validated parameters (valid/ibm18es.parv)",
        build: Build::File(include_str!("../presets/disksim/disksim-ibm18es.toml")),
        variant: None,
    },
    PresetInfo {
        name: "disksim-hp-c2247a",
        summary: "HP C2247A, 1.05 GB, 5,400 rpm: DiskSim 4.0's validated parameters (valid/hp_c2247a.parv)",
        build: Build::File(include_str!("../presets/disksim/disksim-hp-c2247a.toml")),
        variant: None,
    },
    PresetInfo {
        name: "disksim-atlas10k",
        summary: "Quantum Atlas 10K, 9.2 GB, 10,025 rpm: DiskSim 4.0's validated parameters (valid/atlas10k.parv)",
        build: Build::File(include_str!("../presets/disksim/disksim-atlas10k.toml")),
        variant: None,
    },
    PresetInfo {
        name: "disksim-atlas3",
        summary: "Quantum Atlas III (QM39100TD-SW), 9.1 GB, 7,200 rpm: DiskSim 4.0's validated parameters (valid/atlas_III.parv)",
        build: Build::File(include_str!("../presets/disksim/disksim-atlas3.toml")),
        variant: None,
    },
    PresetInfo {
        name: "disksim-barracuda",
        summary: "Seagate Barracuda (ST32171W), 2.1 GB, 7,200 rpm: DiskSim 4.0's validated parameters (valid/barracuda.parv)",
        build: Build::File(include_str!("../presets/disksim/disksim-barracuda.toml")),
        variant: None,
    },
    PresetInfo {
        name: "disksim-cheetah4lp",
        summary: "Seagate Cheetah 4LP (ST34501N), 4.5 GB, 10,033 rpm: DiskSim 4.0's validated parameters (valid/cheetah4LP.parv)",
        build: Build::File(include_str!("../presets/disksim/disksim-cheetah4lp.toml")),
        variant: None,
    },
    PresetInfo {
        name: "disksim-hp-c3323a",
        summary: "HP C3323A, 1.05 GB, 5,400 rpm: DiskSim 4.0's validated parameters (valid/hp_c3323a.parv)",
        build: Build::File(include_str!("../presets/disksim/disksim-hp-c3323a.toml")),
        variant: None,
    },
    PresetInfo {
        name: "disksim-hp-c2490a",
        summary: "HP C2490A, 2.1 GB, 6,400 rpm: DiskSim 4.0's validated parameters (valid/hp_c2490a.parv)",
        build: Build::File(include_str!("../presets/disksim/disksim-hp-c2490a.toml")),
        variant: None,
    },
    PresetInfo {
        name: "disksim-cheetah15k5",
        summary: "Seagate Cheetah 15K.5 (ST3146855FC), 146 GB, 15,020 rpm: DiskSim 4.0's DIXtrac-extracted drive, G4 layout (valid/Seagate-Cheetah15k5.tar.gz)",
        build: Build::File(include_str!("../presets/disksim/disksim-cheetah15k5.toml")),
        variant: None,
    },
    PresetInfo {
        name: "disksim-dec-rz26",
        summary: "DEC RZ26, 1.05 GB, 5,400 rpm: DiskSim 4.0's validated parameters (valid/dec_rz26.parv)",
        build: Build::File(include_str!("../presets/disksim/disksim-dec-rz26.toml")),
        variant: None,
    },
];

/// The parameters of a preset kept as a device file ([`Build::File`]). Tests parse every one, so
/// a failure here is a build defect.
fn embedded(name: &str, text: &str) -> DeviceSpec {
    crate::parse_device_toml(text, name)
        .unwrap_or_else(|e| panic!("built-in preset {name} does not parse: {e}"))
}

/// Every preset, in the order `storsim presets` lists them.
pub fn presets() -> &'static [PresetInfo] {
    PRESETS
}

/// The preset with exactly this name (no variant).
pub fn preset(name: &str) -> Option<&'static PresetInfo> {
    PRESETS.iter().find(|p| p.name == name)
}

/// Resolves a preset name with an optional variant (`uhs1-sd`, `uhs1-sd:ch4-x2`). `None` when
/// the part before any colon names no preset; an error when the variant is not understood.
pub fn preset_spec(name: &str) -> Option<Result<DeviceSpec, String>> {
    let (base, variant) = match name.split_once(':') {
        Some((base, variant)) => (base, Some(variant)),
        None => (name, None),
    };
    let info = preset(base)?;
    Some(match (variant, info.variant) {
        (None, _) => Ok(info.spec()),
        (Some(v), Some(apply)) => apply(info.spec(), v),
        (Some(_), None) => Err(format!("preset '{base}' has no variants")),
    })
}

/// The `../shared/bench` device, with its GC trigger as the ssd crate sets it.
fn bench2g() -> DeviceSpec {
    DeviceSpec::new(consistent(ssd::bench2g()))
}

/// `bench2g:nvme`: MQSim's default host interface (its `ssdconfig.xml`: NVMe, PCIe ×4 at
/// 1 GB/s a lane, `Queue_Fetch_Size` 512, `IO_Queue_Depth` 65535). Eight queue pairs, so that
/// flows can have one each, share the 65,536 commands a device may hold (8192 each); a flow
/// alone sees the same timing as one deep queue, since the host holds what its pair cannot.
fn bench2g_interface(spec: DeviceSpec, variant: &str) -> Result<DeviceSpec, String> {
    with_interface(
        spec,
        variant,
        HostInterfaceParams {
            queues: 8,
            queue_depth: 8192,
            queue_fetch_size: 512,
            ..HostInterfaceParams::defaults(Protocol::Nvme)
        },
    )
}

/// `tlc-nvme:nvme`: a PCIe 3.0 ×4 link (8 GT/s, 128b/130b), eight queue pairs of 1024,
/// weighted round robin with weights 4:2:1 and an arbitration burst of 8, 32 commands a round,
/// half a microsecond of controller time a command. Typical of the parts the preset stands
/// for, not any one product.
fn tlc_nvme_interface(spec: DeviceSpec, variant: &str) -> Result<DeviceSpec, String> {
    let defaults = HostInterfaceParams::defaults(Protocol::Nvme);
    with_interface(
        spec,
        variant,
        HostInterfaceParams {
            queues: 8,
            queue_depth: 1024,
            fetch_per_round: 32,
            queue_fetch_size: 8,
            arbitration: Arbitration::WeightedRoundRobin {
                high: 4,
                medium: 2,
                low: 1,
            },
            link: LinkParams {
                encoding: Encoding::E128b130b,
                ..defaults.link
            },
            command_processing: SimDuration::from_ns(500),
            ..defaults
        },
    )
}

/// A preset's `:nvme` variant: the preset behind `interface`.
fn with_interface(
    mut spec: DeviceSpec,
    variant: &str,
    interface: HostInterfaceParams,
) -> Result<DeviceSpec, String> {
    if variant != "nvme" {
        return Err(format!(
            "variant '{variant}' is not known; the one variant is `nvme` (an NVMe host \
             interface in front)"
        ));
    }
    interface.validate().map_err(|e| e.to_string())?;
    spec.set_host_interface(Some(interface));
    Ok(spec)
}

/// `NAME:FTL`: the same SSD under another FTL, with that FTL's default parameters.
fn ftl_variant(spec: DeviceSpec, variant: &str) -> Result<DeviceSpec, String> {
    let Ok(mut params) = spec.into_params::<SsdParams>() else {
        return Err("FTL variants apply to ssd devices only".to_string());
    };
    let ftl = ftl::parse(variant).ok_or_else(|| {
        format!(
            "variant '{variant}' names no FTL; use one of {}",
            ftl::list()
        )
    })?;
    params.ftl = (ftl.defaults)();
    Ok(DeviceSpec::new(consistent(params)))
}

/// The thesis' ChN-xS notation: `chN`, `xS` or both joined by `-`, case-insensitive.
fn channels_and_speedup(spec: DeviceSpec, variant: &str) -> Result<DeviceSpec, String> {
    let Ok(mut params) = spec.into_params::<table::TableParams>() else {
        return Err("ChN-xS variants apply to table devices only".to_string());
    };
    let usage =
        || format!("variant '{variant}' is not of the form chN-xS (e.g. ch4-x2, ch2, x1.5)");
    let (mut channels, mut speedup) = (None, None);
    for part in variant.to_ascii_lowercase().split('-') {
        if let Some(n) = part.strip_prefix("ch") {
            let n: usize = n.parse().map_err(|_| usage())?;
            let n = check_channels(n).map_err(|m| format!("channels {m}"))?;
            if channels.replace(n).is_some() {
                return Err(usage());
            }
        } else if let Some(s) = part.strip_prefix('x') {
            let s: f64 = s.parse().map_err(|_| usage())?;
            let s = speedup_milli(s).map_err(|m| format!("speedup {m}"))?;
            if speedup.replace(s).is_some() {
                return Err(usage());
            }
        } else {
            return Err(usage());
        }
    }
    if let Some(n) = channels {
        params.channels = n;
    }
    if let Some(s) = speedup {
        params.speedup_milli = s;
    }
    Ok(DeviceSpec::new(params))
}
