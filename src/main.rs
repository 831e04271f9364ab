//! `kubectl-mesh_doctor`: everything is in [`mesh_doctor::cli::main_impl`].

/// mimalloc, not glibc's malloc: the readers and analyzers make millions of small allocations
/// on several threads (docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc v3's `mi_option_arena_eager_commit` (the fifth of `mi_option_e` in its
/// `mimalloc.h`; the Rust bindings name no constant for it).
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;

/// Arenas committed page by page as they fill, not whole when reserved: the peak memory stays
/// that of the data (proxy-status on 10,000 proxies: 93 MiB, not 104), for no measurable time
/// (docs/performance.md). It must be set before mimalloc reserves its first arena, i.e. before
/// the first allocation: a constructor that runs before the program's others.
extern "C" fn allocator_options() {
    // SAFETY: sets a process-wide option while the process has one thread and has not
    // allocated through mimalloc yet.
    unsafe { libmimalloc_sys::mi_option_set(ARENA_EAGER_COMMIT, 0) };
}

#[used]
#[unsafe(link_section = ".init_array.00099")]
static ALLOCATOR_OPTIONS: extern "C" fn() = allocator_options;

fn main() -> std::process::ExitCode {
    mesh_doctor::cli::main_impl()
}
