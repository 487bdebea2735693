//! Where RAID-5 and RAID-6 keep data and parity: Linux md's left-symmetric layout (md's and
//! mdadm's default for both levels), in rows of one chunk (stripe unit) per member.
//!
//! Row r holds, on every member, the member bytes [r·S, (r+1)·S). With n members and p parity
//! chunks per row (1 for RAID-5, 2 for RAID-6), P sits on member n − 1 − (r mod n), Q (RAID-6)
//! on the member after it (mod n), and data chunk i of the row on member (P + p + i) mod n: the
//! parity moves one member to the left each row, and the data continues right after it,
//! wrapping round. Array byte b is in row b / (d·S) with d = n − p data chunks per row, in data
//! chunk (b mod d·S) / S, at byte b mod S of that chunk.

use std::ops::Range;

/// What a member holds in one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Data chunk i of the row (0 is the row's first array bytes).
    Data(usize),
    /// Parity chunk k of the row: 0 is P (XOR), 1 is Q (RAID-6's Reed–Solomon syndrome).
    Parity(usize),
}

/// The shape of a RAID-5 or RAID-6 array: members, parity chunks per row, chunk size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParityLayout {
    members: usize,
    parities: usize,
    chunk_bytes: u64,
}

impl ParityLayout {
    /// A layout of `members` members with `parities` parity chunks per row (1 or 2) and
    /// chunks of `chunk_bytes`. `None` when there would be no data chunk in a row, or the chunk
    /// is empty.
    pub fn new(members: usize, parities: usize, chunk_bytes: u64) -> Option<ParityLayout> {
        (members > parities && (1..=2).contains(&parities) && chunk_bytes > 0).then_some(
            ParityLayout {
                members,
                parities,
                chunk_bytes,
            },
        )
    }

    pub fn members(&self) -> usize {
        self.members
    }

    pub fn parities(&self) -> usize {
        self.parities
    }

    /// Data chunks per row.
    pub fn data_members(&self) -> usize {
        self.members - self.parities
    }

    pub fn chunk_bytes(&self) -> u64 {
        self.chunk_bytes
    }

    /// Array bytes per row.
    pub fn row_data_bytes(&self) -> u64 {
        self.data_members() as u64 * self.chunk_bytes
    }

    /// The member holding parity chunk `k` (0 = P, 1 = Q) of row `row`.
    pub fn parity_member(&self, row: u64, k: usize) -> usize {
        assert!(k < self.parities, "parity chunk {k} of {}", self.parities);
        let n = self.members as u64;
        let p = (n - 1 - row % n) as usize;
        (p + k) % self.members
    }

    /// The member holding data chunk `i` of row `row`.
    pub fn data_member(&self, row: u64, i: usize) -> usize {
        assert!(
            i < self.data_members(),
            "data chunk {i} of {}",
            self.data_members()
        );
        (self.parity_member(row, 0) + self.parities + i) % self.members
    }

    /// What `member` holds in row `row`.
    pub fn role(&self, row: u64, member: usize) -> Role {
        let past_p = (member + self.members - self.parity_member(row, 0)) % self.members;
        if past_p < self.parities {
            Role::Parity(past_p)
        } else {
            Role::Data(past_p - self.parities)
        }
    }
}

/// The part of one data chunk a host range covers: bytes [start, end) of the chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ChunkSpan {
    pub(crate) data_index: usize,
    pub(crate) start: u64,
    pub(crate) end: u64,
}

/// The rows the host range [offset, offset + len) touches (none for an empty range).
pub(crate) fn rows(layout: &ParityLayout, offset_bytes: u64, len_bytes: u64) -> Range<u64> {
    if len_bytes == 0 {
        return 0..0;
    }
    let row_bytes = layout.row_data_bytes();
    offset_bytes / row_bytes..(offset_bytes + len_bytes - 1) / row_bytes + 1
}

/// Fills `spans` with the chunks the host range [offset, offset + len) covers in `row`, in
/// order: consecutive data indices, of which only the first can start inside its chunk and
/// only the last can end inside one. The caller has checked that the range fits the array
/// and that `row` is one of its [`rows`].
pub(crate) fn spans_in_row(
    layout: &ParityLayout,
    offset_bytes: u64,
    len_bytes: u64,
    row: u64,
    spans: &mut Vec<ChunkSpan>,
) {
    let s = layout.chunk_bytes;
    let row_start = row * layout.row_data_bytes();
    let from = offset_bytes.max(row_start);
    let to = (offset_bytes + len_bytes).min(row_start + layout.row_data_bytes());
    spans.clear();
    let mut c = from;
    while c < to {
        let i = ((c - row_start) / s) as usize;
        let chunk_start = row_start + i as u64 * s;
        let chunk_end = (chunk_start + s).min(to);
        spans.push(ChunkSpan {
            data_index: i,
            start: c - chunk_start,
            end: chunk_end - chunk_start,
        });
        c = chunk_end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Linux md's left-symmetric RAID-5 over 4 members, as md's documentation draws it
    /// (P moves left one member per row, data continues after it):
    ///
    /// ```text
    /// row 0:  D0  D1  D2  P
    /// row 1:  D4  D5  P   D3
    /// row 2:  D8  P   D6  D7
    /// row 3:  P   D9  D10 D11
    /// ```
    #[test]
    fn raid5_left_symmetric_over_four_members() {
        let l = ParityLayout::new(4, 1, 4096).unwrap();
        let drawing = [
            ["D0", "D1", "D2", "P"],
            ["D4", "D5", "P", "D3"],
            ["D8", "P", "D6", "D7"],
            ["P", "D9", "D10", "D11"],
        ];
        for row in 0..8u64 {
            for (member, &expected) in drawing[(row % 4) as usize].iter().enumerate() {
                let got = match l.role(row, member) {
                    Role::Parity(0) => "P".to_string(),
                    Role::Data(i) => format!("D{}", (row % 4) * 3 + i as u64),
                    other => panic!("{other:?}"),
                };
                assert_eq!(got, expected, "row {row} member {member}");
            }
        }
    }

    /// RAID-6 over 5 members: P at 4 − r mod 5, Q right after it, data after Q.
    ///
    /// ```text
    /// row 0:  Q   D0  D1  D2  P
    /// row 1:  D3  D4  D5  P   Q
    /// row 2:  D7  D8  P   Q   D6
    /// ```
    #[test]
    fn raid6_left_symmetric_over_five_members() {
        let l = ParityLayout::new(5, 2, 4096).unwrap();
        assert_eq!((l.parity_member(0, 0), l.parity_member(0, 1)), (4, 0));
        assert_eq!(
            (0..3).map(|i| l.data_member(0, i)).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!((l.parity_member(1, 0), l.parity_member(1, 1)), (3, 4));
        assert_eq!(
            (0..3).map(|i| l.data_member(1, i)).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert_eq!((l.parity_member(2, 0), l.parity_member(2, 1)), (2, 3));
        assert_eq!(
            (0..3).map(|i| l.data_member(2, i)).collect::<Vec<_>>(),
            [4, 0, 1]
        );
        for row in 0..10 {
            for m in 0..5 {
                let back = match l.role(row, m) {
                    Role::Data(i) => l.data_member(row, i),
                    Role::Parity(k) => l.parity_member(row, k),
                };
                assert_eq!(back, m);
            }
        }
    }

    #[test]
    fn a_range_splits_into_rows_and_chunks() {
        // 3 data chunks of 4 KiB per row: a row holds 12 KiB.
        let l = ParityLayout::new(4, 1, 4096).unwrap();
        let mut spans = Vec::new();
        let rows: Vec<_> = rows(&l, 10 * 1024, 8 * 1024)
            .map(|row| {
                spans_in_row(&l, 10 * 1024, 8 * 1024, row, &mut spans);
                (row, spans.clone())
            })
            .collect();
        assert!(super::rows(&l, 5, 0).is_empty());
        let span = |data_index, start, end| ChunkSpan {
            data_index,
            start,
            end,
        };
        assert_eq!(
            rows,
            [
                (0, vec![span(2, 2048, 4096)]),
                (1, vec![span(0, 0, 4096), span(1, 0, 2048)]),
            ]
        );
    }
}
