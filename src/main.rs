//! `kubectl-mesh_doctor`: everything is in [`mesh_doctor::cli::main_impl`].

/// mimalloc, not glibc's malloc: the readers and analyzers make millions of small allocations
/// on several threads (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How mimalloc takes memory, chosen by [`mesh_doctor::cli::memory::wants_huge_pages`]:
/// - by default, arenas committed page by page as they fill, not whole when reserved: the peak
///   memory stays that of the data (proxy-status on 10,000 proxies: 86 MiB, not 102);
/// - for `analyze` of files, arenas committed whole and advised to the kernel as huge pages
///   (`MADV_HUGEPAGE`; a kernel without transparent huge pages gives small ones): a fifth less
///   time for about a quarter more peak memory (docs/performance.md);
/// - always, no collection of the freed memory at exit (`mi_option_destroy_on_exit` above 1
///   makes mimalloc's exit handler return at once): the kernel takes the whole address space
///   back anyway, and the collection cost a live `analyze -A` of 16,000 objects about 5 ms of
///   madvise calls after its output was written.
///
/// They must be set before mimalloc reserves its first arena, i.e. before the first allocation:
/// a constructor that runs before the program's others. glibc gives the functions of
/// `.init_array` the process's arguments (std's own `env::args` relies on it), so the options
/// are set on Linux with glibc (the release builds for Linux link it statically); elsewhere
/// mimalloc keeps its defaults.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod allocator_options {
    /// mimalloc v3's `mi_option_arena_eager_commit`, `mi_option_allow_large_os_pages` and
    /// `mi_option_destroy_on_exit` (the 5th, 7th and 23rd of `mi_option_e` in its `mimalloc.h`;
    /// the Rust bindings name no constant for them).
    const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
    const ALLOW_LARGE_OS_PAGES: libmimalloc_sys::mi_option_t = 6;
    const DESTROY_ON_EXIT: libmimalloc_sys::mi_option_t = 22;
    /// The value of `mi_option_destroy_on_exit` at which `_mi_auto_process_done` returns without
    /// collecting (its `init.c`).
    const NO_COLLECT_ON_EXIT: std::ffi::c_long = 2;

    extern "C" fn set(
        argc: std::ffi::c_int,
        argv: *const *const std::ffi::c_char,
        _envp: *const *const std::ffi::c_char,
    ) {
        let count = if argv.is_null() {
            0
        } else {
            usize::try_from(argc).unwrap_or(0)
        };
        let args = (0..count).filter_map(|i| {
            // SAFETY: `argv` holds `argc` pointers to C strings, each null or valid for the
            // life of the process; reading them allocates nothing.
            let arg = unsafe { *argv.add(i) };
            (!arg.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(arg) }.to_bytes())
        });
        let huge = std::ffi::c_long::from(mesh_doctor::cli::memory::wants_huge_pages(args));
        // SAFETY: sets process-wide options while the process has one thread and has not
        // allocated through mimalloc yet (`wants_huge_pages` allocates nothing).
        unsafe {
            libmimalloc_sys::mi_option_set(ARENA_EAGER_COMMIT, huge);
            libmimalloc_sys::mi_option_set(ALLOW_LARGE_OS_PAGES, huge);
            libmimalloc_sys::mi_option_set(DESTROY_ON_EXIT, NO_COLLECT_ON_EXIT);
        }
    }

    #[used]
    #[unsafe(link_section = ".init_array.00099")]
    static SET: extern "C" fn(
        std::ffi::c_int,
        *const *const std::ffi::c_char,
        *const *const std::ffi::c_char,
    ) = set;
}

fn main() -> std::process::ExitCode {
    mesh_doctor::cli::main_impl()
}
