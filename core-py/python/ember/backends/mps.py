"""`torch.backends.mps`: Apple's Metal backend, not in this build."""


def is_built():
    return False


def is_available():
    return False
