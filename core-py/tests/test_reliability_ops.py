"""Issue 28 (ops): wrong results, refused inputs and panics found by the differential fuzzing.
Each test names the PyTorch behaviour it pins."""
import math
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F

OVERLAP_INTERNAL = "more than one element of the written-to tensor refers to a single memory location"
OVERLAP_PARTIAL = "some elements of the input tensor and the written-to tensor refer to a single memory location"


# ---- max/min along a dim: values in the output's order ----

@pytest.mark.parametrize("fn", ["max", "min"])
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("view", ["contiguous", "transposed", "stepped"])
def test_max_min_dim_values_match_amax(fn, dim, view):
    a = np.random.default_rng(0).standard_normal((4, 6, 5)).astype(np.float32)
    x = ember.tensor(a)
    if view == "transposed":
        x, a = x.permute(2, 0, 1), a.transpose(2, 0, 1)
    elif view == "stepped":
        x, a = x[:, ::2, 1:], a[:, ::2, 1:]
    r = getattr(x, fn)(dim)
    ref = a.max(dim) if fn == "max" else a.min(dim)
    arg = a.argmax(dim) if fn == "max" else a.argmin(dim)
    np.testing.assert_array_equal(r.values.numpy(), ref)
    np.testing.assert_array_equal(r.indices.numpy(), arg)


def test_max_dim_of_arange_view():
    x = ember.arange(24.).view(2, 3, 4)
    assert x.max(0).values.tolist() == (x.amax(0)).tolist() == np.arange(12, 24.).reshape(3, 4).tolist()
    assert x.min(0).values.tolist() == np.arange(12.).reshape(3, 4).tolist()
    assert x.max(1, keepdim=True).values.shape == (2, 1, 4)


# ---- overlapping in-place writes ----

def test_write_into_expanded_tensor_is_refused():
    with pytest.raises(RuntimeError, match=OVERLAP_INTERNAL):
        ember.zeros(1).expand(3).add_(1)
    with pytest.raises(RuntimeError, match=OVERLAP_INTERNAL):
        ember.zeros(1).expand(3).copy_(ember.ones(3))
    with pytest.raises(RuntimeError, match=OVERLAP_INTERNAL):
        ember.exp(ember.ones(3), out=ember.zeros(1).expand(3))


def test_fill_of_expanded_tensor_is_allowed():
    # PyTorch's fill_ skips the check: every element gets the same value.
    z = ember.zeros(1)
    z.expand(3).fill_(2.0)
    assert z.tolist() == [2.0]


def test_partial_overlap_is_refused():
    z = ember.arange(5.)
    with pytest.raises(RuntimeError, match=OVERLAP_PARTIAL):
        z[1:].copy_(z[:-1])
    with pytest.raises(RuntimeError, match=OVERLAP_PARTIAL):
        z[1:].add_(z[:-1])
    with pytest.raises(RuntimeError, match=OVERLAP_PARTIAL):
        ember.add(z[:-1], 1, out=z[1:])
    assert z.tolist() == [0, 1, 2, 3, 4]


def test_full_overlap_is_fine():
    x = ember.arange(4.)
    x.add_(x)
    assert x.tolist() == [0, 2, 4, 6]
    x.mul_(x[:])
    assert x.tolist() == [0, 4, 16, 36]


def test_flipped_input_is_read_through_a_copy():
    # PyTorch's flip returns a fresh tensor; Ember's is a view, so the write must not see itself.
    x = ember.arange(5.)
    x.copy_(x.flip(0))
    assert x.tolist() == [4, 3, 2, 1, 0]
    x = ember.arange(5.)
    x.add_(x.flip(0))
    assert x.tolist() == [4] * 5
    m = ember.arange(6.).view(2, 3)
    m.copy_(m.flip((0, 1)))
    assert m.tolist() == [[5, 4, 3], [2, 1, 0]]
    y = ember.arange(4.)
    ember.neg(y.flip(0), out=y)
    assert y.tolist() == [-3, -2, -1, 0]
    w = ember.arange(4.)
    w.flip(0).copy_(w)
    assert w.tolist() == [3, 2, 1, 0]


def test_strided_overlap_is_read_through_a_copy():
    x = ember.arange(8.)
    x[::2].copy_(x[:4])
    assert x.tolist() == [0, 1, 1, 3, 2, 5, 3, 7]
    y = ember.arange(8.)
    y[::2].add_(y[:4])
    assert y.tolist() == [0, 1, 3, 3, 6, 5, 9, 7]


def test_index_ops_refuse_overlapping_sources():
    x = ember.arange(5.)
    with pytest.raises(RuntimeError, match=OVERLAP_PARTIAL):
        x.index_copy_(0, ember.tensor([0, 1]), x[2:4])
    with pytest.raises(RuntimeError, match=OVERLAP_PARTIAL):
        x.scatter_(0, ember.tensor([0, 1]), x[2:4])
    with pytest.raises(RuntimeError, match=OVERLAP_PARTIAL):
        x[ember.tensor([0, 1])] = x[3:]
    x.index_copy_(0, ember.tensor([0, 1]), x.flip(0)[:2])
    assert x.tolist() == [4, 3, 2, 3, 4]


# ---- det of singular matrices ----

def test_det_of_singular_matrices_is_zero():
    assert ember.linalg.det(ember.zeros(3, 3)).item() == 0.0
    assert ember.linalg.det(ember.tensor([[1., 2.], [2., 4.]])).item() == 0.0
    a = ember.tensor([[[0., 0.], [0., 0.]], [[1., 2.], [3., 4.]], [[0., 1.], [0., 1.]]], dtype=ember.float64)
    np.testing.assert_allclose(ember.linalg.det(a).numpy(), [0.0, -2.0, 0.0], atol=1e-12)
    sign, logabs = ember.linalg.slogdet(a)
    assert sign.tolist() == [0.0, -1.0, 0.0]
    assert logabs[0].item() == -math.inf and logabs[2].item() == -math.inf
    z = ember.zeros(2, 2, dtype=ember.complex64)
    assert ember.linalg.det(z).item() == 0


def test_lu_factor_of_singular_matrix_is_finite():
    lu, piv, info = ember.linalg.lu_factor_ex(ember.tensor([[0., 1.], [0., 2.]]))
    assert lu.tolist() == [[0., 1.], [0., 2.]] and info.item() == 1
    lu, piv, info = ember.linalg.lu_factor_ex(ember.tensor([[0., 0., 1.], [0., 2., 1.], [0., 4., 2.]]))
    assert not ember.isnan(lu).any().item() and info.item() == 1


# ---- out= ----

def test_creation_functions_write_out():
    out = ember.empty(5)
    r = ember.arange(5, out=out)
    assert r is out and out.tolist() == [0, 1, 2, 3, 4] and out.dtype == ember.float32
    out = ember.empty(0)
    ember.linspace(0, 1, 3, out=out)
    assert out.tolist() == [0, 0.5, 1]
    out = ember.empty(3, dtype=ember.float64)
    ember.logspace(0, 2, 3, out=out)
    assert out.tolist() == [1, 10, 100] and out.dtype == ember.float64
    out = ember.empty(0)
    ember.eye(2, out=out)
    assert out.tolist() == [[1, 0], [0, 1]]
    out = ember.empty(0)
    ember.full((2,), 7.0, out=out)
    assert out.tolist() == [7, 7]
    out = ember.empty(0)
    ember.zeros(2, 2, out=out)
    assert out.shape == (2, 2) and out.tolist() == [[0, 0], [0, 0]]


def test_matmul_out_is_resized_with_a_warning():
    a, b = ember.ones(2, 3), ember.ones(3, 4)
    out = ember.empty(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = ember.mm(a, b, out=out)
    assert r is out and out.shape == (2, 4) and out.tolist() == [[3.0] * 4] * 2
    out = ember.zeros(1)
    with pytest.warns(UserWarning, match="was resized"):
        ember.matmul(a, b, out=out)
    assert out.shape == (2, 4)
    out = ember.zeros(2, 4)
    keep = out
    ember.bmm(a[None], b[None], out=ember.empty(1, 2, 4))
    ember.mm(a, b, out=out)
    assert out is keep and out.tolist() == [[3.0] * 4] * 2


# ---- reductions with dtype= ----

def test_sum_prod_with_integer_dtype_wrap():
    t = ember.tensor([200, 100])
    r = t.sum(dtype=ember.uint8)
    assert r.dtype == ember.uint8 and r.item() == 44
    assert ember.tensor([20, 20]).prod(dtype=ember.uint8).item() == 400 % 256
    assert ember.tensor([[200, 100]]).sum(1, dtype=ember.uint8).tolist() == [44]
    assert ember.tensor([1, 2]).sum(dtype=ember.int32).dtype == ember.int32
    assert ember.tensor([1.5, 2.5]).sum(dtype=ember.float64).dtype == ember.float64
    assert ember.tensor([200, 100]).cumsum(0, dtype=ember.uint8).tolist() == [200, 44]


# ---- clamp with NaN bounds ----

def test_clamp_propagates_nan_bounds():
    x = ember.tensor([-1.0, 0.5, 2.0])
    assert all(math.isnan(v) for v in x.clamp(min=math.nan).tolist())
    assert all(math.isnan(v) for v in x.clamp(max=math.nan).tolist())
    assert all(math.isnan(v) for v in ember.tensor([1, 2]).clamp(min=math.nan).tolist())
    r = x.clamp(min=ember.tensor([math.nan, 0.0, 0.0]), max=ember.tensor([1.0, math.nan, 1.0]))
    assert math.isnan(r[0].item()) and math.isnan(r[1].item()) and r[2].item() == 1.0
    assert math.isnan(x.clamp(min=ember.tensor(math.nan))[0].item())


# ---- integer division ----

@pytest.mark.parametrize("op", [
    lambda a, b: ember.div(a, b, rounding_mode="trunc"),
    lambda a, b: ember.div(a, b, rounding_mode="floor"),
    lambda a, b: a // b,
    lambda a, b: a % b,
    lambda a, b: ember.remainder(a, b),
    lambda a, b: ember.fmod(a, b),
])
def test_integer_division_by_zero_raises(op):
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        op(ember.tensor([1, 2]), ember.tensor([1, 0]))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        op(ember.tensor([1, 2], dtype=ember.int32), 0)


def test_integer_division_wraps_at_the_minimum():
    lo = -2 ** 63
    t = ember.tensor([lo])
    assert (t // -1).item() == lo
    assert ember.div(t, -1, rounding_mode="trunc").item() == lo
    assert (t % -1).item() == 0 and ember.fmod(t, -1).item() == 0
    assert (ember.tensor([-128], dtype=ember.int8) // -1).item() == -128


def test_trunc_division_is_exact_for_large_integers():
    big = 2 ** 40 + 1
    assert ember.div(ember.tensor([big, -7]), ember.tensor([1, 2]), rounding_mode="trunc").tolist() == [big, -3]
    assert ember.div(ember.tensor([-7.0]), 2, rounding_mode="trunc").tolist() == [-3.0]


# ---- panics turned into exceptions ----

def test_zero_dim_dim_ops():
    s = ember.ones(())
    assert s.flip(0).item() == 1.0 and s.flip(0).shape == ()
    with pytest.raises(IndexError, match="select\\(\\) cannot be applied to a 0-dim tensor"):
        s.select(0, 0)
    with pytest.raises(RuntimeError, match="narrow\\(\\) cannot be applied to a 0-dim tensor"):
        s.narrow(0, 0, 1)
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        ember.roll(s, 1, 0)
    assert ember.roll(s, 1).item() == 1.0
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        s.unbind(0)
    with pytest.raises(RuntimeError, match="1-dimensional"):
        s.split(1, 0)
    with pytest.raises(RuntimeError, match="1-dimensional"):
        s.chunk(1, 0)
    assert s.transpose(0, -1).shape == () and ember.movedim(s, 0, 0).shape == ()


def test_randperm_too_large_raises_and_rng_survives():
    with pytest.raises(RuntimeError):
        ember.randperm(2 ** 62)
    assert ember.rand(3).shape == (3,)
    assert sorted(ember.randperm(5).tolist()) == [0, 1, 2, 3, 4]


def test_multinomial_without_replacement_needs_enough_categories():
    with pytest.raises(RuntimeError, match="not enough non-negative category to sample"):
        ember.multinomial(ember.tensor([1.0, 0.0]), 2, replacement=False)
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size\\(-1\\)"):
        ember.multinomial(ember.tensor([1.0, 0.0]), 3, replacement=False)
    assert sorted(ember.multinomial(ember.tensor([1.0, 2.0]), 2).tolist()) == [0, 1]
    assert ember.rand(2).shape == (2,)


def test_pad_with_huge_width_raises():
    x = ember.ones(1, 1, 3)
    with pytest.raises(RuntimeError):
        F.pad(x, (2 ** 62, 2 ** 62), mode="replicate")
    with pytest.raises(RuntimeError):
        F.pad(x, (2 ** 62, 0), mode="replicate")
    assert F.pad(x, (1, 1), mode="replicate").shape == (1, 1, 5)


# ---- accepted where PyTorch refuses ----

def test_index_add_and_copy_refuse_negative_indices():
    x = ember.zeros(3)
    with pytest.raises(IndexError):
        x.index_add_(0, ember.tensor([-1]), ember.ones(1))
    with pytest.raises(IndexError):
        x.index_copy_(0, ember.tensor([-1]), ember.ones(1))
    x.index_fill_(0, ember.tensor([-1]), 2.0)  # index_fill_ wraps, as PyTorch's
    assert x.tolist() == [0, 0, 2]


def test_int8_index_tensors_are_refused():
    a = ember.arange(5)
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool tensors"):
        a[ember.tensor([0, 1], dtype=ember.int8)]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool tensors"):
        a[ember.tensor([0, 1], dtype=ember.int16)] = 3
    assert a[ember.tensor([0, 1], dtype=ember.int32)].tolist() == [0, 1]
    assert a[ember.tensor([True, False, True, False, False])].tolist() == [0, 2]


def test_writing_an_unrepresentable_scalar_raises():
    a = ember.zeros(3)
    with pytest.raises(RuntimeError, match="value cannot be converted to type float without overflow"):
        a[0] = 1 + 2j
    with pytest.raises(RuntimeError, match="without overflow"):
        a.fill_(1e300)
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.zeros(2, dtype=ember.uint8).fill_(300)
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.zeros(2, dtype=ember.int64)[0] = math.inf
    a[0] = 1 + 0j
    a[1] = math.inf
    a[2] = -2.0 ** 100
    assert a.tolist() == [1.0, math.inf, -2.0 ** 100]
    b = ember.zeros(2, dtype=ember.int32)
    b[0] = 2.7
    assert b.tolist() == [2, 0]


@pytest.mark.parametrize("fn, shape", [(F.dropout, (2, 3)), (F.alpha_dropout, (2, 3)), (F.dropout1d, (2, 3, 4)), (F.dropout2d, (2, 3, 4, 5))])
def test_dropout_refuses_nan_probability(fn, shape):
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got nan"):
        fn(ember.ones(*shape), p=math.nan, training=True)


def test_dropout_module_refuses_nan_probability():
    with pytest.raises(ValueError, match="but got nan"):
        ember.nn.Dropout(math.nan)


def test_unique_dim_orders_slices_as_moveaxis():
    # Slices compare in the order of the other dims (NumPy's and PyTorch's moveaxis), not with
    # the first dim swapped into the moved dim's place.
    a = np.array([[[1, 0], [0, 1]], [[0, 1], [1, 0]]])
    for dim in range(3):
        np.testing.assert_array_equal(ember.unique(ember.tensor(a), dim=dim).numpy(), np.unique(a, axis=dim))
    b = np.random.default_rng(1).integers(0, 2, (3, 2, 4, 2))
    np.testing.assert_array_equal(ember.unique(ember.tensor(b), dim=2).numpy(), np.unique(b, axis=2))


def test_zero_dim_searchsorted_and_var():
    s = ember.tensor(2.5)
    with pytest.raises(RuntimeError, match="boundaries tensor should be 1 dimension"):
        ember.searchsorted(s, s)
    assert math.isnan(s.var(0).item()) and s.var(0, correction=0).item() == 0.0


def test_narrow_and_flip_check_their_arguments():
    v = ember.arange(5.)
    with pytest.raises(IndexError):
        v.narrow(0, 2 ** 62, 2 ** 62)  # start + length overflowed to a negative end
    assert v[0:5:2 ** 63 - 1].tolist() == [0.0]
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times"):
        ember.arange(4.).view(2, 2).flip((0, 0))


def test_full_checks_its_value_like_fill():
    with pytest.raises(RuntimeError, match="value cannot be converted to type float without overflow"):
        ember.full((2,), 1 + 2j, dtype=ember.float32)
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.full((2,), 300, dtype=ember.uint8)
    assert math.isnan(ember.full((1,), math.nan, dtype=ember.complex64)[0].real.item())
