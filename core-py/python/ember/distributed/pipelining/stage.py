"""PipelineStage: one stage of a pipeline on one rank, and how activations and their gradients
travel between neighbouring stages (point-to-point messages: a small header with dtype and shape,
then the tensor; MPI keeps messages between two ranks in order)."""
import numpy as np

import ember
import ember.distributed as dist
from ember.distributed import _mpi
from ember.nn.modules.module import Module

__all__ = ["PipelineStage"]

_ACTIVATION, _GRADIENT = 11, 12
_HEADER = 10
_DTYPE_BY_CODE = {code: dtype for dtype, (code, _) in _mpi.DTYPES.items()}


class PipelineStage:
    """Stage `stage_index` of `num_stages`, running `submodule` on rank `stage_index` of `group`
    (one stage per rank). Activation shapes travel with the activations, so `input_args` and
    `output_args` are optional."""

    def __init__(self, submodule, stage_index, num_stages, device=None, input_args=None, output_args=None, group=None,
                 dw_builder=None):
        if not isinstance(submodule, Module):
            raise TypeError(f"PipelineStage: submodule must be an nn.Module, but got {type(submodule).__name__}")
        if dw_builder is not None:
            raise NotImplementedError("PipelineStage(dw_builder=...) (zero-bubble schedules) is not supported")
        self.group = group if group is not None else dist.GroupMember.WORLD
        if self.group is None:
            raise ValueError("Default process group has not been initialized, please make sure to call init_process_group.")
        size, rank = dist.get_world_size(self.group), dist.get_rank(self.group)
        if num_stages != size:
            raise NotImplementedError(f"PipelineStage: Ember runs one stage per rank, so num_stages ({num_stages}) must "
                                      f"equal the group's size ({size})")
        if stage_index != rank:
            raise ValueError(f"PipelineStage: this rank (group rank {rank}) must run stage {rank}, not {stage_index}")
        self.submod, self.stage_index, self.num_stages = submodule, stage_index, num_stages
        self.is_first, self.is_last = stage_index == 0, stage_index == num_stages - 1
        self._prev = None if self.is_first else dist.get_global_rank(self.group, stage_index - 1)
        self._next = None if self.is_last else dist.get_global_rank(self.group, stage_index + 1)
        self._inputs, self._outputs, self._sends = {}, {}, []

    # ---- messages ----

    def _send(self, tensor, dst, tag):
        tensor = tensor.detach().contiguous()
        header = np.zeros(_HEADER, np.int64)
        header[0], header[1] = _mpi.dtype_code(tensor), tensor.dim()
        header[2:2 + tensor.dim()] = tuple(tensor.shape)
        self._sends.append(dist.isend(ember.from_numpy(header), dst, group=self.group, tag=tag))
        self._sends.append(dist.isend(tensor, dst, group=self.group, tag=tag))

    def _recv(self, src, tag):
        header = ember.zeros(_HEADER, dtype=ember.int64)
        dist.recv(header, src, group=self.group, tag=tag)
        code, ndim = int(header[0]), int(header[1])
        out = ember.empty(tuple(int(d) for d in header[2:2 + ndim].tolist()), dtype=_DTYPE_BY_CODE[code])
        dist.recv(out, src, group=self.group, tag=tag)
        return out

    # ---- one micro-batch ----

    def forward_one_chunk(self, chunk, args=None):
        """Runs the stage on micro-batch `chunk` (its input: `args` on the first stage, received
        from the previous stage otherwise) and sends the output on."""
        if self.is_first:
            x = args
        else:
            x = self._recv(self._prev, _ACTIVATION)
            x.requires_grad_(x.dtype.is_floating_point)
        out = self.submod(x)
        if not isinstance(out, ember.Tensor):
            raise NotImplementedError("PipelineStage: a stage must return one tensor")
        self._inputs[chunk], self._outputs[chunk] = x, out
        if not self.is_last:
            self._send(out, self._next, _ACTIVATION)
        return out

    def backward_one_chunk(self, chunk, loss=None):
        """Backpropagates micro-batch `chunk` (from `loss` on the last stage, from the gradient the
        next stage sends otherwise) and sends the input's gradient back."""
        x, out = self._inputs.pop(chunk), self._outputs.pop(chunk)
        if self.is_last:
            loss.backward()
        elif out.requires_grad:
            out.backward(self._recv(self._next, _GRADIENT))
        else:
            self._recv(self._next, _GRADIENT)
        if not self.is_first:
            grad = x.grad if x.grad is not None else ember.zeros_like(x)
            self._send(grad, self._prev, _GRADIENT)

    def scale_grads(self, grad_scale_factor):
        with ember.no_grad():
            for p in self.submod.parameters():
                if p.grad is not None:
                    p.grad.div_(grad_scale_factor)

    def _finish_sends(self):
        for work in self._sends:
            work.wait()
        self._sends = []
