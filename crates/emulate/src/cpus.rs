//! Which processors the emulator's threads may run on. `--pacing-cpu` gives the pacing thread
//! one processor and keeps storsim's other threads off it: on a machine booted with that
//! processor isolated (`isolcpus=`, `nohz_full=`), the pacing thread then runs without the
//! scheduler tick and without neighbours, which is what a lateness tail of a few microseconds
//! needs.

use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};
use std::io;

/// The processors the calling thread may run on, in increasing order.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // `None` names the calling thread.
    let set = sched_getaffinity(None)?;
    Ok((0..set_size()).filter(|&cpu| set.is_set(cpu)).collect())
}

/// Restricts the calling thread, and the threads it starts from now on, to `cpus`. A processor
/// the system does not have, or one outside the process's cpuset, is refused by the kernel
/// (when none of `cpus` is usable) and reported as an error, as is an empty list.
pub fn restrict_current_thread(cpus: &[usize]) -> io::Result<()> {
    let mut set = CpuSet::new();
    for &cpu in cpus {
        // A CPU set indexes an array and would panic beyond the set's size.
        if cpu >= set_size() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {cpu} is beyond the {} a CPU set can name", set_size()),
            ));
        }
        set.set(cpu);
    }
    if cpus.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no CPU to run on",
        ));
    }
    sched_setaffinity(None, &set)?;
    Ok(())
}

/// How many processors a CPU set can name (CPU_SETSIZE, 1024 on Linux).
fn set_size() -> usize {
    CpuSet::MAX_CPU
}

/// A list of processors as Linux prints them (`0-3,6`).
pub fn cpu_list_text(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut index = 0;
    while index < cpus.len() {
        let first = cpus[index];
        let mut last = first;
        while index + 1 < cpus.len() && cpus[index + 1] == last + 1 {
            index += 1;
            last = cpus[index];
        }
        parts.push(if first == last {
            first.to_string()
        } else {
            format!("{first}-{last}")
        });
        index += 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_as_linux_prints_them() {
        assert_eq!(cpu_list_text(&[]), "");
        assert_eq!(cpu_list_text(&[3]), "3");
        assert_eq!(cpu_list_text(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(cpu_list_text(&[0, 2, 4, 5]), "0,2,4-5");
    }

    /// Runs on a thread of its own, so that the test harness's threads keep their processors.
    #[test]
    fn a_thread_restricted_to_one_processor_reports_only_that_one() {
        std::thread::spawn(|| {
            let allowed = allowed_cpus().unwrap();
            assert!(!allowed.is_empty());
            let last = *allowed.last().unwrap();
            restrict_current_thread(&[last]).unwrap();
            assert_eq!(allowed_cpus().unwrap(), vec![last]);
            let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
            let line = status
                .lines()
                .find(|l| l.starts_with("Cpus_allowed_list:"))
                .unwrap();
            assert_eq!(
                line.split_whitespace().nth(1),
                Some(last.to_string().as_str())
            );
        })
        .join()
        .unwrap();
    }

    #[test]
    fn impossible_processors_are_errors_not_panics() {
        std::thread::spawn(|| {
            let before = allowed_cpus().unwrap();
            assert!(restrict_current_thread(&[]).is_err());
            assert!(restrict_current_thread(&[set_size()]).is_err());
            assert!(restrict_current_thread(&[usize::MAX]).is_err());
            // A processor within the set's range that this machine (almost surely) lacks.
            let absent = set_size() - 1;
            if !before.contains(&absent) {
                assert!(restrict_current_thread(&[absent]).is_err());
            }
            // Refused requests leave the thread where it was.
            assert_eq!(allowed_cpus().unwrap(), before);
        })
        .join()
        .unwrap();
    }
}
