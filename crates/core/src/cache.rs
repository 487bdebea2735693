//! A hint to the processor's caches, for the simulator's hot paths over tables too large to
//! stay cached.

/// Asks the processor to start loading `table[index]` into its caches, so that an access a
/// little later finds it there instead of waiting on memory. A hint with no effect on any
/// value: an index outside the table does nothing, and so does the call on other
/// architectures.
#[inline]
pub fn prefetch<T>(table: &[T], index: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(entry) = table.get(index) {
        // SAFETY: a prefetch never faults and reads nothing into the program; the pointer is
        // to an element of a live slice anyway.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                (entry as *const T).cast::<i8>(),
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (table, index);
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_hint_anywhere_changes_nothing() {
        for n in [0usize, 1, 1000] {
            let t: Vec<u64> = (0..n as u64).collect();
            // Inside the table, at its end and far past it: no fault, no change.
            for i in [0, n / 2, n, usize::MAX] {
                super::prefetch(&t, i);
            }
            assert!(t.iter().enumerate().all(|(i, &x)| x == i as u64));
        }
    }
}
