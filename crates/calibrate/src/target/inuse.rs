//! Who else is using a block device or a file: mounts, partitions, holders (device mapper,
//! md), swap, loop devices. Writing to any of these would destroy someone's data.

use std::path::{Path, PathBuf};

/// Everything that uses the block device `rdev` or one of its partitions, as sentences for an
/// error message ("mounted at /mnt", "partition sdb1 mounted at /data", "held by dm-0",
/// "active swap"). Empty when nothing does, or when /proc and /sys cannot tell.
pub fn block_device_users(rdev: u64) -> Vec<String> {
    let mut users = Vec::new();
    let ours = sys_block_dir(rdev);
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for (dev, mount_point) in mounts(&mountinfo) {
        if dev == rdev {
            users.push(format!("mounted at {mount_point}"));
        } else if let (Some(ours), Some(theirs)) = (&ours, sys_block_dir(dev)) {
            if theirs.starts_with(ours) {
                let name = theirs.file_name().unwrap_or_default().to_string_lossy();
                users.push(format!("partition {name} mounted at {mount_point}"));
            }
        }
    }
    if let Some(ours) = &ours {
        for dir in std::iter::once(ours.clone()).chain(partitions(ours)) {
            let name = dir
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            for holder in dir_names(&dir.join("holders")) {
                users.push(format!("{name} held by {holder}"));
            }
        }
    }
    let swaps = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    for line in swaps.lines().skip(1) {
        let Some(path) = line.split_whitespace().next() else {
            continue;
        };
        if let Ok(meta) = std::fs::metadata(unescape(path)) {
            use std::os::unix::fs::MetadataExt;
            if meta.rdev() == rdev && meta.rdev() != 0 {
                users.push(format!("active swap {path}"));
            }
        }
    }
    users
}

/// Loop devices whose backing file is `path` ("backs /dev/loop3"): the file holds a block
/// device's contents, perhaps a mounted file system.
pub fn loop_devices_backed_by(path: &Path) -> Vec<String> {
    let Ok(canonical) = path.canonicalize() else {
        return Vec::new();
    };
    let mut users = Vec::new();
    for name in dir_names(Path::new("/sys/block")) {
        if !name.starts_with("loop") {
            continue;
        }
        let backing = std::fs::read_to_string(format!("/sys/block/{name}/loop/backing_file"))
            .unwrap_or_default();
        let backing = backing.trim_end_matches('\n');
        if !backing.is_empty() && Path::new(backing) == canonical {
            users.push(format!("backs /dev/{name}"));
        }
    }
    users
}

/// (device number, mount point) of every mount in a mountinfo text.
fn mounts(mountinfo: &str) -> Vec<(u64, String)> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            let dev = fields.nth(2)?;
            let mount_point = fields.nth(1)?;
            let (major, minor) = dev.split_once(':')?;
            let dev = libc::makedev(major.parse().ok()?, minor.parse().ok()?);
            Some((dev, unescape(mount_point)))
        })
        .collect()
}

/// The kernel escapes space, tab, newline and backslash in mount points as `\ooo`.
fn unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(u8::is_ascii_digit));
        match (bytes[i], octal) {
            (b'\\', Some(d)) if d.iter().all(|b| *b < b'8') => {
                let value = d.iter().fold(0u32, |v, b| v * 8 + (b - b'0') as u32);
                out.push(value as u8);
                i += 4;
            }
            _ => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The device's directory in sysfs (`/sys/devices/.../block/sdb`, a partition's is inside
/// its disk's), or None when sysfs does not know the number.
fn sys_block_dir(rdev: u64) -> Option<PathBuf> {
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    Path::new(&format!("/sys/dev/block/{major}:{minor}"))
        .canonicalize()
        .ok()
}

/// Partition directories of a disk's sysfs directory.
fn partitions(disk: &Path) -> Vec<PathBuf> {
    dir_names(disk)
        .into_iter()
        .map(|n| disk.join(n))
        .filter(|p| p.join("partition").exists())
        .collect()
}

fn dir_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_give_device_numbers_and_unescaped_mount_points() {
        let text = "36 35 98:0 /mnt1 /mnt/my\\040disk rw,noatime master:1 - ext3 /dev/root rw\n\
                    37 35 8:17 / /data rw - ext4 /dev/sdb1 rw\n\
                    garbage\n";
        assert_eq!(
            mounts(text),
            vec![
                (libc::makedev(98, 0), "/mnt/my disk".to_string()),
                (libc::makedev(8, 17), "/data".to_string())
            ]
        );
    }

    #[test]
    fn unescape_leaves_other_backslashes_alone() {
        assert_eq!(unescape("a\\134b"), "a\\b");
        assert_eq!(unescape("a\\9b"), "a\\9b");
        assert_eq!(unescape("end\\04"), "end\\04");
    }
}
