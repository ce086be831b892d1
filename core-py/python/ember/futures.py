"""`ember.futures`: PyTorch's Future, the result of an asynchronous operation (the value of
`Work.get_future()`, what DistributedDataParallel's communication hooks return)."""

__all__ = ["Future", "collect_all", "wait_all"]

_PENDING = object()


class Future:
    """A value that becomes available later. `then(callback)` chains work on it; `wait()` blocks
    until it is set (driving the operation behind it, when there is one) and returns it."""

    def __init__(self, *, devices=None, driver=None):
        self._result = _PENDING
        self._exception = None
        self._callbacks = []
        self._driver = driver  # blocks until this future is set (an asynchronous operation's wait)

    def done(self):
        return self._result is not _PENDING or self._exception is not None

    def wait(self):
        """Blocks until the value is set and returns it (raises the error it was set with)."""
        if not self.done():
            if self._driver is None:
                raise RuntimeError("Future.wait(): the value was never set and nothing is running to set it")
            self._driver()
        if self._exception is not None:
            raise self._exception
        return self._result

    def value(self):
        """The value (raises when it is not set yet, or was set with an error)."""
        if self._exception is not None:
            raise self._exception
        if self._result is _PENDING:
            raise RuntimeError("Future.value(): the future is not completed yet; call wait() first")
        return self._result

    def set_result(self, result):
        if self.done():
            raise RuntimeError("Future can only be marked completed once.")
        self._result = result
        self._run_callbacks()

    def set_exception(self, result):
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception: expected an exception, but got {type(result).__name__}")
        if self.done():
            raise RuntimeError("Future can only be marked completed once.")
        self._exception = result
        self._run_callbacks()

    def add_done_callback(self, callback):
        """Runs `callback(self)` once the value is set (at once if it is)."""
        if self.done():
            callback(self)
        else:
            self._callbacks.append(callback)

    def then(self, callback):
        """A new Future holding `callback(self)` once this one is set (its error if it raises)."""
        chained = Future(driver=self.wait)

        def run(parent):
            try:
                chained.set_result(callback(parent))
            except BaseException as error:  # carried to whoever waits on the chained future
                chained.set_exception(error)
        self.add_done_callback(run)
        return chained

    def _run_callbacks(self):
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)

    def __repr__(self):
        state = "done" if self.done() else "pending"
        return f"<ember.futures.Future {state}>"


def collect_all(futures):
    """A Future holding the list of `futures`, set once all of them are."""
    futures = list(futures)
    out = Future(driver=lambda: [f.wait() for f in futures if not f.done()])
    remaining = [len(futures)]

    def one_done(_):
        remaining[0] -= 1
        if remaining[0] == 0 and not out.done():
            out.set_result(futures)
    for f in futures:
        f.add_done_callback(one_done)
    if not futures:
        out.set_result([])
    return out


def wait_all(futures):
    """Waits for every future and returns their values (the first error is raised)."""
    return [f.wait() for f in futures]
