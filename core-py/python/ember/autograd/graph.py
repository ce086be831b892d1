"""`ember.autograd.graph`: the graph's node type (`tensor.grad_fn`), and callbacks that run when
a backward pass finishes.

Tensor hooks on a leaf run before its gradient is added to `.grad`, so code that needs every
`.grad` of a pass in place (DistributedDataParallel's last gradient bucket) queues a callback from
a hook: `queue_callback` is PyTorch's `Variable._execution_engine.queue_callback`."""
import contextlib
import threading

from ember._C import Node

__all__ = ["Node", "queue_callback"]

_passes = threading.local()


def queue_callback(callback):
    """Runs `callback()` when the backward pass now running finishes (after every gradient is
    accumulated), in the order queued. Only callable while a backward pass runs (from a hook)."""
    stack = getattr(_passes, "stack", None)
    if not stack:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    stack[-1].append(callback)


@contextlib.contextmanager
def backward_pass():
    """Scope of one backward pass: the callbacks queued in it run when it ends without error."""
    stack = _passes.__dict__.setdefault("stack", [])
    stack.append([])
    try:
        yield
        callbacks = stack[-1]
        while callbacks:  # a callback may queue more
            callbacks.pop(0)()
    finally:
        stack.pop()
