//! The memory allocator's settings (issue 21; measured in BENCHMARKS.md, "Memory with 10,000
//! idle workspaces"): glibc's malloc kept, bounded to one arena. With one arena per thread (glibc's
//! default, up to 8 per core) the many short-lived allocations of the server's threads leave each
//! arena fragmented: 148 MiB settled and 356 MiB peak at 10,000 idle workspaces and a burst of 20
//! runs, against 85 MiB and 162 MiB with one arena — as low as jemalloc tuned for it, and lower
//! than mimalloc, with no allocator to build. `MALLOC_ARENA_MAX` in the environment still wins.

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

#[cfg(test)]
mod tests {
    use super::*;

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
