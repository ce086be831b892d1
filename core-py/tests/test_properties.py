"""Property tests: broadcasting and basic indexing agree with NumPy on random shapes and keys."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ember


@settings(max_examples=150, deadline=None)
@given(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=4))
def test_broadcasting_matches_numpy(shapes):
    (sa, sb), result = shapes
    a = np.arange(int(np.prod(sa)), dtype=np.float64).reshape(sa)
    b = np.arange(int(np.prod(sb)), dtype=np.float64).reshape(sb) * 0.5
    got = ember.tensor(a) * ember.tensor(b) - ember.tensor(b)
    assert got.shape == result
    np.testing.assert_array_equal(got.numpy(), a * b - b)


@st.composite
def array_and_key(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=5))
    key = draw(hnp.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    return shape, key


@settings(max_examples=300, deadline=None)
@given(array_and_key())
def test_basic_indexing_matches_numpy(case):
    shape, key = case
    if any(isinstance(k, slice) and k.step is not None and k.step < 0 for k in (key if isinstance(key, tuple) else (key,))):
        return  # negative steps are refused, as in PyTorch
    a = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    t = ember.tensor(a)
    view = t[key]
    np.testing.assert_array_equal(np.asarray(view), a[key])
    if view.numel():
        assert view._same_storage(t)


@settings(max_examples=100, deadline=None)
@given(array_and_key())
def test_basic_setitem_matches_numpy(case):
    shape, key = case
    if any(isinstance(k, slice) and k.step is not None and k.step < 0 for k in (key if isinstance(key, tuple) else (key,))):
        return
    a = np.zeros(shape)
    t = ember.tensor(a, dtype=ember.float64)
    a[key] = 7.0
    t[key] = 7.0
    np.testing.assert_array_equal(t.numpy(), a)
