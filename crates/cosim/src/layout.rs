//! Where a file's bytes live on the simulated device: a deterministic extent layout.
//!
//! The device's address space is cut into extents of `extent_bytes` (1 MiB by default). The
//! image file, when there is one, covers the start of the device one to one (file offset =
//! device offset). Files under the directory get extents as a simple file system would: files
//! that exist when the run starts are laid out first, one after another in the byte order of
//! their paths, each on consecutive extents; after that, the first access to a part of a file
//! that has no extent yet takes the lowest free extent, extent by extent in ascending file
//! offset. Truncation, hole punching and unlinking return whole extents to the free pool. The
//! layout therefore depends only on the order of accesses, never on inode numbers or timing.

use std::collections::{BTreeMap, BTreeSet};

/// No extent yet.
const NONE: u64 = u64::MAX;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// Every extent of the device is in use.
    Full,
    /// A range of the image file beyond the device's end.
    BeyondDevice,
    /// A file id the layout never handed out.
    UnknownFile,
}

struct FileMap {
    /// The image file maps one to one and owns no extents of its own.
    image: bool,
    /// Device extent of each file extent, or `NONE`.
    extents: Vec<u64>,
}

pub struct Layout {
    extent_bytes: u64,
    capacity_bytes: u64,
    total_extents: u64,
    files: Vec<FileMap>,
    by_path: BTreeMap<Vec<u8>, u64>,
    /// Extents returned by truncation or unlinking, handed out lowest first.
    free: BTreeSet<u64>,
    /// Extents from here on were never used.
    next_fresh: u64,
}

impl Layout {
    /// `extent_bytes` must be a positive multiple of 512.
    pub fn new(capacity_bytes: u64, extent_bytes: u64) -> Layout {
        assert!(extent_bytes > 0 && extent_bytes & 511 == 0);
        Layout {
            extent_bytes,
            capacity_bytes,
            total_extents: capacity_bytes / extent_bytes,
            files: Vec::new(),
            by_path: BTreeMap::new(),
            free: BTreeSet::new(),
            next_fresh: 0,
        }
    }

    /// Puts the image file at the start of the device. Must come before any other file.
    pub fn add_image(&mut self, path: &[u8], size_bytes: u64) -> Result<u64, LayoutError> {
        if size_bytes > self.capacity_bytes {
            return Err(LayoutError::BeyondDevice);
        }
        self.next_fresh = size_bytes.div_ceil(self.extent_bytes);
        Ok(self.insert(path, true))
    }

    /// Lays out a file that exists at the start of the run on consecutive extents.
    pub fn add_existing(&mut self, path: &[u8], size_bytes: u64) -> Result<u64, LayoutError> {
        let id = self.file(path);
        let n = size_bytes.div_ceil(self.extent_bytes);
        if n > 0 {
            self.map(id, 0, n * self.extent_bytes)?;
        }
        Ok(id)
    }

    fn insert(&mut self, path: &[u8], image: bool) -> u64 {
        let id = self.files.len() as u64;
        self.files.push(FileMap {
            image,
            extents: Vec::new(),
        });
        self.by_path.insert(path.to_vec(), id);
        id
    }

    /// The id of the file at `path`, created (with no extents) if the path is new.
    pub fn file(&mut self, path: &[u8]) -> u64 {
        match self.by_path.get(path) {
            Some(&id) => id,
            None => self.insert(path, false),
        }
    }

    pub fn files(&self) -> usize {
        self.files.len()
    }

    /// Bytes of the device holding file data (the image counts whole).
    pub fn allocated_bytes(&self) -> u64 {
        (self.next_fresh - self.free.len() as u64) * self.extent_bytes
    }

    fn take_extent(&mut self) -> Result<u64, LayoutError> {
        if let Some(e) = self.free.pop_first() {
            return Ok(e);
        }
        if self.next_fresh < self.total_extents {
            self.next_fresh += 1;
            return Ok(self.next_fresh - 1);
        }
        Err(LayoutError::Full)
    }

    /// The device ranges holding bytes [`offset`, `offset + len`) of file `id`, in file order,
    /// with neighbours merged, extents taken for any part that had none. Ranges are widened
    /// to whole 512-byte sectors. On `Full`, the extents taken so far stay with the file.
    pub fn map(&mut self, id: u64, offset: u64, len: u64) -> Result<Vec<(u64, u64)>, LayoutError> {
        let file = self
            .files
            .get(id as usize)
            .ok_or(LayoutError::UnknownFile)?;
        let start = offset & !511;
        let end = offset
            .checked_add(len)
            .and_then(|e| e.checked_add(511))
            .ok_or(LayoutError::BeyondDevice)?
            & !511;
        let mut out: Vec<(u64, u64)> = Vec::new();
        if file.image {
            if end > self.capacity_bytes {
                return Err(LayoutError::BeyondDevice);
            }
            if end > start {
                out.push((start, end - start));
            }
            return Ok(out);
        }
        let mut at = start;
        while at < end {
            let index = (at / self.extent_bytes) as usize;
            let within = at % self.extent_bytes;
            let piece = (self.extent_bytes - within).min(end - at);
            if self.files[id as usize].extents.len() <= index {
                self.files[id as usize].extents.resize(index + 1, NONE);
            }
            let mut extent = self.files[id as usize].extents[index];
            if extent == NONE {
                extent = self.take_extent()?;
                self.files[id as usize].extents[index] = extent;
            }
            let dev = extent * self.extent_bytes + within;
            match out.last_mut() {
                Some((d, l)) if *d + *l == dev => *l += piece,
                _ => out.push((dev, piece)),
            }
            at += piece;
        }
        Ok(out)
    }

    /// Extents of file `id` wholly inside [`offset`, `offset + len`) go back to the pool.
    pub fn punch(&mut self, id: u64, offset: u64, len: u64) {
        let e = self.extent_bytes;
        let Some(file) = self.files.get_mut(id as usize) else {
            return;
        };
        if file.image {
            return;
        }
        let first = offset.div_ceil(e);
        let last = offset.saturating_add(len) / e;
        for i in first..last.min(file.extents.len() as u64) {
            let slot = &mut file.extents[i as usize];
            if *slot != NONE {
                self.free.insert(*slot);
                *slot = NONE;
            }
        }
    }

    /// File `id` now ends at `len` bytes: extents wholly beyond go back to the pool.
    pub fn truncate(&mut self, id: u64, len: u64) {
        self.punch(id, len, u64::MAX - len);
    }

    /// Frees everything of the file at `path` and forgets the name (descriptors still open on
    /// it keep the id and get new extents if they write again).
    pub fn unlink(&mut self, path: &[u8]) {
        if let Some(id) = self.by_path.remove(path) {
            self.truncate(id, 0);
        }
    }

    /// The file at `from` is now at `to`; a file that was at `to` is replaced and freed.
    pub fn rename(&mut self, from: &[u8], to: &[u8]) {
        let Some(id) = self.by_path.remove(from) else {
            return;
        };
        if let Some(old) = self.by_path.insert(to.to_vec(), id) {
            if old != id {
                self.truncate(old, 0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn existing_files_are_consecutive_and_new_data_takes_the_lowest_free_extent() {
        let mut l = Layout::new(16 * MIB, MIB);
        let a = l.add_existing(b"/d/a", 2 * MIB + 1).unwrap();
        let b = l.add_existing(b"/d/b", 10).unwrap();
        assert_eq!(l.map(a, 0, 4096).unwrap(), vec![(0, 4096)]);
        assert_eq!(l.map(a, 2 * MIB, 512).unwrap(), vec![(2 * MIB, 512)]);
        assert_eq!(l.map(b, 0, 10).unwrap(), vec![(3 * MIB, 512)]);
        // A range spanning a's second and third extents is contiguous on the device.
        assert_eq!(l.map(a, MIB + 100, MIB).unwrap(), vec![(MIB, MIB + 512)]);
        let c = l.file(b"/d/c");
        assert_eq!(l.map(c, 5 * MIB, 4096).unwrap(), vec![(4 * MIB, 4096)]);
        l.unlink(b"/d/a");
        assert_eq!(l.allocated_bytes(), 2 * MIB);
        // The freed extents come back lowest first.
        assert_eq!(l.map(c, 0, 2 * MIB).unwrap(), vec![(0, 2 * MIB)]);
        assert_eq!(
            l.map(c, 2 * MIB - 512, MIB).unwrap(),
            vec![(2 * MIB - 512, MIB)]
        );
        // c's fifth extent is taken now, after its sixth: a range across both jumps back.
        assert_eq!(
            l.map(c, 5 * MIB - 512, 1024).unwrap(),
            vec![(6 * MIB - 512, 512), (4 * MIB, 512)]
        );
    }

    #[test]
    fn the_image_maps_one_to_one_and_the_directory_follows_it() {
        let mut l = Layout::new(8 * MIB, MIB);
        let img = l.add_image(b"/i.img", 3 * MIB - 7).unwrap();
        let f = l.file(b"/d/f");
        assert_eq!(l.map(img, 1000, 30).unwrap(), vec![(512, 1024)]);
        assert_eq!(l.map(f, 0, 1).unwrap(), vec![(3 * MIB, 512)]);
        assert_eq!(
            l.map(img, 8 * MIB - 512, 1024),
            Err(LayoutError::BeyondDevice)
        );
        assert_eq!(
            Layout::new(MIB, MIB).add_image(b"/big", 2 * MIB),
            Err(LayoutError::BeyondDevice)
        );
    }

    #[test]
    fn a_full_device_says_so_and_truncation_gives_space_back() {
        let mut l = Layout::new(2 * MIB, MIB);
        let f = l.file(b"/d/f");
        l.map(f, 0, 2 * MIB).unwrap();
        let g = l.file(b"/d/g");
        assert_eq!(l.map(g, 0, 1), Err(LayoutError::Full));
        l.truncate(f, MIB);
        assert_eq!(l.map(g, 0, 1).unwrap(), vec![(MIB, 512)]);
        l.punch(f, 1, MIB);
        // Only whole extents are punched: [1, MIB + 1) holds none.
        assert_eq!(l.allocated_bytes(), 2 * MIB);
        l.rename(b"/d/g", b"/d/f");
        assert_eq!(l.allocated_bytes(), MIB);
        assert_eq!(l.file(b"/d/f"), g);
        assert_eq!(l.map(99, 0, 1), Err(LayoutError::UnknownFile));
        assert_eq!(l.map(g, u64::MAX - 10, 100), Err(LayoutError::BeyondDevice));
    }
}
