//! Trace formats (filled in below).
