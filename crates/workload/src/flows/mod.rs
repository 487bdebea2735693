//! Multi-flow workloads: several flows (tenants, applications) sharing one device, each its
//! own trace or generator spec with its own start and stop time, priority class, queues, and
//! optionally an LBA partition (a range of the device its addresses are mapped into) and a
//! resource partition (the channels, chips, dies and planes of an SSD it is pinned to).
//!
//! A flow file (`--workload flows.toml`, [`read_file`]) lists them as `[[flow]]` tables;
//! `--flow` arguments ([`parse_arg`]) state one each. Both give [`FlowSpec`]s, plain data:
//! opening each flow's workload is the caller's (the same openers as for one workload), and
//! [`map_into`] moves its records into its partition (whose bounds [`LbaPartition::resolve`]
//! gives). docs/workloads/flows.md is the user's guide.

mod arg;
mod file;
mod partition;
mod passes;

pub use arg::parse_arg;
pub(crate) use file::{has_flow_file_name, starts_as_flow_file};
pub use file::{is_flow_file, read_file};
pub use partition::map_into;
pub use passes::{head, repeat, scale_time};

use std::fmt;

/// The NVMe arbitration class of a flow's queues, highest first: urgent queues are served
/// before all others, the other three share by weighted round robin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PriorityClass {
    /// Served strictly first (NVMe's urgent class).
    Urgent,
    /// The heaviest weighted round-robin class.
    High,
    /// The middle weighted round-robin class, and a flow's class unless it names one.
    #[default]
    Medium,
    /// The lightest weighted round-robin class.
    Low,
}

impl PriorityClass {
    /// Every class, highest first.
    pub const ALL: [PriorityClass; 4] = [
        PriorityClass::Urgent,
        PriorityClass::High,
        PriorityClass::Medium,
        PriorityClass::Low,
    ];

    /// The class's name as flow files write it.
    pub fn name(self) -> &'static str {
        match self {
            PriorityClass::Urgent => "urgent",
            PriorityClass::High => "high",
            PriorityClass::Medium => "medium",
            PriorityClass::Low => "low",
        }
    }

    /// The class named `name` (any case), if there is one.
    pub fn from_name(name: &str) -> Option<PriorityClass> {
        PriorityClass::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for PriorityClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the device's DRAM data cache does for a flow's requests (MQSim's per-flow
/// `Device_Level_Data_Caching_Mode`). A device whose buffer cannot do what a flow asks refuses
/// it when it is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataCache {
    /// Writes complete in the buffer (the SSD's own behaviour).
    Write,
    /// Reads are served from the buffer.
    Read,
    /// Both.
    ReadWrite,
    /// Neither: writes complete when programmed.
    Off,
}

impl DataCache {
    /// Every mode, in the order the docs list them.
    pub const ALL: [DataCache; 4] = [
        DataCache::Write,
        DataCache::Read,
        DataCache::ReadWrite,
        DataCache::Off,
    ];

    /// The mode's name as flow files write it.
    pub fn name(self) -> &'static str {
        match self {
            DataCache::Write => "write",
            DataCache::Read => "read",
            DataCache::ReadWrite => "read-write",
            DataCache::Off => "off",
        }
    }
}

/// An amount of the device's space: bytes, or a percentage of its capacity.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Extent {
    /// A number of bytes.
    Bytes(u64),
    /// A percentage of the device's capacity, from 0 to 100.
    Percent(f64),
}

impl Extent {
    /// The amount in bytes on a device of `capacity_bytes`, rounded down to whole 4 KiB
    /// pages for a percentage, so that a partition starts and ends on a page.
    pub fn bytes(self, capacity_bytes: u64) -> u64 {
        match self {
            Extent::Bytes(bytes) => bytes,
            Extent::Percent(percent) => {
                let bytes = (capacity_bytes as f64 * percent / 100.0) as u64;
                bytes / 4096 * 4096
            }
        }
    }

    /// Reads `4g`, `1048576` or `25%`; the error is what was expected.
    pub fn parse(text: &str) -> Result<Extent, String> {
        let text = text.trim();
        if let Some(number) = text.strip_suffix('%') {
            return match number.trim().parse::<f64>() {
                Ok(p) if (0.0..=100.0).contains(&p) => Ok(Extent::Percent(p)),
                _ => Err("a percentage from 0% to 100%".into()),
            };
        }
        crate::synthetic::parse_size(text).map(Extent::Bytes)
    }
}

/// The part of the device a flow's addresses are mapped into: `offset` from the start, `size`
/// long (to the end of the device when not given).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LbaPartition {
    /// Where the partition starts.
    pub offset: Extent,
    /// How long it is; `None` reaches to the end of the device.
    pub size: Option<Extent>,
}

impl LbaPartition {
    /// The partition's start and length in bytes on a device of `capacity_bytes`, checked to
    /// lie inside it and to be at least one 4 KiB page long; the error says what is wrong.
    pub fn resolve(&self, capacity_bytes: u64) -> Result<(u64, u64), String> {
        let offset = self.offset.bytes(capacity_bytes);
        if offset >= capacity_bytes {
            return Err(format!(
                "the LBA partition starts at byte {offset}, past the device's {capacity_bytes} bytes"
            ));
        }
        let len = match self.size {
            Some(size) => size.bytes(capacity_bytes),
            None => capacity_bytes - offset,
        };
        if len < 4096
            || offset
                .checked_add(len)
                .is_none_or(|end| end > capacity_bytes)
        {
            return Err(format!(
                "the LBA partition of {len} bytes at byte {offset} does not fit the device's \
                 {capacity_bytes} bytes with at least 4096 bytes"
            ));
        }
        Ok((offset, len))
    }
}

/// The parts of an SSD a flow is pinned to, as MQSim's `Channel_IDs`, `Chip_IDs`, `Die_IDs`
/// and `Plane_IDs`: the flow's pages are written only there. An empty list means every one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourcePartition {
    /// Channel numbers, from 0.
    pub channels: Vec<u32>,
    /// Chip numbers within a channel, from 0.
    pub chips: Vec<u32>,
    /// Die numbers within a chip, from 0.
    pub dies: Vec<u32>,
    /// Plane numbers within a die, from 0.
    pub planes: Vec<u32>,
}

impl ResourcePartition {
    /// Whether the partition pins nothing (every list empty).
    pub fn is_everything(&self) -> bool {
        self.channels.is_empty()
            && self.chips.is_empty()
            && self.dies.is_empty()
            && self.planes.is_empty()
    }
}

/// One flow as a flow file or `--flow` states it.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSpec {
    /// The flow's name in results: the file's `name`, or `flowN` (N its index from 0).
    pub name: String,
    /// Its workload: a generator spec (`synthetic:...`, `vdbench:...`) or a trace path
    /// (a flow file's relative paths already resolved against the file's folder).
    pub workload: String,
    /// When the flow starts, in simulated nanoseconds from the start of its phase.
    pub start_ns: u64,
    /// When it stops issuing requests, in simulated nanoseconds from the start of its phase,
    /// if it does.
    pub stop_ns: Option<u64>,
    /// Its phase (`phase`): the flows of a later phase start when every flow of the phases
    /// before it has ended and its last request completed (fio's `stonewall`).
    pub phase: u32,
    /// Its queues' arbitration class.
    pub class: PriorityClass,
    /// The host interface's submission queues its requests go to (numbered from 0); empty
    /// means one queue of its own, numbered as the flow.
    pub queues: Vec<u32>,
    /// A closed loop with this many of its requests outstanding, whatever its workload's
    /// own pacing; `None` keeps that pacing (or the run's `--replay`).
    pub iodepth: Option<u32>,
    /// The range of the device its addresses are mapped into, if any.
    pub lba: Option<LbaPartition>,
    /// The parts of an SSD it is pinned to, if any.
    pub resources: Option<ResourcePartition>,
    /// What the device's data cache does for it; `None` leaves the device's own behaviour.
    pub data_cache: Option<DataCache>,
    /// Only the first this many of its workload's records run (`head`).
    pub head: Option<u64>,
    /// Its timestamps multiplied by this (`time_scale`): a trace whose times are in another
    /// unit than its format's.
    pub time_scale: Option<f64>,
    /// How many times its workload runs, each pass after the one before (`repeat`, at least 1).
    pub repeat: u32,
    /// Its trace's format (`format`), where the run's `--format` or detection should not
    /// decide: each flow of a run may be in a format of its own.
    pub format: Option<crate::trace::TraceFormat>,
}

impl FlowSpec {
    /// A flow of `workload` named `flowN` with everything else at its default.
    pub fn new(index: usize, workload: &str) -> FlowSpec {
        FlowSpec {
            name: format!("flow{index}"),
            workload: workload.to_string(),
            start_ns: 0,
            stop_ns: None,
            phase: 0,
            class: PriorityClass::default(),
            queues: Vec::new(),
            iodepth: None,
            lba: None,
            resources: None,
            data_cache: None,
            head: None,
            time_scale: None,
            repeat: 1,
            format: None,
        }
    }
}

/// Whether `workload` names a generator (`synthetic:...`, `vdbench:...`) rather than a file.
pub fn is_generator(workload: &str) -> bool {
    workload.starts_with("synthetic:") || workload.starts_with("vdbench:")
}

/// The keys a flow takes besides its workload, in the order the docs list them; `--flow`
/// tells them from a generator's keys by these names.
pub const FLOW_KEYS: [&str; 18] = [
    "name",
    "start",
    "stop",
    "phase",
    "class",
    "queues",
    "iodepth",
    "lba_offset",
    "lba_size",
    "channels",
    "chips",
    "dies",
    "planes",
    "data_cache",
    "head",
    "time_scale",
    "repeat",
    "format",
];
