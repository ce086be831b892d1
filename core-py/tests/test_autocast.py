"""`ember.autocast`: output dtypes per policy class (checked against PyTorch's CPU autocast where
it is installed), nesting, `enabled=False`, the decorator form, thread-locality, gradients to
float32 parameters, and a small training loop under autocast."""
import threading
import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F

BF16, F32, F64 = ember.bfloat16, ember.float32, ember.float64


def f(*shape):
    return ember.randn(*shape)


def b(*shape):
    return ember.randn(*shape).bfloat16()


# (name, call) -> expected dtype under autocast("cpu") with the default bfloat16.
LOWER = {
    "mm": lambda: ember.mm(f(3, 4), f(4, 5)),
    "matmul": lambda: ember.matmul(f(2, 3, 4), f(4, 5)),
    "operator @": lambda: f(3, 4) @ f(4, 5),
    "Tensor.matmul": lambda: f(3, 4).matmul(f(4, 5)),
    "bmm": lambda: ember.bmm(f(2, 3, 4), f(2, 4, 5)),
    "addmm": lambda: ember.addmm(f(3, 5), f(3, 4), f(4, 5)),
    "baddbmm": lambda: ember.baddbmm(f(2, 3, 5), f(2, 3, 4), f(2, 4, 5)),
    "linear": lambda: F.linear(f(3, 4), f(5, 4), f(5)),
    "conv1d": lambda: F.conv1d(f(1, 2, 8), f(3, 2, 3)),
    "conv2d": lambda: F.conv2d(f(1, 2, 6, 6), f(3, 2, 3, 3), f(3)),
    "conv3d": lambda: F.conv3d(f(1, 2, 4, 4, 4), f(3, 2, 3, 3, 3)),
    "conv_transpose2d": lambda: F.conv_transpose2d(f(1, 2, 5, 5), f(2, 3, 3, 3)),
    "einsum": lambda: ember.einsum("ij,jk->ik", f(3, 4), f(4, 5)),
    "nn.Linear": lambda: ember.nn.Linear(4, 5)(f(3, 4)),
}
FLOAT32 = {
    "mse_loss": lambda: F.mse_loss(b(3), b(3)),
    "l1_loss": lambda: F.l1_loss(b(3), b(3)),
    "smooth_l1_loss": lambda: F.smooth_l1_loss(b(3), b(3)),
    "cross_entropy": lambda: F.cross_entropy(b(3, 4), ember.tensor([0, 1, 2])),
    "nll_loss": lambda: F.nll_loss(b(3, 4), ember.tensor([0, 1, 2])),
    "binary_cross_entropy": lambda: F.binary_cross_entropy(ember.rand(3).bfloat16(), ember.rand(3).bfloat16()),
    "avg_pool3d": lambda: F.avg_pool3d(b(1, 1, 4, 4, 4), 2),
    "prod": lambda: ember.prod(b(3)),
    "fft": lambda: ember.fft.fft(b(8)),
    "linalg.inv": lambda: ember.linalg.inv(ember.eye(3).bfloat16() * 2),
    "reflect pad": lambda: F.pad(b(1, 2, 4), (1, 1), mode="reflect"),
}
# Ops outside the policy keep their input's dtype (PyTorch 2's CPU autocast leaves softmax and
# the norms alone).
UNCHANGED = {
    "softmax": lambda: F.softmax(b(3, 4), -1),
    "layer_norm": lambda: F.layer_norm(b(3, 4), (4,)),
    "relu": lambda: F.relu(b(3)),
    "add": lambda: f(2) + b(2),
    "constant pad": lambda: F.pad(b(1, 2, 4), (1, 1)),
}
PROMOTE = {
    "cat": lambda: ember.cat([f(2), b(2)]),
    "stack": lambda: ember.stack([b(2), f(2)]),
}


def _dtype(r):
    return (r[0] if isinstance(r, tuple) else r).dtype


@pytest.mark.parametrize("name", LOWER)
def test_lower_precision_ops_run_in_the_autocast_dtype(name):
    with ember.autocast("cpu"):
        assert _dtype(LOWER[name]()) == BF16
    with ember.autocast("cpu", dtype=ember.float16):
        assert _dtype(LOWER[name]()) == ember.float16
    assert _dtype(LOWER[name]()) == F32


@pytest.mark.parametrize("name", FLOAT32)
def test_float32_ops_cast_up(name):
    with ember.autocast("cpu"):
        r = _dtype(FLOAT32[name]())
    assert r in (F32, ember.complex64)


@pytest.mark.parametrize("table", [UNCHANGED, PROMOTE])
def test_other_ops(table):
    expected = {"softmax": BF16, "layer_norm": BF16, "relu": BF16, "add": F32, "constant pad": BF16, "cat": F32, "stack": F32}
    with ember.autocast("cpu"):
        for name, call in table.items():
            assert _dtype(call()) == expected[name], name


def test_float64_and_integer_inputs_are_not_cast():
    with ember.autocast("cpu"):
        assert ember.mm(f(2, 2).double(), f(2, 2).double()).dtype == F64
        assert ember.mm(ember.ones(2, 2, dtype=ember.int64), ember.ones(2, 2, dtype=ember.int64)).dtype == ember.int64
        assert F.mse_loss(f(3).double(), f(3).double()).dtype == F64


def test_policy_matches_pytorch():
    torch = pytest.importorskip("torch")
    import torch.nn.functional as TF
    pairs = [
        (lambda m, F_: m.mm(m.randn(3, 4), m.randn(4, 5)), "mm"),
        (lambda m, F_: F_.linear(m.randn(3, 4), m.randn(5, 4)), "linear"),
        (lambda m, F_: F_.conv2d(m.randn(1, 2, 5, 5), m.randn(3, 2, 3, 3)), "conv2d"),
        (lambda m, F_: F_.softmax(m.randn(3, 4).bfloat16(), -1), "softmax"),
        (lambda m, F_: F_.mse_loss(m.randn(3).bfloat16(), m.randn(3).bfloat16()), "mse_loss"),
        (lambda m, F_: m.cat([m.randn(2), m.randn(2).bfloat16()]), "cat"),
        (lambda m, F_: m.prod(m.randn(3).bfloat16()), "prod"),
        (lambda m, F_: F_.layer_norm(m.randn(3, 4).bfloat16(), (4,)), "layer_norm"),
    ]
    for call, name in pairs:
        with torch.autocast("cpu"):
            expected = str(call(torch, TF).dtype).split(".")[1]
        with ember.autocast("cpu"):
            got = call(ember, F).dtype.name
        assert got == expected, name


def test_nesting_and_enabled_false_restore_the_state():
    x = f(2, 2)
    assert not ember.is_autocast_enabled("cpu")
    with ember.autocast("cpu"):
        with ember.autocast("cpu", enabled=False):
            assert not ember.is_autocast_enabled("cpu")
            assert ember.mm(x, x).dtype == F32
        with ember.autocast("cpu", dtype=ember.float16):
            assert ember.get_autocast_dtype("cpu") == ember.float16
            assert ember.mm(x, x).dtype == ember.float16
        assert ember.get_autocast_cpu_dtype() == BF16
        assert ember.is_autocast_cpu_enabled()
        assert ember.mm(x, x).dtype == BF16
    assert not ember.is_autocast_enabled("cpu")
    assert ember.mm(x, x).dtype == F32


def test_state_is_restored_after_an_exception():
    with pytest.raises(ValueError):
        with ember.autocast("cpu"):
            raise ValueError("boom")
    assert not ember.is_autocast_enabled("cpu")


def test_decorator_and_cpu_amp_spelling():
    @ember.autocast("cpu")
    def product(a, b):
        return a @ b

    assert product(f(2, 3), f(3, 2)).dtype == BF16
    assert (f(2, 3) @ f(3, 2)).dtype == F32
    with pytest.warns(FutureWarning):
        ctx = ember.cpu.amp.autocast()
    with ctx:
        assert ember.mm(f(2, 2), f(2, 2)).dtype == BF16
    with pytest.raises(TypeError, match="requires a callable"):
        ember.autocast("cpu")(3)


def test_state_is_thread_local():
    seen = {}

    def worker():
        seen["enabled"] = ember.is_autocast_enabled("cpu")
        seen["dtype"] = ember.mm(f(2, 2), f(2, 2)).dtype

    with ember.autocast("cpu"):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert ember.mm(f(2, 2), f(2, 2)).dtype == BF16
    assert seen == {"enabled": False, "dtype": F32}


def test_bad_arguments_and_unsupported_devices():
    with pytest.raises(RuntimeError, match="device type at start of device string: foo"):
        ember.autocast("foo")
    with pytest.raises(ValueError, match="of type `str`"):
        ember.autocast(3)
    with pytest.raises(TypeError, match="dtype"):
        ember.autocast("cpu", dtype="bf16")
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        ctx = ember.autocast("cpu", dtype=ember.float32)
    with ctx:
        assert not ember.is_autocast_enabled("cpu")
    with pytest.warns(UserWarning, match="CUDA is not available"):
        ctx = ember.autocast("cuda")
    with ctx:
        assert ember.mm(f(2, 2), f(2, 2)).dtype == F32
    assert ember.is_autocast_enabled() is False  # no argument: CUDA's state, as PyTorch


def test_backward_gives_float32_gradients_to_float32_parameters():
    model = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(), ember.nn.Linear(8, 1))
    x = f(5, 4)
    with ember.autocast("cpu"):
        out = model(x)
        assert out.dtype == BF16
        loss = F.mse_loss(out, ember.zeros(5, 1))
        assert loss.dtype == F32
    loss.backward()
    for p in model.parameters():
        assert p.grad is not None and p.grad.dtype == F32


def test_modules_follow_the_policy():
    # nn modules keep their functional as a staticmethod: autocast must reach it there too.
    nn = ember.nn
    with ember.autocast("cpu"):
        assert nn.Conv2d(3, 4, 3)(f(2, 3, 8, 8)).dtype == BF16
        assert nn.ConvTranspose2d(3, 4, 3)(f(2, 3, 8, 8)).dtype == BF16
        assert nn.MaxPool3d(2)(b(1, 2, 4, 4, 4)).dtype == F32
        assert nn.AvgPool2d(2)(b(1, 2, 4, 4)).dtype == BF16


def test_weight_cast_is_cached_within_a_region():
    w = ember.randn(4, 4, requires_grad=True)
    with ember.autocast("cpu"):
        a = F.linear(f(2, 4), w)
        b = F.linear(f(2, 4), w)
        assert a.grad_fn is not None and b.dtype == BF16
        assert len(ember.amp.autocast_mode._state.cache) == 1
    assert not ember.amp.autocast_mode._state.cache


def test_training_loop_under_autocast_converges():
    ember.manual_seed(0)
    x = ember.randn(64, 3)
    target = x @ ember.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    model = ember.nn.Linear(3, 1)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        with ember.autocast("cpu"):
            loss = F.mse_loss(model(x), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert model.weight.dtype == F32
    assert losses[-1] < 0.02 * losses[0]
    np.testing.assert_allclose(model.weight.detach().numpy(), [[1.0, -2.0, 0.5]], atol=0.05)


# ---- per-device state, and the CUDA policy (its casts checked on CPU tensors standing in for CUDA ones) ----

@pytest.fixture
def cuda_region():
    """A "cuda" autocast region switched on with the low-level setter, which (as PyTorch's)
    does not ask whether a GPU exists; restored afterwards."""
    ember.set_autocast_enabled("cuda", True)
    try:
        yield
    finally:
        ember.set_autocast_enabled("cuda", False)
        ember.set_autocast_dtype("cuda", ember.float16)


def test_state_is_per_device_type():
    assert ember.get_autocast_dtype("cpu") == BF16 and ember.get_autocast_dtype("cuda") == ember.float16
    assert ember.get_autocast_gpu_dtype() == ember.float16
    assert ember.amp.is_autocast_available("cpu") and ember.amp.is_autocast_available("cuda")
    assert not ember.amp.is_autocast_available("xpu")
    with ember.autocast("cpu"):
        assert ember.is_autocast_enabled("cpu") and not ember.is_autocast_enabled("cuda")
        assert not ember.is_autocast_enabled()  # no argument: CUDA's flag
    ember.set_autocast_dtype("cpu", ember.float16)
    try:
        assert ember.get_autocast_dtype("cuda") == ember.float16
        with ember.autocast("cpu"):  # dtype=None takes the device type's current dtype, as PyTorch
            assert ember.mm(f(2, 2), f(2, 2)).dtype == ember.float16
    finally:
        ember.set_autocast_dtype("cpu", BF16)
    ember.set_autocast_enabled(True)  # PyTorch's one-argument form is CUDA's
    try:
        assert ember.is_autocast_enabled() and ember.is_autocast_enabled("cuda") and not ember.is_autocast_cpu_enabled()
    finally:
        ember.set_autocast_enabled(False)
    assert not ember.is_autocast_enabled()


def test_cuda_autocast_and_grad_scaler_disable_themselves_without_cuda():
    if ember.cuda.is_available():
        pytest.skip("this machine has CUDA (tests/test_cuda_amp.py covers it)")
    for dtype in (None, BF16):  # no bfloat16 check either: there is no device to ask
        with pytest.warns(UserWarning, match="User provided device_type of 'cuda', but CUDA is not available. Disabling"):
            ctx = ember.autocast("cuda", dtype=dtype)
        with ctx:
            assert not ember.is_autocast_enabled("cuda")
            assert ember.mm(f(2, 2), f(2, 2)).dtype == F32
    with pytest.warns(FutureWarning, match="deprecated"), pytest.warns(UserWarning, match="CUDA is not available"):
        ctx = ember.cuda.amp.autocast()
    assert ctx.fast_dtype == ember.float16 and not ctx._enabled
    for make in (lambda: ember.amp.GradScaler("cuda"), ember.cuda.amp.GradScaler):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scaler = make()
        assert any("CUDA is not available.  Disabling." in str(w.message) for w in caught)
        assert not scaler.is_enabled()


def test_a_cuda_region_leaves_cpu_tensors_alone(cuda_region):
    assert ember.is_autocast_enabled("cuda") and not ember.is_autocast_enabled("cpu")
    assert ember.mm(f(2, 2), f(2, 2)).dtype == F32
    assert F.linear(f(2, 3), f(4, 3)).dtype == F32
    assert F.softmax(b(2, 3), -1).dtype == BF16
    assert b(3).sum().dtype == BF16
    assert ember.exp(b(3)).dtype == BF16
    F.binary_cross_entropy(ember.rand(3), ember.rand(3))  # banned on CUDA tensors only
    with ember.autocast("cpu"):  # both regions: each casts its own device type's tensors
        assert ember.mm(f(2, 2), f(2, 2)).dtype == BF16
        assert F.softmax(b(2, 3), -1).dtype == BF16


@pytest.fixture
def cpu_as_cuda(monkeypatch, cuda_region):
    """CPU tensors count as CUDA tensors for the "cuda" policy: its casts, checked here."""
    from ember.amp import _policy
    real = _policy._eligible
    monkeypatch.setattr(_policy, "_eligible", lambda t, device_type: real(t, "cpu"))


def test_cuda_policy(cpu_as_cuda):
    H = ember.float16
    h = lambda *shape: ember.randn(*shape).half()  # noqa: E731
    assert F.linear(f(2, 3), f(4, 3), f(4)).dtype == H
    assert ember.matmul(f(2, 3), f(3, 2)).dtype == H and (f(2, 3) @ f(3, 2)).dtype == H
    assert ember.nn.Linear(3, 2)(f(4, 3)).dtype == H
    assert ember.nn.Conv2d(2, 3, 3)(f(1, 2, 5, 5)).dtype == H
    for out in (F.softmax(h(2, 3), -1), F.log_softmax(h(2, 3), 1), h(2, 3).softmax(-1), F.layer_norm(h(2, 3), (3,)),
                ember.nn.LayerNorm(3)(h(2, 3)), F.cross_entropy(h(3, 4), ember.tensor([0, 1, 2])),
                F.mse_loss(h(3), h(3)), ember.exp(h(3)), h(3).log(), h(3) ** 2, h(3).sum(), ember.cumsum(h(3), 0),
                ember.logsumexp(h(2, 3), 1), ember.norm(h(3))):
        assert out.dtype == F32
    assert F.softmax(h(2, 3), -1, dtype=H).dtype == H  # an explicit dtype is kept
    assert ember.cat([h(2), f(2)]).dtype == F32 and ember.stack([h(2), h(2)]).dtype == H
    assert F.relu(h(2)).dtype == H and (h(2) + h(2)).dtype == H  # outside the policy
    assert ember.mm(f(2, 2).double(), f(2, 2).double()).dtype == F64
    ember.set_autocast_dtype("cuda", BF16)
    assert F.linear(f(2, 3), f(4, 3)).dtype == BF16


def test_cuda_policy_gradients_reach_float32_parameters(cpu_as_cuda):
    model = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(), ember.nn.Linear(8, 3))
    out = model(f(5, 4))
    assert out.dtype == ember.float16
    loss = F.cross_entropy(out, ember.tensor([0, 1, 2, 0, 1]))
    assert loss.dtype == F32
    loss.backward()
    assert all(p.grad is not None and p.grad.dtype == F32 for p in model.parameters())
