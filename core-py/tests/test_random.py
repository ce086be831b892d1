import numpy as np
import pytest

import ember


def _draws():
    return [ember.rand(1000), ember.randn(50_000), ember.randint(0, 10, (100,)), ember.randperm(200),
            ember.normal(2.0, 3.0, (100,)), ember.bernoulli(ember.full((100,), 0.3)),
            ember.multinomial(ember.tensor([0.1, 0.2, 0.7]), 50, replacement=True)]


def test_seeded_draws_repeat_across_thread_counts():
    n = ember.get_num_threads()
    ember.manual_seed(1234)
    first = [d.tolist() for d in _draws()]
    ember.set_num_threads(1)
    try:
        ember.manual_seed(1234)
        again = [d.tolist() for d in _draws()]
    finally:
        ember.set_num_threads(n)
    assert first == again


def test_generators_are_independent_and_stateful():
    g1, g2 = ember.Generator().manual_seed(7), ember.Generator().manual_seed(7)
    a = ember.rand(5, generator=g1)
    assert a.tolist() == ember.rand(5, generator=g2).tolist()
    assert a.tolist() != ember.rand(5, generator=g1).tolist()
    state = g1.get_state()
    b = ember.randn(3, generator=g1)
    g1.set_state(state)
    assert b.tolist() == ember.randn(3, generator=g1).tolist()


def test_distributions_have_the_right_moments():
    ember.manual_seed(0)
    u = ember.rand(200_000).numpy()
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.01
    z = ember.randn(200_000, dtype=ember.float64).numpy()
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    r = ember.randint(3, 7, (100_000,)).numpy()
    assert set(np.unique(r)) == {3, 4, 5, 6}
    p = ember.randperm(1000).numpy()
    assert sorted(p.tolist()) == list(range(1000))
    b = ember.bernoulli(ember.full((100_000,), 0.25)).numpy()
    assert abs(b.mean() - 0.25) < 0.01
    m = ember.multinomial(ember.tensor([[0.0, 1.0, 3.0]]), 40_000, True).numpy()
    assert (m != 0).all() and abs((m == 2).mean() - 0.75) < 0.01
    w = ember.multinomial(ember.tensor([1.0, 1.0, 1.0, 1.0]), 4).numpy()
    assert sorted(w.tolist()) == [0, 1, 2, 3]


def test_random_errors():
    with pytest.raises(RuntimeError, match="from=5 >= to=5"):
        ember.randint(5, 5, (2,))
    with pytest.raises(RuntimeError, match="n_sample > prob_dist"):
        ember.multinomial(ember.tensor([0.5, 0.5]), 3)
    with pytest.raises(RuntimeError, match="element < 0"):
        ember.multinomial(ember.tensor([-1.0, 2.0]), 1)
    with pytest.raises(RuntimeError, match="p_in >= 0"):
        ember.bernoulli(ember.tensor([1.5]))
    with pytest.raises(TypeError, match="floating point"):
        ember.rand(2, dtype=ember.int32)
    with pytest.raises(TypeError, match="seed must be an int"):
        ember.manual_seed(1.5)
