"""`torch.backends.cuda`: the CUDA backend's flags.

`matmul.allow_tf32` is the float32 matmul precision under another name, as in PyTorch 1.12:
setting it True is `ember.set_float32_matmul_precision("high")`, False is "highest". The other
flags are recorded for the CUDA backend.
"""
from ember import _C


class _Matmul:
    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True

    @property
    def allow_tf32(self):
        from ember import get_float32_matmul_precision
        return get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value):
        from ember import set_float32_matmul_precision
        set_float32_matmul_precision("high" if value else "highest")


matmul = _Matmul()


def is_built():
    """Whether this build of Ember has CUDA support (whether or not this machine has a GPU)."""
    return _C._cuda_build()[0]
