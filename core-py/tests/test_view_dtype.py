"""Tensor.view(dtype): the same bytes read as another dtype, with PyTorch's rules and errors."""
import numpy as np
import pytest

import ember


def test_same_element_size_reinterprets_every_element_in_place():
    x = ember.tensor([1.0, -2.0, 0.5])
    bits = x.view(ember.int32)
    assert bits.dtype == ember.int32 and bits.shape == x.shape
    assert bits.tolist() == np.array([1.0, -2.0, 0.5], np.float32).view(np.int32).tolist()
    bits[0] = 0  # a view: writes reach the original
    assert x[0].item() == 0.0


def test_keyword_dtype_and_the_same_dtype():
    x = ember.arange(6, dtype=ember.int16).reshape(2, 3)
    assert x.view(dtype=ember.float16).tolist() == np.arange(6, dtype=np.int16).reshape(2, 3).view(np.float16).tolist()
    same = x.view(ember.int16)
    assert same is not x and same.tolist() == x.tolist() and same._is_view()


def test_a_narrower_dtype_rescales_the_last_dim_and_the_other_strides():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = ember.from_numpy(a.copy())[1:, ::1]
    v = x.view(ember.uint8)
    assert v.shape == (2, 16) and v.stride() == (16, 1) and v.storage_offset() == 16
    assert v.tolist() == a[1:].view(np.uint8).tolist()


def test_a_wider_dtype_divides_the_last_dim():
    a = np.arange(16, dtype=np.uint8).reshape(2, 8)
    v = ember.from_numpy(a.copy()).view(ember.float64)
    assert v.shape == (2, 1) and v.stride() == (1, 1)
    assert v.tolist() == a.view(np.float64).tolist()
    c = ember.tensor([[1.0, 2.0, 3.0, 4.0]]).view(ember.complex64)
    assert c.shape == (1, 2) and c.tolist() == [[1 + 2j, 3 + 4j]]


@pytest.mark.parametrize(
    "make, dtype, message",
    [
        (lambda: ember.tensor(1.0), ember.float64, r"self.dim\(\) cannot be 0 to view Float as Double \(different element sizes\)"),
        (lambda: ember.zeros(4, 2).t(), ember.uint8, r"self.stride\(-1\) must be 1 to view Float as Byte \(different element sizes\), but got 2"),
        (lambda: ember.zeros(2, 3, dtype=ember.uint8), ember.int16, r"self.size\(-1\) must be divisible by 2 to view Byte as Short \(different element sizes\), but got 3"),
        (lambda: ember.zeros(10, dtype=ember.uint8)[2:], ember.int32, r"self.storage_offset\(\) must be divisible by 4 to view Byte as Int \(different element sizes\), but got 2"),
        (lambda: ember.zeros(3, 6, dtype=ember.int16)[:, :4], ember.int64, r"self.stride\(0\) must be divisible by 4 to view Short as Long \(different element sizes\), but got 6"),
    ],
)
def test_views_that_do_not_fit_are_refused_as_pytorch_refuses_them(make, dtype, message):
    x = make()
    with pytest.raises(RuntimeError, match=message):
        x.view(dtype)


def test_bool_views_are_refused_since_other_bytes_would_be_invalid_bools():
    with pytest.raises(NotImplementedError, match=r"view\(Byte as Bool\)"):
        ember.ones(3, dtype=ember.uint8).view(ember.bool)
    with pytest.raises(NotImplementedError, match=r"view\(Bool as Char\)"):
        ember.ones(3, dtype=ember.bool).view(ember.int8)
    assert ember.tensor([True, False]).view(ember.bool).tolist() == [True, False]


def test_shape_and_dtype_together_are_refused():
    with pytest.raises(TypeError, match="either a shape or a dtype"):
        ember.zeros(4).view(2, 2, dtype=ember.int32)


def test_the_view_is_not_differentiable():
    x = ember.randn(4, requires_grad=True)
    v = x.view(ember.int32)
    assert not v.requires_grad and v.grad_fn is None
    assert not x.view(ember.float32).requires_grad
