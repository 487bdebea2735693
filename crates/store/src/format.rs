//! The on-disk format of the file backing: the two headers, the journal entries and the
//! checksum that protects them. docs/store.md describes the same layout for readers of the files.

use crate::layout::mix64;
use crate::BLOCK_BYTES;

/// Magic of the data file (`PATH`).
pub(crate) const DATA_MAGIC: [u8; 8] = *b"storsimD";
/// Magic of the map journal (`PATH.map`).
pub(crate) const MAP_MAGIC: [u8; 8] = *b"storsimM";
/// Format version written and the only one accepted.
pub(crate) const VERSION: u32 = 1;
/// Bytes of the header at the start of the map journal. The data file's header has the same
/// layout but is padded to a whole block so that slots stay 4 KiB aligned in the file.
pub(crate) const HEADER_BYTES: usize = 64;
/// Where slot 0 begins in the data file.
pub(crate) const DATA_HEADER_BYTES: u64 = BLOCK_BYTES;
/// Bytes of one journal entry.
pub(crate) const ENTRY_BYTES: usize = 32;

/// Seed of the header checksum; distinct from entry seeds so a header can never pass as an entry.
const HEADER_SEED: u64 = 0x5354_4f52_5349_4d48;

/// A 64-bit checksum: the bytes are taken as little-endian 64-bit words (the last one padded
/// with zeros), each folded in as `h = (rotl(h, 23) ^ w) * 0x9e3779b97f4a7c15`, and the result
/// finished with splitmix64's mix. Not cryptographic: it detects torn and stray writes, it does
/// not resist forgery.
pub(crate) fn checksum(seed: u64, bytes: &[u8]) -> u64 {
    let mut h = mix64(seed ^ bytes.len() as u64);
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("chunks_exact yields 8 bytes"));
        h = (h.rotate_left(23) ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(23) ^ u64::from_le_bytes(last)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    mix64(h)
}

/// The identifying fields of both headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub magic: [u8; 8],
    pub version: u32,
    pub block_bytes: u32,
    pub size_bytes: u64,
    /// A random number drawn when the store is created. The data file and its map carry the same
    /// id, so a map from another store is refused, and it seeds every entry checksum, so an
    /// entry copied from another store never verifies.
    pub store_id: u64,
}

/// What is wrong with a header, for the error message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HeaderError {
    BadMagic,
    Version(u32),
    Checksum,
    BlockBytes(u32),
}

impl std::fmt::Display for HeaderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeaderError::BadMagic => write!(f, "not a storsim store file (wrong magic bytes)"),
            HeaderError::Version(v) => write!(
                f,
                "store format version {v} is not supported (this build reads version {VERSION})"
            ),
            HeaderError::Checksum => write!(f, "the header is corrupt (checksum mismatch)"),
            HeaderError::BlockBytes(b) => write!(
                f,
                "the store uses {b}-byte blocks, this build supports only {BLOCK_BYTES}"
            ),
        }
    }
}

impl Header {
    pub fn new(magic: [u8; 8], size_bytes: u64, store_id: u64) -> Header {
        Header {
            magic,
            version: VERSION,
            block_bytes: BLOCK_BYTES as u32,
            size_bytes,
            store_id,
        }
    }

    /// Layout: magic (8), version u32, block size u32, device size u64, store id u64, zeros up to
    /// byte 56, checksum u64 of bytes 0..56. All integers little-endian.
    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[0..8].copy_from_slice(&self.magic);
        b[8..12].copy_from_slice(&self.version.to_le_bytes());
        b[12..16].copy_from_slice(&self.block_bytes.to_le_bytes());
        b[16..24].copy_from_slice(&self.size_bytes.to_le_bytes());
        b[24..32].copy_from_slice(&self.store_id.to_le_bytes());
        let sum = checksum(HEADER_SEED, &b[0..56]);
        b[56..64].copy_from_slice(&sum.to_le_bytes());
        b
    }

    /// Checks in the order that gives the most useful message: a file that is not a store at all
    /// is reported as such rather than as a bad checksum.
    pub fn decode(b: &[u8; HEADER_BYTES], magic: [u8; 8]) -> Result<Header, HeaderError> {
        if b[0..8] != magic {
            return Err(HeaderError::BadMagic);
        }
        let version = u32::from_le_bytes(b[8..12].try_into().expect("4 bytes"));
        if version != VERSION {
            return Err(HeaderError::Version(version));
        }
        let sum = u64::from_le_bytes(b[56..64].try_into().expect("8 bytes"));
        if checksum(HEADER_SEED, &b[0..56]) != sum || b[32..56].iter().any(|&x| x != 0) {
            return Err(HeaderError::Checksum);
        }
        let block_bytes = u32::from_le_bytes(b[12..16].try_into().expect("4 bytes"));
        if u64::from(block_bytes) != BLOCK_BYTES {
            return Err(HeaderError::BlockBytes(block_bytes));
        }
        Ok(Header {
            magic,
            version,
            block_bytes,
            size_bytes: u64::from_le_bytes(b[16..24].try_into().expect("8 bytes")),
            store_id: u64::from_le_bytes(b[24..32].try_into().expect("8 bytes")),
        })
    }
}

/// One journal entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// Device block `block` now lives in slot `slot`.
    Map { block: u64, slot: u64 },
    /// Device block `block`, which lived in slot `slot`, is unallocated again (trim or
    /// write-zeroes of the whole block); the slot is free.
    Unmap { block: u64, slot: u64 },
    /// Ends a batch: the `count` entries before this one were made durable by one flush, together
    /// with the data they point to. Recovery applies only whole batches.
    Commit { count: u64 },
}

const KIND_MAP: u32 = 1;
const KIND_UNMAP: u32 = 2;
const KIND_COMMIT: u32 = 3;

/// Why an entry could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EntryError {
    /// The checksum does not match: a torn or stray write, or damage.
    Checksum,
    /// The checksum matches but the kind is unknown (written by a newer format).
    Kind(u32),
}

/// The checksum seed of the entry at `index`: folding in the index means an entry that landed at
/// the wrong position, or a stale one left from an older journal, does not verify.
fn entry_seed(store_id: u64, index: u64) -> u64 {
    mix64(store_id ^ mix64(index ^ 0x454e_5452_5900_0000))
}

impl Entry {
    /// Layout: kind u32, zero u32, a u64, b u64, checksum u64 of bytes 0..24 seeded with the store
    /// id and the entry's index. Map/Unmap: a = device block, b = slot. Commit: a = count, b = 0.
    pub fn encode(&self, store_id: u64, index: u64) -> [u8; ENTRY_BYTES] {
        let (kind, a, b) = match *self {
            Entry::Map { block, slot } => (KIND_MAP, block, slot),
            Entry::Unmap { block, slot } => (KIND_UNMAP, block, slot),
            Entry::Commit { count } => (KIND_COMMIT, count, 0),
        };
        let mut e = [0u8; ENTRY_BYTES];
        e[0..4].copy_from_slice(&kind.to_le_bytes());
        e[8..16].copy_from_slice(&a.to_le_bytes());
        e[16..24].copy_from_slice(&b.to_le_bytes());
        let sum = checksum(entry_seed(store_id, index), &e[0..24]);
        e[24..32].copy_from_slice(&sum.to_le_bytes());
        e
    }

    pub fn decode(e: &[u8; ENTRY_BYTES], store_id: u64, index: u64) -> Result<Entry, EntryError> {
        let sum = u64::from_le_bytes(e[24..32].try_into().expect("8 bytes"));
        if checksum(entry_seed(store_id, index), &e[0..24]) != sum || e[4..8] != [0; 4] {
            return Err(EntryError::Checksum);
        }
        let kind = u32::from_le_bytes(e[0..4].try_into().expect("4 bytes"));
        let a = u64::from_le_bytes(e[8..16].try_into().expect("8 bytes"));
        let b = u64::from_le_bytes(e[16..24].try_into().expect("8 bytes"));
        match kind {
            KIND_MAP => Ok(Entry::Map { block: a, slot: b }),
            KIND_UNMAP => Ok(Entry::Unmap { block: a, slot: b }),
            KIND_COMMIT if b == 0 => Ok(Entry::Commit { count: a }),
            other => Err(EntryError::Kind(other)),
        }
    }
}

/// Byte offset of journal entry `index` in the map file.
pub(crate) fn entry_offset(index: u64) -> u64 {
    HEADER_BYTES as u64 + index * ENTRY_BYTES as u64
}

/// Byte offset of slot `slot` in the data file.
pub(crate) fn slot_offset(slot: u64) -> u64 {
    DATA_HEADER_BYTES + slot * BLOCK_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_detects_damage() {
        let h = Header::new(MAP_MAGIC, 1 << 40, 0x1234_5678);
        let b = h.encode();
        assert_eq!(Header::decode(&b, MAP_MAGIC), Ok(h));
        assert_eq!(Header::decode(&b, DATA_MAGIC), Err(HeaderError::BadMagic));
        let mut bad = b;
        bad[17] ^= 1;
        assert_eq!(Header::decode(&bad, MAP_MAGIC), Err(HeaderError::Checksum));
        let mut newer = b;
        newer[8] = 2;
        assert_eq!(
            Header::decode(&newer, MAP_MAGIC),
            Err(HeaderError::Version(2))
        );
    }

    #[test]
    fn entries_round_trip_only_at_their_index_and_store() {
        for e in [
            Entry::Map { block: 7, slot: 3 },
            Entry::Unmap { block: 7, slot: 3 },
            Entry::Commit { count: 2 },
        ] {
            let b = e.encode(99, 5);
            assert_eq!(Entry::decode(&b, 99, 5), Ok(e));
            assert_eq!(Entry::decode(&b, 99, 6), Err(EntryError::Checksum));
            assert_eq!(Entry::decode(&b, 98, 5), Err(EntryError::Checksum));
        }
    }

    #[test]
    fn torn_entries_do_not_verify() {
        let b = Entry::Map {
            block: 0x0102_0304,
            slot: 0x0506,
        }
        .encode(1, 0);
        // A write torn after any number of bytes leaves zeros (a fresh file end) after the cut.
        for cut in 0..ENTRY_BYTES {
            let mut torn = [0u8; ENTRY_BYTES];
            torn[..cut].copy_from_slice(&b[..cut]);
            assert_eq!(
                Entry::decode(&torn, 1, 0),
                Err(EntryError::Checksum),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn checksum_depends_on_every_byte_and_the_length() {
        let data: Vec<u8> = (0..37u8).collect();
        let base = checksum(0, &data);
        for i in 0..data.len() {
            let mut d = data.clone();
            d[i] ^= 0x80;
            assert_ne!(checksum(0, &d), base, "byte {i}");
        }
        assert_ne!(checksum(0, &data[..36]), base);
    }
}
