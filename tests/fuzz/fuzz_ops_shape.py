"""Family `shape`: reshape/view/transpose/permute/flip/roll/narrow/select/squeeze/unsqueeze/
expand/repeat/tile/cat/stack/split/chunk/movedim/flatten on views of every dtype."""
from __future__ import annotations

import numpy as np
import fuzz_st as st

from fuzz_case import Expect, Op, Refuse, Skip, one
from fuzz_core import ALL, cast, draw_tensor, result_type
from fuzz_ops_reduce import norm_dims


def _dim(draw, nd, extra=0):
    """A dim for a tensor of nd dims (ops that add a dim pass extra=1); sometimes out of range."""
    n = max(nd + extra, 1)
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from([n, -n - 1]))
    return draw(st.integers(-n, n - 1))


def wrap(d, nd):
    return norm_dims(d, nd)[0]


def x_gen(extra):
    @st.composite
    def gen(draw):
        x = draw_tensor(draw, ALL)
        a = x.array()
        return [x], draw(extra(a))
    return gen


def same(a, inputs, **kw):
    return one(a, inputs[0].dtype, **kw)


# ---- reshape / view ----------------------------------------------------------------------------

@st.composite
def _new_shape(draw, a):
    n = a.size
    if draw(st.integers(0, 7)) == 0:
        return tuple(draw(st.lists(st.integers(-2, 6), max_size=4)))
    parts = []
    rest = n
    for _ in range(draw(st.integers(0, 3))):
        divs = [d for d in range(1, 8) if rest % d == 0] if rest else [0, 1, 2]
        d = draw(st.sampled_from(divs))
        parts.append(d)
        rest = rest // d if d else rest
    if rest != 1 or draw(st.booleans()):
        parts.append(rest)
    parts = draw(st.permutations(parts))
    if parts and draw(st.booleans()):
        parts[draw(st.integers(0, len(parts) - 1))] = -1
    return tuple(parts)


def _reshape_ref(view):
    def ref(arrays, inputs, params):
        a = arrays[0]
        shape = params["shape"]
        if sum(1 for s in shape if s == -1) > 1 or any(s < -1 for s in shape):
            raise Refuse("invalid shape")
        if -1 in shape:
            known = int(np.prod([s for s in shape if s != -1]))
            if known == 0:
                raise Refuse("-1 is ambiguous for 0 elements")
        try:
            want = a.reshape(shape)
        except ValueError:
            raise Refuse("shape doesn't fit the number of elements")
        return same(want, inputs, may_refuse=view and bool(inputs[0].views))
    return ref


# ---- dims ops ----------------------------------------------------------------------------------

def _transpose_ref(arrays, inputs, params):
    a = arrays[0]
    if a.ndim == 0:
        norm_dims(params["d0"], 0), norm_dims(params["d1"], 0)
        return same(a, inputs)
    return same(np.swapaxes(a, wrap(params["d0"], a.ndim), wrap(params["d1"], a.ndim)), inputs)


def _permute_ref(arrays, inputs, params):
    a = arrays[0]
    perm = params["perm"]
    if len(perm) != a.ndim:
        raise Refuse("permute: number of dims doesn't match")
    axes = norm_dims(tuple(perm), a.ndim) if perm else ()
    return same(np.transpose(a, axes), inputs)


def _flip_ref(arrays, inputs, params):
    a = arrays[0]
    axes = norm_dims(params["dims"], a.ndim)
    if a.ndim == 0:
        return same(a, inputs)
    return same(np.flip(a, axes), inputs)


def _roll_ref(arrays, inputs, params):
    a = arrays[0]
    shifts, dims = params["shifts"], params.get("dims")
    if dims is None:
        return same(np.roll(a.reshape(-1), shifts).reshape(a.shape), inputs)
    if len(shifts) != len(dims):
        raise Refuse("shifts and dims lengths differ")
    axes = [wrap(d, a.ndim) for d in dims]
    if a.ndim == 0:
        return same(a, inputs, may_refuse=True)
    return same(np.roll(a, shifts, axes), inputs)


def _narrow_ref(arrays, inputs, params):
    a = arrays[0]
    if a.ndim == 0:
        raise Refuse("narrow() cannot be applied to a 0-dim tensor")
    d = wrap(params["dim"], a.ndim)
    size = a.shape[d]
    start, length = params["start"], params["length"]
    if not -size <= start <= size:
        raise Refuse("start out of range")
    if start < 0:
        start += size
    if length < 0 or start + length > size:
        raise Refuse("start + length exceeds the dimension")
    idx = [slice(None)] * a.ndim
    idx[d] = slice(start, start + length)
    return same(a[tuple(idx)], inputs)


def _select_ref(arrays, inputs, params):
    a = arrays[0]
    if a.ndim == 0:
        raise Refuse("select() cannot be applied to a 0-dim tensor")
    d = wrap(params["dim"], a.ndim)
    i = params["index"]
    if not -a.shape[d] <= i < a.shape[d]:
        raise Refuse("index out of range")
    return same(np.take(a, i, axis=d), inputs)


def _squeeze_ref(arrays, inputs, params):
    a = arrays[0]
    dim = params.get("dim")
    if dim is None:
        return same(np.squeeze(a), inputs)
    axes = norm_dims(dim, a.ndim)
    if a.ndim == 0:
        return same(a, inputs)
    return same(np.squeeze(a, tuple(ax for ax in axes if a.shape[ax] == 1)), inputs)


def _unsqueeze_ref(arrays, inputs, params):
    a = arrays[0]
    d = params["dim"]
    if not -a.ndim - 1 <= d <= a.ndim:
        raise Refuse("dim out of range")
    return same(np.expand_dims(a, d % (a.ndim + 1)), inputs)


def _expand_ref(arrays, inputs, params):
    a = arrays[0]
    sizes = params["sizes"]
    if len(sizes) < a.ndim:
        raise Refuse("fewer sizes than dims")
    lead = len(sizes) - a.ndim
    target = []
    for i, s in enumerate(sizes):
        if s == -1:
            if i < lead:
                raise Refuse("-1 not allowed in a leading, non-existing dimension")
            s = a.shape[i - lead]
        elif s < 0:
            raise Refuse("negative size")
        target.append(s)
    try:
        return same(np.broadcast_to(a, tuple(target)), inputs)
    except ValueError:
        raise Refuse("size doesn't match the existing size")


def _repeat_ref(arrays, inputs, params):
    a = arrays[0]
    reps = params["reps"]
    if len(reps) < a.ndim:
        raise Refuse("fewer repeats than dims")
    if any(r < 0 for r in reps):
        raise Refuse("negative repeat")
    return same(np.tile(a.reshape((1,) * (len(reps) - a.ndim) + a.shape), reps), inputs)


def _tile_ref(arrays, inputs, params):
    a = arrays[0]
    reps = params["reps"]
    if any(r < 0 for r in reps):
        raise Refuse("negative repeat")
    reps = (1,) * (a.ndim - len(reps)) + tuple(reps)
    return same(np.tile(a.reshape((1,) * (len(reps) - a.ndim) + a.shape), reps), inputs)


def _movedim_ref(arrays, inputs, params):
    a = arrays[0]
    s, d = params["src"], params["dst"]
    if a.ndim == 0:
        norm_dims(s, 0), norm_dims(d, 0)
        return same(a, inputs)
    return same(np.moveaxis(a, wrap(s, a.ndim), wrap(d, a.ndim)), inputs)


def _flatten_ref(arrays, inputs, params):
    a = arrays[0]
    s, e = params["start"], params["end"]
    if a.ndim == 0:
        norm_dims(s, 0), norm_dims(e, 0)
        return same(a.reshape(1), inputs)
    s, e = wrap(s, a.ndim), wrap(e, a.ndim)
    if s > e:
        raise Refuse("start_dim after end_dim")
    return same(a.reshape(a.shape[:s] + (-1 if a.size else int(np.prod(a.shape[s:e + 1])),) + a.shape[e + 1:])
                if a.size else np.zeros(a.shape[:s] + (int(np.prod(a.shape[s:e + 1])),) + a.shape[e + 1:], a.dtype),
                inputs)


def _split_ref(arrays, inputs, params):
    a = arrays[0]
    if a.ndim == 0:
        raise Refuse("split of a 0-dim tensor")
    d = wrap(params["dim"], a.ndim)
    n = a.shape[d]
    size = params["size"]
    if isinstance(size, int):
        if size < 0:
            raise Refuse("negative split size")
        if size == 0:
            if n != 0:
                raise Refuse("split size 0 for a non-empty dim")
            raise Skip()
        cuts = list(range(size, n, size))
    else:
        if sum(size) != n or any(s < 0 for s in size):
            raise Refuse("split sizes don't sum to the dim")
        cuts = list(np.cumsum(size)[:-1])
        if not size:
            return Expect([])
    if n:
        parts = np.split(a, cuts, axis=d)
    else:  # an empty dim: one empty piece per size given (PyTorch's split_with_sizes), else one
        parts = [a] * (len(size) if isinstance(size, list) else 1)
    return Expect([(p, inputs[0].dtype) for p in parts])


def _chunk_ref(arrays, inputs, params):
    a = arrays[0]
    if a.ndim == 0:
        raise Refuse("chunk of a 0-dim tensor")
    c = params["chunks"]
    if c <= 0:
        raise Refuse("chunks must be positive")
    d = wrap(params["dim"], a.ndim)
    n = a.shape[d]
    if n == 0:
        raise Skip()
    size = -(-n // c)
    parts = np.split(a, list(range(size, n, size)), axis=d)
    return Expect([(p, inputs[0].dtype) for p in parts])


def _join_ref(stack):
    def ref(arrays, inputs, params):
        a, b = arrays
        rt = result_type((inputs[0].dtype, "dim"), (inputs[1].dtype, "dim"))
        d = params["dim"]
        if stack:
            if a.shape != b.shape:
                raise Refuse("stack of different shapes")
            if not -a.ndim - 1 <= d <= a.ndim:
                raise Refuse("dim out of range")
            return one(np.stack([cast(a, rt), cast(b, rt)], d % (a.ndim + 1)), rt)
        if a.ndim == 0 or b.ndim == 0:
            raise Refuse("zero-dimensional tensor cannot be concatenated")
        if a.shape == (0,) or b.shape == (0,):
            raise Skip()           # PyTorch's legacy rule skips 1-d empty tensors
        d = wrap(d, a.ndim)
        if a.ndim != b.ndim or a.shape[:d] + a.shape[d + 1:] != b.shape[:d] + b.shape[d + 1:]:
            raise Refuse("sizes must match except in the cat dim")
        return one(np.concatenate([cast(a, rt), cast(b, rt)], d), rt)
    return ref


@st.composite
def _join_gen(draw):
    x = draw_tensor(draw, ALL)
    a_shape = x.array().shape
    shape = list(a_shape)
    d = _dim(draw, len(shape), 1)
    if shape and draw(st.integers(0, 1)):
        k = draw(st.integers(0, len(shape) - 1))
        shape[k] = draw(st.sampled_from([0, 1, 2, 3]))
    dts = (x.dtype,) if draw(st.booleans()) else ALL
    y = draw_tensor(draw, dts, shape=tuple(shape))
    return [x, y], {"dim": d}


def _expand_sizes(a):
    """Sizes for expand: new leading dims, -1 or the old size or a broadcast of size-1 dims."""
    @st.composite
    def sizes(draw):
        lead = draw(st.lists(st.sampled_from([-1, 0, 1, 2, 3]), max_size=2))
        own = [draw(st.sampled_from([-1, s, 0, 2, 3] if s == 1 else [-1, s, s, s + 1])) for s in a.shape]
        if own and draw(st.integers(0, 9)) == 0:
            own = own[1:]
        return {"sizes": tuple(lead + own)}
    return sizes()


def _p(**strats):
    def extra(a):
        return st.fixed_dictionaries({k: (v(a) if callable(v) else v) for k, v in strats.items()})
    return extra


def _anydim(extra=0):
    return lambda a: st.integers(-max(a.ndim + extra, 1) - 1, max(a.ndim + extra, 1))


@st.composite
def _dims_tuple(draw, a):
    n = max(a.ndim, 1)
    k = draw(st.integers(1, n))
    return tuple(draw(st.lists(st.integers(-n - 1, n), min_size=k, max_size=k)))


def shape_ops():
    size_list = st.lists(st.integers(-1, 3), max_size=5).map(tuple)
    small = st.integers(-2, 5)
    return [
        Op("reshape", "shape", "x0.reshape({shape})", x_gen(_p(shape=_new_shape)), _reshape_ref(False)),
        Op("view", "shape", "x0.view({shape})", x_gen(_p(shape=_new_shape)), _reshape_ref(True)),
        Op("transpose", "shape", "x0.transpose({d0}, {d1})", x_gen(_p(d0=_anydim(), d1=_anydim())), _transpose_ref),
        Op("permute", "shape", "x0.permute({perm})",
           x_gen(_p(perm=lambda a: st.one_of(st.permutations(range(a.ndim)).map(tuple),
                                             st.lists(st.integers(-a.ndim - 1, a.ndim), max_size=4).map(tuple)))),
           _permute_ref),
        Op("flip", "shape", "x0.flip({dims})", x_gen(_p(dims=_dims_tuple)), _flip_ref),
        Op("roll", "shape", "x0.roll({shifts}, {dims})",
           x_gen(lambda a: st.one_of(
               st.fixed_dictionaries({"shifts": st.integers(-7, 7), "dims": st.none()}),
               _dims_tuple(a).flatmap(lambda ds: st.fixed_dictionaries({
                   "dims": st.just(ds),
                   "shifts": st.lists(st.integers(-7, 7), min_size=len(ds), max_size=len(ds) + (1 if len(ds) < 2 else 0)).map(tuple)})))),
           _roll_ref),
        Op("narrow", "shape", "x0.narrow({dim}, {start}, {length})",
           x_gen(_p(dim=_anydim(), start=st.integers(-4, 6), length=st.integers(-1, 5))), _narrow_ref),
        Op("select", "shape", "x0.select({dim}, {index})",
           x_gen(_p(dim=_anydim(), index=st.integers(-6, 6))), _select_ref),
        Op("squeeze", "shape", lambda i, p: "x0.squeeze()" if p.get("dim") is None else "x0.squeeze({dim})",
           x_gen(_p(dim=lambda a: st.one_of(st.none(), _anydim()(a), _dims_tuple(a)))), _squeeze_ref),
        Op("unsqueeze", "shape", "x0.unsqueeze({dim})", x_gen(_p(dim=_anydim(1))), _unsqueeze_ref),
        Op("expand", "shape", "x0.expand({sizes})", x_gen(_expand_sizes), _expand_ref),
        Op("repeat", "shape", "x0.repeat({reps})",
           x_gen(lambda a: st.fixed_dictionaries({"reps": st.lists(st.integers(-1, 3), min_size=max(a.ndim - 1, 0), max_size=a.ndim + 2).map(tuple)})),
           _repeat_ref),
        Op("tile", "shape", "x0.tile({reps})",
           x_gen(_p(reps=st.lists(st.integers(-1, 3), max_size=5).map(tuple))), _tile_ref),
        Op("movedim", "shape", "x0.movedim({src}, {dst})", x_gen(_p(src=_anydim(), dst=_anydim())), _movedim_ref),
        Op("flatten", "shape", "x0.flatten({start}, {end})", x_gen(_p(start=_anydim(), end=_anydim())), _flatten_ref),
        Op("split", "shape", "x0.split({size}, {dim})",
           x_gen(_p(dim=_anydim(), size=st.one_of(st.integers(-1, 4), st.lists(st.integers(0, 4), max_size=4).map(list)))),
           _split_ref),
        Op("chunk", "shape", "x0.chunk({chunks}, {dim})", x_gen(_p(dim=_anydim(), chunks=small)), _chunk_ref),
        Op("cat", "shape", "ember.cat((x0, x1), {dim})", _join_gen, _join_ref(False)),
        Op("stack", "shape", "ember.stack((x0, x1), {dim})", _join_gen, _join_ref(True)),
    ]
