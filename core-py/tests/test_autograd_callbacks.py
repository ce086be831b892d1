"""ember.autograd.graph.queue_callback: callbacks queued from a hook run once the backward pass
has accumulated every gradient (DistributedDataParallel's end-of-pass step relies on it)."""
import pytest

import ember
from ember.autograd.graph import queue_callback


def test_callbacks_run_after_every_gradient_is_accumulated():
    w = ember.nn.Parameter(ember.ones(3))
    seen = []

    def hook(grad):
        queue_callback(lambda: seen.append(w.grad.tolist()))
        queue_callback(lambda: seen.append("second"))
    w.register_hook(hook)
    (w * 2).sum().backward()
    assert seen == [[2.0, 2.0, 2.0], "second"]
    ember.autograd.grad((w * 3).sum(), w)  # autograd.grad runs them too
    assert len(seen) == 4


def test_queue_callback_outside_backward_raises_and_failed_passes_drop_callbacks():
    with pytest.raises(RuntimeError, match="during backward pass"):
        queue_callback(lambda: None)
    w = ember.nn.Parameter(ember.ones(2))
    ran = []

    def failing_hook(grad):
        queue_callback(lambda: ran.append(1))
        raise ValueError("hook failed")
    w.register_hook(failing_hook)
    with pytest.raises(ValueError, match="hook failed"):
        w.sum().backward()
    assert ran == []
