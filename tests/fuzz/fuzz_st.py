"""The few strategy combinators the suite uses, each with two engines: hypothesis (the default,
as `make test` runs it) and a plain seeded `random.Random` (`campaign.py --engine fast`, about
ten times faster per case, for the 10^6-case runs of `make fuzz`).

The op modules import this as `st`; a composite's `draw` accepts these strategies in both
engines. The fast engine draws uniformly and does not shrink; failures are reported with their
reproducer either way.
"""
from __future__ import annotations

import functools
import random

from hypothesis import strategies as hs


class S:
    def __init__(self, build_hypothesis, fast):
        self._build = build_hypothesis
        self._hyp = None
        self.fast = fast            # random.Random -> value

    def hyp(self):
        if self._hyp is None:
            self._hyp = self._build()
        return self._hyp

    def map(self, f):
        return S(lambda: self.hyp().map(f), lambda r: f(self.fast(r)))

    def flatmap(self, f):
        return S(lambda: self.hyp().flatmap(lambda v: f(v).hyp()), lambda r: f(self.fast(r)).fast(r))


@functools.lru_cache(maxsize=4096)
def integers(lo, hi):
    return S(lambda: hs.integers(lo, hi), lambda r: r.randint(lo, hi))


def sampled_from(values):
    # a tuple, so that both this cache and hypothesis's reuse the strategy (a strategy built
    # anew costs hypothesis a validation on every draw)
    try:
        return _sampled_from(tuple(values))
    except TypeError:                     # unhashable elements
        return _sampled_from.__wrapped__(tuple(values))


@functools.lru_cache(maxsize=4096)
def _sampled_from(values):
    return S(lambda: hs.sampled_from(values), lambda r: r.choice(values))


def booleans():
    return S(hs.booleans, lambda r: r.random() < 0.5)


def just(value):
    return S(lambda: hs.just(value), lambda r: value)


def none():
    return just(None)


def one_of(*strategies):
    if len(strategies) == 1 and isinstance(strategies[0], (list, tuple)):
        strategies = tuple(strategies[0])
    return S(lambda: hs.one_of([s.hyp() for s in strategies]), lambda r: r.choice(strategies).fast(r))


def lists(elements, min_size=0, max_size=None):
    top = max_size if max_size is not None else min_size + 8
    return S(lambda: hs.lists(elements.hyp(), min_size=min_size, max_size=max_size),
             lambda r: [elements.fast(r) for _ in range(r.randint(min_size, top))])


def permutations(values):
    values = list(values)

    def fast(r):
        out = list(values)
        r.shuffle(out)
        return out
    return S(lambda: hs.permutations(values), fast)


def fixed_dictionaries(mapping):
    return S(lambda: hs.fixed_dictionaries({k: v.hyp() for k, v in mapping.items()}),
             lambda r: {k: v.fast(r) for k, v in mapping.items()})


def composite(fn):
    """Like hypothesis's: fn(draw, *args, **kwargs); calling the result gives a strategy."""
    # decorated once: hypothesis's composite() inspects the signature, too slow to run per draw
    hyp_factory = hs.composite(lambda draw, *args, **kwargs: fn(_hypothesis_draw(draw), *args, **kwargs))

    def factory(*args, **kwargs):
        return S(lambda: hyp_factory(*args, **kwargs), lambda r: fn(lambda s: s.fast(r), *args, **kwargs))
    factory.__name__ = getattr(fn, "__name__", "composite")
    return factory


def _hypothesis_draw(draw):
    return lambda s: draw(s.hyp() if isinstance(s, S) else s)


def fast_examples(strategy, n, seed):
    """n values of `strategy` from the fast engine."""
    r = random.Random(seed)
    for _ in range(n):
        yield strategy.fast(r)
