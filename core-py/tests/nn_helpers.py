"""Helpers for the nn/optim tests: moving weights and tensors between Ember and PyTorch."""
import numpy as np

import ember


def to_np(t):
    return np.asarray(t.detach())


def to_torch(torch, t):
    return torch.from_numpy(np.array(to_np(t)))


def to_ember(t):
    return ember.from_numpy(t.detach().numpy().copy())


def copy_weights(torch, ember_module, torch_module):
    """Loads the Ember module's state_dict into the PyTorch module (the key names must agree)."""
    state = {k: to_torch(torch, v) for k, v in ember_module.state_dict().items()}
    torch_module.load_state_dict(state)


def assert_close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(to_np(a) if isinstance(a, ember.Tensor) else a.detach().numpy(),
                               to_np(b) if isinstance(b, ember.Tensor) else b.detach().numpy(), rtol=rtol, atol=atol)
