//! RAID-0 address arithmetic. Stripe unit k of the array (bytes [k·S, (k+1)·S)) lives on child
//! k mod n at child offset (k / n)·S. A host range therefore touches each child in one
//! contiguous child range: the units it covers on one child are consecutive rows, and only the
//! first unit of the range can start inside a unit and only the last can end inside one.

/// One child's share of a host request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Piece {
    pub(crate) child: usize,
    pub(crate) offset_bytes: u64,
    pub(crate) len_bytes: u64,
}

/// RAID-0 capacity: `children` × the smallest child's size, rounded down to whole stripe rows
/// (one stripe unit on every child). `None` if it does not fit in a u64.
pub(crate) fn raid0_capacity_bytes(
    child_min_bytes: u64,
    stripe_unit_bytes: u64,
    children: usize,
) -> Option<u64> {
    let rows = child_min_bytes.checked_div(stripe_unit_bytes)?;
    rows.checked_mul(stripe_unit_bytes)?
        .checked_mul(children as u64)
}

/// The pieces of the host range [offset, offset + len) on `children` children with stripe
/// unit `stripe_unit_bytes`: at most one per child, in the order of the host range (the piece
/// holding the first byte first). An empty range has no pieces. The caller has checked that
/// the range fits the array, so no arithmetic here overflows.
pub(crate) fn raid0_pieces(
    offset_bytes: u64,
    len_bytes: u64,
    stripe_unit_bytes: u64,
    children: usize,
) -> impl Iterator<Item = Piece> {
    let s = stripe_unit_bytes;
    let n = children as u64;
    let end = offset_bytes + len_bytes;
    let first_unit = offset_bytes / s;
    let last_unit = if len_bytes == 0 { 0 } else { (end - 1) / s };
    let units = if len_bytes == 0 {
        0
    } else {
        (last_unit - first_unit + 1).min(n)
    };
    (first_unit..first_unit + units).map(move |k| {
        // The first unit of this child inside the range is k; its last is the latest unit
        // of the range congruent to k mod n.
        let k_last = k + (last_unit - k) / n * n;
        let start_within = if k == first_unit { offset_bytes % s } else { 0 };
        let end_within = if k_last == last_unit {
            (end - 1) % s + 1
        } else {
            s
        };
        let child_start = (k / n) * s + start_within;
        let child_end = (k_last / n) * s + end_within;
        Piece {
            child: (k % n) as usize,
            offset_bytes: child_start,
            len_bytes: child_end - child_start,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_inside_one_unit_is_one_piece() {
        let pieces: Vec<_> = raid0_pieces(4096 * 5 + 512, 1024, 4096, 2).collect();
        // Unit 5 is child 1, row 2.
        assert_eq!(
            pieces,
            [Piece {
                child: 1,
                offset_bytes: 2 * 4096 + 512,
                len_bytes: 1024
            }]
        );
    }

    #[test]
    fn capacity_rounds_down_to_whole_rows() {
        assert_eq!(raid0_capacity_bytes(10_000, 4096, 3), Some(2 * 4096 * 3));
        assert_eq!(raid0_capacity_bytes(4095, 4096, 3), Some(0));
        assert_eq!(raid0_capacity_bytes(u64::MAX, 512, 4), None);
    }
}
