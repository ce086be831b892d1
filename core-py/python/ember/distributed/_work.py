"""Work handles, and how ember.distributed never hangs.

Every operation is a generator that yields nonblocking MPI requests (Iallgather, Iallreduce,
Isend, ...) and finishes the work between them (checking what the other ranks sent, dividing an
AVG, copying into output lists). A Work drives its generator by testing the current request, so
waiting is a loop that also watches two things MPI's blocking calls cannot:

- the deadline (the group's timeout, counted from the operation's start): a rank that died, or
  never calls the collective, makes the others raise DistBackendError instead of hanging;
- failure notices: a rank that ends with an uncaught exception sends its message to every other
  rank (on a communicator of its own) before exiting, and a rank waiting on any operation raises
  DistBackendError naming that rank and its error at once.

Collectives on one communicator must be started in the same order on every rank. A work's first
request (the fingerprint exchange that catches mismatched shapes and dtypes) goes out on the
group's `meta` communicator when the work is created; its later requests go out on `data` in
creation order: a work starts its next request only when every older work of the group has
started all of its own (`Channel.progress`).

After a failure MPI cannot be used any more (MPI_Finalize itself would wait for the dead rank), so
the process exits without finalizing MPI. When a peer dies hard, MPICH sometimes blocks inside a
test call itself (it keeps trying to reach the dead process), where no deadline check can run: a
watchdog thread then reports the stuck operation on stderr and ends the process, GRACE_S seconds
after its deadline."""
import atexit
import os
import sys
import threading
import time

from ember.distributed._mpi import MPI
from ember.futures import Future

_ABORT_TAG, _ACK_TAG = 7, 8
_ACK_WAIT_S = 2.0
_NOTICE_BYTES = 4096
GRACE_S = 5.0
_FINALIZE_S = 30.0


class DistError(RuntimeError):
    """An error of ember.distributed (torch.distributed.DistError)."""


class DistBackendError(DistError):
    """The communication backend failed: a timeout, or another rank failed (torch's DistBackendError)."""


class DistStoreError(DistError):
    """A store operation failed, e.g. a key was not set within the timeout (torch's DistStoreError)."""


class DistNetworkError(DistError):
    """A store could not listen, connect, or lost its connection (torch's DistNetworkError)."""


class QueueEmptyError(DistStoreError):
    """A non-blocking `queue_pop` found the store's queue empty (torch.distributed.QueueEmptyError)."""


class _Health:
    """Process-wide failure state: the first failure seen, and the failure-notice channel."""

    def __init__(self):
        self.failure = None
        self.control = None      # a duplicate of COMM_WORLD carrying failure notices only
        self.notice = None       # the pending receive of a notice
        self.notice_buffer = None
        self.previous_excepthook = None
        self.waiting = None      # (deadline, operation) of the wait running now, for the watchdog
        self.notified = False
        self.acks = []           # sends acknowledging notices

    def start(self, world):
        if self.control is not None:
            return
        self.control = world.Dup()
        threading.Thread(target=self._watch, args=(world.Get_rank(),), name="ember.distributed watchdog",
                         daemon=True).start()
        self.notice_buffer = bytearray(_NOTICE_BYTES)
        self.notice = self.control.Irecv([self.notice_buffer, MPI.BYTE], source=MPI.ANY_SOURCE, tag=_ABORT_TAG)
        self.previous_excepthook = sys.excepthook
        sys.excepthook = self._excepthook
        atexit.register(self._at_exit)

    def check(self):
        """Raises when the process group is broken or another rank reported a failure."""
        if self.failure is not None:
            raise DistBackendError(f"the process group is unusable after an earlier failure: {self.failure}")
        if self.notice is not None:
            status = MPI.Status()
            if self.notice.Test(status):
                text = bytes(self.notice_buffer[:status.Get_count(MPI.BYTE)]).decode(errors="replace")
                self.notice = None
                self.acks.append(self.control.Isend([b"", MPI.BYTE], dest=status.Get_source(), tag=_ACK_TAG))
                self.fail(f"rank {status.Get_source()} failed: {text}", tell_others=False)

    def fail(self, message, tell_others=True):
        """Marks the group broken, tells the other ranks (unless the failure came from one) and
        raises; later operations raise too."""
        if self.failure is None:
            self.failure = message
            if tell_others:
                self.notify_others(message)
        raise DistBackendError(message)

    def _watch(self, rank):
        """Ends the process when a wait is stuck inside MPI well past its deadline."""
        while True:
            time.sleep(0.5)
            waiting = self.waiting
            if waiting is not None and time.monotonic() > waiting[0] + GRACE_S:
                os.write(2, (f"ember.distributed: rank {rank}: {waiting[1]} is blocked inside MPI {GRACE_S:g} s past "
                             "its timeout (a peer process probably died); exiting\n").encode())
                os._exit(1)

    def _excepthook(self, kind, value, tb):
        self.previous_excepthook(kind, value, tb)
        if self.failure is None:  # else the others already know (they told us, or we told them)
            self.notify_others(f"{kind.__name__}: {value}")

    def notify_others(self, message):
        """Sends `message` to every other rank and waits (briefly) until they have read it: mpiexec
        may kill the job as soon as this process exits, before the others could report."""
        if self.control is None or self.notified:
            return
        self.notified = True
        me, data = self.control.Get_rank(), message.encode()[:_NOTICE_BYTES]
        others = [r for r in range(self.control.Get_size()) if r != me]
        pending = [self.control.Isend([data, MPI.BYTE], dest=r, tag=_ABORT_TAG) for r in others]
        pending += [self.control.Irecv([bytearray(1), MPI.BYTE], source=r, tag=_ACK_TAG) for r in others]
        deadline = time.monotonic() + _ACK_WAIT_S  # a rank busy computing, or dead, never answers
        while pending and time.monotonic() < deadline:
            pending = [request for request in pending if not request.Test()]
            time.sleep(0.001)
        if self.failure is None:
            self.failure = f"this rank failed: {message}"

    def _at_exit(self):
        sys.stdout.flush()
        sys.stderr.flush()
        if self.failure is not None:
            os._exit(1)  # MPI_Finalize would wait for ranks that failed
        if self.notice is not None:
            self.notice.Cancel()
            self.notice.Wait()
        if MPI.Is_initialized() and not MPI.Is_finalized():
            self.waiting = (time.monotonic() + _FINALIZE_S, "MPI_Finalize")  # a rank that died unseen blocks it
            MPI.Finalize()


health = _Health()


class Channel:
    """A group's communicators and its queue of works still starting requests."""

    def __init__(self, comm, timeout):
        self.data = comm.Dup()
        self.meta = comm.Dup()
        self.timeout = timeout
        self.starting = []  # works that have requests left to start, oldest first

    def progress(self):
        """Advances the works in order; a younger work starts requests only after older ones."""
        while self.starting:
            work = self.starting[0]
            if not work._advance():
                return
            if self.starting and self.starting[0] is work:  # a nested progress (a callback's wait) may have
                self.starting.pop(0)

    def free(self):
        for comm in (self.data, self.meta):
            if comm != MPI.COMM_NULL:
                comm.Free()


class Last:
    """Wraps an operation's last request, so younger works may start theirs while it runs."""

    def __init__(self, request):
        self.request = request


class Work:
    """The handle of an operation (torch.distributed's Work): `wait()`, `is_completed()`,
    `get_future()`, `result()`."""

    def __init__(self, channel, name, steps, outputs=()):
        self._channel, self._name, self._outputs = channel, name, list(outputs)
        self._steps = steps
        self._request = None
        self._status = None
        self._started_all = False
        self._done = False
        self._exception = None
        self._value = None
        self._started = time.monotonic()
        self._future = None
        self._next(None)  # the first request goes out now, in program order
        if not self._started_all:
            channel.starting.append(self)

    def _next(self, status, error=None):
        try:
            if error is not None:
                request = self._steps.throw(error)
            else:
                request = self._steps.send(status) if status is not None else next(self._steps)
            if isinstance(request, Last):
                request, self._started_all = request.request, True
            self._request, self._status = request, MPI.Status()
        except StopIteration as stop:
            self._request, self._started_all, self._done, self._value = None, True, True, stop.value
        except BaseException as error:
            self._request, self._started_all, self._done, self._exception = None, True, True, error

    def _advance(self):
        """(The oldest starting work only.) Tests the current request and starts the next one
        when it is done. True once every request has started (the last may still be running)."""
        while not self._started_all and self._test():
            self._next(self._status)
        return self._started_all

    def _test(self):
        """Whether the current request is done; an MPI error is thrown into the operation's steps."""
        try:
            return self._request.Test(self._status)
        except MPI.Exception as error:
            self._next(None, RuntimeError(f"{self._name}: MPI reported an error: {error.Get_error_string()}"))
            return False

    def _poll(self):
        if self._done:
            return True
        if self in self._channel.starting:
            self._channel.progress()
            if self in self._channel.starting:
                return False
        if not self._done and self._test():
            self._next(self._status)
        return self._done

    def _resolve(self):
        """Sets the future. Only waiting does this, never background progress: its callbacks may
        start collectives, which must happen at the same point of the program on every rank."""
        if self._future is not None and not self._future.done():
            if self._exception is not None:
                self._future.set_exception(self._exception)
            else:
                self._future.set_result(self.result())

    def wait(self, timeout=None):
        """Blocks until the operation finishes (it raises the operation's error, a timeout after
        the group's timeout or `timeout`, or another rank's failure); returns True."""
        limit = self._channel.timeout if timeout is None else timeout
        deadline = self._started + limit.total_seconds()
        outer, health.waiting = health.waiting, (deadline, self._name)
        try:
            self._wait_until(deadline, limit)
        finally:
            health.waiting = outer
        self._resolve()
        if self._exception is not None:
            raise self._exception
        return True

    def _wait_until(self, deadline, limit):
        spins = 0
        while not self._poll():
            spins += 1
            if spins % 16 == 0:
                health.check()
                if time.monotonic() > deadline:
                    health.fail(f"{self._name} timed out after {limit.total_seconds():g} s: some rank never joined it "
                                f"(it died, hangs, or runs a different sequence of collectives)")
            if spins > 256:
                os.sched_yield()  # MPI progresses only when tested; yield the core between tests

    def is_completed(self):
        """Whether the operation has finished (one test; it never blocks)."""
        return self._poll()

    def is_success(self):
        return self._done and self._exception is None

    def exception(self):
        return self._exception

    def result(self):
        """The operation's output tensors."""
        return self._outputs

    def source_rank(self):
        """For a recv from any source: the rank the message came from."""
        return self._value

    def get_future(self):
        """A Future holding `result()` once the operation finishes; waiting on it drives the work."""
        if self._future is None:
            self._future = Future(driver=self.wait)
        return self._future

    def __repr__(self):
        return f"<Work {self._name} {'completed' if self._done else 'pending'}>"


def progress(channel):
    """Lets MPI move the group's running operations forward and starts their next requests
    (DistributedDataParallel calls it between gradient hooks)."""
    channel.progress()
    health.check()  # testing the failure-notice receive also drives MPI's progress engine
