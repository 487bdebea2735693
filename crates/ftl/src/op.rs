//! The operations an FTL asks for, and its errors.

use std::fmt;
use storsim_flash::{CellMode, FlashOpKind, NandError, PageRef, Ppa};

/// Why a flash operation happens: statistics split every operation by its cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Cause {
    /// Reading or writing the host's data.
    Host,
    /// Garbage collection: copying valid pages out of a victim block and erasing it.
    Gc,
    /// The block-mapped FTLs' merges, and the folds of the FTLs that chain units.
    Merge,
    /// Reading or writing the FTL's own mapping tables (translation pages kept on flash).
    Mapping,
    /// Moving cold data to spread erases (static wear levelling).
    WearLevel,
    /// Folding: moving the data of a block written in SLC mode (the SLC write cache) into
    /// blocks run at the cells' native density.
    Fold,
}

impl Cause {
    pub const ALL: [Cause; 6] = [
        Cause::Host,
        Cause::Gc,
        Cause::Merge,
        Cause::Mapping,
        Cause::WearLevel,
        Cause::Fold,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Cause::Host => "host",
            Cause::Gc => "gc",
            Cause::Merge => "merge",
            Cause::Mapping => "mapping",
            Cause::WearLevel => "wear_level",
            Cause::Fold => "fold",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// What an operation must wait for, among the operations of the same FTL call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dep {
    /// Nothing but its die and channel: it may start as soon as the request arrives.
    None,
    /// The operation just before it in the list (a program after the read that fetched its data).
    Previous,
    /// Every operation before it in the list (an erase after the copies out of its block, the
    /// host's program after the garbage collection that made room for it).
    All,
}

/// One NAND operation. For a program, `data_from` names the page whose data it writes (a copy
/// during GC or a merge) or is `None` for new data (the host's, or the FTL's own metadata). The
/// page named must have been read earlier in the same call. `mode` is the mode of the block
/// `ppa` is in, which decides how long the operation takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlashOp {
    pub kind: FlashOpKind,
    pub ppa: Ppa,
    pub cause: Cause,
    pub dep: Dep,
    pub data_from: Option<Ppa>,
    pub mode: CellMode,
}

impl FlashOp {
    pub fn read(ppa: Ppa, cause: Cause, dep: Dep) -> Self {
        FlashOp {
            kind: FlashOpKind::Read,
            ppa,
            cause,
            dep,
            data_from: None,
            mode: CellMode::Native,
        }
    }
    /// A program of new data (the host's or metadata).
    pub fn program(ppa: Ppa, cause: Cause, dep: Dep) -> Self {
        FlashOp {
            kind: FlashOpKind::Program,
            ppa,
            cause,
            dep,
            data_from: None,
            mode: CellMode::Native,
        }
    }
    /// A program of the data read from `from`.
    pub fn copy(from: Ppa, to: Ppa, cause: Cause, dep: Dep) -> Self {
        FlashOp {
            kind: FlashOpKind::Program,
            ppa: to,
            cause,
            dep,
            data_from: Some(from),
            mode: CellMode::Native,
        }
    }
    /// The same operation on a block run in SLC mode.
    pub fn in_slc_mode(self) -> Self {
        FlashOp {
            mode: CellMode::Slc,
            ..self
        }
    }

    /// The page and its block's mode, as the scheduler takes them.
    pub fn page(&self) -> PageRef {
        PageRef {
            ppa: self.ppa,
            mode: self.mode,
        }
    }

    /// An erase of the block holding `ppa`.
    pub fn erase(ppa: Ppa, cause: Cause, dep: Dep) -> Self {
        FlashOp {
            kind: FlashOpKind::Erase,
            ppa,
            cause,
            dep,
            data_from: None,
            mode: CellMode::Native,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FtlError {
    /// No free page could be made: every block is full of valid data (or retired).
    NoSpace,
    /// So many blocks wore out that the FTL cannot keep its logical capacity.
    WornOut { retired_blocks: u32 },
    /// The logical page does not exist.
    OutOfRange { lpn: u64, logical_pages: u64 },
    /// The FTL broke a NAND rule: a bug, reported rather than hidden.
    Nand(NandError),
    /// A raw-flash request that NAND cannot do (programming a page that is not erased).
    Rejected { reason: String },
}

impl fmt::Display for FtlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FtlError::NoSpace => write!(
                f,
                "the FTL found no free page even after garbage collection"
            ),
            FtlError::WornOut { retired_blocks } => {
                write!(f, "the device wore out ({retired_blocks} blocks retired)")
            }
            FtlError::OutOfRange { lpn, logical_pages } => {
                write!(
                    f,
                    "logical page {lpn} is past the last one ({logical_pages} pages)"
                )
            }
            FtlError::Nand(e) => write!(f, "NAND rule broken: {e}"),
            FtlError::Rejected { reason } => write!(f, "{reason}"),
        }
    }
}

impl std::error::Error for FtlError {}

impl From<NandError> for FtlError {
    fn from(e: NandError) -> Self {
        FtlError::Nand(e)
    }
}
