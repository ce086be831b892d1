"""The layer classes of `ember.nn`, one file per family."""
from ember.nn.modules.activation import *  # noqa: F401,F403
from ember.nn.modules.attention import MultiheadAttention  # noqa: F401
from ember.nn.modules.container import *  # noqa: F401,F403
from ember.nn.modules.conv import *  # noqa: F401,F403
from ember.nn.modules.dropout import *  # noqa: F401,F403
from ember.nn.modules.lazy import LazyModuleMixin  # noqa: F401
from ember.nn.modules.linear import *  # noqa: F401,F403
from ember.nn.modules.loss import *  # noqa: F401,F403
from ember.nn.modules.module import Module  # noqa: F401
from ember.nn.modules.normalization import *  # noqa: F401,F403
from ember.nn.modules.pooling import *  # noqa: F401,F403
from ember.nn.modules.rnn import *  # noqa: F401,F403
from ember.nn.modules.sparse import *  # noqa: F401,F403
from ember.nn.modules.transformer import *  # noqa: F401,F403
from ember.nn.modules.upsampling import *  # noqa: F401,F403
