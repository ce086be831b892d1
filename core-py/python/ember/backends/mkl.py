"""`torch.backends.mkl`: Ember does not link MKL (matmul runs on `gemm`, FFTs on `rustfft`)."""


def is_available():
    return False
