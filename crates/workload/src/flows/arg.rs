//! One flow's keys read from text, shared by the flow file and `--flow`, and `--flow` itself.

use super::FLOW_KEYS;
use super::{
    is_generator, DataCache, Extent, FlowSpec, LbaPartition, PriorityClass, ResourcePartition,
};
use crate::synthetic::parse_duration;
use crate::WorkloadError;

/// Reads one `--flow` argument, the `index`th (from 0): its workload (a trace path or a
/// generator spec), then the flow's keys as `key=value` items separated by commas, e.g.
/// `synthetic:rw=randread,bs=4k,start=1s,stop=3s,class=high`. Items whose key is not a flow
/// key ([`FLOW_KEYS`]) belong to a generator spec; a trace takes none. `iodepth` stays with a
/// generator spec (it sets the generator's own closed loop) and is the flow's key after a
/// trace. Lists are written with `:` between items and ranges as `a-b`: `channels=0-3`,
/// `queues=1:2`.
pub fn parse_arg(index: usize, text: &str) -> Result<FlowSpec, WorkloadError> {
    let error = |message: String| WorkloadError::Spec {
        message: format!("--flow '{text}': {message}"),
    };
    let mut items = text.split(',');
    let head = items.next().unwrap_or("").trim();
    if head.is_empty() {
        return Err(error(
            "expected a trace file or a generator spec first".into(),
        ));
    }
    let generator = is_generator(head);
    let mut workload = head.to_string();
    let mut flow_items = Vec::new();
    for item in items {
        let key = item.split_once('=').map_or(item, |(k, _)| k).trim();
        let is_flow_key = FLOW_KEYS.contains(&key) && !(generator && key == "iodepth");
        if is_flow_key {
            flow_items.push(item);
        } else if generator {
            workload.push(',');
            workload.push_str(item);
        } else {
            return Err(error(format!(
                "unknown flow key `{key}`: expected one of {}",
                FLOW_KEYS.join(", ")
            )));
        }
    }
    let mut spec = FlowSpec::new(index, &workload);
    let mut seen = Vec::new();
    for item in flow_items {
        let Some((key, value)) = item.split_once('=') else {
            return Err(error(format!("`{item}`: expected key=value")));
        };
        let key = key.trim();
        if seen.contains(&key) {
            return Err(error(format!("key {key} is given twice")));
        }
        seen.push(key);
        set_key(&mut spec, key, value.trim()).map_err(|e| error(format!("{key}={value}: {e}")))?;
    }
    check(&spec).map_err(error)?;
    Ok(spec)
}

/// Sets one flow key from its text; the error is what was expected. `key` is one of
/// [`FLOW_KEYS`] other than the workload.
pub(super) fn set_key(spec: &mut FlowSpec, key: &str, value: &str) -> Result<(), String> {
    match key {
        "name" => {
            if value.is_empty() {
                return Err("a name that is not empty".into());
            }
            spec.name = value.to_string();
        }
        "start" => spec.start_ns = parse_duration(value)?,
        "stop" => spec.stop_ns = Some(parse_duration(value)?),
        "phase" => {
            spec.phase = value
                .parse::<u32>()
                .map_err(|_| "a whole number from 0".to_string())?
        }
        "class" => {
            spec.class = PriorityClass::from_name(value)
                .ok_or("one of urgent, high, medium, low".to_string())?
        }
        "queues" => spec.queues = parse_list(value)?,
        "iodepth" => {
            spec.iodepth = Some(match value.parse::<u32>() {
                Ok(depth) if depth > 0 => depth,
                _ => return Err("a whole number of requests, at least 1".into()),
            })
        }
        "lba_offset" => {
            let offset = Extent::parse(value)?;
            match &mut spec.lba {
                Some(lba) => lba.offset = offset,
                None => spec.lba = Some(LbaPartition { offset, size: None }),
            }
        }
        "lba_size" => {
            let size = Some(Extent::parse(value)?);
            match &mut spec.lba {
                Some(lba) => lba.size = size,
                None => {
                    spec.lba = Some(LbaPartition {
                        offset: Extent::Bytes(0),
                        size,
                    })
                }
            }
        }
        "data_cache" => {
            spec.data_cache = Some(
                DataCache::ALL
                    .into_iter()
                    .find(|m| m.name().eq_ignore_ascii_case(value))
                    .ok_or("one of write, read, read-write, off".to_string())?,
            )
        }
        "channels" | "chips" | "dies" | "planes" => {
            let ids = parse_list(value)?;
            let resources = spec
                .resources
                .get_or_insert_with(ResourcePartition::default);
            let slot = match key {
                "channels" => &mut resources.channels,
                "chips" => &mut resources.chips,
                "dies" => &mut resources.dies,
                _ => &mut resources.planes,
            };
            *slot = ids;
        }
        "head" => {
            spec.head = Some(match value.parse::<u64>() {
                Ok(n) if n > 0 => n,
                _ => return Err("a whole number of requests, at least 1".into()),
            })
        }
        "time_scale" => {
            spec.time_scale = Some(match value.parse::<f64>() {
                Ok(f) if f.is_finite() && f > 0.0 && f <= 1e9 => f,
                _ => return Err("a number above 0 (0.001: picoseconds read as nanoseconds)".into()),
            })
        }
        "repeat" => {
            spec.repeat = match value.parse::<u32>() {
                Ok(n) if n > 0 => n,
                _ => return Err("a whole number of passes, at least 1".into()),
            }
        }
        "format" => {
            spec.format = Some(crate::trace::TraceFormat::from_name(value).ok_or_else(|| {
                let names: Vec<&str> = crate::trace::TraceFormat::all().map(|f| f.name()).collect();
                format!("a trace format: one of {}", names.join(", "))
            })?)
        }
        _ => unreachable!("set_key called with a key that is not a flow key: {key}"),
    }
    Ok(())
}

/// Checks what no single key can: a stop after the start.
pub(super) fn check(spec: &FlowSpec) -> Result<(), String> {
    if spec.stop_ns.is_some_and(|stop| stop <= spec.start_ns) {
        return Err(format!("flow {}: stop must come after start", spec.name));
    }
    Ok(())
}

/// Reads `0:2:5`, `0-3` or `0-1:4-5` into the numbers it names, in order, without repeats.
fn parse_list(value: &str) -> Result<Vec<u32>, String> {
    const EXPECTED: &str = "numbers separated by ':' with ranges as a-b, e.g. 0-3:6";
    let mut ids = Vec::new();
    for part in value.split(':') {
        let part = part.trim();
        let (low, high) = match part.split_once('-') {
            Some((low, high)) => (low.trim(), high.trim()),
            None => (part, part),
        };
        let (Ok(low), Ok(high)) = (low.parse::<u32>(), high.parse::<u32>()) else {
            return Err(EXPECTED.into());
        };
        if low > high || high - low >= 1 << 16 {
            return Err(EXPECTED.into());
        }
        for id in low..=high {
            if ids.contains(&id) {
                return Err(format!("{EXPECTED}; {id} is named twice"));
            }
            ids.push(id);
        }
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_argument_splits_its_keys_from_the_generators() {
        let spec = parse_arg(
            2,
            "synthetic:rw=randread,bs=4k,iodepth=8,start=1ms,stop=2s,class=high,channels=0-1:3,\
             data_cache=off",
        )
        .unwrap();
        assert_eq!(spec.workload, "synthetic:rw=randread,bs=4k,iodepth=8");
        assert_eq!(spec.name, "flow2");
        assert_eq!(spec.start_ns, 1_000_000);
        assert_eq!(spec.stop_ns, Some(2_000_000_000));
        assert_eq!(spec.class, PriorityClass::High);
        assert_eq!(spec.iodepth, None);
        assert_eq!(spec.resources.unwrap().channels, vec![0, 1, 3]);
        assert_eq!(spec.data_cache, Some(DataCache::Off));
    }

    #[test]
    fn a_trace_flow_takes_iodepth_and_refuses_other_keys() {
        let spec = parse_arg(0, "t.csv,iodepth=4,lba_offset=50%,queues=3:4").unwrap();
        assert_eq!(spec.workload, "t.csv");
        assert_eq!(spec.iodepth, Some(4));
        assert_eq!(spec.queues, vec![3, 4]);
        assert_eq!(spec.lba.unwrap().offset, Extent::Percent(50.0));
        let e = parse_arg(0, "t.csv,bs=4k").unwrap_err().to_string();
        assert!(e.contains("unknown flow key `bs`"), "{e}");
    }

    #[test]
    fn a_trace_flow_names_its_format_and_its_passes() {
        let spec = parse_arg(0, "t.trace,format=ssdsim,head=10,time_scale=0.001,repeat=3").unwrap();
        // An alias names the format it stands for.
        assert_eq!(spec.format.map(|f| f.name()), Some("mqsim"));
        assert_eq!(
            (spec.head, spec.time_scale, spec.repeat),
            (Some(10), Some(0.001), 3)
        );
        for (item, expected) in [
            ("format=nosuch", "a trace format: one of"),
            ("head=0", "at least 1"),
            ("time_scale=-1", "a number above 0"),
            ("repeat=0", "at least 1"),
        ] {
            let e = parse_arg(0, &format!("t.trace,{item}"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(item) && e.contains(expected), "{item}: {e}");
        }
    }

    #[test]
    fn bad_values_are_refused_naming_the_key() {
        for (arg, wanted) in [
            ("t.csv,class=top", "class=top"),
            ("t.csv,data_cache=all", "data_cache=all"),
            ("t.csv,start=5", "start=5"),
            ("t.csv,start=2s,stop=1s", "stop must come after start"),
            ("t.csv,channels=3-1", "channels=3-1"),
            ("t.csv,lba_size=120%", "lba_size=120%"),
            ("t.csv,name=a,name=b", "twice"),
            (",start=1s", "expected a trace file"),
        ] {
            let e = parse_arg(0, arg).unwrap_err().to_string();
            assert!(e.contains(wanted), "{arg}: {e}");
        }
    }
}
