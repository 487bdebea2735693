//! Hybrid flash + disk drives (in progress).
