//! A workload's flows handed to the device before it is built: each flow's queues and class
//! to a host interface, and its resource partition and data cache mode to an SSD.

use crate::SimError;
use storsim_config::LoadedDevice;
use storsim_hostif::{FlowBinding, Priority};
use storsim_ssd::{DataCacheMode, FlowPartition, SsdParams};
use storsim_workload::flows::{DataCache, FlowSpec, PriorityClass};

/// Sets `device`'s description for `flows` (flow f being `flows[f]`): a host interface, if it
/// has one, gets each flow's queues (one of its own, queue f modulo the queues, when it names
/// none) and class; an SSD gets the flows' resource partitions and data cache modes when a
/// flow states one. A flow stating either on a device with no SSD of its own is refused, as
/// the device could not honour it; what the device itself refuses (an id past its geometry,
/// a mode its buffer cannot do) it says when it is built.
pub(crate) fn bind_flows(device: &mut LoadedDevice, flows: &[FlowSpec]) -> Result<(), SimError> {
    if let Some(host) = device.spec.host_interface_mut() {
        let queues = host.queues.max(1);
        host.flows = flows
            .iter()
            .enumerate()
            .map(|(index, flow)| FlowBinding {
                queues: if flow.queues.is_empty() {
                    vec![index as u32 % queues]
                } else {
                    flow.queues.clone()
                },
                priority: priority(flow.class),
            })
            .collect();
    }
    let partitioned = flows.iter().any(|f| f.resources.is_some());
    let cached = flows.iter().any(|f| f.data_cache.is_some());
    if !partitioned && !cached {
        return Ok(());
    }
    let name = device.name.clone();
    let model = device.spec.model_name();
    let Some(ssd) = device.spec.params_mut::<SsdParams>() else {
        let flow = flows
            .iter()
            .find(|f| f.resources.is_some() || f.data_cache.is_some())
            .expect("one flow states a partition or a cache mode");
        return Err(SimError::Device(format!(
            "flow {}: a resource partition or a data cache mode needs an SSD, and {name} is a \
             {model} device",
            flow.name
        )));
    };
    if partitioned {
        ssd.partitions = flows
            .iter()
            .map(|f| match &f.resources {
                Some(r) => FlowPartition {
                    channels: r.channels.clone(),
                    chips: r.chips.clone(),
                    dies: r.dies.clone(),
                    planes: r.planes.clone(),
                },
                None => FlowPartition::default(),
            })
            .collect();
    }
    if cached {
        ssd.flow_data_cache = flows
            .iter()
            .map(|f| match f.data_cache.unwrap_or(DataCache::Write) {
                DataCache::Write => DataCacheMode::Write,
                DataCache::Read => DataCacheMode::Read,
                DataCache::ReadWrite => DataCacheMode::ReadWrite,
                DataCache::Off => DataCacheMode::Off,
            })
            .collect();
    }
    Ok(())
}

/// The host interface's name for a flow's class.
fn priority(class: PriorityClass) -> Priority {
    match class {
        PriorityClass::Urgent => Priority::Urgent,
        PriorityClass::High => Priority::High,
        PriorityClass::Medium => Priority::Medium,
        PriorityClass::Low => Priority::Low,
    }
}
