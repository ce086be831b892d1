"""Families `index` (basic/advanced/boolean getitem, setitem, gather/scatter_add/index_select/
take/masked_fill/index_add) and `sort` (sort/argsort/topk/unique/kthvalue/msort)."""
from __future__ import annotations

import math

import numpy as np
import fuzz_st as st

from fuzz_case import Expect, Op, Refuse, Skip, Src, one
from fuzz_core import ALL, REAL, Input, assert_close, category, cast, draw_tensor
from fuzz_ops_reduce import norm_dims
from fuzz_ops_shape import _dim, wrap


def index_tensor(vals, shape, dt="int64"):
    arr = np.array(vals, dtype=np.bool_ if dt == "bool" else np.int64).reshape(-1)
    return Input(dt, tuple(shape), arr)


# ---- getitem / setitem -------------------------------------------------------------------------

@st.composite
def _basic_index(draw, a):
    """An index tuple as (source, numpy index, refused-by-PyTorch reason or None)."""
    parts, np_parts, refuse = [], [], None
    dims_left = a.ndim
    used_ellipsis = False
    for _ in range(draw(st.integers(0, min(a.ndim + 1, 4)))):
        k = draw(st.sampled_from(["int", "slice", "slice", "none", "ellipsis", "list", "tensor", "mask"]))
        if k == "int":
            i = draw(st.integers(-4, 4))
            parts.append(str(i))
            np_parts.append(i)
        elif k == "slice":
            start = draw(st.one_of(st.none(), st.integers(-5, 5)))
            stop = draw(st.one_of(st.none(), st.integers(-5, 5)))
            step = draw(st.sampled_from([None, 1, 2, 3, -1, 0]) if draw(st.integers(0, 9)) == 0
                        else st.sampled_from([None, 1, 2]))
            if step is not None and step <= 0:
                refuse = refuse or "slice step must be positive"
            parts.append(f"{'' if start is None else start}:{'' if stop is None else stop}"
                         + ("" if step is None else f":{step}"))
            np_parts.append(slice(start, stop, step if step else None))
        elif k == "none":
            parts.append("None")
            np_parts.append(None)
        elif k == "ellipsis" and not used_ellipsis:
            used_ellipsis = True
            parts.append("...")
            np_parts.append(Ellipsis)
        elif k == "list":
            lst = draw(st.lists(st.integers(-4, 4), min_size=1, max_size=4))
            parts.append(repr(lst))
            np_parts.append(np.array(lst))
        elif k == "tensor":
            lst = draw(st.lists(st.integers(-4, 4), max_size=4))
            parts.append(f"ember.tensor({lst!r}, dtype=ember.int64)")
            np_parts.append(np.array(lst, dtype=np.int64))
        elif k == "mask" and dims_left:
            # a boolean mask over the next dims of the remaining shape
            pos = sum(1 for p in np_parts if p is not None and p is not Ellipsis)
            if used_ellipsis or pos >= a.ndim:
                continue
            n = a.shape[pos]
            m = draw(st.lists(st.booleans(), min_size=n, max_size=n))
            parts.append(f"ember.tensor({m!r}, dtype=ember.bool)")
            np_parts.append(np.array(m, dtype=bool))
    src = ", ".join(parts) if len(parts) != 1 else parts[0] + ("," if parts[0] in ("...",) else "")
    if not parts:
        src, np_parts = "()", []
    return src, tuple(np_parts), refuse


def _np_index(a, idx):
    # numpy raises for what PyTorch refuses too (out-of-range ints, too many indices, shape
    # mismatches); a tuple with several advanced indices follows the same rules in both, once
    # the Ellipsis is spelled out: NumPy counts advanced indices on either side of one that
    # covers no dim as separated, PyTorch as adjacent
    if isinstance(idx, tuple) and any(i is Ellipsis for i in idx):
        used = sum(i.ndim if isinstance(i, np.ndarray) and i.dtype == bool else 1
                   for i in idx if i is not None and i is not Ellipsis)
        at = next(k for k, i in enumerate(idx) if i is Ellipsis)
        idx = idx[:at] + (slice(None),) * max(a.ndim - used, 0) + idx[at + 1:]
    return a[idx]


@st.composite
def _getitem_gen(draw):
    x = draw_tensor(draw, ALL)
    src, idx, refuse = draw(_basic_index(x.array()))
    return [x], {"idx": Src(src, (idx, refuse))}


def _mixes_ints_and_arrays(idx):
    # PyTorch applies integer indices first (as select), NumPy treats them as advanced indices
    # beside array ones: the result's dims are ordered differently
    return any(isinstance(i, int) for i in idx) and any(isinstance(i, np.ndarray) for i in idx)


def _getitem_ref(arrays, inputs, params):
    a = arrays[0]
    idx, refuse = params["idx"].value
    if refuse:
        raise Refuse(refuse)
    if _mixes_ints_and_arrays(idx):
        raise Skip()
    try:
        want = _np_index(a, idx)
    except (IndexError, ValueError, TypeError) as e:
        raise Refuse(f"numpy: {e}")
    # an out-of-range index into an empty result is checked by NumPy, not always by PyTorch
    return one(np.array(want), inputs[0].dtype, may_refuse=np.size(want) == 0)


@st.composite
def _setitem_gen(draw):
    x = draw_tensor(draw, ALL, allow_overlap=False)
    src, idx, refuse = draw(_basic_index(x.array()))
    vdt = draw(st.sampled_from([x.dtype] * 3 + list(ALL)))
    if draw(st.booleans()):
        c = category(vdt)
        v = [True, 3, 2.5, complex(1, 2)][c] if draw(st.booleans()) else [False, -1, -0.5, complex(-1, 0)][c]
        return [x], {"idx": Src(src, (idx, refuse)), "v": v}
    try:
        tshape = np.shape(x.array()[idx]) if not refuse else ()
    except Exception:  # noqa: BLE001 - an invalid index: any value shape
        tshape = ()
    vshape = tuple(tshape[len(tshape) - draw(st.integers(0, len(tshape))):])
    if vshape and draw(st.integers(0, 5)) == 0:
        vshape = vshape[:-1] + (vshape[-1] + 1,)
    y = draw_tensor(draw, (vdt,), shape=vshape)
    return [x, y], {"idx": Src(src, (idx, refuse)), "v": Src("x1")}


def _setitem_ref(arrays, inputs, params):
    a = arrays[0].copy()
    x = inputs[0]
    if x.zero_stride:
        raise Skip()
    idx, refuse = params["idx"].value
    if refuse:
        raise Refuse(refuse)
    if _mixes_ints_and_arrays(idx):
        raise Skip()
    if len(arrays) > 1:
        v, vdt = arrays[1], inputs[1].dtype
    else:
        v = params["v"]
        vdt = {bool: "bool", int: "int64", float: "float64", complex: "complex128"}[type(v)]
        if category(vdt) == 3 and category(x.dtype) < 3 and v.imag != 0:
            raise Refuse("a complex value can't be converted to a real dtype")
    if category(vdt) == 3 and category(x.dtype) < 3:
        raise Skip()      # PyTorch copies the real part with a warning
    if category(vdt) == 2 and category(x.dtype) <= 1 and not np.all(np.isfinite(np.asarray(v, dtype=np.float64))):
        raise Skip()
    if x.dtype == "uint8" and np.any(np.asarray(v).real < 0) and category(vdt) >= 2:
        raise Skip()      # negative float to uint8 is undefined
    try:
        a[idx] = cast(np.asarray(v), x.dtype) if category(vdt) != 3 or category(x.dtype) == 3 else v
    except (IndexError, ValueError, TypeError) as e:
        raise Refuse(f"numpy: {e}")
    if category(x.dtype) <= 1:
        a = cast(a, x.dtype)
    if len(arrays) > 1 and _writes_twice(arrays[0], idx):
        raise Skip()      # repeated indices write in an unspecified order
    return one(a, x.dtype, may_refuse=np.size(arrays[0][idx]) == 0)


def _writes_twice(a, idx):
    ids = np.arange(a.size).reshape(a.shape)[idx]
    return np.unique(ids).size != np.size(ids)


# ---- gather / scatter_add / index_select / take / masked_fill / index_add ----------------------

@st.composite
def _gather_gen(draw):
    x = draw_tensor(draw, ALL)
    a = x.array()
    nd = max(a.ndim, 1)
    d = _dim(draw, a.ndim)
    shape = tuple(draw(st.integers(0, s)) if s else 0 for s in (a.shape or (1,)))
    if a.ndim == 0:
        shape = draw(st.sampled_from([(), (1,)]))
    hi = (a.shape[d % nd] if a.ndim and -nd <= d < nd else 1)
    n = int(np.prod(shape)) if shape else 1
    vals = draw(st.lists(st.integers(-1 if draw(st.integers(0, 9)) == 0 else 0,
                                     hi if draw(st.integers(0, 9)) == 0 else max(hi - 1, 0)),
                         min_size=n, max_size=n))
    return [x, index_tensor(vals, shape)], {"dim": d}


def _gather_ref(arrays, inputs, params):
    a, idx = arrays
    if a.ndim == 0:
        norm_dims(params["dim"], 0)
        a = a.reshape(1)
        if idx.ndim > 1:
            raise Refuse("index has more dims than the input")
        ix = idx.reshape(-1) if idx.ndim else idx.reshape(1)
        if np.any(ix < 0) or np.any(ix >= 1):
            raise Refuse("index out of bounds")
        return one(a[ix].reshape(idx.shape), inputs[0].dtype)
    d = wrap(params["dim"], a.ndim)
    if idx.ndim != a.ndim:
        raise Refuse("index and input dims differ")
    if np.any(idx < 0) or np.any(idx >= a.shape[d]):
        raise Refuse("index out of bounds")
    if any(idx.shape[k] > a.shape[k] for k in range(a.ndim) if k != d):
        raise Refuse("index larger than input")
    sl = tuple(slice(0, idx.shape[k]) if k != d else slice(None) for k in range(a.ndim))
    return one(np.take_along_axis(a[sl], idx, d), inputs[0].dtype)


@st.composite
def _scatter_add_gen(draw):
    inps, params = draw(_gather_gen())
    x, idx = inps
    src = draw_tensor(draw, tuple(set([x.dtype] * 3 + [draw(st.sampled_from(ALL))])),
                      shape=idx.shape, view=False)
    return [x, idx, src], params


def _scatter_add_ref(arrays, inputs, params):
    a, idx, src = arrays
    if inputs[0].dtype != inputs[2].dtype:
        raise Refuse("scatter_add: self and src dtypes differ")
    if inputs[0].zero_stride or inputs[0].dtype == "bool":
        raise Skip()
    out = _accum(a.copy(), inputs[0].dtype)
    if a.ndim == 0:
        norm_dims(params["dim"], 0)
        if idx.size and (np.any(idx < 0) or np.any(idx >= 1)):
            raise Refuse("index out of bounds")
        out = out + _accum(src, inputs[0].dtype).sum()
        return one(cast(out, inputs[0].dtype), inputs[0].dtype)
    d = wrap(params["dim"], a.ndim)
    if idx.ndim != a.ndim:
        raise Refuse("index and input dims differ")
    if np.any(idx < 0) or np.any(idx >= a.shape[d]):
        raise Refuse("index out of bounds")
    if any(idx.shape[k] > a.shape[k] for k in range(a.ndim) if k != d):
        raise Refuse("index larger than input")
    for pos in np.ndindex(*idx.shape):
        tgt = list(pos)
        tgt[d] = idx[pos]
        out[tuple(tgt)] += _accum(src[pos], inputs[0].dtype)
    return one(cast(out, inputs[0].dtype), inputs[0].dtype, rtol_scale=8)


def _accum(a, dt):
    if category(dt) <= 1:
        return np.asarray(a).astype(np.int64)
    return np.asarray(a).astype(np.complex128 if category(dt) == 3 else np.float64)


@st.composite
def _index1d_gen(draw, neg_ok=False):
    x = draw_tensor(draw, ALL)
    a = x.array()
    d = _dim(draw, a.ndim)
    size = a.shape[d % a.ndim] if a.ndim and -a.ndim <= d < a.ndim else (a.size if neg_ok else 1)
    lo = -size if neg_ok else (-1 if draw(st.integers(0, 9)) == 0 else 0)
    hi = size if draw(st.integers(0, 9)) == 0 else size - 1
    vals = draw(st.lists(st.integers(lo, max(hi, lo)), max_size=5)) if size or draw(st.booleans()) else []
    idx_shape = draw(st.sampled_from([(len(vals),)] + ([()] if len(vals) == 1 else [])))
    return [x, index_tensor(vals, idx_shape)], {"dim": d}


def _index_select_ref(arrays, inputs, params):
    a, idx = arrays
    if idx.ndim > 1:
        raise Refuse("index must be 1-d")
    flat = idx.reshape(-1)
    if a.ndim == 0:
        norm_dims(params["dim"], 0)
        if flat.size != 1 or flat[0] != 0:
            raise Refuse("index into a 0-d tensor must be one 0")
        return one(a, inputs[0].dtype)
    d = wrap(params["dim"], a.ndim)
    if np.any(flat < 0) or np.any(flat >= a.shape[d]):
        raise Refuse("index out of range")
    return one(np.take(a, flat, axis=d), inputs[0].dtype)


def _take_ref(arrays, inputs, params):
    a, idx = arrays
    n = a.size
    if np.any(idx < -n) or np.any(idx >= n):
        raise Refuse("index out of range")
    return one(a.reshape(-1)[idx] if idx.size else np.zeros(idx.shape, a.dtype), inputs[0].dtype)


@st.composite
def _masked_fill_gen(draw):
    x = draw_tensor(draw, ALL)
    a = x.array()
    mshape = a.shape[len(a.shape) - draw(st.integers(0, len(a.shape))):]
    mdt = "bool" if draw(st.integers(0, 9)) else draw(st.sampled_from(["uint8", "int64", "float32"]))
    m = draw_tensor(draw, (mdt,), shape=mshape)
    v = draw(st.sampled_from([0, 1, -2, 2.5, math.nan, True, complex(1, 1)]))
    return [x, m], {"v": v}


def _masked_fill_ref(arrays, inputs, params):
    a, m = arrays
    if inputs[1].dtype != "bool":
        raise Refuse("mask must be bool")
    v = params["v"]
    x = inputs[0]
    if isinstance(v, complex) and category(x.dtype) < 3:
        raise Refuse("complex value into a real tensor")
    if isinstance(v, float) and category(x.dtype) <= 1:
        raise Skip()
    try:
        mb = np.broadcast_to(m, a.shape)
    except ValueError:
        raise Refuse("mask doesn't broadcast")
    out = np.where(mb, cast(np.asarray(v), x.dtype), a)
    return one(cast(out, x.dtype), x.dtype)


@st.composite
def _index_add_gen(draw):
    (x, idx), params = draw(_index1d_gen())
    a = x.array()
    d = params["dim"]
    shape = list(a.shape) or [1]
    if a.ndim and -a.ndim <= d < a.ndim:
        shape[d % a.ndim] = len(idx.values)
    src = draw_tensor(draw, (x.dtype,), shape=tuple(shape) if a.ndim else idx.shape, view=False)
    alpha = draw(st.sampled_from([None, 2]))
    return [x, idx, src], {**params, "alpha": alpha}


def _index_add_ref(arrays, inputs, params):
    a, idx, src = arrays
    x = inputs[0]
    if x.dtype == "bool" or x.zero_stride or x.overlapping:
        raise Skip()
    if a.ndim == 0:
        raise Skip()
    d = wrap(params["dim"], a.ndim)
    if idx.ndim > 1:
        raise Refuse("index must be 1-d")
    flat = idx.reshape(-1)
    if np.any(flat < 0) or np.any(flat >= a.shape[d]):
        raise Refuse("index out of range")
    if src.shape[d] != flat.size:
        raise Refuse("source size doesn't match the index")
    alpha = params["alpha"] or 1
    out = _accum(a.copy(), x.dtype)
    for j, i in enumerate(flat):
        sl = [slice(None)] * a.ndim
        sl[d] = i
        ssl = [slice(None)] * a.ndim
        ssl[d] = j
        out[tuple(sl)] += alpha * _accum(src[tuple(ssl)], x.dtype)
    return one(cast(out, x.dtype), x.dtype, rtol_scale=8)


def index_ops():
    return [
        Op("getitem", "index", "x0[{idx}]", _getitem_gen, _getitem_ref),
        Op("setitem", "index", "x0", _setitem_gen, _setitem_ref, stmts="x0[{idx}] = {v}"),
        Op("gather", "index", "x0.gather({dim}, x1)", _gather_gen, _gather_ref),
        Op("scatter_add", "index", "x0.scatter_add({dim}, x1, x2)", _scatter_add_gen, _scatter_add_ref),
        Op("index_select", "index", "x0.index_select({dim}, x1)", _index1d_gen, _index_select_ref),
        Op("take", "index", "x0.take(x1)", lambda: _index1d_gen(neg_ok=True), _take_ref),
        Op("masked_fill", "index", "x0.masked_fill(x1, {v})", _masked_fill_gen, _masked_fill_ref),
        Op("index_add", "index",
           lambda i, p: "x0.index_add({dim}, x1, x2" + (", alpha={alpha})" if p["alpha"] else ")"),
           _index_add_gen, _index_add_ref),
    ]


# ---- sort family -------------------------------------------------------------------------------

@st.composite
def _sort_gen(draw):
    x = draw_tensor(draw, REAL if draw(st.integers(0, 9)) else ALL)
    return [x], {"dim": _dim(draw, len(x.array().shape)), "descending": draw(st.booleans())}


def _sorted_np(a, axis, descending):
    """Values sorted as PyTorch does (NaN greatest) and a stable argsort."""
    if a.dtype == bool or a.dtype.kind in "iu":
        key = a.astype(np.int64)
        key = -key if descending else key
        order = np.argsort(key, axis=axis, kind="stable")
    else:
        af = a.astype(np.float64)
        nan = np.isnan(af)
        # rank NaN above +inf in both directions
        key = np.where(nan, np.inf, af)
        if descending:
            # stable descending: sort by (-key, nan first)
            order = np.lexsort((np.zeros_like(key), -key, ~nan), axis=axis) if a.ndim else np.zeros((), np.int64)
        else:
            order = np.lexsort((key, nan), axis=axis) if a.ndim else np.zeros((), np.int64)
    return np.take_along_axis(a, order, axis) if a.ndim else a, order


def _sort_ref(kind):
    def ref(arrays, inputs, params):
        a, dt = arrays[0], inputs[0].dtype
        if category(dt) == 3:
            raise Refuse("sort of complex")
        d = params["dim"]
        if a.ndim == 0:
            norm_dims(d, 0)
            vals, idx = a, np.zeros((), np.int64)
        else:
            ax = wrap(d, a.ndim)
            vals, idx = _sorted_np(a, ax, params["descending"])
        if kind == "sort":
            return Expect([(vals, dt), (idx.astype(np.int64), "int64")], may_refuse=dt == "bool")
        return one(idx.astype(np.int64), "int64", may_refuse=dt == "bool")
    return ref


@st.composite
def _topk_gen(draw):
    (x,), p = draw(_sort_gen())
    a = x.array()
    size = a.shape[p["dim"] % a.ndim] if a.ndim and -a.ndim <= p["dim"] < a.ndim else 1
    k = draw(st.integers(-1, size + 1) if draw(st.integers(0, 9)) == 0 else st.integers(0, size))
    return [x], {"k": k, "dim": p["dim"], "largest": p["descending"]}


def _topk_ref(arrays, inputs, params):
    a, dt = arrays[0], inputs[0].dtype
    if category(dt) == 3:
        raise Refuse("topk of complex")
    k = params["k"]
    if a.ndim == 0:
        norm_dims(params["dim"], 0)
        if k not in (0, 1):
            raise Refuse("k out of range")
        if k == 0:
            raise Skip()
        return Expect([(a, dt), (np.zeros((), np.int64), "int64")], may_refuse=True)
    ax = wrap(params["dim"], a.ndim)
    if not 0 <= k <= a.shape[ax]:
        raise Refuse("k out of range")
    vals, _ = _sorted_np(a, ax, params["largest"])
    want = np.take(vals, range(k), axis=ax)

    def check(outs):
        v, i = outs
        assert_close(v, want, dt, what="values ")
        picked = np.take_along_axis(a, i.astype(np.int64), ax)
        assert_close(picked, want, dt, what="values at indices ")
    return Expect([(want, dt), (np.zeros(want.shape, np.int64), "int64")], custom=check,
                  may_refuse=dt == "bool")


@st.composite
def _unique_gen(draw):
    x = draw_tensor(draw, REAL, lo=-3, hi=3)
    return [x], {"inv": draw(st.booleans()), "counts": draw(st.booleans())}


def _unique_ref(arrays, inputs, params):
    a, dt = arrays[0], inputs[0].dtype
    if category(dt) == 2 and np.any(np.isnan(a)):
        raise Skip()        # NaNs are each unique in PyTorch, equal in NumPy 2
    u, inv, cnt = np.unique(a.reshape(-1), return_inverse=True, return_counts=True)
    outs = [(u, dt)]
    if params["inv"]:
        outs.append((inv.reshape(a.shape).astype(np.int64), "int64"))
    if params["counts"]:
        outs.append((cnt.astype(np.int64), "int64"))
    return Expect(outs)


def _kth_ref(arrays, inputs, params):
    a, dt = arrays[0], inputs[0].dtype
    if category(dt) == 3:
        raise Refuse("kthvalue of complex")
    k = params["k"]
    if a.ndim == 0:
        raise Skip()
    ax = wrap(params["dim"], a.ndim)
    if not 1 <= k <= a.shape[ax]:
        raise Refuse("k out of range")
    vals, _ = _sorted_np(a, ax, False)
    want = np.take(vals, k - 1, axis=ax)

    def check(outs):
        v, i = outs
        assert_close(v, want, dt, what="values ")
        picked = np.take_along_axis(a, np.expand_dims(i.astype(np.int64), ax), ax).squeeze(ax)
        assert_close(picked, want, dt, what="value at index ")
    return Expect([(want, dt), (np.zeros(want.shape, np.int64), "int64")], custom=check,
                  may_refuse=dt == "bool")


def sort_ops():
    return [
        Op("sort", "sort", "x0.sort(dim={dim}, descending={descending}, stable=True)", _sort_gen, _sort_ref("sort")),
        Op("argsort", "sort", "x0.argsort(dim={dim}, descending={descending}, stable=True)", _sort_gen,
           _sort_ref("argsort")),
        Op("topk", "sort", "x0.topk({k}, dim={dim}, largest={largest})", _topk_gen, _topk_ref),
        Op("unique", "sort", "ember.unique(x0, sorted=True, return_inverse={inv}, return_counts={counts})",
           _unique_gen, _unique_ref),
        Op("kthvalue", "sort", "x0.kthvalue({k}, {dim})",
           lambda: _topk_gen().map(lambda ip: (ip[0], {**ip[1], "k": ip[1]["k"]})), _kth_ref),
    ]
