//! Plain-data parameters of the hard-disk model. Every field carries its unit in its name;
//! times are nanoseconds unless a name says otherwise. `storsim_config` builds these from device
//! files and from DiskSim parameter files; the model never parses anything.

/// Everything the model needs to know about one drive.
#[derive(Clone, Debug, PartialEq)]
pub struct HddParams {
    pub geometry: Geometry,
    pub mechanics: Mechanics,
    pub overheads: Overheads,
    pub interface: Interface,
    pub cache: CacheParams,
    /// How many requests the drive accepts at once (host queue plus the one in service).
    pub queue_depth: u32,
    pub scheduler: SchedulerKind,
    pub power: PowerParams,
}

/// Surfaces, cylinders and how logical blocks are laid out on them (DiskSim's "g1" layout).
#[derive(Clone, Debug, PartialEq)]
pub struct Geometry {
    pub surfaces: u32,
    pub cylinders: u32,
    pub surface_order: SurfaceOrder,
    pub sparing: SparingScheme,
    /// Cylinders per sparing range, for [`SparingScheme::SectorsPerRange`].
    pub sparing_range_cylinders: u32,
    pub zones: Vec<Zone>,
    /// Blocks the drive exposes, when fewer than the zones map (DiskSim's "Block count": the
    /// validated drives' layouts map a few more blocks than the drives report).
    pub block_count: Option<u64>,
    /// DiskSim's G4 layout (DIXtrac's extracted drives). When given, it alone maps blocks
    /// (`zones`, `surface_order` and `sparing` are not used, and `block_count` is required).
    pub g4: Option<G4Geometry>,
}

/// DiskSim 4.0's `dm_layout_g4`: track patterns, a tree of indices over them (the last index
/// is the root), slips and remaps, as DIXtrac writes them. See the `g4` module of the layout.
#[derive(Clone, Debug, PartialEq)]
pub struct G4Geometry {
    /// DiskSim's `TP`.
    pub tracks: Vec<G4Track>,
    /// DiskSim's `IDX`: each index's entries.
    pub indices: Vec<Vec<G4Entry>>,
    /// DiskSim's `Slips`, in increasing slot order.
    pub slips: Vec<G4Slip>,
    /// DiskSim's `Remaps`.
    pub remaps: Vec<G4Remap>,
}

/// A track pattern: sectors `low..=high` of a track of `spt` sectors hold consecutive slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct G4Track {
    pub low: u32,
    pub high: u32,
    pub spt: u32,
}

/// One entry of an index: slots `[lbn, lbn + run_len)` are `run_len / len` repetitions of
/// its child, each `len` slots long, `cylinder_len` cylinders further on (back when
/// `cylinder_run_len` is negative) and `angle_len_turns` of a revolution further round than
/// the one before; the first starts at `cylinder` (relative to the parent's) and
/// `offset_turns`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct G4Entry {
    pub lbn: u64,
    pub cylinder: u32,
    pub offset_turns: f64,
    pub len: u64,
    pub cylinder_len: u32,
    pub angle_len_turns: f64,
    pub run_len: u64,
    /// The cylinders the entry covers, negative for a run towards lower cylinders.
    pub cylinder_run_len: i64,
    pub child: G4Child,
}

/// What an index entry repeats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum G4Child {
    /// Track pattern `pattern` on surface `head`.
    Track { pattern: u32, head: u32 },
    /// Another index, by its position in [`G4Geometry::indices`].
    Index(u32),
}

/// `count` slipped slots starting at slot `slot` (slots number sectors with the slipped
/// ones included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct G4Slip {
    pub slot: u64,
    pub count: u64,
}

/// Blocks `[lbn, lbn + count)` moved to consecutive sectors from (`cylinder`, `head`,
/// `sector`) on a track of `spt` sectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct G4Remap {
    pub lbn: u64,
    pub count: u64,
    pub cylinder: u32,
    pub head: u32,
    pub sector: u32,
    pub spt: u32,
}

/// The order in which a cylinder's tracks are filled (DiskSim's "LBN-to-PBN mapping scheme").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SurfaceOrder {
    /// Surface 0 first on every cylinder.
    Normal,
    /// Odd cylinders, counted from the start of their zone, run from the last surface to the
    /// first, so that a cylinder switch stays on the same surface.
    ReverseOnOddCylinderOfZone,
    /// As above, with odd absolute cylinder numbers reversed.
    ReverseOnOddCylinder,
}

/// Where a zone keeps its spare sectors, and therefore how slipped sectors move blocks.
/// The numbers in the names of DiskSim's schemes are given for each variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SparingScheme {
    /// 0: no spares.
    None,
    /// 1: whole spare tracks at the end of the zone; slips name zone-relative tracks.
    Tracks,
    /// 2 (and 4): spare sectors at the end of every cylinder.
    SectorsPerCylinder,
    /// 5 (and 6): spare sectors at the front of every cylinder.
    SectorsPerCylinderAtFront,
    /// 3: spare sectors at the end of every track.
    SectorsPerTrack,
    /// 7: spare sectors at the end of the zone (DiskSim puts them at the end of the disk).
    SectorsAtEnd,
    /// 8: spare sectors at the end of every range of `sparing_range_cylinders` cylinders.
    SectorsPerRange,
    /// 9 (and 10): spare sectors at the end of the zone.
    SectorsPerZone,
}

impl SparingScheme {
    /// Every scheme, for tests and tools that go through them all.
    pub const ALL: [SparingScheme; 8] = [
        SparingScheme::None,
        SparingScheme::Tracks,
        SparingScheme::SectorsPerCylinder,
        SparingScheme::SectorsPerCylinderAtFront,
        SparingScheme::SectorsPerTrack,
        SparingScheme::SectorsAtEnd,
        SparingScheme::SectorsPerRange,
        SparingScheme::SectorsPerZone,
    ];
}

/// One recording zone: a run of cylinders with the same number of sectors per track.
#[derive(Clone, Debug, PartialEq)]
pub struct Zone {
    pub first_cylinder: u32,
    pub last_cylinder: u32,
    pub sectors_per_track: u32,
    /// Angular offset of the zone's first block from the index mark, in sectors.
    pub first_block_offset_sectors: f64,
    /// Sectors at the zone's front that hold no block (DiskSim's "empty space at zone front").
    pub empty_front_sectors: u32,
    /// Angular skew between the last block of a track and the first of the next track on the
    /// same cylinder, in sectors: it hides the head-switch time.
    pub track_skew_sectors: f64,
    /// The same across a cylinder switch.
    pub cylinder_skew_sectors: f64,
    /// Spare sectors (or tracks, for [`SparingScheme::Tracks`]) per sparing unit.
    pub spares: u32,
    /// Slipped defects: zone-relative physical sector numbers (track numbers for
    /// [`SparingScheme::Tracks`]) that are skipped, pushing later blocks along.
    pub slips: Vec<u64>,
    /// Remapped defects: (defective sector, spare sector it moved to), zone-relative.
    pub defects: Vec<(u64, u64)>,
}

/// Arm and spindle.
#[derive(Clone, Debug, PartialEq)]
pub struct Mechanics {
    pub rpm: f64,
    pub head_switch_ns: u64,
    /// Added to every non-zero repositioning before a write. DiskSim allows it negative.
    pub write_settle_ns: i64,
    pub seek: SeekCurve,
}

/// Seek time as a function of the distance in cylinders (zero distance costs nothing).
#[derive(Clone, Debug, PartialEq)]
pub enum SeekCurve {
    /// The same time for every distance.
    Constant { time_ns: u64 },
    /// DiskSim's 3-point line: linear from the single-cylinder time to the average time at a
    /// third of the stroke, then to the full-stroke time.
    ThreePointLine {
        single_ns: u64,
        average_ns: u64,
        full_ns: u64,
    },
    /// DiskSim's 3-point curve: `a + b·sqrt(d - 1) + c·(d - 1)` through the single-cylinder,
    /// one-third-stroke average and full-stroke times.
    ThreePointCurve {
        single_ns: u64,
        average_ns: u64,
        full_ns: u64,
    },
    /// Ruemmler and Wilkes' two-piece curve: `a + b·sqrt(d)` below `boundary_cylinders`,
    /// `c + e·d` from there on; `single_ns`, when given, replaces distance 1.
    Hpl(HplCurve),
    /// The HPL curve with the first ten distances given explicitly ("hplplus10").
    HplPlus10 {
        curve: HplCurve,
        first_ten_ns: [u64; 10],
    },
    /// A measured table of (distance, time), interpolated linearly between points and
    /// extrapolated from the last two beyond the end.
    Extracted { points: Vec<(u32, u64)> },
}

/// The coefficients of the HPL seek curve.
#[derive(Clone, Debug, PartialEq)]
pub struct HplCurve {
    pub boundary_cylinders: u32,
    pub a_ns: f64,
    pub b_ns_per_sqrt_cylinder: f64,
    pub c_ns: f64,
    pub e_ns_per_cylinder: f64,
    pub single_ns: Option<u64>,
}

/// Controller overheads. The eight command overheads depend on the operation, on whether
/// the disk cache serves it, and on the previous operation, as in DiskSim.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Overheads {
    pub per_request_ns: u64,
    pub read_hit_after_read_ns: u64,
    pub read_hit_after_write_ns: u64,
    pub read_miss_after_read_ns: u64,
    pub read_miss_after_write_ns: u64,
    pub write_hit_after_read_ns: u64,
    pub write_hit_after_write_ns: u64,
    pub write_miss_after_read_ns: u64,
    pub write_miss_after_write_ns: u64,
    pub read_completion_ns: u64,
    pub write_completion_ns: u64,
    pub data_preparation_ns: u64,
    pub first_reselect_ns: u64,
    pub other_reselect_ns: u64,
    pub read_disconnect_after_read_ns: u64,
    pub read_disconnect_after_write_ns: u64,
    pub write_disconnect_ns: u64,
    /// A write's seek never takes less than this (DiskSim's "minimum seek delay").
    pub minimum_seek_ns: u64,
    /// HP drives' extra disconnect before a write's data moves (DiskSim's "extra write
    /// disconnect" and its "extradisc" overheads); `None` for drives without it.
    pub extra_write_disconnect: Option<ExtraWriteDisconnect>,
}

/// The overheads of the extra write disconnect: the command, the first disconnect, the
/// delay before reconnecting for the data, the disconnect after the data, and how much of
/// the command the seek waits for beyond the command overhead.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ExtraWriteDisconnect {
    pub command_ns: u64,
    pub disconnect_ns: u64,
    pub inter_disconnect_ns: u64,
    pub second_disconnect_ns: u64,
    pub seek_delta_ns: u64,
}

/// The host interface: how long one sector takes on the bus.
#[derive(Clone, Debug, PartialEq)]
pub struct Interface {
    pub read_transfer_ns_per_sector: u64,
    pub write_transfer_ns_per_sector: u64,
}

/// How far the drive reads beyond a request into its cache ("buffer continuous read").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadAhead {
    None,
    /// To the end of the current track.
    TrackEnd,
    /// To the end of the current cylinder.
    CylinderEnd,
    /// Until the segment is full or the maximum read-ahead is reached.
    SegmentEnd,
    /// DEC's scheme: to the end of the track after the request, one track more when the
    /// segment already started on an earlier track.
    DecTracks,
}

/// When a write is reported complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteBack {
    /// After the data is on the media.
    None,
    /// Once the data is in the cache, but the drive holds at most one dirty segment beyond
    /// the one being written (DiskSim's "limited" fast writes).
    Limited,
    /// Once the data is in the cache (write-back with immediate report).
    Full,
}

/// The on-disk cache.
#[derive(Clone, Debug, PartialEq)]
pub struct CacheParams {
    pub enabled: bool,
    pub segments: u32,
    pub segment_sectors: u32,
    /// Segments that may hold dirty data at once.
    pub write_segments: u32,
    /// Writes get a segment of their own that reads never use.
    pub dedicated_write_segment: bool,
    pub read_ahead: ReadAhead,
    pub min_read_ahead_sectors: u32,
    pub max_read_ahead_sectors: u32,
    /// Start a read-ahead when a read hits a segment the drive is not reading into.
    pub read_ahead_on_idle_hit: bool,
    pub read_hits_on_write_data: bool,
    pub write_back: WriteBack,
    /// A write that continues the one being destaged is written in the same pass.
    pub combine_sequential_writes: bool,
    /// The fraction of a request (or of the segment) that must be in the cache before the
    /// drive reconnects to send read data.
    pub read_watermark: f64,
    pub watermark_by_request_size: bool,
    /// Zero-latency reads: start reading at the first wanted sector under the head.
    pub immediate_read: bool,
}

/// How the drive orders the requests in its queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedulerKind {
    Fcfs,
    /// Shortest seek (cylinder distance) first.
    Sstf,
    /// Ascending cylinders, then back to the lowest waiting one.
    CLook,
    /// Shortest positioning time (seek plus rotational latency) first.
    Sptf,
}

/// Power states and their draw, so that a disk's energy compares with a flash device's.
#[derive(Clone, Debug, PartialEq)]
pub struct PowerParams {
    pub active_mw: f64,
    pub idle_mw: f64,
    pub standby_mw: f64,
    /// Spin down after this long without work; `None` keeps the platters spinning.
    pub standby_after_idle_ns: Option<u64>,
    pub spin_up_ns: u64,
    pub spin_up_mj: f64,
}

impl Default for PowerParams {
    /// Typical 3.5-inch enterprise drive figures; spin-down is off, as in DiskSim.
    fn default() -> Self {
        PowerParams {
            active_mw: 12_000.0,
            idle_mw: 8_000.0,
            standby_mw: 1_000.0,
            standby_after_idle_ns: None,
            spin_up_ns: 10_000_000_000,
            spin_up_mj: 200_000.0,
        }
    }
}
