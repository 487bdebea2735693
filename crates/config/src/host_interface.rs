//! The `[host_interface]` section, which any model's file may have: an NVMe or SATA host
//! interface (crate `storsim-hostif`) in front of the model. See
//! docs/models/host-interface.md.

use crate::models::{delay_us, invalid, us_of};
use crate::ConfigError;
use serde::Deserialize;
use storsim_core::Device;
use storsim_hostif::{Arbitration, Encoding, HostInterfaceDevice, HostInterfaceParams, Protocol};

/// The section as a file writes it; every key optional, laid over the preset's interface or
/// the protocol's defaults.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct HostInterfaceSection {
    protocol: Option<ProtocolName>,
    queues: Option<u32>,
    queue_depth: Option<u32>,
    fetch_per_round: Option<u32>,
    queue_fetch_size: Option<u32>,
    arbitration: Option<ArbitrationName>,
    weight_high: Option<u32>,
    weight_medium: Option<u32>,
    weight_low: Option<u32>,
    lanes: Option<u32>,
    gigatransfers_per_s: Option<f64>,
    encoding: Option<EncodingName>,
    full_duplex: Option<bool>,
    command_bytes: Option<u32>,
    completion_bytes: Option<u32>,
    command_processing_us: Option<f64>,
}

impl HostInterfaceSection {
    /// The keys the file states besides `protocol`, as it names them.
    fn stated(&self) -> Vec<&'static str> {
        let keys = [
            ("queues", self.queues.is_some()),
            ("queue_depth", self.queue_depth.is_some()),
            ("fetch_per_round", self.fetch_per_round.is_some()),
            ("queue_fetch_size", self.queue_fetch_size.is_some()),
            ("arbitration", self.arbitration.is_some()),
            ("weight_high", self.weight_high.is_some()),
            ("weight_medium", self.weight_medium.is_some()),
            ("weight_low", self.weight_low.is_some()),
            ("lanes", self.lanes.is_some()),
            ("gigatransfers_per_s", self.gigatransfers_per_s.is_some()),
            ("encoding", self.encoding.is_some()),
            ("full_duplex", self.full_duplex.is_some()),
            ("command_bytes", self.command_bytes.is_some()),
            ("completion_bytes", self.completion_bytes.is_some()),
            (
                "command_processing_us",
                self.command_processing_us.is_some(),
            ),
        ];
        keys.into_iter()
            .filter_map(|(k, stated)| stated.then_some(k))
            .collect()
    }
}

/// `protocol`: one of the interface's protocols, or `none` for no interface.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum ProtocolName {
    Nvme,
    Sata,
    None,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum ArbitrationName {
    RoundRobin,
    WeightedRoundRobin,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
enum EncodingName {
    #[serde(rename = "8b/10b")]
    E8b10b,
    #[serde(rename = "128b/130b")]
    E128b130b,
    #[serde(rename = "none")]
    None,
}

/// The weights a file that switches to weighted round robin gets unless it states them:
/// each class twice the next one's.
const DEFAULT_WEIGHTS: (u32, u32, u32) = (4, 2, 1);

/// The interface a file describes: `base` (its preset's) with the section's keys laid over it.
/// A section naming another protocol than the base's starts from that protocol's defaults;
/// `protocol = "none"` takes the interface away.
pub(crate) fn resolve(
    section: Option<&HostInterfaceSection>,
    base: Option<HostInterfaceParams>,
    file: &str,
) -> Result<Option<HostInterfaceParams>, ConfigError> {
    let Some(s) = section else {
        return Ok(base);
    };
    let key = |k: &str| format!("host_interface.{k}");
    let protocol = match s.protocol {
        Some(ProtocolName::None) => {
            if let Some(k) = s.stated().first() {
                return Err(invalid(
                    file,
                    &key(k),
                    "does not apply with protocol = \"none\" (no host interface)".into(),
                ));
            }
            return Ok(None);
        }
        Some(ProtocolName::Nvme) => Some(Protocol::Nvme),
        Some(ProtocolName::Sata) => Some(Protocol::Sata),
        None => None,
    };
    let mut p = match (protocol, base) {
        (Some(protocol), Some(base)) if base.protocol == protocol => base,
        (Some(protocol), _) => HostInterfaceParams::defaults(protocol),
        (None, Some(base)) => base,
        (None, None) => {
            return Err(invalid(
                file,
                &key("protocol"),
                "is required when the device has no host interface to start from \
                 (\"nvme\" or \"sata\")"
                    .into(),
            ))
        }
    };
    let set = |field: &mut u32, value: Option<u32>| {
        if let Some(v) = value {
            *field = v;
        }
    };
    set(&mut p.queues, s.queues);
    set(&mut p.queue_depth, s.queue_depth);
    set(&mut p.fetch_per_round, s.fetch_per_round);
    set(&mut p.queue_fetch_size, s.queue_fetch_size);
    set(&mut p.link.lanes, s.lanes);
    set(&mut p.command_bytes, s.command_bytes);
    set(&mut p.completion_bytes, s.completion_bytes);
    if let Some(gt) = s.gigatransfers_per_s {
        p.link.gigatransfers_per_s = gt;
    }
    if let Some(e) = s.encoding {
        p.link.encoding = match e {
            EncodingName::E8b10b => Encoding::E8b10b,
            EncodingName::E128b130b => Encoding::E128b130b,
            EncodingName::None => Encoding::None,
        };
    }
    if let Some(d) = s.full_duplex {
        p.link.full_duplex = d;
    }
    if let Some(us) = s.command_processing_us {
        p.command_processing = delay_us(file, &key("command_processing_us"), us)?;
    }
    let weights = match p.arbitration {
        Arbitration::WeightedRoundRobin { high, medium, low } => (high, medium, low),
        Arbitration::RoundRobin => DEFAULT_WEIGHTS,
    };
    let weighted = match s.arbitration {
        Some(ArbitrationName::WeightedRoundRobin) => true,
        Some(ArbitrationName::RoundRobin) => false,
        None => matches!(p.arbitration, Arbitration::WeightedRoundRobin { .. }),
    };
    let stated_weights = [
        ("weight_high", s.weight_high),
        ("weight_medium", s.weight_medium),
        ("weight_low", s.weight_low),
    ];
    p.arbitration = if weighted {
        Arbitration::WeightedRoundRobin {
            high: s.weight_high.unwrap_or(weights.0),
            medium: s.weight_medium.unwrap_or(weights.1),
            low: s.weight_low.unwrap_or(weights.2),
        }
    } else {
        if let Some((k, _)) = stated_weights.iter().find(|(_, w)| w.is_some()) {
            return Err(invalid(
                file,
                &key(k),
                "applies only with arbitration = \"weighted-round-robin\"".into(),
            ));
        }
        Arbitration::RoundRobin
    };
    p.validate()
        .map_err(|e| invalid(file, &key(e.param), e.message))?;
    Ok(Some(p))
}

/// The `[host_interface]` section stating every key of `params`, which reads back as them
/// (flow bindings aside: a device file states none).
pub fn host_interface_toml(params: &HostInterfaceParams) -> String {
    let mut text = String::from("[host_interface]\n");
    let mut line = |k: &str, v: String| text.push_str(&format!("{k} = {v}\n"));
    line("protocol", format!("{:?}", params.protocol.name()));
    line("queues", params.queues.to_string());
    line("queue_depth", params.queue_depth.to_string());
    line("fetch_per_round", params.fetch_per_round.to_string());
    line("queue_fetch_size", params.queue_fetch_size.to_string());
    match params.arbitration {
        Arbitration::RoundRobin => line("arbitration", "\"round-robin\"".into()),
        Arbitration::WeightedRoundRobin { high, medium, low } => {
            line("arbitration", "\"weighted-round-robin\"".into());
            line("weight_high", high.to_string());
            line("weight_medium", medium.to_string());
            line("weight_low", low.to_string());
        }
    }
    line("lanes", params.link.lanes.to_string());
    line(
        "gigatransfers_per_s",
        toml::Value::Float(params.link.gigatransfers_per_s).to_string(),
    );
    line("encoding", format!("{:?}", params.link.encoding.name()));
    line("full_duplex", params.link.full_duplex.to_string());
    line("command_bytes", params.command_bytes.to_string());
    line("completion_bytes", params.completion_bytes.to_string());
    line(
        "command_processing_us",
        toml::Value::Float(us_of(params.command_processing)).to_string(),
    );
    text
}

/// The device a description builds: the model, behind its host interface if it has one. The
/// host interface is the outermost layer (host → host interface → model).
pub(crate) fn wrap(
    device: Box<dyn Device>,
    host_interface: Option<&HostInterfaceParams>,
) -> Result<Box<dyn Device>, String> {
    match host_interface {
        None => Ok(device),
        Some(params) => HostInterfaceDevice::new(params.clone(), device)
            .map(|d| Box::new(d) as Box<dyn Device>)
            .map_err(|e| e.to_string()),
    }
}
