"""ZeroRedundancyOptimizer (ZeRO stage 1): each rank keeps the optimizer state of only its share
of the parameters, steps that share, and broadcasts the updated parameters to the others."""
import ember
import ember.distributed as dist
from ember.optim.optimizer import Optimizer

__all__ = ["ZeroRedundancyOptimizer"]


class ZeroRedundancyOptimizer(Optimizer):
    """Wraps `optimizer_class` (any ember.optim optimizer) so that its state is sharded across the
    ranks of `process_group` (torch.distributed.optim.ZeroRedundancyOptimizer).

    Parameters are assigned to ranks greedily, largest first, to the rank holding the fewest
    elements so far (per parameter group, as PyTorch). Gradients must already be averaged (use it
    with DistributedDataParallel). `consolidate_state_dict(to)` gathers the full state on one
    rank for `state_dict()`; the result loads into the plain `optimizer_class` as well.
    `parameters_as_bucket_view` and `overlap_with_ddp` are not supported."""

    def __init__(self, params, optimizer_class, process_group=None, parameters_as_bucket_view=False,
                 overlap_with_ddp=False, **defaults):
        if parameters_as_bucket_view:
            raise NotImplementedError("ZeroRedundancyOptimizer(parameters_as_bucket_view=True) is not supported")
        if overlap_with_ddp:
            raise NotImplementedError("ZeroRedundancyOptimizer(overlap_with_ddp=True) is not supported")
        if not (isinstance(optimizer_class, type) and issubclass(optimizer_class, Optimizer)):
            raise TypeError(f"ZeroRedundancyOptimizer: optimizer_class must be an ember.optim.Optimizer class, "
                            f"but got {optimizer_class!r}")
        super().__init__(params, defaults)
        self.process_group = process_group if process_group is not None else dist.GroupMember.WORLD
        if self.process_group is None:
            raise ValueError("Default process group has not been initialized, please make sure to call init_process_group.")
        self.optimizer_class, self._defaults = optimizer_class, defaults
        self.world_size = dist.get_world_size(self.process_group)
        self.rank = dist.get_rank(self.process_group)
        self.global_rank = dist.get_rank()
        self._owner = {}
        for group in self.param_groups:
            self._partition(group)
        self._local_groups = [g for g in range(len(self.param_groups)) if self._my_params(g)]
        self.optim = self._make_local()
        self._consolidated = None

    @property
    def _all_params(self):
        return [p for g in self.param_groups for p in g["params"]]

    def _partition(self, group):
        """Assigns the group's parameters to group ranks (largest first, to the least loaded)."""
        sizes = [0] * self.world_size
        for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
            rank = sizes.index(min(sizes))
            self._owner[id(p)] = rank
            sizes[rank] += p.numel()

    def _my_params(self, group_index):
        return [p for p in self.param_groups[group_index]["params"] if self._owner[id(p)] == self.rank]

    def _make_local(self):
        groups = [{**{k: v for k, v in self.param_groups[g].items() if k != "params"}, "params": self._my_params(g)}
                  for g in self._local_groups]
        return self.optimizer_class(groups, **self._defaults) if groups else None

    def _sync_hyperparameters(self):
        """Schedulers change `self.param_groups`; the local optimizer steps with those values."""
        if self.optim is None:
            return
        for local, g in zip(self.optim.param_groups, self._local_groups):
            for k, v in self.param_groups[g].items():
                if k != "params":
                    local[k] = v

    def add_param_group(self, param_group):
        """Adds a group; its parameters are shared out like the others (existing state is kept)."""
        super().add_param_group(param_group)
        if not hasattr(self, "_owner"):
            return  # called by Optimizer.__init__: partitioned once construction is done
        g = len(self.param_groups) - 1
        self._partition(self.param_groups[g])
        mine = self._my_params(g)
        if not mine:
            return
        self._local_groups.append(g)
        local = {**{k: v for k, v in self.param_groups[g].items() if k != "params"}, "params": mine}
        if self.optim is None:
            self.optim = self.optimizer_class([local], **self._defaults)
        else:
            self.optim.add_param_group(local)

    def step(self, closure=None, **kwargs):
        """Steps this rank's share, then every rank broadcasts its share's new values."""
        self._sync_hyperparameters()
        loss = self.optim.step(closure, **kwargs) if self.optim is not None else (closure() if closure else None)
        works = []
        with ember.no_grad():
            for p in self._all_params:
                src = dist.get_global_rank(self.process_group, self._owner[id(p)])
                works.append(dist.broadcast(p.detach(), src, group=self.process_group, async_op=True))
        for w in works:
            w.wait()
        return loss

    def _global_index(self):
        return {id(p): i for i, p in enumerate(self._all_params)}

    def _local_state(self):
        """This rank's state keyed by global parameter index, and its groups' hyperparameters."""
        if self.optim is None:
            return {}, {}
        local = self.optim.state_dict()
        index = self._global_index()
        local_params = [p for g in self.optim.param_groups for p in g["params"]]
        state = {index[id(local_params[k])]: v for k, v in local["state"].items()}
        groups = {g: {k: v for k, v in saved.items() if k != "params"}
                  for g, saved in zip(self._local_groups, local["param_groups"])}
        return state, groups

    def consolidate_state_dict(self, to=0):
        """Gathers every rank's share of the state on global rank `to` (all ranks must call it)."""
        mine = self._local_state()
        gathered = [None] * self.world_size if self.global_rank == to else None
        dist.gather_object(mine, gathered, dst=to, group=self.process_group)
        self._consolidated = None
        if gathered is not None:
            state, groups = {}, {}
            for s, g in gathered:
                state.update(s)
                groups.update(g)
            self._consolidated = (state, groups)

    def state_dict(self):
        """The full state (as the plain optimizer's state_dict), on the rank consolidated to."""
        if self._consolidated is None:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please call "
                               "`consolidate_state_dict(to=...)` on all ranks beforehand if you meant to save the "
                               "global state.")
        state, hyper = self._consolidated
        index = self._global_index()
        groups = []
        for g, group in enumerate(self.param_groups):
            packed = dict(hyper.get(g, {k: v for k, v in group.items() if k != "params"}))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        return {"state": dict(sorted(state.items())), "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Loads a full state dict (from `state_dict()` or the plain optimizer); each rank keeps its share."""
        if len(state_dict["param_groups"]) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for group, saved in zip(self.param_groups, state_dict["param_groups"]):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                                 "optimizer's group")
            group.update({k: v for k, v in saved.items() if k != "params"})
        if self.optim is None:
            return
        saved_index = {id(p): k for group, saved in zip(self.param_groups, state_dict["param_groups"])
                       for p, k in zip(group["params"], saved["params"])}
        local_params = [p for g in self.optim.param_groups for p in g["params"]]
        local = {"state": {}, "param_groups": []}
        for i, p in enumerate(local_params):
            key = saved_index[id(p)]
            if key in state_dict["state"]:
                local["state"][i] = state_dict["state"][key]
        position = 0
        for g, local_group in zip(self._local_groups, self.optim.param_groups):
            packed = {k: v for k, v in self.param_groups[g].items() if k != "params"}
            packed["params"] = list(range(position, position + len(local_group["params"])))
            position += len(local_group["params"])
            local["param_groups"].append(packed)
        self.optim.load_state_dict(local)
