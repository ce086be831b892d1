"""PowerSGD gradient compression (Vogels et al., NeurIPS 2019), PyTorch's `powerSGD_hook`.

Each gradient matrix M (a parameter's gradient viewed as [shape[0], rest]) is sent as two thin
factors: P = M Q is all-reduced and orthogonalised, Q = Mᵀ P is all-reduced, and M ≈ P Qᵀ / world
(one power-iteration step). With warm start Q is kept from the previous step, so the
approximation improves over steps; with error feedback what the approximation missed is added to
the next step's gradient. Vectors, and matrices too small to gain (`min_compression_rate`), are
all-reduced as they are. Before `start_powerSGD_iter` steps every bucket is plainly averaged."""
import numpy as np

import ember
import ember.distributed as dist
from ember.distributed._mpi import view
from ember.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from ember.futures import Future

__all__ = ["PowerSGDState", "powerSGD_hook"]


class PowerSGDState:
    """The hook's configuration and its memory across steps (error feedback and warm-start Qs, per
    bucket). Differences from PyTorch: `start_powerSGD_iter` may be 0 or 1 (Ember's DDP keeps its
    buckets, so there is no rebuild to wait for), and compression statistics are not logged."""

    __slots__ = ["process_group", "matrix_approximation_rank", "start_powerSGD_iter", "min_compression_rate",
                 "use_error_feedback", "warm_start", "orthogonalization_epsilon", "rng", "error_dict", "p_memory_dict",
                 "q_memory_dict", "iter", "total_numel_before_compression", "total_numel_after_compression",
                 "compression_stats_logging_frequency", "next_stats_report", "batch_tensors_with_same_shape"]

    def __init__(self, process_group, matrix_approximation_rank=1, start_powerSGD_iter=1_000, min_compression_rate=2,
                 use_error_feedback=True, warm_start=True, orthogonalization_epsilon=0, random_seed=0,
                 compression_stats_logging_frequency=10_000, batch_tensors_with_same_shape=False):
        if not isinstance(matrix_approximation_rank, int) or matrix_approximation_rank < 1:
            raise ValueError(f"PowerSGDState: matrix_approximation_rank must be a positive integer, got {matrix_approximation_rank!r}")
        if start_powerSGD_iter < 0:
            raise ValueError(f"PowerSGDState: start_powerSGD_iter must be non-negative, got {start_powerSGD_iter}")
        if batch_tensors_with_same_shape:
            raise NotImplementedError("PowerSGDState(batch_tensors_with_same_shape=True) is not supported")
        self.process_group = process_group
        self.matrix_approximation_rank = matrix_approximation_rank
        self.start_powerSGD_iter = start_powerSGD_iter
        self.min_compression_rate = min_compression_rate
        self.use_error_feedback = use_error_feedback
        self.warm_start = warm_start
        self.orthogonalization_epsilon = orthogonalization_epsilon
        self.rng = np.random.RandomState(random_seed)  # the same on every rank: Qs start equal
        self.error_dict, self.p_memory_dict, self.q_memory_dict = {}, {}, {}
        self.iter = 0
        self.total_numel_before_compression = 0
        self.total_numel_after_compression = 0
        self.compression_stats_logging_frequency = max(1, compression_stats_logging_frequency)
        self.next_stats_report = 0
        self.batch_tensors_with_same_shape = batch_tensors_with_same_shape

    def maybe_increase_iter(self, bucket):
        if bucket.is_last():
            self.iter += 1

    def compression_stats(self):
        """(compress rate, numel before compression, numel after compression) so far."""
        rate = (self.total_numel_before_compression / self.total_numel_after_compression
                if self.total_numel_after_compression else 0)
        return rate, self.total_numel_before_compression, self.total_numel_after_compression

    def __getstate__(self):
        return {k: getattr(self, k) for k in self.__slots__ if k != "process_group"}

    def __setstate__(self, state):
        self.process_group = dist.GroupMember.WORLD
        for k, v in state.items():
            setattr(self, k, v)


def _should_compress(n, m, rank, min_rate):
    uncompressed, compressed = n * m, (n + m) * rank
    return compressed * min_rate < uncompressed


def _orthogonalize(matrix, epsilon):
    """Orthonormal columns in place (Gram-Schmidt, as PyTorch; epsilon guards zero columns)."""
    for i in range(matrix.shape[1]):
        col = matrix[:, i]
        col /= np.linalg.norm(col) + epsilon if epsilon else (np.linalg.norm(col) or 1.0)
        if i + 1 < matrix.shape[1]:
            rest = matrix[:, i + 1:]
            rest -= np.outer(col, col @ rest)


def powerSGD_hook(state, bucket):
    """Low-rank compressed averaging of the bucket (see the module docstring)."""
    group = state.process_group if state.process_group is not None else dist.GroupMember.WORLD
    world = dist.get_world_size(group)
    if state.iter < state.start_powerSGD_iter:
        state.maybe_increase_iter(bucket)
        return allreduce_hook(group, bucket)
    buffer = bucket.buffer()
    if buffer.dtype not in (ember.float32, ember.float64):
        raise NotImplementedError(f"powerSGD_hook supports float32 and float64 gradients, not {buffer.dtype}")
    index = bucket.index()
    flat = view(buffer)
    if state.use_error_feedback:
        error = state.error_dict.setdefault(index, np.zeros_like(flat))
        flat += error
        before = flat.copy()
    r = state.matrix_approximation_rank
    plain, matrices = [], []
    for grad in bucket.gradients():
        shape = tuple(grad.shape)
        n, m = (shape[0], grad.numel() // shape[0]) if len(shape) > 1 and shape[0] else (0, 0)
        if n and _should_compress(n, m, min(n, m, r), state.min_compression_rate):
            matrices.append(view(grad).reshape(n, m))
        else:
            plain.append(view(grad))
    ranks = [min(r, *mat.shape) for mat in matrices]
    p_total = sum(mat.shape[0] * k for mat, k in zip(matrices, ranks))
    q_total = sum(mat.shape[1] * k for mat, k in zip(matrices, ranks))
    state.total_numel_before_compression += sum(mat.size for mat in matrices) + sum(v.size for v in plain)
    state.total_numel_after_compression += p_total + q_total + sum(v.size for v in plain)

    p_memory = ember.zeros(p_total, dtype=buffer.dtype)
    q_memory = state.q_memory_dict.get(index)
    fresh = q_memory is None or not state.warm_start
    if fresh:
        q_memory = ember.from_numpy(state.rng.standard_normal(q_total).astype(flat.dtype))
        if state.warm_start:
            state.q_memory_dict[index] = q_memory
    ps, qs = _split(view(p_memory), matrices, ranks, 0), _split(view(q_memory), matrices, ranks, 1)
    if fresh:
        for q in qs:
            _orthogonalize(q, state.orthogonalization_epsilon)
    for mat, p, q in zip(matrices, ps, qs):
        np.matmul(mat, q, out=p)

    uncompressed = ember.from_numpy(np.concatenate(plain)) if plain else None
    plain_work = dist.all_reduce(uncompressed, group=group, async_op=True) if plain else None
    p_work = dist.all_reduce(p_memory, group=group, async_op=True)

    def finish():
        if plain_work is not None:
            plain_work.wait()
            averaged, start = view(uncompressed) / world, 0
            for v in plain:
                v[...] = averaged[start:start + v.size]
                start += v.size
        p_work.wait()
        for mat, p, q in zip(matrices, ps, qs):
            _orthogonalize(p, state.orthogonalization_epsilon)
            np.matmul(mat.T, p, out=q)
        dist.all_reduce(q_memory, group=group)
        for mat, p, q in zip(matrices, ps, qs):
            np.matmul(p, q.T / world, out=mat)
        if state.use_error_feedback:
            np.subtract(before, flat, out=state.error_dict[index])
        state.maybe_increase_iter(bucket)
        result.set_result(buffer)
    # The second half runs when DDP waits for the bucket: every rank then starts the Q all-reduce
    # at the same point of the program.
    result = Future(driver=finish)
    return result


def _split(flat, matrices, ranks, axis):
    """Views of `flat` shaped [rows, rank] (axis 0: P's) or [cols, rank] (axis 1: Q's)."""
    out, start = [], 0
    for mat, k in zip(matrices, ranks):
        size = mat.shape[axis] * k
        out.append(flat[start:start + size].reshape(mat.shape[axis], k))
        start += size
    return out
