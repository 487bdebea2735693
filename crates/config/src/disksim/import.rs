//! Turning a DiskSim drive into a storsim `hdd` device description (in progress).
