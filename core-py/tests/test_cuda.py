"""The CUDA backend on a GPU: moves between devices, and the ops in its contract equal to the
CPU's on the same inputs. Skipped where `ember.cuda.is_available()` is False (CI has no GPU;
tests/test_device.py checks how such a machine answers)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember

pytestmark = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU and its driver")

FLOATS = [ember.float32, ember.float64, ember.float16, ember.bfloat16]
INTS = [ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64]
TOLERANCE = {ember.float32: 1e-5, ember.float64: 1e-12, ember.float16: 1e-3, ember.bfloat16: 1e-2}


def same(gpu, cpu, dtype=None):
    """`gpu` (a CUDA tensor) equals `cpu` elementwise, NaN where NaN, within the dtype's rounding."""
    assert gpu.device.type == "cuda" and gpu.shape == cpu.shape and gpu.dtype == cpu.dtype
    got, want = gpu.cpu().double().numpy(), cpu.double().numpy()
    tol = TOLERANCE.get(dtype or cpu.dtype, 0)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


def values(dtype, shape=(5, 7)):
    """Inputs with signs, zeros, a fraction and (for floats) inf and NaN."""
    g = ember.Generator().manual_seed(0)
    if dtype.is_floating_point:
        x = (ember.randn(*shape, generator=g, dtype=ember.float64) * 3).to(dtype)
        flat = x.view(-1)
        flat[0], flat[1], flat[2], flat[3] = 0.0, float("inf"), float("-inf"), float("nan")
        return x
    low = 0 if dtype == ember.uint8 else -50
    return ember.randint(low, 50, shape, generator=g, dtype=dtype)


def test_device_queries():
    assert ember.backends.cuda.is_built()
    assert ember.cuda.device_count() >= 1
    x = ember.zeros(3, device="cuda")
    assert x.device == ember.device("cuda:0") and x.is_cuda and x.get_device() == 0


@pytest.mark.parametrize("dtype", FLOATS + INTS + [ember.bool])
def test_round_trip_keeps_every_value(dtype):
    x = values(dtype) if dtype != ember.bool else ember.tensor([True, False, True])
    y = x.to("cuda")
    assert y.device.type == "cuda" and y.dtype == dtype
    back = y.cpu()
    assert back.device.type == "cpu"
    np.testing.assert_array_equal(back.double().numpy(), x.double().numpy())
    np.testing.assert_array_equal(x.cuda().cpu().double().numpy(), x.double().numpy())


def test_strided_copies_and_casts():
    x = values(ember.float32, (4, 6))
    g = x.cuda()
    same(g.t().contiguous(), x.t().contiguous())
    same(g[:, ::2], x[:, ::2])
    same(g.t().to(ember.float64), x.t().to(ember.float64))
    same(g.to(ember.float16), x.to(ember.float16))
    finite = x.nan_to_num(0.0, 0.0, 0.0)
    same(finite.cuda().to(ember.int32), finite.to(ember.int32))
    same(g.to(ember.bool), x.to(ember.bool))
    out = ember.zeros(6, 4, device="cuda")
    out.copy_(g.t())
    same(out, x.t().contiguous())


@pytest.mark.parametrize("dtype", FLOATS + INTS + [ember.bool])
def test_fill_and_factories(dtype):
    value = True if dtype == ember.bool else 3
    same(ember.full((3, 4), value, dtype=dtype, device="cuda"), ember.full((3, 4), value, dtype=dtype))
    same(ember.zeros(5, dtype=dtype, device="cuda"), ember.zeros(5, dtype=dtype))
    x = ember.zeros(4, 4, dtype=dtype, device="cuda")
    x.t().fill_(value)
    same(x, ember.full((4, 4), value, dtype=dtype))


UNARY = ["neg", "abs", "sign", "square", "floor", "ceil", "round", "trunc", "relu", "exp", "exp2", "expm1", "log",
         "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
         "cosh", "tanh", "sigmoid", "erf", "erfc", "frac", "isnan", "isinf", "isposinf", "isneginf", "isfinite",
         "signbit", "logical_not"]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", UNARY)
def test_unary_float_ops_equal_the_cpu(name, dtype):
    x = values(dtype)
    same(getattr(x.cuda(), name)(), getattr(x, name)(), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_activations_with_parameters_equal_the_cpu(dtype):
    F = ember.nn.functional
    x = values(dtype)
    g = x.cuda()
    for f in (F.gelu, F.silu, F.mish, F.selu, F.hardswish, F.hardsigmoid, lambda t: F.gelu(t, approximate="tanh"),
              lambda t: F.elu(t, 0.5), lambda t: F.leaky_relu(t, 0.2), lambda t: F.softplus(t, 2.0, 10.0),
              lambda t: F.hardtanh(t, -2.0, 2.0), lambda t: t.clamp(-1.0, 2.0), lambda t: t.clamp(min=0.5),
              lambda t: t.nan_to_num(1.0, 100.0, -100.0), lambda t: t.sigmoid().logit(1e-3)):
        same(f(g), f(x), dtype)


@pytest.mark.parametrize("dtype", INTS)
def test_unary_int_ops_equal_the_cpu(dtype):
    x = values(dtype)
    g = x.cuda()
    for f in (ember.abs, ember.neg, ember.sign, ember.square, ember.bitwise_not, ember.logical_not,
              lambda t: t.clamp(-5, 20), lambda t: t.clamp(max=7), ember.isnan, ember.isfinite, ember.signbit):
        if dtype == ember.uint8 and f in (ember.neg,):
            continue
        same(f(g), f(x))


BINARY = ["add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "atan2", "hypot", "maximum",
          "minimum", "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", BINARY)
def test_binary_float_ops_equal_the_cpu_with_broadcasting_and_numbers(name, dtype):
    a, b = values(dtype, (5, 7)), values(dtype, (7,)).flip(0)
    op = getattr(ember, name)
    same(op(a.cuda(), b.cuda()), op(a, b), dtype)
    same(op(a.cuda(), 1.5), op(a, 1.5), dtype)
    same(op(a.t().cuda(), a.t().cuda()), op(a.t(), a.t()), dtype)


@pytest.mark.parametrize("dtype", INTS)
def test_binary_int_ops_equal_the_cpu(dtype):
    a, b = values(dtype, (5, 7)), values(dtype, (5, 7))
    b = ember.where(b == 0, ember.ones_like(b), b)
    ops = ["add", "sub", "mul", "floor_divide", "remainder", "fmod", "maximum", "minimum", "eq", "lt", "ge",
           "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and"]
    for name in ops:
        op = getattr(ember, name)
        same(op(a.cuda(), b.cuda()), op(a, b))
        same(op(a.cuda(), 3), op(a, 3))
    same(a.cuda() << 2, a << 2)
    same(a.cuda() >> 1, a >> 1)


def test_integer_division_by_zero_is_refused_and_writes_nothing():
    a = ember.tensor([4, 5, 6], device="cuda")
    for divisor in (ember.tensor([1, 0, 2], device="cuda"), 0):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            a // divisor
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            a.remainder_(divisor)
    assert a.cpu().tolist() == [4, 5, 6]


@pytest.mark.parametrize("dtype", FLOATS + INTS + [ember.bool])
def test_where_equals_the_cpu(dtype):
    a, b = values(dtype) if dtype != ember.bool else values(ember.int32) > 0, ember.zeros(5, 7, dtype=dtype)
    cond = values(ember.int32) > 0
    same(ember.where(cond.cuda(), a.cuda(), b.cuda()), ember.where(cond, a, b))


def test_in_place_and_out_writes_stay_on_the_device():
    x = values(ember.float32)
    g = x.cuda()
    g.mul_(2.0).add_(1.0)
    same(g, x * 2.0 + 1.0)
    out = ember.empty(5, 7, device="cuda")
    ember.exp(g, out=out)
    same(out, (x * 2.0 + 1.0).exp())


def test_mixing_devices_is_refused_with_pytorchs_message():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.ones(2, device="cuda") + ember.ones(2)
    # A 0-d CPU tensor goes with a CUDA one, as a number does.
    same(ember.ones(2, device="cuda") + ember.tensor(2.0), ember.full((2,), 3.0))


def test_a_device_index_past_the_last_is_refused():
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        ember.zeros(2, device=f"cuda:{ember.cuda.device_count()}")


def test_ops_outside_the_backend_say_so():
    a = ember.ones(2, 2, device="cuda")
    with pytest.raises(NotImplementedError, match="CUDA"):
        ember.linalg.inv(a)
    with pytest.raises(TypeError, match=r"cpu\(\)"):
        a.numpy()


def test_kernels_are_cached_on_disk(tmp_path):
    # In fresh processes: the first compiles and stores, the second loads what is stored.
    code = "import ember; x = ember.ones(3, device='cuda'); print((x * 2).cpu().tolist())"
    env = {**os.environ, "EMBER_HOME": str(tmp_path)}
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        assert out.stdout.strip() == "[2.0, 2.0, 2.0]"
    cached = sorted(p.name for p in (tmp_path / "kernels").iterdir())
    assert any(n.startswith("binary-sm_") and n.endswith(".cubin") for n in cached), cached


def matrices(dtype, shape, seed):
    g = ember.Generator().manual_seed(seed)
    return ember.randn(*shape, generator=g, dtype=ember.float64).to(dtype)


# Each operand row-major, transposed (column-major), or with no unit stride (copied first).
LAYOUTS = {
    "rows": lambda t: t,
    "cols": lambda t: t.transpose(-1, -2).contiguous().transpose(-1, -2),
    "slice": lambda t: ember.stack([t, t], -1)[..., 0],
}


@pytest.mark.parametrize("a_layout", LAYOUTS)
@pytest.mark.parametrize("b_layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.bfloat16])
def test_matmul_equals_the_cpu_in_every_layout(a_layout, b_layout, dtype):
    ember.set_float32_matmul_precision("highest")
    for (m, k, n) in [(1, 1, 1), (5, 7, 3), (33, 65, 17), (1, 300, 2)]:
        a, b = matrices(ember.float64, (3, m, k), 0), matrices(ember.float64, (3, k, n), 1)
        want = (a @ b).to(dtype)
        ga, gb = LAYOUTS[a_layout](a.to(dtype).cuda()), LAYOUTS[b_layout](b.to(dtype).cuda())
        tol = {ember.float32: 1e-4, ember.float64: 1e-10, ember.float16: 2e-2, ember.bfloat16: 8e-2}[dtype]
        got = ember.bmm(ga, gb)
        np.testing.assert_allclose(got.cpu().double().numpy(), want.double().numpy(), rtol=tol, atol=tol * k ** 0.5)
        np.testing.assert_allclose((ga[0] @ gb[0]).cpu().double().numpy(), want[0].double().numpy(), rtol=tol, atol=tol * k ** 0.5)


def test_matmul_products_of_empty_and_broadcast_operands():
    a, b = matrices(ember.float32, (4, 0), 0), matrices(ember.float32, (0, 3), 1)
    same((a.cuda() @ b.cuda()), ember.zeros(4, 3))
    x, w = matrices(ember.float32, (2, 3, 5, 4), 2), matrices(ember.float32, (4, 6), 3)
    same(x.cuda() @ w.cuda(), x @ w, ember.float16)
    bias = matrices(ember.float32, (6,), 4)
    same(ember.addmm(bias.cuda(), x[0, 0].cuda(), w.cuda()), ember.addmm(bias, x[0, 0], w), ember.float16)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        ember.ones(2, 2, dtype=ember.int64, device="cuda") @ ember.ones(2, 2, dtype=ember.int64, device="cuda")


def test_tf32_follows_the_matmul_precision():
    a, b = matrices(ember.float32, (256, 256), 0), matrices(ember.float32, (256, 256), 1)
    want = (a.double() @ b.double()).numpy()
    try:
        ember.backends.cuda.matmul.allow_tf32 = True
        tf32 = np.abs((a.cuda() @ b.cuda()).cpu().double().numpy() - want).max()
        ember.backends.cuda.matmul.allow_tf32 = False
        full = np.abs((a.cuda() @ b.cuda()).cpu().double().numpy() - want).max()
    finally:
        ember.set_float32_matmul_precision("highest")
    # TF32 keeps 10 mantissa bits: its error is orders of magnitude above float32's.
    assert full < 1e-3 < tf32 < 0.5, (full, tf32)


def test_matmul_gradients_equal_the_cpu():
    a, b = matrices(ember.float64, (6, 4), 0), matrices(ember.float64, (4, 3), 1)
    ga, gb = a.cuda().requires_grad_(), b.cuda().requires_grad_()
    (ga @ gb).backward(ember.ones(6, 3, dtype=ember.float64, device="cuda"))
    a.requires_grad_(), b.requires_grad_()
    (a @ b).backward(ember.ones(6, 3, dtype=ember.float64))
    same(ga.grad, a.grad)
    same(gb.grad, b.grad)


def test_device_properties_and_current_device():
    p = ember.cuda.get_device_properties(0)
    assert p.total_memory > 1 << 30 and p.multi_processor_count > 0 and p.major >= 5
    assert ember.cuda.get_device_name() == p.name and "NVIDIA" in p.name
    assert ember.cuda.get_device_capability() == (p.major, p.minor)
    assert ember.cuda.current_device() == 0
    ember.cuda.set_device("cuda:0")
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        ember.cuda.set_device(ember.cuda.device_count())
    assert ember.cuda.current_device() == 0


def test_memory_statistics_follow_tensors():
    ember.cuda.synchronize()
    before = ember.cuda.memory_allocated()
    x = ember.empty(1 << 20, device="cuda")
    assert ember.cuda.memory_allocated() == before + (4 << 20)
    assert ember.cuda.max_memory_allocated() >= before + (4 << 20)
    assert ember.cuda.memory_reserved() >= 4 << 20
    del x
    assert ember.cuda.memory_allocated() == before
    ember.cuda.reset_peak_memory_stats()
    assert ember.cuda.max_memory_allocated() == before
    ember.cuda.empty_cache()
    assert ember.cuda.memory_reserved() <= ember.cuda.memory_allocated() + (64 << 20)


def test_out_of_memory_is_a_runtime_error():
    total = ember.cuda.get_device_properties().total_memory
    with pytest.raises(RuntimeError, match="CUDA out of memory"):
        ember.empty(total, dtype=ember.uint8, device="cuda")
    ember.ones(3, device="cuda")  # the device still works


def test_events_time_the_queued_work():
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    x = ember.ones(4096, 4096, device="cuda")
    start.record()
    for _ in range(10):
        x = x * 1.0001
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) > 0
    with pytest.raises(RuntimeError, match="enable_timing"):
        ember.cuda.Event().elapsed_time(end)
    s = ember.cuda.current_stream()
    with ember.cuda.stream(ember.cuda.Stream()):
        y = x + 1
    s.synchronize()
    assert s.query() and y.device.type == "cuda"
