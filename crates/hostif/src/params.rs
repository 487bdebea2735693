//! The host interface's parameters as plain data: what the config layer fills in from a
//! `[host_interface]` section and what a multi-flow workload adds (its flows' bindings).

use crate::HostIfError;
use storsim_core::{SimDuration, QUEUE_DEPTH_MAX};

/// The protocol the interface speaks. Both run on the same machinery (queues, arbitration,
/// link, controller); the protocol sets the limits a description is checked against and the
/// defaults of [`HostInterfaceParams::defaults`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// NVMe over PCIe: many submission/completion queue pairs, arbitration, a full-duplex link.
    Nvme,
    /// SATA with native command queueing: one queue of at most [`SATA_NCQ_DEPTH`] commands, a
    /// half-duplex link.
    Sata,
}

impl Protocol {
    /// Both protocols, in the order files and help list them.
    pub const ALL: [Protocol; 2] = [Protocol::Nvme, Protocol::Sata];

    /// The name a device file gives the protocol.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Nvme => "nvme",
            Protocol::Sata => "sata",
        }
    }
}

/// NCQ's 32 tags: the most commands a SATA device holds.
pub const SATA_NCQ_DEPTH: u32 = 32;

/// The most queue pairs a description may have: NVMe's 16-bit queue identifiers, less the
/// admin queue.
pub const QUEUES_MAX: u32 = 65_535;

/// An NVMe priority class (NVMe 1.x, "weighted round robin with urgent priority class"). A
/// submission queue has one; it matters only under [`Arbitration::WeightedRoundRobin`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    /// Served before every other class, round robin among its queues.
    Urgent,
    /// Weighted round robin with weight [`Arbitration::WeightedRoundRobin::high`].
    High,
    /// Weighted round robin with weight `medium`; the class of a queue no flow names.
    #[default]
    Medium,
    /// Weighted round robin with weight `low`.
    Low,
}

impl Priority {
    /// Every class, from the most to the least urgent.
    pub const ALL: [Priority; 4] = [
        Priority::Urgent,
        Priority::High,
        Priority::Medium,
        Priority::Low,
    ];

    /// The name files and results give the class.
    pub fn name(self) -> &'static str {
        match self {
            Priority::Urgent => "urgent",
            Priority::High => "high",
            Priority::Medium => "medium",
            Priority::Low => "low",
        }
    }
}

/// How the controller chooses the submission queues it fetches from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arbitration {
    /// Every queue in turn, whatever its class (NVMe's default arbitration).
    RoundRobin,
    /// Urgent queues first (strict priority), then the high, medium and low classes in a
    /// weighted round robin: in each cycle a class may give as many commands as its weight,
    /// its queues taking turns. Weights are 1..=256, as NVMe's 8-bit zero-based fields allow.
    WeightedRoundRobin { high: u32, medium: u32, low: u32 },
}

impl Arbitration {
    /// The largest weight NVMe can state.
    pub const WEIGHT_MAX: u32 = 256;
}

/// The line code of a serial link: how many bits travel for every payload bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// 8b/10b (PCIe 1.x and 2.x, SATA): 10 bits on the wire per byte.
    E8b10b,
    /// 128b/130b (PCIe 3.0 to 5.0).
    E128b130b,
    /// No overhead: the rate is the payload rate (as MQSim states its lane bandwidth).
    None,
}

impl Encoding {
    /// Every encoding, in the order files and help list them.
    pub const ALL: [Encoding; 3] = [Encoding::E8b10b, Encoding::E128b130b, Encoding::None];

    /// The name a device file gives the encoding.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::E8b10b => "8b/10b",
            Encoding::E128b130b => "128b/130b",
            Encoding::None => "none",
        }
    }

    /// (payload bits, wire bits) of one code word.
    pub(crate) fn ratio(self) -> (u32, u32) {
        match self {
            Encoding::E8b10b => (8, 10),
            Encoding::E128b130b => (128, 130),
            Encoding::None => (1, 1),
        }
    }
}

/// The serial link between host and device: `lanes` lanes of `gigatransfers_per_s` each, with
/// a line code. Its payload rate is lanes × GT/s × payload/wire bits ÷ 8 bytes a nanosecond.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkParams {
    /// Lanes, 1..=32 (SATA has one).
    pub lanes: u32,
    /// Transfers a second on one lane, in units of 10^9 (PCIe 3.0: 8, SATA III: 6).
    pub gigatransfers_per_s: f64,
    /// The line code.
    pub encoding: Encoding,
    /// Whether the two directions carry traffic at once (PCIe) or take turns (SATA).
    pub full_duplex: bool,
}

impl LinkParams {
    /// The time `bytes` of payload occupy one direction of the link, rounded up to the ns.
    /// Computed as one division of exact products, so rates whose time per byte is a binary
    /// fraction (PCIe 3.0 ×4: 1040/4096 ns) give exact results.
    pub fn transfer_ns(&self, bytes: u64) -> u64 {
        let (payload, wire) = self.encoding.ratio();
        let numerator = bytes as f64 * 8.0 * f64::from(wire);
        let denominator = f64::from(self.lanes) * self.gigatransfers_per_s * f64::from(payload);
        (numerator / denominator).ceil() as u64
    }
}

/// Which submission queues a flow's commands enter, and the class of those queues. Request
/// `flow` f uses `HostInterfaceParams::flows[f]` if the list is that long; otherwise queue
/// f mod `queues`, whose class stays as bindings set it (medium if none names it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowBinding {
    /// The flow's queues (at least one); its commands take them in turn.
    pub queues: Vec<u32>,
    /// The class of every queue in `queues`. Two flows sharing a queue must agree on it.
    pub priority: Priority,
}

/// Everything the host interface needs besides the device behind it.
#[derive(Clone, Debug, PartialEq)]
pub struct HostInterfaceParams {
    /// The protocol, which bounds the rest (SATA: one queue of at most 32).
    pub protocol: Protocol,
    /// Submission/completion queue pairs.
    pub queues: u32,
    /// Commands each queue pair holds (submitted and not yet completed). A command beyond
    /// that waits in the host, outside the device, until its queue has room; the device's
    /// `queue_depth()` is `queues × queue_depth`, at most [`QUEUE_DEPTH_MAX`].
    pub queue_depth: u32,
    /// Commands the controller fetches in one arbitration round, at most.
    pub fetch_per_round: u32,
    /// Commands the controller fetches from one queue in one round, at most (NVMe's
    /// arbitration burst).
    pub queue_fetch_size: u32,
    /// How the controller picks the queues it fetches from.
    pub arbitration: Arbitration,
    /// The host link.
    pub link: LinkParams,
    /// Bytes a command carries to the device when fetched (NVMe: a 64-byte submission entry).
    pub command_bytes: u32,
    /// Bytes a completion carries to the host (NVMe: a 16-byte completion entry).
    pub completion_bytes: u32,
    /// The controller's time to process one command after fetching it, one command at a time.
    pub command_processing: SimDuration,
    /// Per flow, by flow number: its queues and their class. Flows past the end use the
    /// default binding (see [`FlowBinding`]). A device file states none; a multi-flow
    /// workload sets them.
    pub flows: Vec<FlowBinding>,
}

impl HostInterfaceParams {
    /// A protocol's defaults. NVMe: MQSim's default host (PCIe ×4 at 1 GB/s a lane, queues of
    /// 1024, a queue fetch size of 512), one queue pair, 16 commands a round, round robin, a
    /// microsecond of controller time. SATA: one NCQ queue of 32 over a half-duplex 6 Gb/s
    /// link with 8b/10b, one command at a time, a 20-byte command FIS and an 8-byte
    /// completion FIS, and two microseconds of protocol and controller time a command.
    pub fn defaults(protocol: Protocol) -> HostInterfaceParams {
        match protocol {
            Protocol::Nvme => HostInterfaceParams {
                protocol,
                queues: 1,
                queue_depth: 1024,
                fetch_per_round: 16,
                queue_fetch_size: 512,
                arbitration: Arbitration::RoundRobin,
                link: LinkParams {
                    lanes: 4,
                    gigatransfers_per_s: 8.0,
                    encoding: Encoding::None,
                    full_duplex: true,
                },
                command_bytes: 64,
                completion_bytes: 16,
                command_processing: SimDuration::from_us(1),
                flows: Vec::new(),
            },
            Protocol::Sata => HostInterfaceParams {
                protocol,
                queues: 1,
                queue_depth: SATA_NCQ_DEPTH,
                fetch_per_round: 1,
                queue_fetch_size: 1,
                arbitration: Arbitration::RoundRobin,
                link: LinkParams {
                    lanes: 1,
                    gigatransfers_per_s: 6.0,
                    encoding: Encoding::E8b10b,
                    full_duplex: false,
                },
                command_bytes: 20,
                completion_bytes: 8,
                command_processing: SimDuration::from_us(2),
                flows: Vec::new(),
            },
        }
    }

    /// The commands the interface holds at once: `queues × queue_depth`.
    pub fn total_depth(&self) -> u64 {
        u64::from(self.queues) * u64::from(self.queue_depth)
    }

    /// Each queue's class, as the flows' bindings set them (medium where none does).
    pub fn queue_priorities(&self) -> Result<Vec<Priority>, HostIfError> {
        let mut set: Vec<Option<(Priority, usize)>> = vec![None; self.queues as usize];
        for (flow, binding) in self.flows.iter().enumerate() {
            if binding.queues.is_empty() {
                return Err(HostIfError::new(
                    "flows",
                    format!("flow {flow} names no queue"),
                ));
            }
            for &q in &binding.queues {
                let Some(entry) = set.get_mut(q as usize) else {
                    return Err(HostIfError::new(
                        "flows",
                        format!(
                            "flow {flow} names queue {q}, but there are {} queues (0..{})",
                            self.queues, self.queues
                        ),
                    ));
                };
                match *entry {
                    Some((p, other)) if p != binding.priority => {
                        return Err(HostIfError::new(
                            "flows",
                            format!(
                                "flows {other} and {flow} share queue {q} with different \
                                 priority classes ({} and {})",
                                p.name(),
                                binding.priority.name()
                            ),
                        ))
                    }
                    _ => *entry = Some((binding.priority, flow)),
                }
            }
        }
        Ok(set
            .into_iter()
            .map(|e| e.map_or(Priority::default(), |(p, _)| p))
            .collect())
    }

    /// Checks every parameter and the bindings; the error names the parameter.
    pub fn validate(&self) -> Result<(), HostIfError> {
        let bad = |param: &'static str, message: String| Err(HostIfError::new(param, message));
        if self.queues == 0 || self.queues > QUEUES_MAX {
            return bad(
                "queues",
                format!("must be 1..={QUEUES_MAX}, got {}", self.queues),
            );
        }
        if self.queue_depth == 0 {
            return bad("queue_depth", "must be at least 1".into());
        }
        if self.total_depth() > u64::from(QUEUE_DEPTH_MAX) {
            return bad(
                "queue_depth",
                format!(
                    "{} queues of {} hold {} commands, more than the {QUEUE_DEPTH_MAX} any \
                     device may",
                    self.queues,
                    self.queue_depth,
                    self.total_depth()
                ),
            );
        }
        if self.protocol == Protocol::Sata {
            if self.queues != 1 {
                return bad("queues", format!("SATA has one queue, got {}", self.queues));
            }
            if self.queue_depth > SATA_NCQ_DEPTH {
                return bad(
                    "queue_depth",
                    format!(
                        "SATA's native command queue holds at most {SATA_NCQ_DEPTH}, got {}",
                        self.queue_depth
                    ),
                );
            }
        }
        if self.fetch_per_round == 0 {
            return bad("fetch_per_round", "must be at least 1".into());
        }
        if self.queue_fetch_size == 0 {
            return bad("queue_fetch_size", "must be at least 1".into());
        }
        if let Arbitration::WeightedRoundRobin { high, medium, low } = self.arbitration {
            for (param, w) in [
                ("weight_high", high),
                ("weight_medium", medium),
                ("weight_low", low),
            ] {
                if !(1..=Arbitration::WEIGHT_MAX).contains(&w) {
                    return bad(
                        param,
                        format!("must be 1..={}, got {w}", Arbitration::WEIGHT_MAX),
                    );
                }
            }
        }
        if !(1..=32).contains(&self.link.lanes) {
            return bad("lanes", format!("must be 1..=32, got {}", self.link.lanes));
        }
        let gt = self.link.gigatransfers_per_s;
        if !(gt.is_finite() && gt > 0.0 && gt <= 1000.0) {
            return bad(
                "gigatransfers_per_s",
                format!("must be a number above 0 and at most 1000, got {gt}"),
            );
        }
        for (param, bytes) in [
            ("command_bytes", self.command_bytes),
            ("completion_bytes", self.completion_bytes),
        ] {
            if bytes > 1 << 20 {
                return bad(param, format!("must be at most 1 MiB, got {bytes}"));
            }
        }
        if self.flows.len() > usize::from(u16::MAX) + 1 {
            return bad(
                "flows",
                format!("at most 65536 flows, got {}", self.flows.len()),
            );
        }
        self.queue_priorities().map(|_| ())
    }
}
