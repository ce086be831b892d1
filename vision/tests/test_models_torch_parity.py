"""Live parity with TorchVision where torch and torchvision are installed (skipped otherwise):
TorchVision's model with its own random weights; the same state dict loaded into embervision's
model (through numpy); logits compared (float32, rtol 1e-4). EMBERVISION_PARITY_MODELS picks the
builders (comma-separated, default a small set; "all" for every builder)."""
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
tvm = pytest.importorskip("torchvision.models")

import ember  # noqa: E402
import embervision.models as M  # noqa: E402

_DEFAULT = "resnet18,mobilenet_v3_small,squeezenet1_1,shufflenet_v2_x0_5,efficientnet_b0,swin_t,vit_b_32"
_CHOSEN = os.environ.get("EMBERVISION_PARITY_MODELS", _DEFAULT)
NAMES = M.list_models() if _CHOSEN == "all" else _CHOSEN.split(",")


@pytest.mark.parametrize("name", NAMES)
def test_logits_equal_torchvision(name):
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "fixtures"))
    import synthetic

    kwargs, size = synthetic.config(name)
    torch.manual_seed(0)
    theirs = tvm.get_model(name, **kwargs).eval()
    ours = M.get_model(name, **kwargs).eval()
    sd = ours.state_dict()
    for k, v in theirs.state_dict().items():
        sd[k] = ember.from_numpy(v.detach().numpy().copy())
    ours.load_state_dict(sd)
    x = np.random.default_rng(0).standard_normal(size).astype(np.float32)
    with torch.no_grad():
        want = theirs(torch.from_numpy(x)).numpy()
    with ember.no_grad():
        got = ours(ember.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(want).max())))
