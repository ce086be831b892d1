//! The threads every kernel runs on. `for_range`, the elementwise and reduction workhorse, runs
//! on a team: the calling thread plus `threads - 1` workers that spin for a while after each job,
//! as OpenMP's do, because waking a sleeping thread costs tens of microseconds (more on a VM) and
//! a sleeping caller costs as much again. Kernels built on rayon (gemm, faer, parallel sorts)
//! use the rayon pool. `set_num_threads` replaces both. Work below `GRAIN` elements stays on the
//! calling thread, where a fork/join would cost more than it saves. A forked child (`fork(2)`,
//! a DataLoader worker) starts its own threads on its first parallel op.
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::any::Any;
use std::cell::Cell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

/// Elements per task below which splitting is not worth a task.
pub const GRAIN: usize = 32 * 1024;

/// Ranges per thread a large job is cut into: on a shared host a core can stall mid-job, and
/// with several ranges each the other threads take over its remaining ones.
const RANGES_PER_THREAD: usize = 4;

/// How long an idle team worker keeps looking for the next job before it sleeps; after the
/// first few microseconds it yields, so a runnable rayon worker still gets the core.
const SPIN_FOR: Duration = Duration::from_millis(2);
const PURE_SPINS: u32 = 2000;

struct Threads {
    rayon: Arc<ThreadPool>,
    team: Arc<Team>,
}

/// The threads, made on first use. A forked child has none of its parent's threads (only the
/// one that called `fork`), so `after_fork_in_child` empties this and the child's first parallel
/// op makes its own: PyTorch's pools are remade in a forked child the same way. The parent's
/// copy is leaked in the child: its locks and queues may be mid-use by threads that are gone.
static SLOT: AtomicPtr<RwLock<Threads>> = AtomicPtr::new(std::ptr::null_mut());

/// The count `set_num_threads` asked for (0: one per core); a forked child keeps it.
static REQUESTED: AtomicUsize = AtomicUsize::new(0);

fn slot() -> &'static RwLock<Threads> {
    let threads = SLOT.load(Acquire);
    if threads.is_null() {
        return start_threads();
    }
    // Set once per process by `start_threads`, never freed.
    unsafe { &*threads }
}

#[cold]
fn start_threads() -> &'static RwLock<Threads> {
    register_fork_handlers();
    let n = match REQUESTED.load(Relaxed) {
        0 => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        n => n,
    };
    let fresh = Box::into_raw(Box::new(RwLock::new(Threads::new(n))));
    match SLOT.compare_exchange(std::ptr::null_mut(), fresh, AcqRel, Acquire) {
        Ok(_) => unsafe { &*fresh },
        Err(first) => {
            // Another thread started them first; ours were never shared.
            drop(unsafe { Box::from_raw(fresh) });
            unsafe { &*first }
        }
    }
}

/// Registers, once per process, the `pthread_atfork` handlers that keep a forked child (a
/// DataLoader worker, `os.fork`) able to run every kernel, whatever ran before the fork.
pub(crate) fn register_fork_handlers() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let rc = unsafe { libc::pthread_atfork(Some(before_fork), Some(after_fork_in_parent), Some(after_fork_in_child)) };
        assert_eq!(rc, 0, "pthread_atfork failed");
    });
}

extern "C" fn before_fork() {
    crate::storage::large_cache::hold_for_fork();
}

extern "C" fn after_fork_in_parent() {
    crate::storage::large_cache::release_after_fork();
}

extern "C" fn after_fork_in_child() {
    crate::storage::large_cache::release_after_fork();
    SLOT.store(std::ptr::null_mut(), SeqCst);
}

impl Threads {
    fn new(n: usize) -> Threads {
        let rayon = ThreadPoolBuilder::new()
            .num_threads(n)
            .thread_name(|i| format!("ember-{i}"))
            .build()
            .expect("could not start the thread pool");
        Threads { rayon: Arc::new(rayon), team: Team::start(n) }
    }
}

/// Counts `pool()` calls: a rayon kernel is about to start, and idle team workers that see the
/// count move go to sleep at once rather than take cores from it.
static RAYON_CALLS: AtomicUsize = AtomicUsize::new(0);

/// The rayon pool, for kernels built on rayon; call it right before running one.
pub fn pool() -> Arc<ThreadPool> {
    RAYON_CALLS.fetch_add(1, Relaxed);
    slot().read().unwrap().rayon.clone()
}

/// The threads the CPU kernels use (`torch.get_num_threads`).
pub fn num_threads() -> usize {
    slot().read().unwrap().rayon.current_num_threads()
}

/// Sets the threads the CPU kernels use, at least 1 (`torch.set_num_threads`).
pub fn set_num_threads(n: usize) {
    let n = n.max(1);
    REQUESTED.store(n, Relaxed);
    let threads = SLOT.load(Acquire);
    if threads.is_null() {
        return; // not started (or a forked child's not yet): the first parallel op starts `n`
    }
    let slot = unsafe { &*threads };
    if slot.read().unwrap().rayon.current_num_threads() != n {
        *slot.write().unwrap() = Threads::new(n);
    }
}

/// Calls `f(start, end)` over `0..n` in ranges at least `grain` long, a few per thread; runs
/// inline when there is only one range, inside another parallel job, or while another thread
/// has the team.
pub fn for_range(n: usize, grain: usize, f: impl Fn(usize, usize) + Sync) {
    let team = slot().read().unwrap().team.clone();
    let tasks = (n / grain.max(1)).clamp(1, (team.threads * RANGES_PER_THREAD).min(0xffff));
    let nested = IN_JOB.get() || rayon::current_thread_index().is_some();
    if tasks <= 1 || team.threads == 1 || nested || team.busy.swap(true, Acquire) {
        if n > 0 {
            f(0, n);
        }
        return;
    }
    let chunk = n.div_ceil(tasks);
    team.run(&Job { f: &f, n, chunk }, n.div_ceil(chunk));
}

/// Calls `f(&mut state, i)` for each `i` in `0..n`, every index claimed in order by the next
/// free thread, with one `state` per thread from `init`: for a kernel's few, long tasks, which
/// `for_range`'s ranges of several tasks would leave unevenly split.
pub fn for_each_with<S>(n: usize, init: impl Fn() -> S + Sync, f: impl Fn(&mut S, usize) + Sync) {
    let next = AtomicUsize::new(0);
    for_range(num_threads().min(n), 1, |_, _| {
        let mut state = init();
        loop {
            let i = next.fetch_add(1, Relaxed);
            if i >= n {
                return;
            }
            f(&mut state, i);
        }
    });
}

thread_local! {
    /// Set on team workers and on a caller while it runs a job: nested calls run inline.
    static IN_JOB: Cell<bool> = const { Cell::new(false) };
}

struct Job<'a> {
    f: &'a (dyn Fn(usize, usize) + Sync),
    n: usize,
    chunk: usize,
}

/// One job at a time. `state` packs the job's generation (high 32 bits), its task count (next
/// 16) and the next unclaimed task (low 16), so a claim is one compare-exchange that fails once
/// the job it saw has moved on; `job` stays valid while any claimed task is unfinished.
struct Team {
    threads: usize,
    busy: AtomicBool,
    state: AtomicU64,
    job: AtomicPtr<()>,
    done: AtomicUsize,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
    stop: AtomicBool,
}

impl Team {
    fn start(threads: usize) -> Arc<Team> {
        let team = Arc::new(Team {
            threads,
            busy: AtomicBool::new(false),
            state: AtomicU64::new(0),
            job: AtomicPtr::new(std::ptr::null_mut()),
            done: AtomicUsize::new(0),
            panic: Mutex::new(None),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
        });
        for i in 1..threads {
            let team = team.clone();
            std::thread::Builder::new()
                .name(format!("ember-team-{i}"))
                .spawn(move || team.work())
                .expect("could not start a worker thread");
        }
        team
    }

    /// Publishes `job`, works on it, and returns (releasing `busy`) once every task has finished.
    fn run(&self, job: &Job, tasks: usize) {
        self.job.store(job as *const Job as *mut (), Relaxed);
        self.done.store(0, Relaxed);
        let generation = (self.state.load(Relaxed) >> 32).wrapping_add(1) & 0xffff_ffff;
        self.state.store(generation << 32 | (tasks as u64) << 16, SeqCst);
        if self.sleepers.load(SeqCst) > 0 {
            let _guard = self.lock.lock().unwrap();
            self.wake.notify_all();
        }
        IN_JOB.set(true);
        self.work_on(generation);
        IN_JOB.set(false);
        let mut spins = 0u32;
        while self.done.load(Acquire) < tasks {
            spins += 1;
            if spins < PURE_SPINS { std::hint::spin_loop() } else { std::thread::yield_now() }
        }
        let panicked = self.panic.lock().unwrap().take();
        self.busy.store(false, Release);
        if let Some(payload) = panicked {
            resume_unwind(payload);
        }
    }

    fn claim(&self, generation: u64) -> Option<usize> {
        let mut s = self.state.load(Acquire);
        loop {
            let (tasks, next) = ((s >> 16) & 0xffff, s & 0xffff);
            if s >> 32 != generation || next >= tasks {
                return None;
            }
            match self.state.compare_exchange_weak(s, s + 1, AcqRel, Acquire) {
                Ok(_) => return Some(next as usize),
                Err(now) => s = now,
            }
        }
    }

    fn work_on(&self, generation: u64) {
        while let Some(t) = self.claim(generation) {
            // A claimed task keeps the job alive: its caller waits for `done`.
            let job = unsafe { &*(self.job.load(Acquire) as *const Job) };
            let (start, end) = (t * job.chunk, ((t + 1) * job.chunk).min(job.n));
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| (job.f)(start, end))) {
                self.panic.lock().unwrap().get_or_insert(payload);
            }
            self.done.fetch_add(1, Release);
        }
    }

    fn work(&self) {
        IN_JOB.set(true);
        let mut seen = self.state.load(Acquire) >> 32;
        while let Some(generation) = self.next_job(seen) {
            seen = generation;
            self.work_on(generation);
        }
    }

    /// Waits for a generation other than `seen`: spinning, then yielding, then asleep (at once
    /// when a rayon kernel starts).
    fn next_job(&self, seen: u64) -> Option<u64> {
        let started = Instant::now();
        let rayon_calls = RAYON_CALLS.load(Relaxed);
        let mut spins = 0u32;
        loop {
            if self.stop.load(Relaxed) {
                return None;
            }
            let generation = self.state.load(Acquire) >> 32;
            if generation != seen {
                return Some(generation);
            }
            spins += 1;
            if RAYON_CALLS.load(Relaxed) != rayon_calls || started.elapsed() >= SPIN_FOR {
                self.sleep_unless_moved(seen);
            } else if spins < PURE_SPINS {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// Sleeps until `run` or `Threads::drop` wakes the team; the counter is raised before the
    /// last look at `state`, so a job published meanwhile either is seen here or sees a sleeper.
    fn sleep_unless_moved(&self, seen: u64) {
        let guard = self.lock.lock().unwrap();
        self.sleepers.fetch_add(1, SeqCst);
        if self.state.load(SeqCst) >> 32 == seen && !self.stop.load(SeqCst) {
            drop(self.wake.wait(guard).unwrap());
        }
        self.sleepers.fetch_sub(1, SeqCst);
    }
}

/// The workers hold the team too, so replacing the threads is what tells them to exit (a job
/// still running on the old team finishes; its caller claims whatever they leave).
impl Drop for Threads {
    fn drop(&mut self) {
        self.team.stop.store(true, SeqCst);
        let _guard = self.team.lock.lock().unwrap();
        self.team.wake.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn covered(n: usize, grain: usize) -> Vec<usize> {
        let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
        for_range(n, grain, |s, e| (s..e).for_each(|i| _ = hits[i].fetch_add(1, Relaxed)));
        hits.into_iter().map(|h| h.into_inner()).collect()
    }

    #[test]
    fn every_index_runs_once_whatever_the_split() {
        for (n, grain) in [(0, 1), (1, 1), (7, 1), (1000, 3), (100_000, 1), (65_537, 64)] {
            for _ in 0..50 {
                assert!(covered(n, grain).iter().all(|&c| c == 1), "n={n} grain={grain}");
            }
        }
    }

    #[test]
    fn a_forked_child_runs_parallel_work_on_threads_of_its_own() {
        use rayon::prelude::*;
        let sum_on_pool = || pool().install(|| (0..1u64 << 20).into_par_iter().sum::<u64>());
        // Both kinds of threads have run (and are spinning or asleep) when the parent forks.
        assert!(covered(1 << 20, 1).iter().all(|&c| c == 1));
        let expected = sum_on_pool();
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let ok = covered(1 << 20, 1).iter().all(|&c| c == 1) && sum_on_pool() == expected;
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        assert!(pid > 0, "fork failed");
        let started = Instant::now();
        let mut status = 0;
        while unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == 0 {
            if started.elapsed() > Duration::from_secs(60) {
                unsafe { libc::kill(pid, libc::SIGKILL) };
                panic!("the forked child hung on its first parallel op");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "the child's results were wrong");
    }

    #[test]
    fn for_each_with_runs_every_index_once() {
        for n in [0, 1, 2, 7, 1000] {
            let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
            for_each_with(n, || (), |_, i| _ = hits[i].fetch_add(1, Relaxed));
            assert!(hits.iter().all(|h| h.load(Relaxed) == 1), "n={n}");
        }
    }

    #[test]
    fn nested_and_concurrent_calls_run_inline_and_finish() {
        let total = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for_range(64, 1, |a, b| for_range(1000, 1, |c, d| _ = total.fetch_add((b - a) * (d - c), Relaxed)));
                });
            }
        });
        assert_eq!(total.into_inner(), 3 * 64 * 1000);
    }

    #[test]
    fn a_panicking_task_reaches_the_caller_and_the_team_recovers() {
        // While another test holds the team, the call runs inline as one range that does not
        // fail, so try until a call reaches the team.
        let on_team = (0..10_000).find_map(|_| {
            let inline = std::sync::atomic::AtomicBool::new(false);
            let r = catch_unwind(|| for_range(1000, 1, |s, e| {
                inline.store(e - s == 1000, Relaxed);
                assert!(s == 0, "task at {s} failed");
            }));
            (!inline.into_inner()).then_some(r)
        });
        assert!(on_team.expect("the team was free for one call in 10,000").is_err());
        assert!(covered(10_000, 1).iter().all(|&c| c == 1));
    }
}
