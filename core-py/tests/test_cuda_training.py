"""Training on a CUDA GPU: the same model, data and optimizer give the CPU's trajectory, and (where
PyTorch is installed beside) torch.cuda's; checkpoints move between devices. Skipped where
`ember.cuda.is_available()` is False."""
import io

import numpy as np
import pytest

import ember
from ember import nn

pytestmark = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU and its driver")


def mlp():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.LayerNorm(32), nn.Linear(32, 5))


def data():
    g = ember.Generator().manual_seed(1)
    return ember.randn(64, 20, generator=g), ember.randint(0, 5, (64,), generator=g)


def train(model, x, y, make_optimizer, steps=5):
    opt = make_optimizer(model.parameters())
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


OPTIMIZERS = {
    "sgd-momentum": lambda p: ember.optim.SGD(p, lr=0.1, momentum=0.9),
    "adam": lambda p: ember.optim.Adam(p, lr=1e-2),
    "adamw-foreach": lambda p: ember.optim.AdamW(p, lr=1e-2, foreach=True),
}


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_an_mlp_trains_on_the_gpu_as_on_the_cpu(optimizer):
    ember.set_float32_matmul_precision("highest")
    x, y = data()
    cpu_model, gpu_model = mlp(), mlp().to("cuda")
    want = train(cpu_model, x, y, OPTIMIZERS[optimizer])
    got = train(gpu_model, x.cuda(), y.cuda(), OPTIMIZERS[optimizer])
    np.testing.assert_allclose(got, want, rtol=1e-4)
    for (name, p), q in zip(cpu_model.named_parameters(), gpu_model.parameters()):
        assert q.device.type == "cuda", name
        np.testing.assert_allclose(q.detach().cpu().numpy(), p.detach().numpy(), rtol=1e-3, atol=1e-4, err_msg=name)


def cnn():
    ember.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 16, 3, padding=1, stride=2), nn.ReLU(), nn.AdaptiveAvgPool2d(2),
                         nn.Flatten(), nn.Dropout(0.0), nn.Linear(64, 5))


def test_a_cnn_trains_on_the_gpu_as_on_the_cpu():
    ember.backends.cudnn.allow_tf32 = False
    try:
        g = ember.Generator().manual_seed(1)
        x, y = ember.randn(16, 1, 12, 12, generator=g), ember.randint(0, 5, (16,), generator=g)
        cpu_model, gpu_model = cnn(), cnn().to("cuda")
        want = train(cpu_model, x, y, OPTIMIZERS["sgd-momentum"])
        got = train(gpu_model, x.cuda(), y.cuda(), OPTIMIZERS["sgd-momentum"])
    finally:
        ember.backends.cudnn.allow_tf32 = True
    np.testing.assert_allclose(got, want, rtol=1e-4)
    running = gpu_model[1].running_mean.cpu().numpy()
    np.testing.assert_allclose(running, cpu_model[1].running_mean.numpy(), rtol=1e-4, atol=1e-6)


def test_checkpoints_move_between_devices():
    model = mlp().to("cuda")
    buffer = io.BytesIO()
    ember.save(model.state_dict(), buffer)
    buffer.seek(0)
    on_cpu = ember.load(buffer, map_location="cpu")
    assert all(t.device.type == "cpu" for t in on_cpu.values())
    buffer.seek(0)
    on_gpu = ember.load(buffer, map_location="cuda")
    assert all(t.device.type == "cuda" for t in on_gpu.values())
    fresh = mlp()
    fresh.load_state_dict(on_cpu)
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(fresh.state_dict()[k].numpy(), v.cpu().numpy())


def test_the_loss_and_gradients_equal_torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch here has no CUDA")
    ember.set_float32_matmul_precision("highest")
    torch.backends.cuda.matmul.allow_tf32 = False
    x, y = data()
    model = mlp().to("cuda")
    theirs = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32), torch.nn.Tanh(),
                                 torch.nn.LayerNorm(32), torch.nn.Linear(32, 5)).cuda()
    with torch.no_grad():
        for p, q in zip(theirs.parameters(), model.parameters()):
            p.copy_(torch.from_numpy(q.detach().cpu().numpy()))
    loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())
    loss.backward()
    tx, ty = torch.from_numpy(x.numpy()).cuda(), torch.from_numpy(y.numpy()).cuda()
    their_loss = torch.nn.functional.cross_entropy(theirs(tx), ty)
    their_loss.backward()
    np.testing.assert_allclose(loss.item(), their_loss.item(), rtol=1e-5)
    for p, q in zip(theirs.parameters(), model.parameters()):
        np.testing.assert_allclose(q.grad.cpu().numpy(), p.grad.cpu().numpy(), rtol=1e-4, atol=1e-6)


def test_autocast_runs_the_products_in_bfloat16():
    x = ember.randn(8, 16, device="cuda")
    layer = nn.Linear(16, 4).to("cuda")
    with ember.autocast("cuda", dtype=ember.bfloat16):
        y = layer(x)
    assert y.dtype == ember.bfloat16 and y.device.type == "cuda"
    np.testing.assert_allclose(y.detach().float().cpu().numpy(), layer(x).detach().cpu().numpy(), rtol=5e-2, atol=5e-2)
