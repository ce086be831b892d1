"""Batching rules for matrix products: `matmul` (so also dot, mv, linear, einsum's
contractions), `mm`, `bmm` and `addmm`. A 1-d operand becomes a matrix, batched operands are
padded to a common logical rank, and one broadcasting matmul does the whole batch."""
from ember._functorch._batched import BatchedTensor, call, pad_rank, rule, unwrap


def batched_matmul(level, a, b):
    pa, a_batched = unwrap(a, level)
    pb, b_batched = unwrap(b, level)
    ra, rb = pa.dim() - a_batched, pb.dim() - b_batched
    if ra == 0 or rb == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {ra}D and {rb}D")
    a_vector, b_vector = ra == 1, rb == 1
    if a_vector:
        pa, ra = pa.unsqueeze(-2), 2
    if b_vector:
        pb, rb = pb.unsqueeze(-1), 2
    rank = max(ra, rb)
    if a_batched:
        pa = pad_rank(pa, ra, rank)
    if b_batched:
        pb = pad_rank(pb, rb, rank)
    out = call("matmul", pa, pb)
    if b_vector:
        out = out.squeeze(-1)
    if a_vector:
        out = out.squeeze(-1 if b_vector else -2)
    return BatchedTensor(out, level)


@rule("matmul")
def _matmul(level, a, b):
    return batched_matmul(level, a, b)


def _check_rank(x, level, rank, what):
    inner, is_batched = unwrap(x, level)
    if inner.dim() - is_batched != rank:
        raise RuntimeError(f"{what}: Expected {rank}-D tensors, got a {inner.dim() - is_batched}-D one")


@rule("mm")
def _mm(level, a, b):
    _check_rank(a, level, 2, "mm")
    _check_rank(b, level, 2, "mm")
    return batched_matmul(level, a, b)


@rule("bmm")
def _bmm(level, a, b):
    _check_rank(a, level, 3, "bmm")
    _check_rank(b, level, 3, "bmm")
    return batched_matmul(level, a, b)


@rule("addmm")
def _addmm(level, input, a, b, beta, alpha):
    product = batched_matmul(level, a, b)
    if alpha != 1:
        product = product * alpha
    return product if beta == 0 else product + (input if beta == 1 else input * beta)
