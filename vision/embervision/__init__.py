"""embervision: TorchVision-style datasets, transforms, models and ops, on Ember tensors.

Nothing is implemented in this package yet; see README.md for what is planned.
"""

__version__ = "0.1.0"

from . import transforms  # noqa: E402
from . import io  # noqa: E402
from . import utils  # noqa: E402
from . import datasets  # noqa: E402
