//! The memory allocator's settings (issue 21; measured in BENCHMARKS.md, "Memory with 10,000
//! idle workspaces"): glibc's malloc kept, bounded to one arena. With one arena per thread (glibc's
//! default, up to 8 per core) the many short-lived allocations of the server's threads leave each
//! arena fragmented: 148 MiB settled and 356 MiB peak at 10,000 idle workspaces and a burst of 20
//! runs, against 85 MiB and 162 MiB with one arena — as low as jemalloc tuned for it, and lower
//! than mimalloc, with no allocator to build. `MALLOC_ARENA_MAX` in the environment still wins.
//! The server also gives free heap pages back to the system ([`spawn_trimmer`]).

/// The number of malloc arenas the server sets, unless `MALLOC_ARENA_MAX` is given (`env`): then
/// none (glibc reads the variable itself). Pure.
pub fn arena_max(env: Option<&std::ffi::OsStr>) -> Option<i32> {
    match env {
        Some(_) => None,
        None => Some(1),
    }
}

/// Bound glibc's malloc arenas ([`arena_max`]); to be called first thing in `main`, before other
/// threads allocate. Nothing elsewhere than on glibc. The one call into C of this crate (FFI: the
/// reason it denies rather than forbids unsafe code).
#[allow(unsafe_code)]
pub fn bound_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if let Some(n) = arena_max(std::env::var_os("MALLOC_ARENA_MAX").as_deref()) {
        // SAFETY: mallopt sets a tunable of glibc's allocator and touches no memory of ours;
        // M_ARENA_MAX takes any positive count.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, n);
        }
    }
}

/// Free bytes inside the heap above which the trimmer gives them back to the system.
pub const TRIM_ABOVE: usize = 8 << 20;

/// How often the trimmer looks at the heap.
pub const TRIM_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Whether a heap holding `free` free bytes (chunks freed but kept by malloc) is trimmed. Pure.
pub fn should_trim(free: usize) -> bool {
    free > TRIM_ABOVE
}

/// The free bytes malloc holds in its heap (`mallinfo2().fordblks`).
#[allow(unsafe_code)]
fn heap_free() -> usize {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads the allocator's statistics and returns them by value.
        unsafe { libc::mallinfo2() }.fordblks
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    0
}

/// Give the free pages inside the heap back to the system (`malloc_trim(0)`); what was freed.
#[allow(unsafe_code)]
fn trim() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim releases free memory of the allocator (madvise of unused pages)
        // under its own lock; it touches no allocation of ours.
        unsafe { libc::malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

/// Start the server's heap trimmer (a thread that sleeps; one look every [`TRIM_EVERY`]).
/// A reconcile pass over thousands of workspaces, a listing of them, a burst of runs free what
/// they allocated, but malloc keeps the pages between chunks still in use: with one arena, the
/// 10,000 Ready workspaces of a restart sat at 100 MiB, 82 MiB once trimmed (BENCHMARKS.md).
/// glibc trims only the top of its heap on its own.
pub fn spawn_trimmer() {
    let spawned = std::thread::Builder::new()
        .name("heap-trim".into())
        .spawn(|| loop {
            std::thread::sleep(TRIM_EVERY);
            if should_trim(heap_free()) {
                trim();
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start the heap trimmer");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heap_is_trimmed_when_it_holds_more_than_8_mib_free() {
        for (free, want) in [
            (0, false),
            (TRIM_ABOVE, false),
            (TRIM_ABOVE + 1, true),
            (1 << 30, true),
        ] {
            assert_eq!(should_trim(free), want, "{free}");
        }
    }

    /// Freed memory inside the heap is counted, and trimming gives it back (glibc).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn freed_chunks_are_counted_and_trimmed() {
        // Many chunks below the mmap threshold, every other one kept: the freed ones stay in
        // the heap, between kept ones.
        let mut kept = Vec::new();
        let mut freed = Vec::new();
        for i in 0..4096 {
            let chunk = vec![i as u8; 16 << 10];
            if i % 2 == 0 {
                kept.push(chunk);
            } else {
                freed.push(chunk);
            }
        }
        let before = heap_free();
        drop(freed);
        assert!(
            heap_free() >= before + (16 << 20),
            "{before} → {}",
            heap_free()
        );
        trim();
        assert_eq!(kept.len(), 2048);
        assert!(kept.iter().enumerate().all(|(i, c)| c[0] == (2 * i) as u8));
    }

    #[test]
    fn one_arena_unless_the_environment_says() {
        for (env, want) in [(None, Some(1)), (Some("2"), None), (Some(""), None)] {
            assert_eq!(arena_max(env.map(std::ffi::OsStr::new)), want, "{env:?}");
        }
        bound_malloc_arenas();
        // Allocation still works after the setting.
        assert_eq!(vec![1u8; 1 << 20].len(), 1 << 20);
    }
}
