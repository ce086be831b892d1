import itertools
from collections import Counter

import numpy as np
import pytest

import ember
from tensor_helpers import ALL, FLOATS, INTS, assert_close, layouts, to_np

NAN = float("nan")
SORTABLE = ALL


def ref_order(a, axis, descending):
    """Stable sort order of `a` along `axis` with NaN as the largest value (PyTorch's order)."""
    moved = np.moveaxis(np.asarray(a, dtype=np.float64), axis, -1)
    out = np.empty(moved.shape, dtype=np.int64)
    for idx in np.ndindex(moved.shape[:-1]):
        row = moved[idx]
        if descending:
            key = lambda i: (0 if np.isnan(row[i]) else 1, -row[i] if not np.isnan(row[i]) else 0)  # noqa: E731
        else:
            key = lambda i: (1 if np.isnan(row[i]) else 0, row[i] if not np.isnan(row[i]) else 0)  # noqa: E731
        out[idx] = sorted(range(row.shape[0]), key=key)
    return np.moveaxis(out, -1, axis)


def same(got, want):
    np.testing.assert_array_equal(to_np(got), np.asarray(want))


@pytest.mark.parametrize("dtype", SORTABLE, ids=str)
def test_sort_matches_stable_numpy(dtype):
    for layout, t, a in layouts((5, 6), dtype):
        for dim in (0, 1, -1):
            for descending in (False, True):
                v, i = ember.sort(t, dim, descending)
                want = ref_order(a, dim, descending)
                assert i.dtype == ember.int64 and v.dtype == dtype, layout
                np.testing.assert_array_equal(to_np(i), want, err_msg=f"{layout} dim={dim} desc={descending}")
                same(v, np.take_along_axis(a, want, dim))
                same(ember.argsort(t, dim, descending), want)
        np.testing.assert_array_equal(to_np(ember.sort(t, stable=True).values), np.sort(a, -1, kind="stable"))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_sort_nan_is_largest(dtype):
    t = ember.tensor([[3.0, NAN, -1.0, float("inf"), NAN, 0.0]]).to(dtype)
    v, i = ember.sort(t)
    assert i.tolist() == [[2, 5, 0, 3, 1, 4]]
    assert np.isnan(to_np(v)[0, 4:]).all()
    v, i = t.sort(descending=True)
    assert i.tolist() == [[1, 4, 3, 0, 5, 2]]
    assert np.isnan(to_np(v)[0, :2]).all() and to_np(v)[0, 2] == np.inf


def test_sort_namedtuple_methods_msort_and_out():
    t = ember.tensor([[2, 1], [0, 3]])
    r = t.sort(0)
    assert type(r).__name__ == "sort" and r.values.tolist() == [[0, 1], [2, 3]] and r.indices.tolist() == [[1, 0], [0, 1]]
    assert ember.msort(t).tolist() == [[0, 1], [2, 3]] and t.msort().tolist() == [[0, 1], [2, 3]]
    v, i = ember.empty(2, 2, dtype=ember.int64), ember.empty(2, 2, dtype=ember.int64)
    r = ember.sort(t, 1, out=(v, i))
    assert r.values is v and v.tolist() == [[1, 2], [0, 3]] and i.tolist() == [[1, 0], [0, 1]]
    v, i = ember.empty(3), ember.empty(0, dtype=ember.int64)
    with pytest.warns(UserWarning, match="was resized"):
        r = ember.sort(t, out=(v, i))
    assert r.values is v and v.shape == (2, 2) and i.tolist() == [[1, 0], [0, 1]]


def test_sort_zero_dim_empty_and_large():
    v, i = ember.sort(ember.tensor(5.0))
    assert v.shape == () and v.item() == 5.0 and i.item() == 0
    v, i = ember.sort(ember.zeros(0, 3), 0)
    assert v.shape == (0, 3) and i.shape == (0, 3)
    a = np.random.default_rng(0).standard_normal(200_003)
    v, i = ember.sort(ember.tensor(a))
    np.testing.assert_array_equal(v.numpy(), np.sort(a))
    np.testing.assert_array_equal(i.numpy(), np.argsort(a, kind="stable"))
    b = np.random.default_rng(1).integers(0, 50, (300, 700))
    np.testing.assert_array_equal(ember.argsort(ember.tensor(b), 0).numpy(), np.argsort(b, 0, kind="stable"))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.sort(ember.zeros(2, 3), 2)
    with pytest.raises(TypeError, match="must be Tensor"):
        ember.sort([3, 1])


@pytest.mark.parametrize("dtype", SORTABLE, ids=str)
def test_topk_is_the_stable_sort_prefix(dtype):
    for layout, t, a in layouts((4, 7), dtype):
        for dim, k in ((1, 3), (0, 2), (-1, 7), (1, 0)):
            for largest in (True, False):
                v, i = ember.topk(t, k, dim, largest)
                want = np.take(ref_order(a, dim, largest), range(k), axis=dim)
                np.testing.assert_array_equal(to_np(i), want, err_msg=f"{layout} {dim} {k} {largest}")
                same(v, np.take_along_axis(a, want, dim))
        v, i = t.topk(3, sorted=False)
        same(np.sort(to_np(v), 1), np.sort(np.take_along_axis(a, ref_order(a, 1, True)[:, :3], 1), 1))
        same(v, np.take_along_axis(a, to_np(i), 1))


def test_topk_errors_and_nan():
    t = ember.tensor([1.0, NAN, 3.0])
    v, i = ember.topk(t, 2)
    assert np.isnan(v[0].item()) and v[1].item() == 3.0 and i.tolist() == [1, 2]
    assert type(ember.topk(t, 1)).__name__ == "topk"
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        ember.topk(t, 4)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        ember.topk(t, -1)
    with pytest.raises(TypeError, match="argument 'k' must be int"):
        ember.topk(t, 1.5)
    assert ember.topk(ember.tensor(2.0), 1).values.shape == ()


@pytest.mark.parametrize("dtype", SORTABLE, ids=str)
def test_kthvalue_and_median(dtype):
    for layout, t, a in layouts((5, 6), dtype):
        for dim in (0, 1):
            n = a.shape[dim]
            srt = np.sort(a, dim, kind="stable")
            for k in (1, 3, n):
                v, i = ember.kthvalue(t, k, dim)
                same(v, np.take(srt, k - 1, dim))
                same(np.take_along_axis(a, np.expand_dims(to_np(i), dim), dim).squeeze(dim), np.take(srt, k - 1, dim))
            v, i = ember.median(t, dim, keepdim=True)
            assert v.shape == tuple(1 if d == dim else s for d, s in enumerate(a.shape))
            same(v.squeeze(dim), np.take(srt, (n - 1) // 2, dim))
            same(np.take_along_axis(a, to_np(i), dim), to_np(v))
        assert to_np(ember.median(t)).item() == np.sort(a.ravel())[(a.size - 1) // 2]
        assert ember.median(t).shape == ()


def test_median_nan_rules_and_nanmedian():
    t = ember.tensor([[1.0, NAN, 3.0, 2.0], [4.0, 1.0, 2.0, 8.0], [NAN, NAN, NAN, NAN]])
    v, i = ember.median(t, 1)
    assert np.isnan(v[0].item()) and i[0].item() == 1 and v[1].item() == 2.0 and i[1].item() == 2
    v, i = ember.nanmedian(t, 1)
    assert v[0].item() == 2.0 and i[0].item() == 3 and v[1].item() == 2.0 and np.isnan(v[2].item())
    assert np.isnan(ember.median(t).item())
    assert ember.nanmedian(t).item() == 2.0
    assert ember.median(ember.tensor([[5.0, 1.0]]), 1).values.tolist() == [1.0]  # the lower of two
    assert np.isnan(ember.median(ember.zeros(0)).item())
    with pytest.raises(IndexError, match="non-zero size"):
        ember.median(ember.zeros(2, 0), 1)
    with pytest.raises(RuntimeError, match="selected number k out of range"):
        ember.kthvalue(ember.zeros(3), 4)
    r = ember.kthvalue(ember.tensor([3, 1, 2]), 2)
    assert type(r).__name__ == "kthvalue" and r.values.item() == 2 and r.indices.item() == 2
    assert type(ember.median(t, 0)).__name__ == "median"


def ref_mode(row):
    counts = Counter(row.tolist())
    best = max(counts.values())
    value = min(v for v, c in counts.items() if c == best)
    return value, max(j for j, v in enumerate(row.tolist()) if v == value)


@pytest.mark.parametrize("dtype", INTS + [ember.bool, ember.float32, ember.float16], ids=str)
def test_mode(dtype):
    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, (6, 9))
    t = ember.tensor(a).to(dtype)
    a = to_np(t)
    for name, tt, aa in [("contiguous", t, a), ("transposed", t.t().contiguous().t(), a), ("flipped", t.flip(1), a[:, ::-1])]:
        v, i = ember.mode(tt, 1)
        want = [ref_mode(row) for row in aa]
        assert to_np(v).tolist() == [w[0] for w in want], name
        assert i.tolist() == [w[1] for w in want], name
    v, i = t.mode(0, keepdim=True)
    assert v.shape == (1, 9) and type(ember.mode(t)).__name__ == "mode"


QUANTILE_METHODS = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=str)
@pytest.mark.parametrize("method", QUANTILE_METHODS)
def test_quantile_matches_numpy(dtype, method):
    q = [0.0, 0.1, 0.25, 0.5, 0.9, 1.0]
    for layout, t, a in layouts((5, 8), dtype):
        for dim in (None, 0, 1):
            for keepdim in (False, True):
                got = ember.quantile(t, ember.tensor(q, dtype=dtype), dim, keepdim, interpolation=method)
                want = np.quantile(a, q, axis=dim, keepdims=keepdim, method=method)
                assert got.shape == want.shape, (layout, dim, keepdim)
                assert_close(got, want, dtype)
                got = t.quantile(0.3, dim, keepdim, interpolation=method)
                assert_close(got, np.quantile(a, 0.3, axis=dim, keepdims=keepdim, method=method), dtype)


def test_quantile_nan_and_nanquantile():
    a = np.array([[1.0, np.nan, 3.0, 2.0], [4.0, 1.0, 2.0, 8.0], [np.nan] * 4])
    t = ember.tensor(a)
    got = ember.quantile(t, 0.5, 1)
    assert np.isnan(got[0].item()) and got[1].item() == 3.0 and np.isnan(got[2].item())
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        want = np.nanquantile(a, [0.2, 0.75], axis=1)
    assert_close(ember.nanquantile(t, ember.tensor([0.2, 0.75], dtype=ember.float64), 1), want, ember.float64)
    assert ember.nanquantile(t, 0.5).item() == np.nanquantile(a, 0.5)
    assert ember.quantile(ember.tensor(2.0), 0.5).item() == 2.0
    assert ember.quantile(t[1], ember.tensor(0.5, dtype=ember.float64)).shape == ()


def test_quantile_errors():
    t = ember.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"q values must be in the range \[0, 1\]"):
        ember.quantile(t, 1.5)
    with pytest.raises(RuntimeError, match="input tensor must be either float or double"):
        ember.quantile(ember.tensor([1, 2]), 0.5)
    with pytest.raises(RuntimeError, match="same dtype as the input"):
        ember.quantile(t, ember.tensor([0.5], dtype=ember.float64))
    with pytest.raises(RuntimeError, match="scalar or 1D"):
        ember.quantile(t, ember.tensor([[0.5]]))
    with pytest.raises(ValueError, match="interpolation must be one of"):
        ember.quantile(t, 0.5, interpolation="cubic")
    with pytest.raises(RuntimeError, match="non-empty"):
        ember.quantile(ember.zeros(0), 0.5)
    with pytest.raises(TypeError, match="argument 'q'"):
        ember.quantile(t, "half")
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.quantile(t, 0.5, dim=3)


@pytest.mark.parametrize("dtype", SORTABLE, ids=str)
def test_unique_matches_numpy(dtype):
    for layout, t, a in layouts((5, 6), dtype):
        values, inverse, counts = ember.unique(t, return_inverse=True, return_counts=True)
        wv, wi, wc = np.unique(a, return_inverse=True, return_counts=True)
        same(values, wv)
        assert inverse.shape == t.shape and counts.dtype == ember.int64
        same(inverse.reshape(-1), wi.reshape(-1))
        same(counts, wc)
        same(ember.unique(t), wv)
        same(t.unique(sorted=False), wv)
        for dim in (0, 1):
            values, inverse, counts = ember.unique(t, dim=dim, return_inverse=True, return_counts=True)
            wv, wi, wc = np.unique(a, axis=dim, return_inverse=True, return_counts=True)
            same(values, wv)
            same(inverse, wi.reshape(-1))
            same(counts, wc)


def test_unique_slices_with_repeats_and_nan():
    a = np.array([[1, 2], [0, 5], [1, 2], [0, 5], [0, 4]])
    v, i, c = ember.unique(ember.tensor(a), dim=0, return_inverse=True, return_counts=True)
    assert v.tolist() == [[0, 4], [0, 5], [1, 2]] and i.tolist() == [2, 1, 2, 1, 0] and c.tolist() == [1, 2, 2]
    v, i = ember.unique(ember.tensor(a).t(), dim=1, return_inverse=True)
    assert v.tolist() == [[0, 0, 1], [4, 5, 2]] and i.tolist() == [2, 1, 2, 1, 0]
    v = ember.unique(ember.tensor([NAN, 1.0, NAN]))
    assert v[0].item() == 1.0 and np.isnan(to_np(v)[1:]).all() and v.shape == (3,)  # NaNs stay distinct
    assert ember.unique(ember.zeros(0)).shape == (0,)
    v, c = ember.unique(ember.tensor(7), return_counts=True)
    assert v.tolist() == [7] and c.tolist() == [1]
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.unique(ember.zeros(2, 2), dim=2)


def ref_unique_consecutive(items):
    groups = [(k, len(list(g))) for k, g in itertools.groupby(items)]
    inverse = [n for n, (_, c) in enumerate(groups) for _ in range(c)]
    return [k for k, _ in groups], inverse, [c for _, c in groups]


@pytest.mark.parametrize("dtype", SORTABLE, ids=str)
def test_unique_consecutive(dtype):
    rng = np.random.default_rng(3)
    a = np.repeat(rng.integers(0, 3, 8), rng.integers(1, 4, 8))
    t = ember.tensor(a).to(dtype)
    a = to_np(t)
    for name, tt, aa in [("contiguous", t, a), ("flipped", t.flip(0), a[::-1]), ("strided", t[::2], a[::2])]:
        v, i, c = ember.unique_consecutive(tt, return_inverse=True, return_counts=True)
        wv, wi, wc = ref_unique_consecutive(aa.tolist())
        assert to_np(v).tolist() == wv and i.tolist() == wi and c.tolist() == wc, name
    m = ember.tensor([[1, 1, 2, 1], [3, 3, 4, 3]])
    v, i, c = m.unique_consecutive(return_inverse=True, return_counts=True, dim=1)
    assert v.tolist() == [[1, 2, 1], [3, 4, 3]] and i.tolist() == [0, 0, 1, 2] and c.tolist() == [2, 1, 1]


@pytest.mark.parametrize("dtype", INTS + FLOATS, ids=str)
def test_searchsorted_and_bucketize_match_numpy(dtype):
    rng = np.random.default_rng(0)
    seq = np.sort(rng.integers(0, 20, 12)).astype(np.float64)
    seq_t = ember.tensor(seq).to(dtype)
    seq = to_np(seq_t)
    for layout, t, a in layouts((4, 5), dtype, 0, 20):
        for side in ("left", "right"):
            got = ember.searchsorted(seq_t, t, side=side)
            assert got.dtype == ember.int64 and got.shape == t.shape
            same(got, np.searchsorted(seq, a, side=side))
            same(ember.searchsorted(seq_t, t, right=side == "right", out_int32=True), np.searchsorted(seq, a, side=side))
            same(ember.bucketize(t, seq_t, right=side == "right"), np.searchsorted(seq, a, side=side))
    assert ember.bucketize(t, seq_t, out_int32=True).dtype == ember.int32


def test_searchsorted_nd_sorter_scalars_and_nan():
    rng = np.random.default_rng(1)
    seq = np.sort(rng.standard_normal((3, 6)), 1)
    vals = rng.standard_normal((3, 4))
    got = ember.searchsorted(ember.tensor(seq), ember.tensor(vals).t().contiguous().t(), right=True)
    same(got, np.stack([np.searchsorted(seq[r], vals[r], side="right") for r in range(3)]))
    unsorted = np.array([5.0, 1.0, 3.0, 9.0])
    sorter = np.argsort(unsorted)
    same(ember.searchsorted(ember.tensor(unsorted), ember.tensor([0.0, 3.0, 4.0, 10.0]), sorter=ember.tensor(sorter)),
         np.searchsorted(unsorted, [0.0, 3.0, 4.0, 10.0], sorter=sorter))
    s = ember.searchsorted(ember.tensor([1, 3, 5]), 3)
    assert s.shape == () and s.item() == 1
    assert ember.searchsorted(ember.tensor([1.0, 2.0, NAN]), ember.tensor([NAN, 5.0])).tolist() == [2, 2]
    assert ember.bucketize(4, ember.tensor([1, 3, 5])).item() == 2
    assert ember.searchsorted(ember.zeros(0), ember.tensor([1.0])).tolist() == [0]


def test_searchsorted_errors():
    seq = ember.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="boundaries tensor should be 1 dimension"):
        ember.searchsorted(ember.zeros(2, 3), ember.zeros(3, 1))
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        ember.searchsorted(seq, seq, right=True, side="left")
    with pytest.raises(RuntimeError, match="side can only be 'left' or 'right'"):
        ember.searchsorted(seq, seq, side="middle")
    with pytest.raises(RuntimeError, match="sorter must be a tensor of long dtype"):
        ember.searchsorted(seq, seq, sorter=ember.tensor([0, 1, 2], dtype=ember.int32))
    with pytest.raises(RuntimeError, match="boundary and sorter must have the same size"):
        ember.searchsorted(seq, seq, sorter=ember.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="sorter index out of range"):
        ember.searchsorted(seq, seq, sorter=ember.tensor([0, 1, 7]))
    with pytest.raises(RuntimeError, match="boundaries tensor must be 1 dimension"):
        ember.bucketize(seq, ember.zeros(2, 2))
    with pytest.raises(TypeError, match="must be Tensor or Number"):
        ember.searchsorted(seq, "x")


def test_return_types_repr_fields_and_pickle():
    import pickle

    x = ember.tensor([[3.0, 1.0], [2.0, 5.0]])
    result = ember.max(x, 1)
    assert type(result) is ember.return_types.max
    assert repr(result) == "ember.return_types.max(\nvalues=tensor([3., 5.]),\nindices=tensor([0, 1]))"
    values, indices = result
    assert values.tolist() == [3.0, 5.0] and result.indices.tolist() == [0, 1]
    again = pickle.loads(pickle.dumps(result))
    assert type(again) is ember.return_types.max and again.values.tolist() == [3.0, 5.0]
    mm = ember.aminmax(x)
    assert type(mm) is ember.return_types.aminmax and (mm.min.item(), mm.max.item()) == (1.0, 5.0)
    assert type(ember.nanmedian(x, 0)) is ember.return_types.nanmedian
    assert type(ember.sort(x)) is ember.return_types.sort
