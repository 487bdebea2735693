//! A flow's records moved into its LBA partition.

use crate::{Record, Workload, WorkloadError};

/// `workload` with every record's address moved into the `len_bytes` bytes at `offset_bytes`:
/// an address inside the first `len_bytes` moves by `offset_bytes`; one past them is first
/// folded into them (modulo the length, pulled back to end inside it), as MQSim folds a
/// trace into its flow's range. A record longer than the partition is an error naming it.
/// Flushes keep their address.
pub fn map_into(mut workload: Workload, offset_bytes: u64, len_bytes: u64) -> Workload {
    let source = workload.name.clone();
    let origin = workload.origin;
    let records = workload.records;
    workload.records = Box::new(records.map(move |item| {
        let mut record: Record = item?;
        if record.op == storsim_core::Op::Flush {
            return Ok(record);
        }
        if record.len_bytes > len_bytes {
            return Err(WorkloadError::Malformed {
                source: source.clone(),
                position: origin.describe(record.origin),
                message: format!(
                    "a request of {} bytes does not fit the flow's LBA partition of {len_bytes} bytes",
                    record.len_bytes
                ),
            });
        }
        let mut offset = record.offset_bytes % len_bytes;
        if offset + record.len_bytes > len_bytes {
            offset = (len_bytes - record.len_bytes) / 512 * 512;
        }
        record.offset_bytes = offset_bytes + offset;
        Ok(record)
    }));
    workload
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Origin, Pacing};
    use storsim_core::Op;

    fn workload(records: Vec<(u64, u64)>) -> Workload {
        let records = records
            .into_iter()
            .enumerate()
            .map(|(i, (offset, len))| Record {
                timestamp_ns: i as u64,
                op: Op::Read,
                offset_bytes: offset,
                len_bytes: len,
                dev: 0,
                think_ns: 0,
                origin: i as u64,
            })
            .collect();
        Workload::from_records("w", records, Pacing::Open, Origin::Index)
    }

    #[test]
    fn records_land_inside_the_partition() {
        let mapped = map_into(
            workload(vec![(0, 4096), (8192, 4096), (12288, 8192)]),
            1 << 20,
            16384,
        );
        let offsets: Vec<u64> = mapped.records.map(|r| r.unwrap().offset_bytes).collect();
        // The second moves as it is; the third, past the partition's end, is pulled back.
        assert_eq!(offsets, vec![1 << 20, (1 << 20) + 8192, (1 << 20) + 8192]);
        let mut too_long = map_into(workload(vec![(0, 32768)]), 0, 16384);
        let e = too_long.records.next().unwrap().unwrap_err().to_string();
        assert!(
            e.contains("request 0") && e.contains("LBA partition"),
            "{e}"
        );
    }
}
