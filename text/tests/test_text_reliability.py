"""Issue 28, sizes: a pad length that no memory can hold is a RuntimeError, not an abort."""
import pytest

import ember
from embertext.transforms import PadTransform


def test_a_pad_length_beyond_memory_raises():
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed|can't allocate memory"):
        PadTransform(2**62, 0)(ember.tensor([1, 2, 3]))
    with pytest.raises(RuntimeError, match="can't allocate memory"):
        PadTransform(2**50, 0)(ember.tensor([1, 2, 3]))
    assert PadTransform(5, 0)(ember.tensor([1, 2, 3])).tolist() == [1, 2, 3, 0, 0]
