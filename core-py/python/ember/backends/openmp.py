"""`torch.backends.openmp`: Ember runs its kernels on a rayon thread pool, not OpenMP
(`ember.set_num_threads` sizes it)."""


def is_available():
    return False
