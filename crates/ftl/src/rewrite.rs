//! The read-modify-write of one block (the hybrid-disk thesis' Fig. 4.1), shared by the FTLs
//! that keep a page at a fixed offset of its block: read the pages to keep, erase, program them
//! back with the host's new page.

use crate::{Cause, Dep, FlashOp, FtlError};
use storsim_flash::{BlockId, NandArray};

/// Whether the next erase of `block` reaches its endurance limit and retires it.
pub(crate) fn erase_retires(nand: &NandArray, block: BlockId) -> bool {
    nand.erase_count(block).saturating_add(1) >= nand.endurance()
}

/// How the operations of one block rewrite wait for each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Waits {
    /// Reads wait for nothing; the erase and the programs wait for every operation before them
    /// in the call (`Dep::All`). Exact when the rewrite's operations are the first of the call.
    All,
    /// A chain: the rewrite's first operation waits for nothing and each later one for the one
    /// just before it (`Dep::Previous`), so every operation still follows all the rewrite's
    /// earlier ones (an erase after every read out of its block, a program after the erase and
    /// the read of its data) but none waits for the other operations of the call (another
    /// block's rewrite in the same request). A block sits on one die, which runs its
    /// operations in order anyway, so the chain costs no time.
    Chain,
}

/// The read-modify-write cycle of Fig. 4.1, which the unit-chain FTLs also use for a chain of one
/// unit: reads the pages of `src` that `keep` selects (except `new_page`, which the host
/// replaces), erases `src`, and programs the kept pages and the host's new page into `dst` in
/// page order. `dst` is `src` for a rewrite in place, or an erased block when `src` must not be
/// reused (its erase retires it); then the copies come first and the erase last. Returns the
/// pages copied. The caller must not pass a `src` whose erase retires it as `dst`.
pub(crate) fn rewrite_block(
    nand: &mut NandArray,
    ops: &mut Vec<FlashOp>,
    src: BlockId,
    dst: BlockId,
    keep: impl Fn(u32) -> bool,
    new_page: u32,
    cause: Cause,
) -> Result<u64, FtlError> {
    rewrite_pages(
        nand,
        ops,
        src,
        dst,
        keep,
        |page| page == new_page,
        cause,
        Waits::All,
    )
}

/// [`rewrite_block`] for any set of the host's new pages of the block (`new`: programmed as the
/// host's) and of pages to keep (`keep`, except the new ones: read and copied), with the waits
/// of `waits`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn rewrite_pages(
    nand: &mut NandArray,
    ops: &mut Vec<FlashOp>,
    src: BlockId,
    dst: BlockId,
    keep: impl Fn(u32) -> bool,
    new: impl Fn(u32) -> bool,
    cause: Cause,
    waits: Waits,
) -> Result<u64, FtlError> {
    let geometry = *nand.geometry();
    let ppb = geometry.pages_per_block;
    let start = ops.len();
    // `wait_all` is what the operation waits for in `Waits::All`.
    let dep = |ops: &Vec<FlashOp>, wait_all: Dep| match waits {
        Waits::All => wait_all,
        Waits::Chain if ops.len() == start => Dep::None,
        Waits::Chain => Dep::Previous,
    };
    let kept: Vec<u32> = (0..ppb).filter(|&page| !new(page) && keep(page)).collect();
    for &page in &kept {
        let from = geometry.ppa(src, page);
        nand.check_read(from)?;
        ops.push(FlashOp::read(from, cause, dep(ops, Dep::None)));
    }
    let in_place = src == dst;
    if in_place {
        assert!(
            !nand.erase(src)?,
            "rewrite_block: an in-place rewrite retired its block"
        );
        ops.push(FlashOp::erase(
            geometry.ppa(src, 0),
            cause,
            dep(ops, Dep::All),
        ));
    }
    // Programs go in page order, as NAND wants within a block; each waits for everything before
    // it (the reads that fetched its data, and in place the erase).
    let mut next = kept.iter().peekable();
    for page in 0..ppb {
        let to = geometry.ppa(dst, page);
        if next.peek() == Some(&&page) {
            next.next();
            nand.program(to)?;
            ops.push(FlashOp::copy(
                geometry.ppa(src, page),
                to,
                cause,
                dep(ops, Dep::All),
            ));
        } else if new(page) {
            nand.program(to)?;
            ops.push(FlashOp::program(to, Cause::Host, dep(ops, Dep::All)));
        }
    }
    if !in_place {
        nand.erase(src)?;
        ops.push(FlashOp::erase(
            geometry.ppa(src, 0),
            cause,
            dep(ops, Dep::All),
        ));
    }
    Ok(kept.len() as u64)
}
