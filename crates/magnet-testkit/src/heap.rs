//! A counting allocator for tests that assert a reader's memory is bounded: the
//! current thread's live heap and its peak since [`Span::start`].
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: magnet_testkit::heap::Counting = magnet_testkit::heap::Counting;
//! let span = magnet_testkit::heap::Span::start();
//! let kept = read_everything();
//! assert!(span.peak_above(size_of_kept) < 4 << 20);
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, counting each thread's live bytes and their peak.
pub struct Counting;

thread_local! {
    static NOW: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

fn grew(by_now: usize) {
    let _ = PEAK.try_with(|p| p.set(p.get().max(by_now)));
}

// SAFETY: every call is passed on to `System` unchanged; the counters are
// thread-locals touched with `try_with`, so allocation during thread teardown
// is not counted instead of failing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let _ = NOW.try_with(|n| {
                n.set(n.get() + l.size());
                grew(n.get());
            });
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        let _ = NOW.try_with(|n| n.set(n.get().saturating_sub(l.size())));
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            let _ = NOW.try_with(|n| {
                n.set(n.get().saturating_sub(l.size()) + new);
                grew(n.get());
            });
        }
        q
    }
}

/// A measurement on the current thread: the live heap when it started.
pub struct Span {
    base: usize,
}

impl Span {
    /// Starts measuring: the peak is reset to the live heap now.
    pub fn start() -> Span {
        let base = NOW.with(|n| n.get());
        PEAK.with(|p| p.set(base));
        Span { base }
    }

    /// The peak heap since the start, less what the code under test returned
    /// (`kept` bytes that are the result, not the reader's own memory).
    pub fn peak_above(&self, kept: usize) -> usize {
        PEAK.with(|p| p.get()).saturating_sub(self.base + kept)
    }
}
