//! fio job files as workloads: `[global]` and job sections read as fio reads them, each job
//! turned into storsim flows (a synthetic generator spec and the flow's keys), one flow per
//! `numjobs` clone, a `stonewall` starting a new phase.
//!
//! ```
//! use storsim_workload::fiojob;
//!
//! let job = fiojob::parse(
//!     "[global]\nioengine=libaio\nbs=4k\n[writer]\nrw=randwrite\nsize=64m\nnumjobs=2\n",
//!     "job.fio",
//! )?;
//! assert_eq!(job.flows.len(), 2);
//! assert_eq!(job.flows[1].name, "writer.1");
//! assert_eq!(job.notes, vec!["job.fio: accepted without effect in simulation: ioengine"]);
//! # Ok::<(), storsim_workload::WorkloadError>(())
//! ```
//!
//! Every option is in one table ([`OPTIONS`]): mapped, accepted and named in the one note
//! (no meaning in simulation: the engine, the file, buffering, logs), or refused with the
//! reason; an option not in it is an error naming the file, the line and the option.
//! docs/workloads/fio-jobs.md is the user's guide.

mod ini;
mod job;
mod options;
mod value;

pub use options::{find, FioOption, Treatment, OPTIONS};

use crate::flows::FlowSpec;
use crate::WorkloadError;
use job::{Given, Job};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// A job file read: its flows in the file's order (a job's clones one after the other), and
/// what the run should say about it.
#[derive(Clone, Debug, PartialEq)]
pub struct FioJobFile {
    /// One flow per job clone; a job after a `stonewall` is in a later phase.
    pub flows: Vec<FlowSpec>,
    /// At most one line: the options accepted without effect in simulation.
    pub notes: Vec<String>,
}

/// Reads the job file `path`.
pub fn read_file(path: &Path) -> Result<FioJobFile, WorkloadError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| WorkloadError::Io {
        source: name.clone(),
        error,
    })?;
    parse(&text, &name)
}

/// Reads a job file's `text`; `name` stands for the file in messages.
pub fn parse(text: &str, name: &str) -> Result<FioJobFile, WorkloadError> {
    let at = |line: usize, message: String| WorkloadError::Spec {
        message: format!("{name}: line {line}: {message}"),
    };
    let sections = ini::sections(text).map_err(|(line, message)| at(line, message))?;
    let mut global: BTreeMap<&'static str, Given> = BTreeMap::new();
    let mut noted: Vec<&'static str> = Vec::new();
    let mut flows: Vec<FlowSpec> = Vec::new();
    let mut phase = 0u32;
    let mut jobs = 0usize;
    for section in &sections {
        let mut options = if section.is_global() {
            std::mem::take(&mut global)
        } else {
            global.clone()
        };
        for entry in &section.entries {
            let Some(option) = find(&entry.key) else {
                return Err(at(
                    entry.line,
                    format!(
                        "unknown option `{}` (docs/workloads/fio-jobs.md lists the options \
                         storsim reads)",
                        entry.key
                    ),
                ));
            };
            match option.treatment {
                Treatment::Mapped => {}
                Treatment::Noted => {
                    if !noted.contains(&option.name()) {
                        noted.push(option.name());
                    }
                }
                Treatment::Refused(why) => {
                    return Err(at(
                        entry.line,
                        format!("{}: not simulated: {why}", entry.key),
                    ));
                }
            }
            options.insert(
                option.name(),
                Given {
                    line: entry.line,
                    value: entry.value.clone(),
                },
            );
        }
        if section.is_global() {
            global = options;
            continue;
        }
        let job_name = match options.get("name").and_then(|g| g.value.clone()) {
            Some(name) if !name.is_empty() => name,
            _ => section.name.clone(),
        };
        let job = Job {
            name: job_name,
            line: section.line,
            options,
        };
        // A stonewall makes this job wait for every job before it: a new phase.
        let waits = job.options.contains_key("stonewall")
            && job.options["stonewall"].value.as_deref() != Some("0");
        if waits && jobs > 0 {
            phase += 1;
        }
        let (job_flows, unrepeatable) =
            job::flows(&job, phase).map_err(|fault| at(fault.line, fault.message))?;
        if unrepeatable && !noted.contains(&"randrepeat") {
            noted.push("randrepeat");
        }
        for mut flow in job_flows {
            flow.name = unique_name(&flows, &flow.name);
            flows.push(flow);
        }
        jobs += 1;
    }
    if flows.is_empty() {
        return Err(WorkloadError::Spec {
            message: format!("{name}: no job: a job file needs a [NAME] section besides [global]"),
        });
    }
    let notes = if noted.is_empty() {
        Vec::new()
    } else {
        vec![format!(
            "{name}: accepted without effect in simulation: {}",
            noted.join(", ")
        )]
    };
    Ok(FioJobFile { flows, notes })
}

/// `name`, or `name#N` with the first N that no flow in `flows` has: fio lets two jobs share
/// a name, storsim's flows are told apart by theirs.
fn unique_name(flows: &[FlowSpec], name: &str) -> String {
    let taken = |candidate: &str| flows.iter().any(|f| f.name == candidate);
    if !taken(name) {
        return name.to_string();
    }
    (2..)
        .map(|n| format!("{name}#{n}"))
        .find(|candidate| !taken(candidate))
        .expect("some suffix is free")
}

/// Whether `path` names a job file: its name ends in `.fio`, or it starts as one
/// ([`starts_as_job_file`]).
pub fn is_job_file(path: &Path) -> bool {
    if has_job_file_name(path) {
        return true;
    }
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = Vec::new();
    if file.take(4096).read_to_end(&mut head).is_err() {
        return false;
    }
    starts_as_job_file(&head)
}

/// Whether `path`'s name says it is a job file: it ends in `.fio`.
pub fn has_job_file_name(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("fio"))
}

/// Whether a file starting with `head` is a job file: within its first 4 KiB, its first line
/// that is neither blank nor a comment is a `[NAME]` section header and the next is an option
/// fio has (`rw=read`, `time_based`). No trace format starts so, and a flow file's `[[flow]]`
/// is not a section header.
pub fn starts_as_job_file(head: &[u8]) -> bool {
    let head = &head[..head.len().min(4096)];
    let Ok(text) = std::str::from_utf8(head) else {
        return false;
    };
    let mut lines = text
        .lines()
        .map(|l| l.find([';', '#']).map_or(l, |c| &l[..c]).trim())
        .filter(|l| !l.is_empty());
    let is_header = lines.next().is_some_and(|l| {
        l.starts_with('[') && !l.starts_with("[[") && l.ends_with(']') && l.len() > 2
    });
    let option = lines
        .next()
        .map(|l| l.split_once('=').map_or(l, |(k, _)| k).trim());
    is_header && option.is_some_and(|key| find(key).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flows::{Extent, LbaPartition};
    use crate::synthetic::{self, AccessPattern, AddressDist, BlockSize, Limit, Load, OpMix};

    fn read(text: &str) -> Result<FioJobFile, String> {
        parse(text, "j.fio").map_err(|e| e.to_string())
    }

    fn spec(flow: &FlowSpec) -> synthetic::SyntheticSpec {
        synthetic::parse(&flow.workload).unwrap()
    }

    #[test]
    fn global_options_reach_the_jobs_after_them_and_a_job_overrides_them() {
        let file = read(
            "[global]\nbs=8k\nrw=randread\n\
             [a]\nsize=1m\n\
             [global]\niodepth=4\n\
             [b]\nbs=16k\n",
        )
        .unwrap();
        let (a, b) = (spec(&file.flows[0]), spec(&file.flows[1]));
        assert_eq!(a.block_size, BlockSize::Fixed { bytes: 8192 });
        assert_eq!(
            a.load,
            Load::Closed {
                iodepth: 1,
                think_ns: 0
            }
        );
        assert_eq!(a.limit, Limit::Bytes { bytes: 1 << 20 });
        // fio's random map: one size, no norandommap, so each block once per pass.
        assert!(matches!(
            a.pattern,
            AccessPattern::Random {
                dist: AddressDist::Permutation,
                ..
            }
        ));
        assert_eq!(b.block_size, BlockSize::Fixed { bytes: 16384 });
        assert_eq!(
            b.load,
            Load::Closed {
                iodepth: 4,
                think_ns: 0
            }
        );
        // No size: one pass over the whole device.
        assert_eq!(b.limit, Limit::Span);
        assert_eq!(file.flows[1].lba, None);
    }

    #[test]
    fn options_map_to_the_spec_and_the_flow() {
        let file = read(
            "[mix]\nrw=randrw\nrwmixread=70\nbssplit=4k/50:8k/50,64k\niodepth=8\n\
             thinktime=20\nrandom_distribution=zipf:1.1\npercentage_random=90\nfsync=4\n\
             offset=1g\nsize=2g\nio_size=512m\nnumber_ios=1000\nruntime=2\nstartdelay=10ms\n\
             loops=3\nrandseed=42\n",
        )
        .unwrap();
        let flow = &file.flows[0];
        let s = spec(flow);
        assert_eq!(s.ops, OpMix::Mixed { read_percent: 70 });
        assert!(matches!(s.block_size, BlockSize::SplitPerOp { .. }));
        assert_eq!(
            s.load,
            Load::Closed {
                iodepth: 8,
                think_ns: 20_000
            }
        );
        assert_eq!(
            s.pattern,
            AccessPattern::Random {
                random_percent: 90,
                dist: AddressDist::Zipf { theta: 1.1 },
                align_bytes: None
            }
        );
        assert_eq!(s.fsync_writes, Some(4));
        assert_eq!(s.limit, Limit::Bytes { bytes: 512 << 20 });
        assert_eq!(s.seed, Some(42));
        assert_eq!(
            flow.lba,
            Some(LbaPartition {
                offset: Extent::Bytes(1 << 30),
                size: Some(Extent::Bytes(2 << 30))
            })
        );
        assert_eq!(flow.head, Some(1000));
        assert_eq!(
            (flow.start_ns, flow.stop_ns),
            (10_000_000, Some(2_010_000_000))
        );
        assert_eq!(flow.repeat, 3);
    }

    #[test]
    fn trim_jobs_take_the_trim_part_of_their_sizes() {
        let file = read(
            "[t]\nrw=randtrim\nbs=4k,8k,64k\n[tw]\nrw=trimwrite\nbs=16k\nfsync=4\n\
             [tr]\nrw=trim\nfsync=4\n",
        )
        .unwrap();
        let (t, tw, tr) = (
            spec(&file.flows[0]),
            spec(&file.flows[1]),
            spec(&file.flows[2]),
        );
        assert_eq!(t.ops, OpMix::Trim);
        assert!(matches!(t.pattern, AccessPattern::Random { .. }));
        assert_eq!(t.block_size, BlockSize::Fixed { bytes: 65536 });
        assert_eq!(
            (tw.ops, tw.pattern),
            (OpMix::TrimWrite, AccessPattern::Sequential)
        );
        // fio syncs neither a job that only trims nor a trim-and-write job.
        assert_eq!((tw.fsync_writes, tr.fsync_writes), (None, None));
    }

    #[test]
    fn number_ios_with_one_size_is_a_count_of_reads_and_writes() {
        let file = read("[n]\nrw=write\nbs=4k\nsize=1m\nfsync=8\nnumber_ios=20\n").unwrap();
        // Not a head, which would count the flushes too.
        assert_eq!(file.flows[0].head, None);
        assert_eq!(spec(&file.flows[0]).limit, Limit::Requests { count: 20 });
        // A count above the amount's is the amount's.
        let file = read("[n]\nrw=write\nbs=4k\nsize=1m\nnumber_ios=5000\n").unwrap();
        assert_eq!(spec(&file.flows[0]).limit, Limit::Requests { count: 256 });
    }

    #[test]
    fn clones_stonewalls_and_rates_become_flows_phases_and_open_loops() {
        let file = read(
            "[w]\nrw=write\nbs=64k\nnumjobs=3\nsize=10%\noffset_increment=10%\nrandseed=7\n\
             [r]\nstonewall\nrw=read\nrate_iops=500\ntime_based\nruntime=1s\n\
             [r]\nrw=read\nrate=1m\nrate_process=poisson\nsize=1m\n",
        )
        .unwrap();
        let names: Vec<&str> = file.flows.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["w.0", "w.1", "w.2", "r", "r#2"]);
        let phases: Vec<u32> = file.flows.iter().map(|f| f.phase).collect();
        assert_eq!(phases, [0, 0, 0, 1, 1]);
        let offsets: Vec<Extent> = file.flows[..3]
            .iter()
            .map(|f| f.lba.unwrap().offset)
            .collect();
        assert_eq!(
            offsets,
            [
                Extent::Percent(0.0),
                Extent::Percent(10.0),
                Extent::Percent(20.0)
            ]
        );
        let seeds: Vec<Option<u64>> = file.flows[..3].iter().map(|f| spec(f).seed).collect();
        assert_eq!(seeds, [Some(7), Some(8), Some(9)]);
        assert_eq!(spec(&file.flows[0]).limit, Limit::Span);
        let timed = spec(&file.flows[3]);
        assert_eq!(
            timed.load,
            Load::Open {
                iops: 500,
                arrival: synthetic::Arrival::Fixed
            }
        );
        assert_eq!(
            timed.limit,
            Limit::Duration {
                duration_ns: 1_000_000_000
            }
        );
        assert_eq!(file.flows[3].stop_ns, None);
        // 1 MiB/s of 4 KiB requests is 256 a second.
        assert_eq!(
            spec(&file.flows[4]).load,
            Load::Open {
                iops: 256,
                arrival: synthetic::Arrival::Poisson
            }
        );
    }

    #[test]
    fn meaningless_options_are_named_in_one_note() {
        let file = read(
            "[global]\nioengine=libaio\ndirect=1\n[a]\nfilename=/dev/nvme0n1\nioengine=io_uring\n\
             randrepeat=0\n",
        )
        .unwrap();
        assert_eq!(
            file.notes,
            ["j.fio: accepted without effect in simulation: ioengine, direct, filename, randrepeat"]
        );
        assert!(read("[a]\nrw=read\n").unwrap().notes.is_empty());
    }

    #[test]
    fn refused_job_files_name_the_file_the_line_and_the_option() {
        for (text, wanted) in [
            (
                "[a]\nrw=read\nblocksizes=4k\n",
                "line 3: unknown option `blocksizes`",
            ),
            ("[a]\nramp_time=5\n", "line 2: ramp_time: not simulated"),
            (
                "[a]\nzonemode=zbd\n",
                "line 2: zonemode=zbd needs a zoned device",
            ),
            ("[a]\nrw=trimread\n", "line 2: rw=trimread: expected read"),
            ("[a]\nrw=randread:8\n", "line 2: rw=randread:8"),
            ("[a]\nbs=4q\n", "line 2: bs=4q: expected"),
            ("[a]\nbssplit=4k/60:8k/60\n", "line 2: bssplit=4k/60:8k/60"),
            (
                "[a]\nbsrange=4k-6k\n",
                "line 2: bsrange=4k-6k: expected a high size",
            ),
            (
                "[a]\ntime_based\n",
                "line 2: time_based: expected a runtime",
            ),
            (
                "[a]\nrw=randread\nrandom_distribution=pareto:0.9\n",
                "line 3: random_distribution",
            ),
            (
                "[a]\nrw=randrw\nrate_iops=100,200\n",
                "line 3: rate_iops=100,200",
            ),
            ("[a]\niodepth\n", "line 2: iodepth: expected iodepth=VALUE"),
            ("[global]\nrw=read\n", "no job"),
        ] {
            let e = read(text).unwrap_err();
            assert!(e.starts_with("j.fio: "), "{e}");
            assert!(e.contains(wanted), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_job_file_is_recognised_by_its_name_or_its_first_lines() {
        assert!(starts_as_job_file(b"; fio\n\n[job1]\nrw=randread\n"));
        assert!(starts_as_job_file(b"[global]\ntime_based\n[a]\n"));
        assert!(!starts_as_job_file(b"[[flow]]\nworkload = \"x\"\n"));
        assert!(!starts_as_job_file(b"[section]\ncolor=blue\n"));
        assert!(!starts_as_job_file(
            b"128166372003061629,hm,0,Read,0,4096,100\n"
        ));
        assert!(has_job_file_name(Path::new("dir/x.FIO")));
        assert!(!has_job_file_name(Path::new("x.fio.csv")));
    }

    #[test]
    fn every_option_is_documented() {
        let page = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/workloads/fio-jobs.md"),
        )
        .unwrap();
        for option in OPTIONS {
            for name in option.names {
                assert!(
                    page.contains(&format!("`{name}`")),
                    "docs/workloads/fio-jobs.md does not name `{name}`"
                );
            }
        }
    }
}
