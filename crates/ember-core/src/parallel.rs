//! The one thread pool every kernel runs on. `set_num_threads` swaps the pool; work below
//! `GRAIN` elements stays on the calling thread, where a fork/join would cost more than it saves.
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::{Arc, OnceLock, RwLock};

/// Elements per task below which splitting is not worth a task.
pub const GRAIN: usize = 32 * 1024;

fn slot() -> &'static RwLock<Arc<ThreadPool>> {
    static POOL: OnceLock<RwLock<Arc<ThreadPool>>> = OnceLock::new();
    POOL.get_or_init(|| {
        let n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        RwLock::new(Arc::new(build(n)))
    })
}

fn build(n: usize) -> ThreadPool {
    ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("ember-{i}"))
        .build()
        .expect("could not start the thread pool")
}

pub fn pool() -> Arc<ThreadPool> {
    slot().read().unwrap().clone()
}

pub fn num_threads() -> usize {
    pool().current_num_threads()
}

pub fn set_num_threads(n: usize) {
    let n = n.max(1);
    if num_threads() != n {
        *slot().write().unwrap() = Arc::new(build(n));
    }
}

/// Ranges per thread a large job is cut into: on a shared host a core can stall mid-job, and
/// with several ranges each the other threads take over its remaining ones.
const RANGES_PER_THREAD: usize = 4;

/// Calls `f(start, end)` over `0..n` in ranges at least `grain` long, a few per thread; runs
/// inline when there is only one range.
pub fn for_range(n: usize, grain: usize, f: impl Fn(usize, usize) + Sync) {
    let pool = pool();
    let threads = pool.current_num_threads();
    let tasks = (n / grain.max(1)).clamp(1, threads * RANGES_PER_THREAD);
    if threads == 1 || tasks <= 1 || rayon::current_thread_index().is_some() {
        if n > 0 {
            f(0, n);
        }
        return;
    }
    let chunk = n.div_ceil(tasks);
    pool.scope(|s| {
        for t in 1..tasks {
            let (start, end) = (t * chunk, ((t + 1) * chunk).min(n));
            if start < end {
                let f = &f;
                s.spawn(move |_| f(start, end));
            }
        }
        f(0, chunk.min(n));
    });
}
