"""`ember.nn`: neural-network building blocks with PyTorch's API: `Module` and `Parameter`,
the containers, the layers (`ember.nn.modules`), `init`, `functional` and `utils`."""
from ember.nn import functional  # noqa: F401
from ember.nn import init  # noqa: F401
from ember.nn.modules import *  # noqa: F401,F403
from ember.nn.modules.module import Module  # noqa: F401
from ember.nn.parameter import Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
from ember.nn import utils  # noqa: F401
