"""Classification models with TorchVision's builders, weight enums and state-dict keys.

What exists and what is missing: see vision/README.md.
"""
from embervision.models._api import (Weights, WeightsEnum, get_model, get_model_builder, get_model_weights,
                                     get_weight, list_models, register_model)
from embervision.models.alexnet import *  # noqa: F401,F403
from embervision.models.densenet import *  # noqa: F401,F403
from embervision.models.mnasnet import *  # noqa: F401,F403
from embervision.models.mobilenetv2 import *  # noqa: F401,F403
from embervision.models.mobilenetv3 import *  # noqa: F401,F403
from embervision.models.resnet import *  # noqa: F401,F403
from embervision.models.shufflenetv2 import *  # noqa: F401,F403
from embervision.models.squeezenet import *  # noqa: F401,F403
from embervision.models.vgg import *  # noqa: F401,F403
from embervision.models.googlenet import *  # noqa: F401,F403
from embervision.models.inception import *  # noqa: F401,F403
from embervision.models.efficientnet import *  # noqa: F401,F403
from embervision.models.convnext import *  # noqa: F401,F403
from embervision.models.vision_transformer import *  # noqa: F401,F403
from embervision.models.regnet import *  # noqa: F401,F403
from embervision.models.swin_transformer import *  # noqa: F401,F403
from embervision.models.maxvit import *  # noqa: F401,F403
