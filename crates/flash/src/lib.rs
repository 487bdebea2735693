//! NAND flash as a mechanism: how the array is laid out ([`Geometry`]), how long operations take
//! ([`Timing`]), what state the cells are in ([`NandArray`]) and when each operation can run on
//! its channel and die ([`Scheduler`]). Policy (which page to write, when to collect garbage)
//! belongs to the FTL crate; this crate never decides anything.

mod die_queue;
mod divisor;
mod erase_stats;
mod geometry;
mod nand;
mod scheduler;
mod timeline;
mod timing;

pub use die_queue::{DiePolicyCounts, DieScheduling, SuspendKinds, Suspension, Ticket};
pub use divisor::Divisor;
pub use erase_stats::{power_of_two_bucket, EraseStats, POWER_OF_TWO_BUCKETS};
pub use geometry::{BlockId, Geometry, GeometryError, Ppa};
pub use nand::{NandArray, NandError};
pub use scheduler::{FlashOpKind, MultiPlane, PageRef, Scheduler, Utilisation};
pub use timing::{CellMode, CellType, Timing, LEVELS_MAX};
