"""Devices in the Python API: parsing, availability, `.to()` and friends, on a machine without a
GPU (tests/test_cuda.py runs where there is one)."""
import pickle

import numpy as np
import pytest

import ember
from ember import nn

pytestmark = pytest.mark.skipif(ember.cuda.is_available(), reason="checks how a machine without a GPU answers")


def test_device_strings_parse_as_pytorch():
    assert ember.device("cuda:1") == ember.device("cuda", 1)
    assert repr(ember.device("cuda")) == "device(type='cuda')"
    assert str(ember.device("mps", 0)) == "mps:0"
    assert ember.device(0) == ember.device("cuda:0")
    assert ember.device(ember.device("cpu")) == "cpu"
    assert pickle.loads(pickle.dumps(ember.device("cuda:2"))) == ember.device("cuda:2")
    for bad in ("cuda:", "cuda:-1", "cuda:x", "cuda:1:2"):
        with pytest.raises(RuntimeError, match="Invalid device string"):
            ember.device(bad)
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        ember.device("gpu")
    with pytest.raises(RuntimeError, match="must not include an index"):
        ember.device("cuda:1", 1)
    with pytest.raises(RuntimeError, match="must not be negative"):
        ember.device("cuda", -1)
    with pytest.raises(TypeError):
        ember.device(1.5)


def test_cuda_queries_answer_without_raising():
    assert ember.cuda.is_available() is False
    assert ember.cuda.device_count() == 0
    assert ember.backends.cuda.is_built() is True
    assert ember.backends.mps.is_available() is False
    ember.cuda.manual_seed_all(0)  # ignored without CUDA, as in PyTorch
    with pytest.raises(RuntimeError, match="cuda:0 is not available"):
        ember.cuda.current_device()


@pytest.mark.parametrize("make", [
    lambda: ember.zeros(2, device="cuda"),
    lambda: ember.ones(2, device="cuda:1"),
    lambda: ember.full((2,), 3.0, device=ember.device("cuda")),
    lambda: ember.arange(3, device="cuda"),
    lambda: ember.rand(2, device="cuda"),
    lambda: ember.randn(2, device="cuda"),
    lambda: ember.randint(5, (2,), device="cuda"),
    lambda: ember.tensor([1.0], device="cuda"),
    lambda: ember.zeros_like(ember.ones(2), device="cuda"),
    lambda: ember.ones(2).to("cuda"),
    lambda: ember.ones(2).cuda(),
    lambda: ember.ones(2).to(device="cuda", dtype=ember.float64),
    lambda: nn.Linear(2, 2, device="cuda"),
    lambda: nn.Linear(2, 2).cuda(),
    lambda: nn.Linear(2, 2).to("cuda:0"),
])
def test_a_device_without_a_gpu_is_refused_naming_what_is_missing(make):
    # This machine has no NVIDIA driver: the error names the library that is not there.
    with pytest.raises(RuntimeError, match=r"cuda:\d is not available: cannot load the CUDA driver library \(libcuda\)"):
        make()


def test_mps_is_refused_naming_metal():
    with pytest.raises(RuntimeError, match="no Metal"):
        ember.zeros(1, device="mps")


def test_cpu_moves_are_the_tensor_itself_and_copies_on_request():
    x = ember.arange(4.0)
    assert x.device == ember.device("cpu") and x.device.type == "cpu"
    assert x.is_cpu and not x.is_cuda and x.get_device() == -1
    assert x.to("cpu") is x and x.cpu() is x and x.to(ember.device("cpu"), ember.float32) is x
    assert x.to("cpu", copy=True) is not x
    y = x.to(ember.zeros(1, dtype=ember.float64))  # another tensor's dtype and device
    assert y.dtype == ember.float64 and y.device == x.device
    assert ember.zeros(2, device="cpu").device == "cpu"
    assert ember.rand(3, device="cpu").device == "cpu"
    assert ember.ones_like(x).device == x.device


def test_module_and_optimizer_state_stay_with_their_parameters():
    model = nn.Linear(3, 2)
    weight = model.weight
    assert model.to("cpu") is model and model.cpu() is model and model.weight is weight
    opt = ember.optim.Adam(model.parameters())
    model(ember.ones(4, 3)).sum().backward()
    opt.step()
    for state in opt.state.values():
        for v in state.values():
            if isinstance(v, ember.Tensor) and v.ndim > 0:
                assert v.device == weight.device


def test_gradients_are_made_on_the_tensors_device():
    x = ember.ones(3, requires_grad=True)
    (x.to("cpu") * 2).sum().backward()
    assert x.grad.device == x.device and x.grad.tolist() == [2.0, 2.0, 2.0]


def test_checkpoints_map_to_the_cpu_and_refuse_missing_devices(tmp_path):
    path = tmp_path / "w.pt"
    ember.save({"w": ember.ones(2)}, path)
    assert ember.load(path, map_location=ember.device("cpu"))["w"].device == "cpu"
    with pytest.raises(RuntimeError, match="cuda:0 is not available"):
        ember.load(path, map_location="cuda:0")


def test_numpy_and_pickle_keep_working_on_cpu_tensors():
    x = ember.arange(3.0)
    assert np.asarray(x).tolist() == [0.0, 1.0, 2.0]
    y = pickle.loads(pickle.dumps(x))
    assert y.tolist() == x.tolist() and y.device == "cpu"
