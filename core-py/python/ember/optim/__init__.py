"""`ember.optim`: optimizers and learning-rate schedulers with PyTorch's API and update maths.
Steps run under no_grad with in-place native ops (one temporary per fused update)."""
from ember.optim import lr_scheduler  # noqa: F401
from ember.optim.adagrad import Adagrad  # noqa: F401
from ember.optim.adam import Adam, AdamW  # noqa: F401
from ember.optim.optimizer import Optimizer  # noqa: F401
from ember.optim.rmsprop import RMSprop  # noqa: F401
from ember.optim.sgd import SGD  # noqa: F401
