//! The FTL's large tables (the page maps, hundreds of megabytes for a large device), allocated so
//! that the kernel can back them with huge pages.
//!
//! Host writes and garbage collection read and update the maps at random places: with 4 KiB
//! pages nearly every such access also misses the TLB and walks the page tables, itself a chain
//! of cache misses. With 2 MiB pages the same tables need a few hundred TLB entries. Linux
//! gives huge pages to anonymous memory only where asked (`madvise`, the common default of
//! `transparent_hugepage`), and only to memory not yet touched, so the table is advised before
//! it is filled. This is a hint: where it is refused or unsupported the table is the same, only
//! slower to reach.

/// Tables smaller than this are left alone: they fit in the TLB's reach with small pages.
const HUGE_PAGE_BYTES: usize = 2 << 20;

/// `n` copies of `value`, in memory advised for huge pages.
pub(crate) fn filled<T: Clone>(n: usize, value: T) -> Vec<T> {
    let mut table = Vec::with_capacity(n);
    advise_huge_pages(table.as_mut_ptr() as usize, n * std::mem::size_of::<T>());
    table.resize(n, value);
    table
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(start: usize, bytes: usize) {
    if bytes < 2 * HUGE_PAGE_BYTES {
        return;
    }
    // madvise wants a page-aligned start; the kernel uses huge pages for the aligned 2 MiB
    // ranges inside the advised one.
    const PAGE: usize = 4096;
    let first = start.next_multiple_of(PAGE);
    let end = (start + bytes) / PAGE * PAGE;
    // SAFETY: the range lies inside an allocation this function's caller owns and has not
    // handed out; MADV_HUGEPAGE changes how it is backed, never its contents, and a failure
    // (an old kernel, huge pages disabled) leaves it as it was.
    unsafe {
        libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_start: usize, _bytes: usize) {}

#[cfg(test)]
mod tests {
    #[test]
    fn a_table_holds_its_value_everywhere() {
        for n in [0, 1, 1000, 3 << 20] {
            let t = super::filled(n, u32::MAX);
            assert_eq!(t.len(), n);
            assert!(t.iter().all(|&x| x == u32::MAX));
        }
    }
}
