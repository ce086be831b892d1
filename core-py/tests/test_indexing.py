"""The indexing family against NumPy: gather/scatter, index_*, masked_*, take, nonzero,
joining and splitting, roll/repeat/tile, tril/triu, meshgrid, and advanced indexing."""
import warnings
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from tensor_helpers import ALL, INTS, layouts, to_np

SOME = [ember.bool, ember.uint8, ember.int32, ember.int64, ember.float16, ember.bfloat16, ember.float32, ember.float64]


def idx(a):
    return ember.tensor(np.asarray(a, dtype=np.int64))


def same(got, want):
    np.testing.assert_array_equal(to_np(got), np.asarray(want))


# ---- gather / scatter ----

@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_gather_parity(dtype):
    rng = np.random.default_rng(1)
    for name, t, a in layouts((4, 5), dtype):
        for dim in (0, 1, -1):
            shape = [3, 4] if dim == 0 else [4, 3]
            i = rng.integers(0, a.shape[dim], shape)
            same(ember.gather(t, dim, idx(i)), _gather_ref(a, dim % 2, i))
            same(t.gather(dim, idx(i)), _gather_ref(a, dim % 2, i))


def test_gather_smaller_index_strided_index_and_large():
    a = np.arange(60.0).reshape(3, 4, 5)
    i = np.random.default_rng(0).integers(0, 4, (6, 8, 5))
    ti = idx(i)[::2, ::2]  # strided index
    small = i[::2, ::2][:3, :, :5]  # within input's sizes apart from dim 1
    same(ember.gather(ember.tensor(a), 1, ti[:3, :, :5]), _gather_ref(a, 1, small))
    big = np.random.default_rng(1).random((300, 400))
    bi = np.random.default_rng(2).integers(0, 400, (300, 500))
    same(ember.gather(ember.tensor(big), 1, idx(bi)), np.take_along_axis(big, bi, 1))


def _gather_ref(a, dim, i):
    out = np.empty(i.shape, a.dtype)
    for pos in np.ndindex(*i.shape):
        src = list(pos)
        src[dim] = i[pos]
        out[pos] = a[tuple(src)]
    return out


def _scatter_ref(a, dim, i, src, op=None, include_self=True):
    out = a.astype(np.float64).copy()
    touched = {}
    for pos in np.ndindex(*i.shape):
        dst = list(pos)
        dst[dim] = i[pos]
        dst = tuple(dst)
        touched.setdefault(dst, []).append(src[pos])
    for dst, vals in touched.items():
        base = [out[dst]] if include_self else []
        if op is None:
            out[dst] = vals[-1]
        elif op in ("sum", "add"):
            out[dst] = sum(base + vals)
        elif op in ("prod", "multiply"):
            out[dst] = np.prod(base + vals)
        elif op == "amax":
            out[dst] = max(base + vals)
        elif op == "amin":
            out[dst] = min(base + vals)
        elif op == "mean":
            out[dst] = sum(base + vals) / len(base + vals)
    return out


@pytest.mark.parametrize("dtype", [ember.int32, ember.int64, ember.float32, ember.float64], ids=str)
@pytest.mark.parametrize("op", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_parity(dtype, op, include_self):
    rng = np.random.default_rng(3)
    for name, t, a in layouts((4, 5), dtype):
        i = rng.integers(0, 4, (6, 5))
        src_np = rng.integers(-3, 4, (6, 5))
        src = ember.tensor(src_np).to(dtype)
        got = ember.scatter_reduce(t, 0, idx(i), src, op, include_self=include_self)
        want = _scatter_ref(a, 0, i, src_np.astype(np.float64), op, include_self)
        if op == "mean" and dtype in INTS:
            want = _scatter_int_mean(a, 0, i, src_np, include_self)
        np.testing.assert_allclose(to_np(got).astype(np.float64), want, rtol=1e-6, err_msg=name)


def _scatter_int_mean(a, dim, i, src, include_self):
    out = a.astype(np.int64).copy()
    acc = {}
    for pos in np.ndindex(*i.shape):
        dst = list(pos)
        dst[dim] = i[pos]
        acc.setdefault(tuple(dst), []).append(int(src[pos]))
    for dst, vals in acc.items():
        vals = ([int(out[dst])] if include_self else []) + vals
        out[dst] = sum(vals) // len(vals)
    return out


@pytest.mark.parametrize("dtype", SOME, ids=str)
def test_scatter_and_scatter_add(dtype):
    rng = np.random.default_rng(4)
    for name, t, a in layouts((3, 6), dtype):
        perm = np.stack([rng.permutation(6)[:4] for _ in range(2)])  # unique per row: no write races
        src_np = to_np(ember.tensor(rng.integers(0, 2, (2, 4))).to(dtype))
        src = ember.tensor(src_np).to(dtype)
        same(ember.scatter(t, 1, idx(perm), src), _scatter_ref(a, 1, perm, src_np.astype(np.float64)).astype(a.dtype))
        before = to_np(t).copy()
        ember.scatter(t, 1, idx(perm), 1)
        np.testing.assert_array_equal(to_np(t), before)  # out-of-place leaves input alone
        filled = t.clone().scatter_(1, idx(perm), 1)
        same(filled, _scatter_ref(a, 1, perm, np.ones(perm.shape)).astype(a.dtype))
        if dtype != ember.bool:
            dup = rng.integers(0, 6, (3, 5))
            s2 = ember.tensor(np.ones((3, 5))).to(dtype)
            want = _scatter_ref(a, 1, dup, np.ones((3, 5)), "sum")
            want = want.astype(a.dtype).astype(np.float64)  # each add rounds to the dtype: compare loosely
            np.testing.assert_allclose(to_np(ember.scatter_add(t, 1, idx(dup), s2)).astype(np.float64), want, rtol=1.6e-2)
            np.testing.assert_allclose(to_np(t.clone().scatter_(1, idx(dup), s2, reduce="add")).astype(np.float64), want, rtol=1.6e-2)


def test_scatter_add_large_is_deterministic():
    n = 200_000
    i = np.random.default_rng(0).integers(0, 100, n)
    got = ember.zeros(100, dtype=ember.float64).scatter_add_(0, idx(i), ember.ones(n, dtype=ember.float64))
    same(got, np.bincount(i, minlength=100).astype(np.float64))


# ---- index_* ----

@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_index_select_parity(dtype):
    for name, t, a in layouts((5, 4), dtype):
        for dim in (0, 1):
            i = np.array([3, 0, 0, 1]) % a.shape[dim]
            same(ember.index_select(t, dim, idx(i)), np.take(a, i, axis=dim))
            same(t.index_select(dim, idx(i).int()), np.take(a, i, axis=dim))
    same(ember.tensor(5).index_select(0, idx([0])), np.array(5))


@pytest.mark.parametrize("dtype", [ember.uint8, ember.int64, ember.float16, ember.float32, ember.float64], ids=str)
def test_index_add_copy_fill(dtype):
    for name, t, a in layouts((5, 3), dtype):
        i = np.array([4, 0, 4])
        src_np = np.arange(9).reshape(3, 3) % 4
        src = ember.tensor(src_np).to(dtype)
        want = a.astype(np.float64).copy()
        np.add.at(want, i, 2 * src_np)
        np.testing.assert_allclose(to_np(ember.index_add(t, 0, idx(i), src, alpha=2)).astype(np.float64), want.astype(a.dtype).astype(np.float64), rtol=2e-3)
        u = np.array([4, 0, 2])
        want = a.copy()
        want[u] = src_np
        same(ember.index_copy(t, 0, idx(u), src), want)
        want = a.copy()
        want[:, [0, 2]] = 1
        same(ember.index_fill(t, 1, idx([0, 2]), 1), want)
        x = t.clone()
        assert x.index_fill_(1, idx([0, 2]), 1) is x
        same(x, want)


def test_index_put_accumulate():
    x = ember.zeros(5)
    x.index_put_((idx([0, 0, 3]),), ember.tensor([1.0, 2.0, 3.0]), accumulate=True)
    same(x, [3, 0, 0, 3, 0])
    y = ember.index_put(ember.zeros(2, 3), (idx([0, 1]), idx([2, 0])), ember.tensor(7.0))
    same(y, [[0, 0, 7], [7, 0, 0]])
    z = ember.zeros(2, 3)
    z.index_put_((ember.tensor([True, False]),), ember.tensor(1.0))
    same(z, [[1, 1, 1], [0, 0, 0]])


# ---- masks ----

@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_masked_ops_parity(dtype):
    rng = np.random.default_rng(5)
    for name, t, a in layouts((4, 6), dtype):
        m = rng.random((4, 6)) > 0.5
        mt = ember.tensor(m)
        same(ember.masked_fill(t, mt, 1), np.where(m, np.ones_like(a), a))
        row = m[0]
        same(t.masked_fill(ember.tensor(row), 0), np.where(row, np.zeros_like(a), a))  # broadcast mask
        same(ember.masked_select(t, mt), a[m])
        same(t.masked_select(ember.tensor(row)), np.broadcast_to(a, (4, 6))[np.broadcast_to(row, (4, 6))])
        src = ember.arange(24).reshape(4, 6).to(dtype)
        want = a.copy()
        want[m] = to_np(src).reshape(-1)[: m.sum()]
        same(ember.masked_scatter(t, mt, src), want)
        x = t.clone()
        assert x.masked_fill_(mt, 0) is x
        same(x, np.where(m, np.zeros_like(a), a))


def test_masked_fill_tensor_value_and_scalars():
    x = ember.arange(6.0).reshape(2, 3)
    same(x.masked_fill(x > 2, ember.tensor(-1.0)), [[0, 1, 2], [-1, -1, -1]])
    assert ember.masked_fill(ember.tensor([1, 2]), ember.tensor([True, False]), 3.7).dtype == ember.int64
    same(ember.masked_select(ember.tensor(3.0), ember.tensor(True)), [3.0])


# ---- take / nonzero ----

@pytest.mark.parametrize("dtype", SOME, ids=str)
def test_take_and_take_along_dim(dtype):
    for name, t, a in layouts((3, 4), dtype):
        i = np.array([[0, -1], [11, 5]])
        same(ember.take(t, idx(i)), np.take(a.reshape(-1), i))
        j = np.array([[0], [2], [1]])
        same(ember.take_along_dim(t, idx(j), 1), np.take_along_axis(a, j, 1))
        same(ember.take_along_dim(t, idx(j[0]), None), np.take(a.reshape(-1), j[0]))
        same(t.take_along_dim(idx([[1, 0, 0, 2]]), dim=0), np.take_along_axis(a, np.array([[1, 0, 0, 2]]), 0))


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_nonzero_parity(dtype):
    for shape in [(4, 5), (3, 2, 3), (70000,)]:
        for name, t, a in layouts(shape, dtype):
            want = np.argwhere(a)
            same(ember.nonzero(t), want.reshape(-1, len(shape)))
            same(ember.argwhere(t), want.reshape(-1, len(shape)))
            for got, w in zip(t.nonzero(as_tuple=True), np.nonzero(a)):
                same(got, w)
    assert ember.nonzero(ember.tensor(3)).shape == (1, 0)
    assert ember.nonzero(ember.zeros(0, 3)).shape == (0, 2)
    same(ember.where(ember.tensor([0, 1, 1]))[0], [1, 2])


# ---- joining and splitting ----

@pytest.mark.parametrize("dtype", SOME, ids=str)
def test_cat_stack_parity(dtype):
    for (_, t, a), (_, u, b) in zip(layouts((3, 4), dtype), layouts((3, 4), dtype, seed=1)):
        same(ember.cat([t, u], 0), np.concatenate([a, b], 0))
        same(ember.cat((t, u, t), dim=-1), np.concatenate([a, b, a], -1))
        same(ember.stack([t, u], 1), np.stack([a, b], 1))
        same(ember.hstack([t, u]), np.hstack([a, b]))
        same(ember.vstack([t, u]), np.vstack([a, b]))
    same(ember.hstack([ember.tensor([1, 2]), ember.tensor(3)]), [1, 2, 3])
    same(ember.vstack([ember.tensor([1, 2]), ember.tensor([3, 4])]), [[1, 2], [3, 4]])


def test_cat_promotes_skips_empty_and_writes_out():
    r = ember.cat([ember.tensor([1, 2], dtype=ember.int32), ember.tensor([0.5])])
    assert r.dtype == ember.float32
    same(r, [1, 2, 0.5])
    r = ember.cat([ember.zeros(2, 3), ember.tensor([]), ember.ones(1, 3)])
    assert r.shape == (3, 3)
    out = ember.empty(4, 2)
    assert ember.cat([ember.ones(2, 2), ember.zeros(2, 2)], out=out) is out
    same(out, [[1, 1], [1, 1], [0, 0], [0, 0]])
    assert ember.concat is ember.cat
    big = ember.cat([ember.ones(300, 300), ember.zeros(300, 300)], 1)
    assert float(big.sum()) == 90000.0


@pytest.mark.parametrize("n", [0, 1, 6, 7])
def test_split_chunk_tensor_split_unbind(n):
    a = np.arange(n * 3).reshape(n, 3)
    t = ember.tensor(a)
    for size in (1, 2, 4):
        got = ember.split(t, size)
        want = [a[i:i + size] for i in range(0, max(n, 1), size)] if n else [a]
        assert len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
    if n == 7:
        for g, w in zip(t.split([2, 5]), np.split(a, [2])):
            same(g, w)
    for chunks in (1, 2, 3, 5):
        for g, w in zip(ember.chunk(t, chunks), _chunk_ref(a, chunks)):
            same(g, w)
    for sections in (1, 3, 4):
        got = ember.tensor_split(t, sections)
        want = np.array_split(a, sections)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
    for g, w in zip(ember.tensor_split(t, [1, 5, 10], dim=0), np.split(a, [1, 5, 10])):
        same(g, w)
    for g, w in zip(ember.tensor_split(t, ember.tensor([1, 2]), 1), np.split(a, [1, 2], 1)):
        same(g, w)
    for g, w in zip(ember.unbind(t, 1), [a[:, k] for k in range(3)]):
        same(g, w)


def _chunk_ref(a, chunks):
    n = a.shape[0]
    size = -(-n // chunks) if n else 0
    return [a[i:i + size] for i in range(0, n, size)] if n else [a]


def test_split_chunk_unbind_are_views():
    t = ember.arange(24.0).reshape(4, 6)
    pieces = list(t.split(2)) + list(t.split([1, 5], dim=1)) + list(t.chunk(3, 1)) + list(t.unbind(1)) + list(t.tensor_split(3))
    assert all(p._same_storage(t) for p in pieces)
    t.unbind(0)[1][0] = 100.0
    assert t[1, 0].item() == 100.0


# ---- roll / repeat / tile / tril / meshgrid ----

@pytest.mark.parametrize("dtype", SOME, ids=str)
def test_roll_repeat_tile_parity(dtype):
    for name, t, a in layouts((3, 4), dtype):
        same(ember.roll(t, 1, 0), np.roll(a, 1, 0))
        same(ember.roll(t, (-1, 5), (0, 1)), np.roll(a, (-1, 5), (0, 1)))
        same(ember.roll(t, 5), np.roll(a, 5))
        same(t.repeat(2, 1, 3), np.tile(a, (2, 1, 3)))
        same(ember.tile(t, (2,)), np.tile(a, 2))
        same(ember.repeat_interleave(t, 2), np.repeat(a, 2))
        same(t.repeat_interleave(ember.tensor([1, 0, 2]), dim=0), np.repeat(a, [1, 0, 2], axis=0))
        same(ember.repeat_interleave(t, 3, dim=1), np.repeat(a, 3, axis=1))
    same(ember.repeat_interleave(ember.tensor([2, 0, 1])), [0, 0, 2])
    same(ember.tensor(7).repeat(2, 2), np.full((2, 2), 7))


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_tril_triu_parity(dtype):
    for shape in [(4, 6), (2, 3, 5), (5, 3)]:
        for name, t, a in layouts(shape, dtype):
            for k in (-2, 0, 1, 7):
                same(ember.tril(t, k), np.tril(a, k))
                same(t.triu(diagonal=k), np.triu(a, k))
            x = t.clone()
            assert x.tril_(1) is x
            same(x, np.tril(a, 1))


def test_meshgrid():
    a, b, c = ember.tensor([1, 2, 3]), ember.tensor([4.0, 5.0]), ember.tensor(9)
    for got, want in zip(ember.meshgrid(a, b, c, indexing="ij"), np.meshgrid(to_np(a), to_np(b), to_np(c), indexing="ij")):
        same(got, want)
    for got, want in zip(ember.meshgrid([a, b], indexing="xy"), np.meshgrid(to_np(a), to_np(b), indexing="xy")):
        same(got, want)
    assert ember.meshgrid(a, b)[0]._same_storage(a)


# ---- advanced indexing: fixed cases ----

def test_advanced_getitem_cases():
    a = np.arange(120).reshape(2, 3, 4, 5)
    t = ember.tensor(a)
    cases = [
        ([1, 0],),
        (slice(None), [0, 2]),
        (slice(None), [[0, 1], [2, 2]], [1, 3]),
        ([0, 1], slice(None), [1, 3]),  # separated: result dims go first
        (Ellipsis, [4, -1]),
        (None, [1], slice(1, 3), [0, 1]),
        (a[..., 0, 0] > 40,),
        (slice(None), a[0, :, :, 0] % 2 == 0),
        (slice(None), [True, False, True]),
        ([[0], [1]], slice(None, None, 2), None, [1, 2, 3]),
        (True,),
        (False,),
        (slice(1, None), [[-1]]),
    ]
    for key in cases:
        ek = tuple(ember.tensor(k) if isinstance(k, np.ndarray) else k for k in key)
        same(t[ek], a[key])
    same(t[[0, 1]], a[[0, 1]])
    same(t[ember.tensor([1, 0], dtype=ember.int32)], a[[1, 0]])
    same(t[ember.tensor(a[:, :, 0, 0] > 5)], a[a[:, :, 0, 0] > 5])
    same(t[ember.tensor(True)], a[np.True_])
    same(t[0, [1, 2], 3], a[0, [1, 2], 3])
    e = t[ember.tensor([], dtype=ember.int64)]
    assert e.shape == (0, 3, 4, 5)


def test_advanced_setitem_cases():
    a = np.zeros((3, 4))
    t = ember.zeros(3, 4)
    t[[0, 2], 1:3] = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    a[[0, 2], 1:3] = [[1, 2], [3, 4]]
    t[t > 2] = -1.0
    a[a > 2] = -1
    t[:, [3, 0]] = ember.tensor([7.0, 8.0, 9.0]).reshape(3, 1)
    a[:, [3, 0]] = np.array([7.0, 8.0, 9.0]).reshape(3, 1)
    t[[1], [1]] = 5
    a[[1], [1]] = 5
    t[ember.tensor([True, False, True])] = [1.0, 2.0, 3.0, 4.0]
    a[[True, False, True]] = [1, 2, 3, 4]
    same(t, a)
    x = ember.zeros(4, dtype=ember.int32)
    x[ember.tensor([0, 0, 1])] = ember.tensor([2.7, 2.7, 3.2])
    same(x, [2, 3, 0, 0])


# ---- advanced indexing: property tests against NumPy ----

@st.composite
def index_case(draw):
    ndim = draw(st.integers(1, 4))
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    key, dim = [], 0
    # No 0-d index arrays: PyTorch applies those as ints before the advanced indices.
    bshape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=2)))
    while dim < ndim and len(key) < 5:
        kind = draw(st.sampled_from(["slice", "int_array", "mask", "none", "full"]))
        size = shape[dim]
        if kind == "int_array" and size == 0:
            kind = "full"
        if kind == "slice":
            start = draw(st.integers(-5, 5) | st.none())
            stop = draw(st.integers(-5, 5) | st.none())
            step = draw(st.integers(1, 3))
            key.append(slice(start, stop, step))
            dim += 1
        elif kind == "full":
            key.append(slice(None))
            dim += 1
        elif kind == "none":
            key.append(None)
        elif kind == "int_array":
            key.append(np.asarray(draw(st.lists(st.integers(-size, size - 1), min_size=int(np.prod(bshape)), max_size=int(np.prod(bshape))))).reshape(bshape).astype(np.int64))
            dim += 1
        elif kind == "mask":
            k = draw(st.integers(1, min(2, ndim - dim)))
            m = np.asarray(draw(st.lists(st.booleans(), min_size=int(np.prod(shape[dim:dim + k])), max_size=int(np.prod(shape[dim:dim + k]))))).reshape(shape[dim:dim + k])
            key.append(m)
            dim += k
    if draw(st.booleans()) and dim < ndim:
        key.insert(draw(st.integers(0, len(key))), Ellipsis)
    return shape, tuple(key), draw(st.sampled_from(["contiguous", "transposed", "flipped"]))


def _make(shape, layout):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    t = ember.tensor(a)
    if layout == "transposed" and len(shape) >= 2:
        t = ember.tensor(np.ascontiguousarray(a.swapaxes(0, 1))).transpose(0, 1)
    elif layout == "flipped":
        t = ember.tensor(np.ascontiguousarray(a[::-1])).flip(0)
    return a, t


def _ember_key(key):
    return tuple(ember.tensor(k) if isinstance(k, np.ndarray) else k for k in key)


def _n_advanced(key):
    return sum(1 for k in key if isinstance(k, np.ndarray))


def _numpy_get(a, key):
    """`a[key]`. An out-of-bounds index into an empty result is not checked (NumPy warns that it
    will be; PyTorch checks no index when no element is read, nor does Ember)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return a[key]


@settings(max_examples=300, deadline=None)
@given(index_case())
def test_advanced_getitem_matches_numpy(case):
    shape, key, layout = case
    a, t = _make(shape, layout)
    try:
        want = _numpy_get(a, key)
    except IndexError:
        with pytest.raises(IndexError):
            t[_ember_key(key)]
        return
    got = t[_ember_key(key)]
    assert tuple(got.shape) == want.shape
    same(got, want)


@settings(max_examples=300, deadline=None)
@given(index_case(), st.booleans())
def test_advanced_setitem_matches_numpy(case, scalar):
    shape, key, layout = case
    a, t = _make(shape, layout)
    try:
        target = _numpy_get(a, key)
    except IndexError:
        with pytest.raises(IndexError):
            t[_ember_key(key)] = -1.0
        return
    if _n_advanced(key) == 0:
        return
    # Unique writes only (a duplicate index takes any of its values, as in PyTorch).
    flat = np.arange(a.size).reshape(a.shape)[key].reshape(-1)
    if not scalar and len(np.unique(flat)) != flat.size:
        return
    value = -1.0 if scalar else -np.arange(1, target.size + 1, dtype=np.float64).reshape(target.shape)
    a[key] = value
    t[_ember_key(key)] = value if scalar else ember.tensor(value)
    same(t, a)


# ---- bad inputs ----

def test_index_errors():
    t = ember.zeros(3, 4)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        t[[5]]
    with pytest.raises(IndexError, match="index -5 is out of bounds for dimension 1 with size 4"):
        t[:, [-5]]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool tensors"):
        t[ember.tensor([0.0])]
    with pytest.raises(IndexError, match=r"The shape of the mask \[2\] at index 0 does not match the shape of the indexed tensor \[3, 4\]"):
        t[ember.tensor([True, False])]
    with pytest.raises(IndexError, match="shape mismatch: indexing tensors could not be broadcast together"):
        t[[0, 1], [0, 1, 2]]
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3\] cannot be broadcast to indexing result of shape \[2, 4\]"):
        t[[0, 1]] = ember.ones(3)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        t[[3]] = 1.0


def test_gather_scatter_errors():
    t = ember.zeros(3, 4)
    with pytest.raises(RuntimeError, match="Expected dtype int64 for index"):
        ember.gather(t, 1, ember.tensor([[0]], dtype=ember.int32))
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 1 with size 4"):
        ember.gather(t, 1, idx([[4]]))
    with pytest.raises(IndexError, match="index -1 is out of bounds"):
        ember.gather(t, 1, idx([[-1]]))
    with pytest.raises(RuntimeError, match="Size does not match at dimension 0"):
        ember.gather(t, 1, idx([[0]] * 5))
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of dimensions"):
        ember.gather(t, 1, idx([0]))
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0 with size 3"):
        t.scatter_(0, idx([[7]]), 1.0)
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        t.scatter_(0, idx([[0]]), ember.ones(1, 1, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="reduce argument must be"):
        ember.scatter_reduce(t, 0, idx([[0]]), ember.ones(1, 1), "max")
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.gather(t, 2, idx([[0]]))


def test_index_family_errors():
    t = ember.zeros(3, 4)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        ember.index_select(t, 0, idx([3]))
    with pytest.raises(IndexError, match="Expected dtype int32 or int64 for index"):
        ember.index_select(t, 0, ember.tensor([0.0]))
    with pytest.raises(IndexError, match=r"Number of indices \(2\) should be equal to source.size\(dim\) \(1\)"):
        ember.index_add(t, 0, idx([0, 1]), ember.ones(1, 4))
    with pytest.raises(RuntimeError, match="must have the same scalar type"):
        ember.index_copy(t, 0, idx([0]), ember.ones(1, 4, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="only supports boolean masks"):
        ember.masked_fill(t, ember.ones(3, 4, dtype=ember.int64), 1.0)
    with pytest.raises(RuntimeError, match="0-dimensional value tensor"):
        ember.masked_fill(t, t > 0, ember.ones(2))
    with pytest.raises(RuntimeError, match="expected source to have at least 12 elements, but got 2"):
        ember.masked_scatter(t, t == 0, ember.ones(2))
    with pytest.raises(IndexError, match="index 12 is out of bounds"):
        ember.take(t, idx([12]))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        ember.tril(ember.ones(3))


def test_join_errors():
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0. Expected size 4 but got size 5 for tensor number 1"):
        ember.cat([ember.zeros(2, 4), ember.zeros(2, 5)])
    with pytest.raises(RuntimeError, match="expected a non-empty list of Tensors"):
        ember.cat([])
    with pytest.raises(TypeError, match="must be tuple of Tensors"):
        ember.cat(ember.zeros(2))
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got \[2\] at entry 0 and \[3\] at entry 1"):
        ember.stack([ember.zeros(2), ember.zeros(3)])
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly to 4"):
        ember.split(ember.zeros(4), [1, 2])
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0"):
        ember.chunk(ember.zeros(4), 0)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        ember.roll(ember.zeros(4), (1, 2), 0)
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims can not be smaller"):
        ember.zeros(2, 2).repeat(2)
    with pytest.raises(RuntimeError, match="repeats must have the same size as input along dim"):
        ember.repeat_interleave(ember.zeros(3), ember.tensor([1, 2]))
    with pytest.raises(ValueError, match="indexing must be one of"):
        ember.meshgrid(ember.zeros(2), indexing="ab")
