"""`ember.nn.utils`: gradient clipping, parameter/vector conversion, sequence padding,
`stateless.functional_call`, parametrizations (`parametrize`, `parametrizations`), pruning
(`prune`) and the older hook-based `weight_norm`/`spectral_norm`."""
from ember.nn.utils import parametrizations, parametrize, prune, rnn, stateless  # noqa: F401
from ember.nn.utils.clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, get_total_norm  # noqa: F401
from ember.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from ember.nn.utils.spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from ember.nn.utils.weight_norm import remove_weight_norm, weight_norm  # noqa: F401
