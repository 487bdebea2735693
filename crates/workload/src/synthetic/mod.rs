//! Synthetic workloads (filled in below).
