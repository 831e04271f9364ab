//! The one way work is spread over the machine's cores: a slice of independent jobs, each done
//! once, on scoped threads that take the next job when they finish one, with the results in the
//! slice's order (so what is printed never depends on which thread was faster).

use std::sync::atomic::{AtomicUsize, Ordering};

/// How many threads work on `jobs` jobs: the cores, never more than the jobs.
pub fn workers(jobs: usize) -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs.max(1))
}

/// `items` in consecutive parts, one per thread [`workers`] gives for one job per `per_thread`
/// items (a single part below twice that), for [`map`] to do in order.
pub fn parts<T>(items: &[T], per_thread: usize) -> Vec<&[T]> {
    let threads = workers(items.len() / per_thread.max(1));
    let size = items.len().div_ceil(threads).max(1);
    items.chunks(size).collect()
}

/// How many threads the async runtime runs its tasks on (network I/O, and the decoding of each
/// listed page): half the cores, at least one, at most four. The thread that waits on the
/// command polls its futures too, so one runtime thread already gives two. More threads than
/// that hand each read chunk of an answer from the thread that received it to another: on 2
/// cores, 2 runtime threads cost 6,000-11,000 context switches and 40-50 ms more CPU in a live
/// `analyze -A` of 16,000 objects than 1 (docs/performance.md), and CPU the API server, on
/// the same machine in the benchmark, then lacks.
pub fn runtime_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores / 2).clamp(1, 4)
}

/// `job(i, &items[i])` for every item, on [`workers`] threads; the results in the items'
/// order. With one core or one item, it runs on the calling thread. A panicking job panics
/// here, once the other threads have stopped.
pub fn map<T, R>(items: &[T], job: impl Fn(usize, &T) -> R + Sync) -> Vec<R>
where
    T: Sync,
    R: Send,
{
    let threads = workers(items.len());
    if threads <= 1 {
        return items.iter().enumerate().map(|(i, t)| job(i, t)).collect();
    }
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        mine.push((i, job(i, item)));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| match h.join() {
                Ok(mine) => mine,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// `first()` on another thread while `second()` runs on this one; both results. With one core,
/// one after the other. A panic in either panics here.
pub fn join<A, B>(first: impl FnOnce() -> A + Send, second: impl FnOnce() -> B) -> (A, B)
where
    A: Send,
{
    if workers(2) <= 1 {
        let a = first();
        return (a, second());
    }
    std::thread::scope(|scope| {
        let handle = scope.spawn(first);
        let b = second();
        match handle.join() {
            Ok(a) => (a, b),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_the_order_of_the_items() {
        let items: Vec<u64> = (0..1000).collect();
        let squares = map(&items, |i, &n| {
            assert_eq!(i as u64, n);
            n * n
        });
        assert_eq!(squares, items.iter().map(|n| n * n).collect::<Vec<_>>());
        assert!(map(&[] as &[u8], |_, _| 0).is_empty());
    }

    #[test]
    fn parts_cover_the_items_in_order() {
        let items: Vec<u32> = (0..2500).collect();
        let parts = parts(&items, 1000);
        // Two parts where there are two cores or more, one on one core; never more than
        // 2,500 / 1,000 jobs.
        assert!((1..=2).contains(&parts.len()), "{}", parts.len());
        assert_eq!(parts.concat(), items);
        assert_eq!(super::parts(&items[..10], 1000).len(), 1);
        assert!(super::parts(&[] as &[u8], 1000).is_empty());
        assert_eq!(super::parts(&items[..3], 0).concat(), &items[..3]);
    }

    #[test]
    fn both_halves_of_a_join_run() {
        let items = [1, 2, 3];
        let (sum, len) = join(|| items.iter().sum::<i32>(), || items.len());
        assert_eq!((sum, len), (6, 3));
    }

    #[test]
    fn a_panicking_job_panics_the_caller() {
        let items = [1, 2, 3, 4];
        let result = std::panic::catch_unwind(|| {
            map(&items, |_, &n| {
                if n == 3 {
                    panic!("job 3");
                }
                n
            })
        });
        assert!(result.is_err());
    }
}
