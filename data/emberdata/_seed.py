"""Seeds drawn from ember's generators, so `ember.manual_seed` makes shuffling reproducible."""
import random

import ember

SEED_HIGH = 2**62


def draw_seed(generator=None):
    """A fresh 62-bit seed from `generator`, or from ember's default generator."""
    return int(ember.randint(0, SEED_HIGH, (1,), generator=generator).item())


def derived_seeds(seed, count):
    """`count` independent seeds derived from one, the same on every process and rank."""
    rng = random.Random(seed)
    return [rng.getrandbits(62) for _ in range(count)]


def take_seed(holder):
    """The seed for one pass of a random DataPipe: the one `set_seed` gave (then advanced, so the
    next pass differs but stays the same on every worker and rank), else a fresh draw."""
    seed = holder._seed
    if seed is None:
        return draw_seed()
    holder._seed = derived_seeds(seed, 1)[0]
    return seed
