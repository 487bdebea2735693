//! RAID-0 / RAID-1 arrays over child devices (in progress).
