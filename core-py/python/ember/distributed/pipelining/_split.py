"""Splitting a model into pipeline stages. PyTorch traces the model's graph to split it; Ember
has no tracer, so `pipeline` splits an nn.Sequential, whose children run in order, at the
children named in `split_spec`."""
import enum

from ember.nn.modules.container import Sequential

__all__ = ["Pipe", "SplitPoint", "pipeline"]


class SplitPoint(enum.Enum):
    """Where a stage boundary goes relative to the named child: before it or after it."""
    BEGINNING = 1
    END = 2


class Pipe:
    """The stages of a split model: `num_stages`, `get_stage_module(i)`, `build_stage(i, ...)`."""

    def __init__(self, stages):
        self._stages = stages
        self.num_stages = len(stages)

    def get_stage_module(self, stage_idx):
        if not 0 <= stage_idx < self.num_stages:
            raise ValueError(f"stage index {stage_idx} is out of range for {self.num_stages} stages")
        return self._stages[stage_idx]

    def build_stage(self, stage_index, device=None, group=None):
        """The PipelineStage that runs stage `stage_index` on this rank."""
        from ember.distributed.pipelining.stage import PipelineStage
        return PipelineStage(self.get_stage_module(stage_index), stage_index, self.num_stages, device, group=group)


def pipeline(module, mb_args=None, mb_kwargs=None, split_spec=None, split_policy=None):
    """Splits `module` (an nn.Sequential) into stages at the children named in `split_spec`
    ({child name: SplitPoint}); `mb_args` (an example micro-batch) is accepted for PyTorch's
    signature and not needed."""
    if not isinstance(module, Sequential):
        raise NotImplementedError("pipeline() splits an nn.Sequential: Ember cannot trace other modules' graphs; "
                                  "build a PipelineStage for each part by hand instead")
    if split_policy is not None:
        raise NotImplementedError("pipeline(split_policy=...) is not supported; give split_spec")
    names = [name for name, _ in module.named_children()]
    cuts = set()
    for name, point in (split_spec or {}).items():
        if name not in names:
            raise ValueError(f"split_spec names {name!r}, which is not a child of the Sequential (children: {names})")
        if not isinstance(point, SplitPoint):
            raise TypeError(f"split_spec values must be SplitPoint, but got {point!r}")
        cuts.add(names.index(name) + (0 if point == SplitPoint.BEGINNING else 1))
    bounds = [0] + sorted(c for c in cuts if 0 < c < len(names)) + [len(names)]
    children = list(module.children())
    return Pipe([Sequential(*children[a:b]) for a, b in zip(bounds, bounds[1:])])
