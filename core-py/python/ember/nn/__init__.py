"""`ember.nn`: neural-network building blocks with PyTorch's API: `Module` and `Parameter`,
the containers, the layers (`ember.nn.modules`), `init`, `functional` and `utils`."""
from ember.nn import functional  # noqa: F401
from ember.nn import init  # noqa: F401
from ember.nn.modules import *  # noqa: F401,F403
from ember.nn.modules.module import Module  # noqa: F401
from ember.nn.parameter import Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
from ember.nn import utils  # noqa: F401


def __getattr__(name):
    # `nn.parallel` (DistributedDataParallel) loads on first use, as `torch.nn.parallel` is reachable
    # from `torch.nn`; importing it eagerly would import ember.distributed with every `ember.nn`.
    if name == "parallel":
        import importlib
        return importlib.import_module("ember.nn.parallel")
    raise AttributeError(f"module 'ember.nn' has no attribute '{name}'")
