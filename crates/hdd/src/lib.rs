//! Hard-disk model (in progress).
