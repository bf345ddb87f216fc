//! Giving freed memory back to the system after the forecast.
//!
//! The forecast simulates on a copy of the scheduler (every queued job), made and
//! dropped on a worker thread. glibc's allocator keeps what a thread freed in that
//! thread's arena for its next allocations, so each copy stayed in the controller's
//! resident set long after the forecast was done: with a long queue, more than the
//! queue itself. `malloc_trim` returns the free pages of every arena at once; it costs
//! a walk of the free lists, once per forecast (at most one a second).

/// Returns the allocator's free pages to the system (glibc; elsewhere nothing).
pub fn give_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases pages the allocator holds free.
    unsafe {
        libc::malloc_trim(0);
    }
}
