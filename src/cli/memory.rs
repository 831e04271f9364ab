//! How the allocator is set up, decided from the raw arguments before the first allocation
//! (`src/main.rs` runs this from a constructor, before clap and before `main`). It is a hint
//! about memory only: whatever it answers, every command runs the same and says the same.

/// True when the run reads a set of manifest files (`analyze -f`/`--filename`): the readers
/// build a few hundred thousand small objects at once, and transparent huge pages (where the
/// kernel offers them) cut the time spent taking fresh memory from the kernel a page at a time
/// by a fifth of the run (docs/performance.md), for about a quarter more peak memory. Every other
/// run keeps 4 KiB pages committed as they fill, the smallest peak (`proxy-status` on 10,000
/// proxies stays under 100 MB).
///
/// `args` are the process's arguments, the program's name first. The command is the first
/// argument that is neither an option nor the value of the global `--color`; a file option is
/// `-f`, `--filename`, `--filename=PATH`, or a cluster of short options with `f` in it (`-Rf`).
pub fn wants_huge_pages<'a>(args: impl IntoIterator<Item = &'a [u8]>) -> bool {
    let mut args = args.into_iter().skip(1);
    let mut command = None;
    while let Some(arg) = args.next() {
        if arg == b"--color" {
            args.next();
        } else if !arg.starts_with(b"-") {
            command = Some(arg);
            break;
        }
    }
    if command != Some(b"analyze".as_slice()) {
        return false;
    }
    args.take_while(|a| *a != b"--").any(|arg| {
        arg == b"--filename"
            || arg.starts_with(b"--filename=")
            || (arg.len() > 1
                && arg[0] == b'-'
                && arg[1] != b'-'
                && short_options_name_f(&arg[1..]))
    })
}

/// Whether a cluster of short options (`Rf`, `f`, `fdir/`) gives `-f`: the options before it
/// take no value (the value of one that takes one is the rest of the cluster).
fn short_options_name_f(cluster: &[u8]) -> bool {
    for &c in cluster {
        match c {
            b'f' => return true,
            // the flags without value of `analyze`
            b'R' | b'A' | b'L' | b'v' | b'h' => continue,
            _ => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn huge(line: &str) -> bool {
        let args: Vec<&[u8]> = std::iter::once("kubectl-mesh_doctor")
            .chain(line.split_whitespace())
            .map(str::as_bytes)
            .collect();
        wants_huge_pages(args)
    }

    #[test]
    fn files_analyzed_get_huge_pages() {
        assert!(huge("analyze -f k8s/"));
        assert!(huge("analyze --filename k8s/ -R"));
        assert!(huge("analyze --filename=k8s/"));
        assert!(huge("analyze -Rf k8s/"));
        assert!(huge("analyze -fk8s/"));
        assert!(huge("-v --color never analyze -o json -f a.yaml"));
    }

    #[test]
    fn every_other_run_keeps_small_pages() {
        assert!(!huge(""));
        assert!(!huge("analyze -n shop"));
        assert!(!huge("analyze -A -o json"));
        // `-o` takes a value: the cluster is `-o` with `fancy`, not `-f`
        assert!(!huge("analyze -ofancy"));
        // after `--`, arguments are not options
        assert!(!huge("analyze -- -f"));
        assert!(!huge("proxy-status --syncz-file s.json --pods-file p.json"));
        assert!(!huge("pod -f web"));
        // `analyze` as the value of `--color` is not the command
        assert!(!huge("--color analyze pod -f x"));
    }
}
