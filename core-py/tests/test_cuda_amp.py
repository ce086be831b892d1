"""Mixed precision on a GPU: `autocast("cuda")` casts by PyTorch's CUDA policy (and leaves CPU
tensors alone), `GradScaler` trains an MLP on CUDA gradients, and nn modules' `device="cuda"`
gives the CPU's initial values on the GPU. Skipped where `ember.cuda.is_available()` is False
(tests/test_autocast.py checks the policy and the refusals without a GPU)."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

pytestmark = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU and its driver")

F16, BF16, F32 = ember.float16, ember.bfloat16, ember.float32


def g(*shape, dtype=F32):
    return ember.randn(*shape).to(dtype).cuda()


def test_lower_precision_ops_run_in_the_autocast_dtype():
    with ember.autocast("cuda"):
        assert ember.is_autocast_enabled() and ember.get_autocast_dtype("cuda") == F16
        out = F.linear(g(4, 3), g(5, 3), g(5))
        assert out.dtype == F16 and out.device.type == "cuda"
        assert ember.matmul(g(2, 3), g(3, 4)).dtype == F16
        assert (g(2, 3) @ g(3, 4)).dtype == F16
        assert ember.nn.Linear(3, 5).cuda()(g(4, 3)).dtype == F16
    assert ember.mm(g(2, 2), g(2, 2)).dtype == F32
    if ember.cuda.is_bf16_supported():
        with ember.autocast("cuda", dtype=BF16):
            assert F.linear(g(4, 3), g(5, 3)).dtype == BF16
    else:
        with pytest.raises(RuntimeError, match="does not support bfloat16"):
            ember.autocast("cuda", dtype=BF16)


def test_float32_and_promote_ops():
    with ember.autocast("cuda"):
        assert F.softmax(g(3, 4, dtype=F16), -1).dtype == F32
        assert F.log_softmax(g(3, 4, dtype=F16), -1).dtype == F32
        assert F.layer_norm(g(3, 4, dtype=F16), (4,)).dtype == F32
        assert F.mse_loss(g(3, dtype=F16), g(3, dtype=F16)).dtype == F32
        assert ember.cat([g(2, dtype=F16), g(2)]).dtype == F32
        assert F.relu(g(2, dtype=F16)).dtype == F16
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(ember.rand(3).cuda(), ember.rand(3).cuda())


def test_cpu_tensors_in_a_cuda_region_are_not_cast():
    with ember.autocast("cuda"):
        assert ember.mm(ember.randn(2, 2), ember.randn(2, 2)).dtype == F32
        assert F.softmax(ember.randn(3).half(), -1).dtype == F16


def test_values_match_float32_within_half_precision():
    a, b = g(8, 16), g(16, 4)
    with ember.autocast("cuda"):
        low = a @ b
    np.testing.assert_allclose(low.float().cpu().numpy(), (a @ b).cpu().numpy(), rtol=2e-2, atol=2e-2)


def _mlp():
    ember.manual_seed(0)
    return ember.nn.Sequential(ember.nn.Linear(8, 32), ember.nn.ReLU(), ember.nn.Linear(32, 1)).cuda()


def test_grad_scaler_trains_an_mlp_with_float16_autocast():
    model = _mlp()
    opt = ember.optim.SGD(model.parameters(), lr=0.05)
    scaler = ember.amp.GradScaler("cuda", init_scale=1024.0)
    x = ember.randn(64, 8).cuda()
    target = (x[:, :1] * 2 - x[:, 1:2]).detach()
    losses = []
    for _ in range(40):
        opt.zero_grad()
        with ember.autocast("cuda"):
            out = model(x)
            assert out.dtype == F16
            loss = F.mse_loss(out, target)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    assert all(np.isfinite(losses))
    assert losses[-1] < 0.5 * losses[0]
    assert scaler._scale.device.type == "cuda" and scaler.get_scale() == 1024.0
    assert all(p.dtype == F32 and p.grad.dtype == F32 and p.device.type == "cuda" for p in model.parameters())


def test_grad_scaler_skips_the_step_and_backs_off_on_an_inf_gradient():
    model = _mlp()
    opt = ember.optim.SGD(model.parameters(), lr=0.05)
    scaler = ember.amp.GradScaler("cuda", init_scale=256.0)
    x = ember.randn(16, 8).cuda()
    with ember.autocast("cuda"):
        loss = model(x).float().pow(2).mean()
    scaler.scale(loss).backward()
    model[0].weight.grad[0].fill_(float("inf"))
    before = [p.detach().clone() for p in model.parameters()]
    assert scaler.step(opt) is None
    scaler.update()
    assert scaler.get_scale() == 128.0 and scaler._get_growth_tracker() == 0
    for p, old in zip(model.parameters(), before):
        np.testing.assert_array_equal(p.detach().cpu().numpy(), old.cpu().numpy())


def test_module_device_gives_the_cpu_initial_values():
    ember.manual_seed(7)
    on_cpu = ember.nn.Linear(4, 3)
    ember.manual_seed(7)
    on_gpu = ember.nn.Linear(4, 3, device="cuda")
    for name, p in on_gpu.named_parameters():
        assert isinstance(p, ember.nn.Parameter) and p.requires_grad and p.device.type == "cuda"
        np.testing.assert_array_equal(p.detach().cpu().numpy(), getattr(on_cpu, name).detach().numpy())
    norm = ember.nn.BatchNorm1d(3, device="cuda")
    assert all(t.device.type == "cuda" for t in list(norm.parameters()) + list(norm.buffers()))
    ember.manual_seed(7)
    lazy = ember.nn.LazyLinear(3, device="cuda")
    lazy(ember.randn(2, 4).cuda())
    assert lazy.weight.device.type == "cuda" and lazy.weight.shape == (3, 4)
