"""Batching rules for elementwise ops: unary, parametrised unary, binary (operators and
comparisons included), `where` and `lerp`.

Operands are aligned as PyTorch would broadcast the per-sample values: a batched operand gets
size-1 dims after its batch dim up to the highest logical rank, so unbatched operands (which
broadcast from the right) line up with the logical dims."""
import numbers

from ember import _C
from ember._functorch._batched import BatchedTensor, NoBatchingRule, call, pad_rank, refuse_out, rule, unwrap


def _rank(x, is_batched):
    if isinstance(x, numbers.Number):
        return None
    return x.dim() - 1 if is_batched else x.dim()


def align(level, *operands):
    """The operands with the batch dim of the batched ones first and logical ranks padded."""
    parts = [unwrap(x, level) for x in operands]
    ranks = [_rank(x, b) for x, b in parts]
    top = max((r for r in ranks if r is not None), default=0)
    return [pad_rank(x, r, top) if b else x for (x, b), r in zip(parts, ranks)], parts, ranks


def _logical_result_type(parts, ranks):
    """The dtype PyTorch promotes the per-sample operands to; a 0-d batched operand is 1-d
    physically, which would change the promotion category rules."""
    samples = []
    for (x, b), r in zip(parts, ranks):
        samples.append(x if r is None else _C.zeros((1,) * r, x.dtype))
    return _C.result_type(*samples)


@rule("unary")
def _unary(level, name, x, out=None):
    refuse_out(out, name)
    inner, _ = unwrap(x, level)
    return BatchedTensor(call("unary", name, inner), level)


@rule("unary_with")
def _unary_with(level, name, x, a=None, b=None, c=None, out=None):
    refuse_out(out, name)
    if any(type(p) is BatchedTensor for p in (a, b, c)):
        raise NoBatchingRule(f"vmap: no batching rule for {name} with batched parameters")
    inner, _ = unwrap(x, level)
    return BatchedTensor(call("unary_with", name, inner, a, b, c), level)


@rule("binary")
def _binary(level, name, a, b, out=None):
    refuse_out(out, name)
    (pa, pb), parts, ranks = align(level, a, b)
    if 0 in ranks and ranks.count(None) == 0 and pa.dtype != pb.dtype:
        common = _logical_result_type(parts, ranks)
        pa, pb = pa.to(common), pb.to(common)
    return BatchedTensor(call("binary", name, pa, pb), level)


@rule("where")
def _where(level, condition, a, b):
    (pc, pa, pb), _, _ = align(level, condition, a, b)
    return BatchedTensor(call("where", pc, pa, pb), level)


@rule("lerp")
def _lerp(level, start, end, weight):
    (ps, pe, pw), _, _ = align(level, start, end, weight)
    return BatchedTensor(call("lerp", ps, pe, pw), level)
