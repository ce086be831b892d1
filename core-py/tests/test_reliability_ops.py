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


# ---- refusals PyTorch makes for integer inputs ----

@pytest.mark.parametrize("dtype,name", [(ember.int64, "Long"), (ember.bool, "Bool"), (ember.uint8, "Byte")])
def test_hypot_and_frac_refuse_integers(dtype, name):
    x = ember.ones(3, dtype=dtype)
    with pytest.raises(NotImplementedError, match=f"\"hypot_cpu\" not implemented for '{name}'"):
        ember.hypot(x, x)
    with pytest.raises(NotImplementedError, match=f"\"frac_cpu\" not implemented for '{name}'"):
        ember.frac(x)
    assert ember.hypot(ember.tensor([3.0]), ember.tensor([4])).tolist() == [5.0]


# ---- float to integer casts wrap as PyTorch's do (x86), they do not saturate ----

CAST_INPUT = [-1.5, -300.7, 3e10, -3e10, 3e20, math.nan, math.inf, -math.inf, 70000.5, -40000.2, 255.9, 256.0]
CAST_TORCH = {  # torch.tensor(CAST_INPUT).to(dtype).tolist(), PyTorch 2.15 on x86-64
    ember.uint8: [255, 212, 0, 0, 0, 0, 0, 0, 112, 192, 255, 0],
    ember.int8: [-1, -44, 0, 0, 0, 0, 0, 0, 112, -64, -1, 0],
    ember.int16: [-1, -300, 0, 0, 0, 0, 0, 0, 4464, 25536, 255, 256],
    ember.int32: [-1, -300] + [-2**31] * 6 + [70000, -40000, 255, 256],
    ember.int64: [-1, -300, 30000001024, -30000001024] + [-2**63] * 4 + [70000, -40000, 255, 256],
}


@pytest.mark.parametrize("dtype", list(CAST_TORCH))
@pytest.mark.parametrize("source", [ember.float32, ember.float64])
def test_float_to_integer_casts_match_pytorch(dtype, source):
    expected = list(CAST_TORCH[dtype])
    if source == ember.float64 and dtype == ember.int64:
        expected[2:4] = [30000000000, -30000000000]  # exact in float64
    assert ember.tensor(CAST_INPUT, dtype=source).to(dtype).tolist() == expected


def test_sum_with_an_integer_dtype_casts_first_as_pytorch():
    assert ember.tensor([-1.5, -300.7, 3e10]).sum(dtype=ember.uint8).item() == 211


# ---- std and var of complex tensors: the spread of both parts, a real result ----

@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_complex_var_and_std(dim):
    z = np.array([[1 + 2j, 3 - 1j, 2j], [0.5, -1 - 1j, 4 + 0.5j]], dtype=np.complex64)
    e = ember.from_numpy(z)
    axis = dim if dim is None or isinstance(dim, tuple) else dim
    for fn, ref in [("var", np.var), ("std", np.std)]:
        got = getattr(e, fn)(dim) if dim is not None else getattr(e, fn)()
        assert got.dtype == ember.float32
        np.testing.assert_allclose(got.numpy(), ref(z, axis=axis, ddof=1), rtol=1e-5)


def test_complex_var_with_no_degrees_of_freedom_is_inf_where_either_part_spreads():
    # PyTorch divides the parts' summed squared deviations by zero: inf, unless both parts are flat
    z = ember.tensor([complex(-4.5, -6.0), complex(-5.25, -6.0), complex(1.0, 2.0), complex(1.0, 2.0)])
    assert z.reshape(2, 2).var(dim=1, correction=2).tolist()[0] == math.inf
    assert math.isnan(z.reshape(2, 2).var(dim=1, correction=2).tolist()[1])
    assert z[:2].std(correction=3).item() == math.inf


# ---- elementwise out= of another shape is resized, as PyTorch's resize_output ----

def test_elementwise_out_of_another_shape_is_resized():
    out = ember.empty(0)
    assert ember.exp(ember.zeros(2, 2), out=out) is out and out.shape == (2, 2)
    out = ember.empty(0, dtype=ember.int64)
    ember.add(ember.ones(3, dtype=ember.int64), ember.ones(2, 1, dtype=ember.int64), out=out)
    assert out.tolist() == [[2, 2, 2], [2, 2, 2]]
    out = ember.empty(5)
    with pytest.warns(UserWarning, match="was resized since it had shape \\[5\\]"):
        ember.clamp(ember.arange(3.0), 0, 1, out=out)
    assert out.tolist() == [0.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        ember.ones(3).add_(ember.ones(2, 3))  # in-place never resizes


# ---- in-place writes to one output of a multi-view function are refused under autograd ----

@pytest.mark.parametrize("piece,name,k", [
    (lambda a: a.split(2)[0], "Split", 0),
    (lambda a: a.chunk(3)[2], "Split", 2),
    (lambda a: a.split([2, 4])[1], "SplitWithSizes", 1),
    (lambda a: a.view(2, 3).unbind(1)[2], "Unbind", 2),
    (lambda a: a.split(2)[1].view(2), "Split", 1),
])
def test_writing_one_output_of_a_multi_view_function_is_refused(piece, name, k):
    a = ember.ones(6, requires_grad=True).clone()
    with pytest.raises(RuntimeError, match=f"Output {k} of {name} is a view and is being modified inplace"):
        piece(a).mul_(2)


def test_multi_view_outputs_may_be_written_without_autograd():
    a = ember.ones(6, requires_grad=True).clone()
    a.tensor_split(3)[1].mul_(2)  # separate slices in PyTorch too
    with ember.no_grad():
        a.split(2)[0].mul_(3)
    b = ember.ones(4)
    b.split(2)[1].mul_(2)
    assert b.tolist() == [1, 1, 2, 2]
    assert a.detach().tolist() == [3, 3, 2, 2, 1, 1]


@pytest.mark.parametrize("p", [math.nan, -0.1, 1.5])
def test_attention_refuses_a_dropout_probability_outside_0_1(p):
    q = ember.ones(1, 2, 3)
    with pytest.raises(RuntimeError, match="dropout probability has to be between 0 and 1"):
        F.scaled_dot_product_attention(q, q, q, dropout_p=p)


def test_an_index_out_of_range_is_not_checked_when_nothing_is_read():
    x = ember.arange(4).reshape(1, 4)
    assert x[ember.tensor([3]), 3:-2].shape == (1, 0)  # PyTorch reads no element, checks no index
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 1"):
        x[ember.tensor([3]), 1:]


# ---- found by the long fuzz campaign ----

def test_fill_values_checked_as_pytorch():
    assert ember.full((2,), -2, dtype=ember.uint8).tolist() == [254, 254]  # a negative int wraps
    for bad in (300, -256, -2.5, 255.5):
        with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t without overflow"):
            ember.full((2,), bad, dtype=ember.uint8)
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t without overflow"):
        ember.full((2,), 127.5, dtype=ember.int8)


def test_amax_of_an_empty_tensor_along_a_non_empty_dim():
    x = ember.zeros(4, 0, dtype=ember.int32)
    assert x.amax(dim=0).shape == (0,) and x.amin(dim=0).shape == (0,)
    with pytest.raises(IndexError, match="amax\\(\\): Expected reduction dim 1 to have non-zero size"):
        x.amax(dim=1)
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        x.amax()


@pytest.mark.parametrize("fn", ["max", "min", "argmax", "argmin"])
def test_dim_reductions_of_a_0d_tensor_stay_0d_with_keepdim(fn):
    r = getattr(ember.tensor(-7.0), fn)(dim=0, keepdim=True)
    for t in (r if isinstance(r, tuple) else (r,)):
        assert t.shape == ()


@pytest.mark.parametrize("fn", ["sum", "mean", "logsumexp", "amax"])
@pytest.mark.parametrize("shape,dims", [((), (0, 0)), ((2, 3), (1, -1))])
def test_a_dim_named_twice_is_refused(fn, shape, dims):
    with pytest.raises(RuntimeError, match="appears multiple times in the list of dims"):
        getattr(ember.ones(shape), fn)(dim=dims)


def test_squeeze_refuses_a_dim_named_twice():
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        ember.ones(5, 2, 7).squeeze((-3, -2, 0))


@pytest.mark.parametrize("write", [
    lambda x: x.clamp_(min=-2, max=math.inf),                      # a float bound: a float result
    lambda x: x.div_(ember.tensor(2.0), rounding_mode="floor"),
    lambda x: x.div_(x.flip(0)),                                   # through a temporary (overlap)
    lambda x: x.atan2_(x.flip(0)),
])
def test_in_place_refuses_a_result_its_dtype_cannot_hold(write):
    x = ember.tensor([4, 6, 8], dtype=ember.int64)
    with pytest.raises(RuntimeError, match="result type float.* can't be cast to the desired output type int64"):
        write(x)
    assert x.tolist() == [4, 6, 8]
