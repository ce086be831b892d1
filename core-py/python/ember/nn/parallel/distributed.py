"""DistributedDataParallel: every rank holds a replica of the module, runs its share of the
batch, and the gradients are averaged across ranks while backward still runs.

How the overlap works. Parameters are grouped into buckets (flat tensors of about
`bucket_cap_mb`, in reverse registration order, roughly the order backward produces their
gradients; the first bucket is capped at 1 MB so communication starts early, as in PyTorch). A
tensor hook on each parameter fires when its gradient of the pass is complete. Ember's leaf hooks
run just before the gradient is added into `.grad` and Ember has no post-accumulate hook, so the
hook of a parameter marks the *previous* hooked parameter ready (its `.grad` is final by then:
the engine accumulates a leaf right after its hook), and `ember.autograd.graph.queue_callback`
marks the last one when the pass ends. A bucket whose parameters are all ready starts its
all-reduce (asynchronously, strictly in bucket order so that every rank issues the same
collectives in the same order); the end-of-pass callback waits for them and writes the averaged
gradients back."""
import contextlib
import functools
from dataclasses import dataclass

import ember
import ember.distributed as dist
from ember.autograd.graph import queue_callback
from ember.distributed import _work
from ember.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from ember.nn.modules.module import Module

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = 1024 * 1024


@dataclass
class _MixedPrecision:
    """DDP's mixed precision (torch's experimental `_MixedPrecision`): `param_dtype` is the dtype
    the forward and backward compute in (parameters and floating-point inputs are cast to it for
    the forward; outside it, and for the optimizer and state_dict, parameters and their gradients
    stay in full precision); `reduce_dtype` the dtype gradients are averaged in (default:
    `param_dtype`, else the parameters' own); `buffer_dtype` the dtype floating-point buffers are
    cast to once, at construction. None leaves that part as it is."""
    param_dtype: "ember.dtype" = None
    reduce_dtype: "ember.dtype" = None
    buffer_dtype: "ember.dtype" = None


def _check_mixed_precision(config):
    if config is None:
        return None
    for name in ("param_dtype", "reduce_dtype", "buffer_dtype"):
        if not hasattr(config, name):
            raise TypeError(f"DistributedDataParallel: mixed_precision must have param_dtype, reduce_dtype and "
                            f"buffer_dtype (a _MixedPrecision), but {type(config).__name__} has no {name}")
        dtype = getattr(config, name)
        if dtype is not None and (not isinstance(dtype, ember.dtype) or not dtype.is_floating_point):
            raise ValueError(f"DistributedDataParallel: mixed_precision.{name} must be a floating-point dtype or None, "
                             f"but got {dtype!r}")
    return config


def _cast_floating(value, dtype):
    """`value` with every floating-point tensor in it (through tuples, lists and dicts) cast to `dtype`."""
    if isinstance(value, ember.Tensor):
        return value.to(dtype) if value.dtype.is_floating_point else value
    if isinstance(value, (tuple, list)):
        return type(value)(_cast_floating(v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast_floating(v, dtype) for k, v in value.items()}
    return value


class GradBucket:
    """What a communication hook receives: a flat buffer holding the gradients of some
    parameters (torch.distributed.GradBucket)."""

    def __init__(self, index, buffer, parameters, offsets, is_last):
        self._index, self._buffer, self._parameters = index, buffer, parameters
        self._offsets, self._is_last = offsets, is_last

    def index(self):
        return self._index

    def buffer(self):
        """The flat tensor of gradients (the hook may modify it in place)."""
        return self._buffer

    def gradients(self):
        """One view of the buffer per parameter, shaped like it."""
        return [self._buffer[o:o + p.numel()].view(tuple(p.shape)) for p, o in zip(self._parameters, self._offsets)]

    def parameters(self):
        return list(self._parameters)

    def is_last(self):
        return self._is_last

    def set_buffer(self, buffer):
        self._buffer = buffer


class _Bucket:
    def __init__(self, index, indices, params, dtype):
        self.index, self.indices, self.params = index, indices, params
        self.offsets, total = [], 0
        for p in params:
            self.offsets.append(total)
            total += p.numel()
        self.buffer = ember.zeros(total, dtype=dtype)
        self.views = [self.buffer[o:o + p.numel()].view(tuple(p.shape)) for p, o in zip(params, self.offsets)]
        self.ready = 0
        self.future = None


class DistributedDataParallel(Module):
    """Data parallelism across the ranks of a process group (torch.nn.parallel.DistributedDataParallel).

    At construction rank 0's parameters and buffers are broadcast to every rank. Each backward
    averages the gradients across ranks, bucket by bucket while backward still runs; a
    communication hook (`register_comm_hook`) may replace the all-reduce. `no_sync()` skips the
    averaging (gradients accumulate locally until the next synchronised backward).
    `find_unused_parameters=True` lets some parameters get no gradient in a pass (they contribute
    zeros; a parameter no rank used keeps its `.grad`); without it such a pass raises.
    `broadcast_buffers` copies rank 0's buffers to every rank at each forward. `mixed_precision`
    (a `_MixedPrecision`) computes forward and backward in its `param_dtype` while the parameters,
    their gradients and the optimizer stay in full precision, and averages gradients in its
    `reduce_dtype`.

    CPU only: `device_ids`/`output_device` must be None. Differences from PyTorch: buckets keep
    their first order (PyTorch rebuilds them from the order gradients arrived in the first pass);
    `static_graph` is accepted and changes nothing."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True, process_group=None,
                 bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False, gradient_as_bucket_view=False,
                 static_graph=False, delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be an nn.Module, but got {type(module).__name__}")
        if device_ids is not None or output_device is not None:
            raise NotImplementedError("DistributedDataParallel: device_ids/output_device need Ember's CUDA backend; "
                                      "leave them None for CPU modules")
        for name, value in (("device_mesh", device_mesh),
                            ("delay_all_reduce_named_params", delay_all_reduce_named_params),
                            ("param_to_hook_all_reduce", param_to_hook_all_reduce)):
            if value is not None:
                raise NotImplementedError(f"DistributedDataParallel({name}=...) is not supported")
        if bucket_cap_mb is not None and bucket_cap_mb <= 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be positive, but got {bucket_cap_mb}")
        self.module = module
        self.mixed_precision = _check_mixed_precision(mixed_precision)
        self.process_group = process_group if process_group is not None else dist.GroupMember.WORLD
        if self.process_group is None:
            raise ValueError("Default process group has not been initialized, please make sure to call init_process_group.")
        self.dim, self.broadcast_buffers = dim, broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        named = []
        seen = set()
        for name, p in module.named_parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                named.append((name, p))
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter "
                               "that requires a gradient.")
        self._param_names = [n for n, _ in named]
        self._params = [p for _, p in named]
        self._check_same_model_everywhere()
        if self.mixed_precision is not None and self.mixed_precision.buffer_dtype is not None:
            self._cast_buffers(self.mixed_precision.buffer_dtype)
        self._sync_module_states()
        self._buckets, self._slot = self._make_buckets()
        self._comm_hook, self._comm_state = None, None
        self._hook_handles = [p.register_hook(functools.partial(self._on_gradient, i)) for i, p in enumerate(self._params)]
        self._in_pass, self._pending, self._ready, self._next_bucket = False, None, set(), 0

    # ---- construction ----

    def _check_same_model_everywhere(self):
        mine = [(n, tuple(p.shape), str(p.dtype)) for n, p in zip(self._param_names, self._params)]
        everyone = [None] * dist.get_world_size(self.process_group)
        dist.all_gather_object(everyone, mine, group=self.process_group)
        for rank, theirs in enumerate(everyone):
            if theirs != mine:
                raise RuntimeError(f"DDP expects the same model on every rank, but group rank {rank} has parameters "
                                   f"{_summary(theirs)} while this rank has {_summary(mine)}")

    def _sync_module_states(self):
        src = dist.get_global_rank(self.process_group, 0)
        with ember.no_grad():
            for t in list(self._params) + [b for b in self.module.buffers()]:
                dist.broadcast(t.detach(), src, group=self.process_group)

    def _cast_buffers(self, dtype):
        for m in self.module.modules():
            for name, b in m._buffers.items():
                if b is not None and b.dtype.is_floating_point:
                    m._buffers[name] = b.to(dtype)

    def _make_buckets(self):
        """Buckets of parameters in reverse order, one dtype each, the first one small."""
        buckets, current, size, cap = [], [], 0, min(_FIRST_BUCKET_BYTES, self.bucket_bytes_cap)
        order = list(range(len(self._params)))[::-1]
        for i in order:
            p = self._params[i]
            nbytes = p.numel() * p.dtype.itemsize
            if current and (size + nbytes > cap or self._params[current[0]].dtype != p.dtype):
                buckets.append(current)
                current, size, cap = [], 0, self.bucket_bytes_cap
            current.append(i)
            size += nbytes
        buckets.append(current)
        made = [_Bucket(k, idx, [self._params[i] for i in idx], self._params[idx[0]].dtype) for k, idx in enumerate(buckets)]
        slot = {i: (bucket, j) for bucket in made for j, i in enumerate(bucket.indices)}
        return made, slot

    # ---- forward ----

    def forward(self, *inputs, **kwargs):
        if self._in_pass:
            raise RuntimeError("Expected to have finished reduction in the prior iteration before starting a new one: "
                               "the previous backward pass stopped before DistributedDataParallel averaged its "
                               "gradients (it raised), so the ranks may no longer agree")
        if self.broadcast_buffers and dist.get_world_size(self.process_group) > 1:
            src = dist.get_global_rank(self.process_group, 0)
            with ember.no_grad():
                for b in self.module.buffers():
                    dist.broadcast(b.detach(), src, group=self.process_group)
        mp = self.mixed_precision
        if mp is None or mp.param_dtype is None:
            return self.module(*inputs, **kwargs)
        inputs, kwargs = _cast_floating(inputs, mp.param_dtype), _cast_floating(kwargs, mp.param_dtype)
        with self._parameters_in(mp.param_dtype):
            return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def _parameters_in(self, dtype):
        """Binds a `dtype` copy of each floating-point parameter in its place for the forward. The
        copies are differentiable casts of the parameters, so backward computes in `dtype` and
        its last step brings each gradient back to the full precision parameter."""
        slots = [(m, name, p) for m in self.module.modules() for name, p in m._parameters.items()
                 if p is not None and p.dtype.is_floating_point]
        casts = {}
        for m, name, p in slots:
            if id(p) not in casts:  # a parameter shared by several modules gets one copy
                casts[id(p)] = p.to(dtype)
            m._parameters[name] = casts[id(p)]
        try:
            yield
        finally:
            for m, name, p in slots:
                m._parameters[name] = p

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside this context accumulate gradients locally, without averaging."""
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous

    def register_comm_hook(self, state, hook):
        """Replaces the averaging of each bucket by `hook(state, bucket)`, which returns a Future
        holding the bucket's new flat gradient (see ember.distributed.algorithms.ddp_comm_hooks).
        Register it once, before the first backward."""
        if not callable(hook):
            raise TypeError(f"register_comm_hook: hook must be callable, but got {type(hook).__name__}")
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        self._comm_hook, self._comm_state = hook, state

    # ---- backward ----

    def _on_gradient(self, index, grad):
        if not self.require_backward_grad_sync:
            return None
        if not self._in_pass:
            self._in_pass, self._ready, self._next_bucket = True, set(), 0
            queue_callback(self._finish_pass)
        self._mark_pending_ready()
        self._pending = index
        _work.progress(self.process_group._channel)
        return None

    def _mark_pending_ready(self):
        if self._pending is not None:
            self._mark_ready(self._pending)
            self._pending = None

    def _mark_ready(self, index):
        """Copies the parameter's gradient into its bucket; starts the buckets now complete."""
        if index in self._ready:
            return
        self._ready.add(index)
        bucket, j = self._slot[index]
        p, slot = self._params[index], bucket.views[j]
        with ember.no_grad():
            if p.grad is None:
                slot.zero_()
            elif p.grad.data_ptr() != slot.data_ptr():
                slot.copy_(p.grad)
                if self.gradient_as_bucket_view:
                    p.grad = slot
        bucket.ready += 1
        while self._next_bucket < len(self._buckets) and \
                self._buckets[self._next_bucket].ready == len(self._buckets[self._next_bucket].params):
            self._launch(self._buckets[self._next_bucket])
            self._next_bucket += 1

    def _reduce_dtype(self, dtype):
        mp = self.mixed_precision
        if mp is None or not dtype.is_floating_point:
            return dtype
        for choice in (mp.reduce_dtype, mp.param_dtype):
            if choice is not None:
                return choice
        return dtype

    def _launch(self, bucket):
        """Starts the bucket's averaging (in the reduce dtype; _write_back casts the result back)."""
        reduce_dtype = self._reduce_dtype(bucket.buffer.dtype)
        buffer = bucket.buffer if reduce_dtype == bucket.buffer.dtype else bucket.buffer.to(reduce_dtype)
        grad_bucket = GradBucket(bucket.index, buffer, bucket.params, bucket.offsets,
                                 bucket.index == len(self._buckets) - 1)
        if self._comm_hook is None:
            bucket.future = allreduce_hook(self.process_group, grad_bucket)
        else:
            bucket.future = self._comm_hook(self._comm_state, grad_bucket)

    def _finish_pass(self):
        """After backward: marks the last gradient ready, handles parameters that got none,
        waits for every bucket and writes the averaged gradients."""
        self._in_pass = False
        self._mark_pending_ready()
        missing = [i for i in range(len(self._params)) if i not in self._ready]
        used = None
        if missing:
            if not self.find_unused_parameters:
                for b in self._buckets:
                    b.ready, b.future = 0, None
                names = ", ".join(self._param_names[i] for i in missing)
                raise RuntimeError("Expected to have gradients for every parameter in this backward pass: this module "
                                   "has parameters that were not used in producing the loss. Pass "
                                   "find_unused_parameters=True to DistributedDataParallel, or make sure every forward "
                                   f"output takes part in the loss. Parameters that got no gradient on rank "
                                   f"{dist.get_rank()}: {names}")
        if self.find_unused_parameters:
            used = ember.tensor([0 if i in missing else 1 for i in range(len(self._params))], dtype=ember.uint8)
            work = dist.all_reduce(used, dist.ReduceOp.MAX, group=self.process_group, async_op=True)
            for i in missing:
                self._mark_ready(i)
            work.wait()
        for bucket in self._buckets:
            self._write_back(bucket, used)
            bucket.ready, bucket.future = 0, None

    def _write_back(self, bucket, used):
        result = bucket.future.wait()
        if not isinstance(result, ember.Tensor) or result.numel() != bucket.buffer.numel():
            raise RuntimeError("a DDP communication hook must return a Future holding a tensor of the bucket's size "
                               f"({bucket.buffer.numel()} elements), but got {type(result).__name__}")
        with ember.no_grad():
            if result.data_ptr() != bucket.buffer.data_ptr():
                bucket.buffer.copy_(result.reshape(-1))
            for index, p, view in zip(bucket.indices, bucket.params, bucket.views):
                if used is not None and not int(used[index]):
                    continue  # no rank used it: its .grad stays as it was
                if self.gradient_as_bucket_view or p.grad is None:
                    p.grad = view if self.gradient_as_bucket_view else view.clone()
                elif p.grad.data_ptr() != view.data_ptr():
                    p.grad.copy_(view)


def _summary(params):
    return f"{len(params)} tensors " + ", ".join(f"{n} {list(s)} {d}" for n, s, d in params[:4]) + (
        " ..." if len(params) > 4 else "")
