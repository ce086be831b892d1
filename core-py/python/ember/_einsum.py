"""`einsum`, built on views (diagonal, permute, reshape), `sum` and batched `matmul`, so every
contraction of two operands is one gemm call.

Operands are contracted left to right. Before each step, labels that no later operand and not
the output need are summed away; the two operands are then laid out as [batch, free, contracted]
and [batch, contracted, free] matrices. Dims of size 1 broadcast against any size, as in PyTorch.
Mixed dtypes are promoted (PyTorch requires one dtype); dims named in no output and no later
operand (ellipsis dims included) are summed.
"""
import functools
import math

from ember import _C
from ember._ops import _require_tensor

_ELLIPSIS = "..."


def _parse_term(term, where):
    """A term's labels in order: letters, and `...` as one ELLIPSIS marker."""
    labels, i = [], 0
    while i < len(term):
        if term.startswith(_ELLIPSIS, i):
            if _ELLIPSIS in labels:
                raise RuntimeError(f"einsum(): found '.' for {where} that is not part of any ellipsis")
            labels.append(_ELLIPSIS)
            i += 3
            continue
        c = term[i]
        if c == ".":
            raise RuntimeError(f"einsum(): found '.' for {where} that is not part of any ellipsis")
        if not c.isascii() or not c.isalpha():
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation string, subscripts must be in [a-zA-Z]")
        labels.append(c)
        i += 1
    return labels


def _expand_ellipsis(labels, ndim, index, width):
    """Replaces the ellipsis by `width`-aligned labels (ints, numbered from the right, so the
    ellipsis dims of all operands broadcast together)."""
    letters = [lab for lab in labels if lab != _ELLIPSIS]
    if _ELLIPSIS not in labels:
        if len(letters) != ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(letters)}) does not match the number of dimensions ({ndim}) for operand {index} and no ellipsis was given")
        return letters
    covered = ndim - len(letters)
    if covered < 0:
        raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(letters)}) is more than the number of dimensions ({ndim}) for operand {index}")
    at = labels.index(_ELLIPSIS)
    return labels[:at] + list(range(width - covered, width)) + labels[at + 1:]


def _take_diagonals(t, labels):
    """Repeated labels in one operand select its diagonal (`ii->i`)."""
    while len(set(labels)) != len(labels):
        seen = {}
        for j, lab in enumerate(labels):
            if lab in seen:
                i = seen[lab]
                if t.shape[i] != t.shape[j]:
                    raise RuntimeError(f"einsum(): subscript {lab} is repeated for operand but the sizes don't match, {t.shape[i]} != {t.shape[j]}")
                t = t.diagonal(0, i, j)
                labels = [x for k, x in enumerate(labels) if k not in (i, j)] + [lab]
                break
            seen[lab] = j
    return t, labels


def _sum_away(t, labels, keep):
    """Sums the dims whose labels are not in `keep`."""
    dims = [i for i, lab in enumerate(labels) if lab not in keep]
    if not dims:
        return t, labels
    # Integer sums come back as int64; einsum keeps the operands' dtype.
    return t.sum(dims)._to_dtype(t.dtype), [lab for lab in labels if lab in keep]


def _sizes(operands, label_lists):
    """Each label's size; size-1 dims broadcast, other mismatches are errors."""
    sizes = {}
    for index, (t, labels) in enumerate(zip(operands, label_lists)):
        for lab, n in zip(labels, t.shape):
            seen = sizes.get(lab)
            if seen is None or seen == 1:
                sizes[lab] = n
            elif n not in (seen, 1):
                name = "..." if isinstance(lab, int) else lab
                raise RuntimeError(f"einsum(): subscript {name} has size {n} for operand {index} which does not broadcast with previously seen size {seen}")
    return sizes


def _matrix(t, labels, groups, sizes):
    """`t` with its dims in the groups' order, broadcast to the full sizes, one dim per group."""
    order = [labels.index(lab) for g in groups for lab in g]
    if order:
        t = t.permute(*order).expand([sizes[lab] for g in groups for lab in g])
    return t.reshape([math.prod(sizes[lab] for lab in g) for g in groups])


def _contract(a, la, b, lb, keep, sizes):
    """a ⊗ b summed over their shared labels not in `keep`; result labels batch + a_free + b_free."""
    batch = [lab for lab in la if lab in lb and lab in keep]
    summed = [lab for lab in la if lab in lb and lab not in keep]
    a_free = [lab for lab in la if lab not in lb]
    b_free = [lab for lab in lb if lab not in la]
    am = _matrix(a, la, [batch, a_free, summed], sizes)
    bm = _matrix(b, lb, [batch, summed, b_free], sizes)
    r = am.matmul(bm)
    return r.reshape([sizes[lab] for lab in batch + a_free + b_free]), batch + a_free + b_free


def _parse(equation, operands):
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    if len(terms) > len(operands):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    parsed = [_parse_term(term, f"operand {i}") for i, term in enumerate(terms)]
    width = max([t.ndim - len([x for x in p if x != _ELLIPSIS]) for t, p in zip(operands, parsed) if _ELLIPSIS in p] or [0])
    label_lists = [_expand_ellipsis(p, t.ndim, i, width) for i, (t, p) in enumerate(zip(operands, parsed))]
    ellipsis_labels = list(range(width))
    if arrow:
        out = []
        for lab in _parse_term(rhs, "the output"):
            if lab == _ELLIPSIS:
                out.extend(ellipsis_labels)
                continue
            if lab in out:
                raise RuntimeError(f"einsum(): output subscript {lab} appears more than once in the output")
            if not any(lab in labels for labels in label_lists):
                raise RuntimeError(f"einsum(): output subscript {lab} does not appear in the equation for any input operand")
            out.append(lab)
    else:
        counts = {}
        for labels in label_lists:
            for lab in labels:
                if isinstance(lab, str):
                    counts[lab] = counts.get(lab, 0) + 1
        out = ellipsis_labels + sorted(lab for lab, c in counts.items() if c == 1)
    return label_lists, out


def einsum(equation, *operands):
    """Einstein summation: `einsum("ij,jk->ik", a, b)`; implicit output (labels seen once, sorted),
    repeated labels for diagonals and traces, `...` for broadcast dims; operands as varargs or
    one list."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' must be str, not {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    for t in operands:
        _require_tensor(t, "einsum")
    label_lists, out = _parse(equation, operands)
    common = functools.reduce(_C.promote_types, (t.dtype for t in operands))
    tensors = [t if t.dtype == common else t._to_dtype(common) for t in operands]
    tensors, label_lists = zip(*[_take_diagonals(t, labels) for t, labels in zip(tensors, label_lists)])
    sizes = _sizes(tensors, label_lists)

    def needed_after(i):
        later = set(out)
        for labels in label_lists[i + 1:]:
            later.update(labels)
        return later

    acc, acc_labels = _sum_away(tensors[0], list(label_lists[0]), needed_after(0))
    for i in range(1, len(tensors)):
        keep = needed_after(i)
        b, lb = _sum_away(tensors[i], list(label_lists[i]), keep | set(acc_labels))
        acc, acc_labels = _contract(acc, acc_labels, b, lb, keep, sizes)
    acc, acc_labels = _sum_away(acc, acc_labels, set(out))
    return acc.permute(*[acc_labels.index(lab) for lab in out]) if out else acc


__all__ = ["einsum"]
