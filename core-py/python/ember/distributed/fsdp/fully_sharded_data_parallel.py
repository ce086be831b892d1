"""FullyShardedDataParallel: each FSDP unit flattens the parameters of its module (those not in
a nested unit) into one flat tensor and keeps only this rank's shard of it (`_flat_param`, what
the optimizer sees), so gradients and optimizer state are sharded too.

A forward all-gathers the shards into the full flat tensor and binds each original parameter
name of the module to a view of it; in backward the full gradient is reduce-scattered (averaged)
back to the shard. Both run inside one autograd Function per unit, so they happen where autograd
reaches the unit.

FULL_SHARD releases the gathered parameters after the unit's forward. Ember has no saved-tensor
hooks to re-gather only the tensors that backward reads, so the unit's forward runs without
recording and its backward re-gathers the parameters and re-runs the forward with recording
(activation checkpointing's method, random state included), then backpropagates through it: the
unit's full parameters and activations live only while the unit runs. SHARD_GRAD_OP keeps the
gathered parameters (and activations) until backward; NO_SHARD keeps every parameter whole on
every rank and all-reduces the gradient."""
import contextlib
from collections import OrderedDict

import ember
import ember.distributed as dist
from ember.autograd import Function
from ember.distributed.fsdp.api import (CPUOffload, FullStateDictConfig, LocalStateDictConfig, ShardedStateDictConfig,
                                        ShardingStrategy, StateDictType)
from ember.distributed.fsdp.wrap import _policy
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter

__all__ = ["FullyShardedDataParallel"]

_WRAPPED = "_fsdp_wrapped_module"


class _Entry:
    """Where one original parameter lives: its module and name, and its slice of the flat tensor."""

    def __init__(self, owner, name, fqn, offset, shape):
        self.owner, self.name, self.fqn, self.offset, self.shape = owner, name, fqn, offset, tuple(shape)
        self.numel = 1
        for d in self.shape:
            self.numel *= d


class _GatherParams(Function):
    """Full flat parameter from the shards; the gradient goes back reduce-scattered."""

    @staticmethod
    def forward(ctx, shard, unit):
        ctx.unit = unit
        return unit._gather()

    @staticmethod
    def backward(ctx, grad):
        return ctx.unit._reduce_gradient(grad), None


class _ShardedForward(Function):
    """FULL_SHARD: runs the unit without recording; backward re-gathers and recomputes."""

    @staticmethod
    def forward(ctx, shard, unit, call, *tensors):
        ctx.unit, ctx.call = unit, call
        ctx.rng = ember.get_rng_state()
        ctx.save_for_backward(*tensors)
        with unit._unsharded(unit._gather()):
            out = call(tensors)
        ctx.single = isinstance(out, ember.Tensor)
        outs = (out,) if ctx.single else out
        if not isinstance(outs, tuple) or not all(isinstance(o, ember.Tensor) for o in outs):
            raise NotImplementedError("FullyShardedDataParallel(FULL_SHARD): the module's forward must return a tensor "
                                      "or a tuple of tensors; use ShardingStrategy.SHARD_GRAD_OP for other outputs")
        return tuple(o.detach() for o in outs) if not ctx.single else outs[0].detach()

    @staticmethod
    def backward(ctx, *grads):
        unit = ctx.unit
        inputs = [t.detach().requires_grad_(t.dtype.is_floating_point and need)
                  for t, need in zip(ctx.saved_tensors, ctx.needs_input_grad[3:])]
        full = unit._gather().requires_grad_(True)
        current = ember.get_rng_state()
        ember.set_rng_state(ctx.rng)
        try:
            with ember.enable_grad(), unit._unsharded(full):
                out = ctx.call(tuple(inputs))
        finally:
            ember.set_rng_state(current)
        outs = (out,) if ctx.single else out
        pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and o.requires_grad]
        if pairs:
            ember.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
        shard_grad = unit._reduce_gradient(full.grad if full.grad is not None else ember.zeros_like(full))
        return (shard_grad, None, None, *[t.grad if t.requires_grad else None for t in inputs])


class FullyShardedDataParallel(Module):
    """Shards a module's parameters, gradients and optimizer state across the ranks of
    `process_group` (torch.distributed.fsdp.FullyShardedDataParallel, with use_orig_params=False:
    `parameters()` yields each unit's flat shard).

    `auto_wrap_policy` (wrap.size_based_auto_wrap_policy, ModuleWrapPolicy, ...) wraps submodules
    in their own units, so only one unit's parameters are whole at a time. `mixed_precision`
    gathers the parameters in `param_dtype` and reduces gradients in `reduce_dtype`. State dicts:
    `FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT)` (the default: the original names
    and whole tensors, loadable into the unwrapped module) or SHARDED_STATE_DICT/LOCAL_STATE_DICT
    (each rank's shards). A unit's parameters must share one dtype and all require grad."""

    def __init__(self, module, process_group=None, sharding_strategy=None, cpu_offload=None, auto_wrap_policy=None,
                 backward_prefetch=None, mixed_precision=None, ignored_modules=None, param_init_fn=None, device_id=None,
                 sync_module_states=False, forward_prefetch=False, limit_all_gathers=True, use_orig_params=False,
                 ignored_states=None, device_mesh=None):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"FullyShardedDataParallel: module must be an nn.Module, but got {type(module).__name__}")
        strategy = sharding_strategy or ShardingStrategy.FULL_SHARD
        if not isinstance(strategy, ShardingStrategy):
            raise TypeError(f"sharding_strategy must be a ShardingStrategy, but got {strategy!r}")
        if strategy in (ShardingStrategy.HYBRID_SHARD, ShardingStrategy._HYBRID_SHARD_ZERO2):
            raise NotImplementedError(f"FullyShardedDataParallel: {strategy.name} shards within nodes and replicates "
                                      "across them; Ember runs on one node")
        for name, value in (("use_orig_params", use_orig_params), ("device_id", device_id), ("device_mesh", device_mesh),
                            ("param_init_fn", param_init_fn), ("ignored_states", ignored_states)):
            if value:
                raise NotImplementedError(f"FullyShardedDataParallel({name}=...) is not supported")
        self.process_group = process_group if process_group is not None else dist.GroupMember.WORLD
        if self.process_group is None:
            raise ValueError("Default process group has not been initialized, please make sure to call init_process_group.")
        self.sharding_strategy, self.mixed_precision = strategy, mixed_precision
        self.cpu_offload = cpu_offload or CPUOffload()
        self._ignored = {id(p) for m in (ignored_modules or ()) for p in m.parameters()}
        policy = _policy(auto_wrap_policy)
        if policy is not None:
            self._wrap_children(module, policy, dict(
                process_group=process_group, sharding_strategy=sharding_strategy, cpu_offload=cpu_offload,
                mixed_precision=mixed_precision, ignored_modules=ignored_modules, sync_module_states=sync_module_states))
        self._fsdp_wrapped_module = module
        self._state_dict_type, self._state_dict_config = StateDictType.FULL_STATE_DICT, FullStateDictConfig()
        entries, aliases = self._collect(module)
        if sync_module_states:
            self._broadcast_from_rank0([p for e in entries for p in [e.owner._parameters[e.name]]], module)
        self._entries, self._aliases = entries, aliases
        self._flat_param = Parameter(self._shard_of(self._flatten(entries)))
        self._sync_gradients = True
        self._unsynced_grad = None  # the whole gradient accumulated under no_sync
        for e in entries + aliases:
            del e.owner._parameters[e.name]
            setattr(e.owner, e.name, None)

    # ---- construction ----

    @property
    def module(self):
        """The wrapped module."""
        return self._fsdp_wrapped_module

    def _wrap_children(self, module, policy, kwargs):
        """Post-order: the deepest modules the policy picks become units first."""
        for name, child in list(module.named_children()):
            if isinstance(child, FullyShardedDataParallel) or not policy(module=child, recurse=True, nonwrapped_numel=0):
                continue
            self._wrap_children(child, policy, kwargs)
            unwrapped = sum(p.numel() for p in _own_parameters(child))
            if unwrapped and policy(module=child, recurse=False, nonwrapped_numel=unwrapped):
                setattr(module, name, FullyShardedDataParallel(child, **kwargs))

    def _collect(self, module):
        """(entries, aliases): the unit's parameters in registration order; a parameter that
        appears again (tied weights) is an alias of its first entry."""
        entries, aliases, first, offset = [], [], {}, 0

        def walk(m, prefix):
            nonlocal offset
            for name, p in m._parameters.items():
                if p is None or id(p) in self._ignored:
                    continue
                if id(p) in first:
                    e = first[id(p)]
                    aliases.append(_Entry(m, name, prefix + name, e.offset, e.shape))
                    continue
                entry = _Entry(m, name, prefix + name, offset, p.shape)
                first[id(p)] = entry
                entries.append(entry)
                offset += entry.numel
            for cname, child in m._modules.items():
                if child is not None and not isinstance(child, FullyShardedDataParallel):
                    walk(child, prefix + cname + ".")
        walk(module, "")
        params = [e.owner._parameters[e.name] for e in entries]
        if len({p.dtype for p in params}) > 1:
            raise NotImplementedError("FullyShardedDataParallel flattens a unit's parameters into one tensor, so they "
                                      f"must share a dtype; got {sorted({str(p.dtype) for p in params})}")
        if len({p.requires_grad for p in params}) > 1:
            raise NotImplementedError("FullyShardedDataParallel: a unit's parameters must all require grad or all not "
                                      "(wrap the frozen ones in a unit of their own, or pass them as ignored_modules)")
        return entries, aliases

    def _broadcast_from_rank0(self, params, module):
        src = dist.get_global_rank(self.process_group, 0)
        with ember.no_grad():
            for t in params + list(module.buffers()):
                dist.broadcast(t.detach(), src, group=self.process_group)

    def _flatten(self, entries):
        params = [e.owner._parameters[e.name] for e in entries]
        dtype = params[0].dtype if params else ember.float32
        self._numel = sum(e.numel for e in entries)
        self._world = 1 if self.sharding_strategy == ShardingStrategy.NO_SHARD else dist.get_world_size(self.process_group)
        self._chunk = -(-self._numel // self._world) if self._numel else 0
        flat = ember.zeros(self._chunk * self._world, dtype=dtype)
        with ember.no_grad():
            for e, p in zip(entries, params):
                flat[e.offset:e.offset + e.numel].copy_(p.detach().reshape(-1))
        self._requires_grad = bool(params) and params[0].requires_grad
        return flat

    def _shard_of(self, flat):
        rank = 0 if self._world == 1 else dist.get_rank(self.process_group)
        shard = flat[rank * self._chunk:(rank + 1) * self._chunk].clone()
        shard.requires_grad_(self._requires_grad)
        return shard

    # ---- gathering and reducing ----

    def _compute_dtype(self):
        mp = self.mixed_precision
        return mp.param_dtype if mp is not None and mp.param_dtype is not None else self._flat_param.dtype

    def _gather(self):
        """The whole flat parameter (in the compute dtype), gathered from every rank's shard."""
        shard = self._flat_param.detach().to(self._compute_dtype())
        if self._world == 1:
            return shard.clone() if shard.data_ptr() == self._flat_param.data_ptr() else shard
        full = ember.empty(self._chunk * self._world, dtype=shard.dtype)
        dist.all_gather_into_tensor(full, shard.contiguous(), group=self.process_group)
        return full

    def _reduce_gradient(self, grad):
        """This rank's shard of the gradient averaged over ranks (reduced in reduce_dtype); under
        no_sync, None (no gradient yet) while the whole gradient accumulates locally."""
        grad = self._with_unsynced(grad)
        if grad is None:
            return None
        mp = self.mixed_precision
        dtype = mp.reduce_dtype if mp is not None and mp.reduce_dtype is not None else grad.dtype
        grad = grad.to(dtype).contiguous()
        if dist.get_world_size(self.process_group) == 1:
            out = grad
        elif self._world == 1:
            out = grad.clone()
            dist.all_reduce(out, dist.ReduceOp.AVG, group=self.process_group)
        else:
            out = ember.empty(self._chunk, dtype=dtype)
            dist.reduce_scatter_tensor(out, grad, dist.ReduceOp.AVG, group=self.process_group)
        return out.to(self._flat_param.dtype)

    def _with_unsynced(self, grad):
        """Under no_sync: adds `grad` to the unit's unsynced sum and returns None. Otherwise:
        `grad` plus what no_sync accumulated (in the parameters' dtype), which is then cleared."""
        if not self._sync_gradients:
            grad = grad.to(self._flat_param.dtype)
            self._unsynced_grad = grad.clone() if self._unsynced_grad is None else self._unsynced_grad + grad
            return None
        if self._unsynced_grad is not None:
            grad, self._unsynced_grad = self._unsynced_grad + grad.to(self._flat_param.dtype), None
        return grad

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside this block skip the gradient reduction: each unit keeps its
        whole gradient, summed over the passes, and the first backward after the block reduces
        that sum with its own gradient into the shards (torch's FSDP.no_sync: it costs one whole
        gradient per unit). Call it on the root unit (an inner unit's block covers that unit and
        the units inside it only)."""
        units = _units(self)
        previous = [u._sync_gradients for u in units]
        for u in units:
            u._sync_gradients = False
        try:
            yield
        finally:
            for u, sync in zip(units, previous):
                u._sync_gradients = sync

    @contextlib.contextmanager
    def _unsharded(self, full):
        """Binds every original parameter name to its view of `full` while the block runs."""
        for e in self._entries + self._aliases:
            setattr(e.owner, e.name, full[e.offset:e.offset + e.numel].view(e.shape))
        try:
            yield
        finally:
            for e in self._entries + self._aliases:
                setattr(e.owner, e.name, None)

    # ---- forward ----

    def forward(self, *args, **kwargs):
        args = self._cast_inputs(args)
        if not self._entries:
            return self.module(*args, **kwargs)
        recording = ember.is_grad_enabled() and self._flat_param.requires_grad
        if self.sharding_strategy != ShardingStrategy.FULL_SHARD or not recording:
            full = _GatherParams.apply(self._flat_param, self) if recording else self._gather()
            with self._unsharded(full):
                return self.module(*args, **kwargs)
        if any(isinstance(v, ember.Tensor) and v.requires_grad for v in kwargs.values()):
            raise NotImplementedError("FullyShardedDataParallel(FULL_SHARD): pass tensors that need gradients "
                                      "positionally, not as keyword arguments")
        positions = [i for i, a in enumerate(args) if isinstance(a, ember.Tensor)]

        def call(tensors):
            full_args = list(args)
            for i, t in zip(positions, tensors):
                full_args[i] = t
            return self.module(*full_args, **kwargs)
        return _ShardedForward.apply(self._flat_param, self, call, *[args[i] for i in positions])

    def _cast_inputs(self, args):
        mp = self.mixed_precision
        if mp is None or mp.param_dtype is None or not mp.cast_forward_inputs and not mp.cast_root_forward_inputs:
            return args
        return tuple(a.to(mp.param_dtype) if isinstance(a, ember.Tensor) and a.dtype.is_floating_point else a
                     for a in args)

    # ---- whole parameters on demand ----

    @staticmethod
    @contextlib.contextmanager
    def summon_full_params(module, recurse=True, writeback=True, rank0_only=False, offload_to_cpu=False,
                           with_grads=False):
        """Inside the block every unit's original parameters are whole tensors (plain tensors,
        not Parameters); with `writeback` changes to them go back to the shards."""
        units = _units(module) if recurse else [module]
        fulls = [u._gather_exact() for u in units]
        with contextlib.ExitStack() as stack:
            for u, full in zip(units, fulls):
                stack.enter_context(u._unsharded(full))
            yield
        if writeback:
            with ember.no_grad():
                for u, full in zip(units, fulls):
                    u._flat_param.detach().copy_(u._shard_of(full).detach())

    def _gather_exact(self):
        """The whole flat parameter in the parameters' own dtype."""
        shard = self._flat_param.detach()
        if self._world == 1:
            return shard.clone()
        full = ember.empty(self._chunk * self._world, dtype=shard.dtype)
        dist.all_gather_into_tensor(full, shard.contiguous(), group=self.process_group)
        return full

    # ---- gradient clipping ----

    def clip_grad_norm_(self, max_norm, norm_type=2.0):
        """Clips the gradients of every unit in place so that their total norm (over all ranks'
        shards, padding excluded) is at most `max_norm`; returns the total norm before clipping.
        Call it on the root unit, on every rank."""
        norm_type = float(norm_type)
        shards = [u._flat_param.grad[:max(0, min(u._chunk, u._numel - u._shard_start()))]
                  for u in _units(self) if u._flat_param.grad is not None]
        if norm_type == float("inf"):
            local = max([float(g.abs().max()) for g in shards if g.numel()] or [0.0])
            total = ember.tensor([local], dtype=ember.float64)
            dist.all_reduce(total, dist.ReduceOp.MAX, group=self.process_group)
            norm = float(total.item())
        else:
            local = sum(float((g.double().abs() ** norm_type).sum()) for g in shards)
            total = ember.tensor([local], dtype=ember.float64)
            if self._world > 1:
                dist.all_reduce(total, group=self.process_group)
            norm = float(total.item()) ** (1.0 / norm_type)
        coefficient = max_norm / (norm + 1e-6)
        if coefficient < 1:
            with ember.no_grad():
                for u in _units(self):
                    if u._flat_param.grad is not None:
                        u._flat_param.grad.mul_(coefficient)
        return ember.tensor(norm)

    def _shard_start(self):
        return 0 if self._world == 1 else dist.get_rank(self.process_group) * self._chunk

    # ---- state dicts ----

    @staticmethod
    @contextlib.contextmanager
    def state_dict_type(module, state_dict_type, state_dict_config=None, optim_state_dict_config=None):
        """Sets the kind of state dict every unit of `module` saves and loads inside the block."""
        if not isinstance(state_dict_type, StateDictType):
            raise TypeError(f"state_dict_type must be a StateDictType, but got {state_dict_type!r}")
        default = {StateDictType.FULL_STATE_DICT: FullStateDictConfig, StateDictType.LOCAL_STATE_DICT: LocalStateDictConfig,
                   StateDictType.SHARDED_STATE_DICT: ShardedStateDictConfig}[state_dict_type]
        units = _units(module)
        previous = [(u._state_dict_type, u._state_dict_config) for u in units]
        for u in units:
            u._state_dict_type, u._state_dict_config = state_dict_type, state_dict_config or default()
        try:
            yield
        finally:
            for u, (kind, config) in zip(units, previous):
                u._state_dict_type, u._state_dict_config = kind, config

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """FULL_STATE_DICT: the unwrapped module's state dict (whole tensors under the original
        names); SHARDED/LOCAL: this rank's flat shards and the buffers."""
        if self._state_dict_type == StateDictType.FULL_STATE_DICT:
            with FullyShardedDataParallel.summon_full_params(self, writeback=False):
                out = OrderedDict((prefix + k, v.detach().clone()) for k, v in _full_names(self).items())
            if self._state_dict_config.rank0_only and dist.get_rank(self.process_group) != 0:
                out = OrderedDict()
            if destination is not None:  # called by a parent module's state_dict
                destination.update(out)
                return destination
            return out
        return super().state_dict(destination=destination, prefix=prefix, keep_vars=keep_vars)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Loads what `state_dict()` saved under the same state dict type."""
        if self._state_dict_type != StateDictType.FULL_STATE_DICT:
            return super().load_state_dict(state_dict, strict=strict)
        units = _units(self)
        fulls = [u._gather_exact() for u in units]
        with contextlib.ExitStack() as stack:
            for u, full in zip(units, fulls):
                stack.enter_context(u._unsharded(full))
            names = _full_names(self)
            missing = [k for k in names if k not in state_dict]
            unexpected = [k for k in state_dict if k not in names]
            if strict and (missing or unexpected):
                raise RuntimeError(f"Error(s) in loading state_dict for FullyShardedDataParallel: missing keys "
                                   f"{missing}, unexpected keys {unexpected}")
            with ember.no_grad():
                for key, target in names.items():
                    if key in state_dict:
                        value = state_dict[key]
                        if tuple(value.shape) != tuple(target.shape):
                            raise RuntimeError(f"size mismatch for {key}: copying a param with shape "
                                               f"{list(value.shape)}, the shape in current model is {list(target.shape)}")
                        target.copy_(value)
        with ember.no_grad():
            for u, full in zip(units, fulls):
                u._flat_param.detach().copy_(u._shard_of(full).detach())
        return _Incompatible(missing, unexpected)


FSDP = FullyShardedDataParallel


class _Incompatible(tuple):
    def __new__(cls, missing, unexpected):
        out = super().__new__(cls, (missing, unexpected))
        out.missing_keys, out.unexpected_keys = missing, unexpected
        return out


def _units(module):
    return [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)]


def _own_parameters(module):
    """Parameters of `module` not inside an FSDP unit."""
    seen, out = set(), []

    def walk(m):
        for p in m._parameters.values():
            if p is not None and id(p) not in seen:
                seen.add(id(p))
                out.append(p)
        for child in m._modules.values():
            if child is not None and not isinstance(child, FullyShardedDataParallel):
                walk(child)
    walk(module)
    return out


def _full_names(root):
    """{original name: whole tensor} of every unit's parameters and every buffer (while unsharded)."""
    names = OrderedDict()
    for unit_prefix, unit in [(n, m) for n, m in root.named_modules() if isinstance(m, FullyShardedDataParallel)]:
        base = unit_prefix.replace(_WRAPPED + ".", "").replace(_WRAPPED, "")
        base = base + "." if base else ""
        for e in unit._entries + unit._aliases:
            names[base + e.fqn] = getattr(e.owner, e.name)
    for key, buf in root.module.named_buffers():
        names[key.replace(_WRAPPED + ".", "")] = buf
    return names
