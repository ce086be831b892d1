import pickle

import numpy as np
import pytest

import ember
from tensor_helpers import ALL, to_np


def test_dtype_promotion_matches_pytorch():
    p = ember.promote_types
    assert p(ember.uint8, ember.int8) == ember.int16
    assert p(ember.float16, ember.bfloat16) == ember.float32
    assert p(ember.int64, ember.float16) == ember.float16
    i32 = ember.zeros(3, dtype=ember.int32)
    assert (i32 + 1).dtype == ember.int32
    assert (i32 + 1.5).dtype == ember.float32
    assert (i32 + ember.tensor(1.5, dtype=ember.float64)).dtype == ember.float64  # a 0-d tensor of a higher category
    assert (i32 + ember.tensor([1.5], dtype=ember.float64)).dtype == ember.float64
    assert (ember.zeros(2, dtype=ember.bool) + 1).dtype == ember.int64
    assert (ember.zeros(2, dtype=ember.uint8) + ember.tensor(5)).dtype == ember.uint8
    assert (ember.zeros(2, dtype=ember.float16) + ember.tensor(5.0, dtype=ember.float64)).dtype == ember.float16
    assert (ember.zeros(2, dtype=ember.float16) * 2.5).dtype == ember.float16
    assert (i32 / 2).dtype == ember.float32


def test_views_share_memory_and_never_copy():
    t = ember.arange(24, dtype=ember.float32).reshape(2, 3, 4)
    ptr = t.data_ptr()
    views = [
        t.view(6, 4), t.reshape(4, 6), t.transpose(0, 2), t.permute(2, 0, 1), t.narrow(2, 1, 2),
        t[:, ::2, 1:], t.unsqueeze(0), t[None, ..., None].squeeze(), t.flip(1), t.diagonal(0, 1, 2),
        t.unfold(2, 2, 1), t.as_strided((2, 2), (1, 2)), t.expand(3, 2, 3, 4), t.mT, t[0].t(), t[1],
        t.contiguous(), t.broadcast_to((5, 2, 3, 4)),
    ]
    for v in views:
        assert v._same_storage(t)
    t.view(-1)[5] = 100.0
    assert t.transpose(0, 2)[1, 1, 0].item() == 100.0
    assert t.flip(1).data_ptr() != ptr  # points at the first logical element, which moved
    assert t.transpose(0, 1).reshape(-1)._same_storage(t) is False  # not viewable: a copy


def test_strides_offsets_and_contiguity():
    t = ember.zeros(4, 6)
    assert t.stride() == (6, 1) and t.stride(0) == 6
    s = t[1:, 2::2]
    assert s.storage_offset() == 8 and s.stride() == (6, 2) and not s.is_contiguous()
    assert t.t().is_contiguous() is False and t.t().contiguous().is_contiguous()
    f = t.flip(0)
    assert f.stride() == (-6, 1) and f.storage_offset() == 18


def test_view_errors():
    t = ember.zeros(4, 6).t()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        t.view(24)
    with pytest.raises(RuntimeError, match="invalid for input of size 24"):
        ember.zeros(4, 6).reshape(5, -1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.zeros(2, 3).transpose(0, 2)
    with pytest.raises(RuntimeError, match="must match the existing size"):
        ember.zeros(2, 3).expand(4, 3)
    with pytest.raises(RuntimeError, match="require a storage"):
        ember.zeros(4).as_strided((3,), (2,))


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_numpy_round_trip_is_zero_copy(dtype):
    if dtype == ember.bfloat16:
        with pytest.raises(TypeError, match="BFloat16"):
            ember.zeros(2, dtype=dtype).numpy()
        return
    t = ember.ones(3, 4, dtype=dtype)
    a = t.numpy()
    assert a.shape == (3, 4) and a.__array_interface__["data"][0] == t.data_ptr()
    back = ember.from_numpy(a)
    assert back.data_ptr() == t.data_ptr() and back.dtype == dtype


def test_from_numpy_shares_negative_and_sliced_strides():
    a = np.arange(20.0).reshape(4, 5)[::-1, 1::2]
    t = ember.from_numpy(a)
    np.testing.assert_array_equal(t.numpy(), a)
    a[0, 0] = -1.0
    assert t[0, 0].item() == -1.0
    with pytest.raises(TypeError, match="can't convert np.ndarray of type uint16"):
        ember.from_numpy(np.zeros(3, dtype=np.uint16))
    with pytest.raises(TypeError, match="expected np.ndarray"):
        ember.from_numpy([1, 2])


def test_from_numpy_keeps_the_array_alive():
    t = ember.from_numpy(np.arange(1000.0))
    import gc

    gc.collect()
    assert t.sum().item() == sum(range(1000))


def test_tensor_infers_pytorch_dtypes():
    assert ember.tensor([1, 2]).dtype == ember.int64
    assert ember.tensor([1.0, 2]).dtype == ember.float32
    assert ember.tensor([True]).dtype == ember.bool
    assert ember.tensor(np.zeros(2)).dtype == ember.float64
    assert ember.tensor(3.5).item() == 3.5 and ember.tensor(3.5).ndim == 0
    assert ember.tensor([[1, 2], [3, 4]], dtype=ember.float16).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(ValueError, match="ragged"):
        ember.tensor([[1, 2], [3]])
    with pytest.raises(TypeError):
        ember.tensor(["a"])


def test_item_tolist_and_scalars():
    assert ember.tensor(3).item() == 3 and isinstance(ember.tensor(3).item(), int)
    assert isinstance(ember.tensor(True).item(), bool)
    assert ember.tensor([[1, 2]]).tolist() == [[1, 2]]
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        ember.zeros(2).item()
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(ember.zeros(2))
    assert float(ember.tensor(2.5)) == 2.5 and int(ember.tensor(7)) == 7
    assert [10, 20, 30][ember.tensor(1)] == 20


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_pickle_round_trip(dtype):
    t = ember.arange(6).reshape(2, 3).to(dtype).t()
    u = pickle.loads(pickle.dumps(t))
    assert u.dtype == dtype and u.shape == t.shape
    assert to_np(u).tolist() == to_np(t).tolist()


def test_repr_like_pytorch():
    assert repr(ember.tensor([1.0, 2.5])) == "tensor([1.0000, 2.5000])"
    assert repr(ember.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(ember.tensor([[1, 2], [3, 4]])) == "tensor([[1, 2],\n        [3, 4]])"
    assert repr(ember.tensor([1, 2], dtype=ember.int32)) == "tensor([1, 2], dtype=ember.int32)"
    assert repr(ember.tensor(True)) == "tensor(True)"
    assert repr(ember.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(ember.tensor([1e-5, 1.0])) == "tensor([1.0000e-05, 1.0000e+00])"
    assert "..." in repr(ember.zeros(2000))
    assert repr(ember.tensor([float("nan"), float("inf")])) == "tensor([nan, inf])"


def test_creation_ops():
    assert ember.zeros(2, 3).shape == (2, 3) and ember.zeros((2, 3)).shape == (2, 3)
    assert ember.ones([2]).tolist() == [1.0, 1.0]
    assert ember.full((2,), 7).dtype == ember.int64 and ember.full((2,), 7.0).dtype == ember.float32
    assert ember.arange(5).tolist() == [0, 1, 2, 3, 4] and ember.arange(0, 1, 0.25).dtype == ember.float32
    np.testing.assert_allclose(ember.arange(1, 2.5, 0.5).numpy(), np.arange(1, 2.5, 0.5))
    np.testing.assert_allclose(ember.linspace(-1, 1, 7).numpy(), np.linspace(-1, 1, 7), rtol=1e-6)
    assert ember.linspace(0, 1, 1).tolist() == [0.0] and ember.linspace(0, 1, 0).numel() == 0
    np.testing.assert_allclose(ember.logspace(0, 3, 4).numpy(), [1, 10, 100, 1000], rtol=1e-6)
    np.testing.assert_array_equal(ember.eye(2, 3).numpy(), np.eye(2, 3))
    x = ember.arange(6).reshape(2, 3)
    assert ember.zeros_like(x).dtype == ember.int64 and ember.ones_like(x, dtype=ember.float16).dtype == ember.float16
    assert ember.full_like(x, 3).tolist() == [[3, 3, 3], [3, 3, 3]]
    assert ember.empty(0).numel() == 0 and ember.zeros(2, 0, 3).shape == (2, 0, 3)


def test_creation_errors():
    with pytest.raises(RuntimeError, match="negative dimension"):
        ember.zeros(-1, 2)
    with pytest.raises(TypeError, match="size"):
        ember.zeros(2.5)
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        ember.arange(0, 1, 0)
    with pytest.raises(RuntimeError, match="upper bound"):
        ember.arange(5, 0, 1)
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.linspace(0, 1, -1)
    with pytest.raises(RuntimeError, match="without overflow"):
        ember.full((2,), float("nan"), dtype=ember.int32)
    with pytest.raises(TypeError, match="dtype"):
        ember.zeros(2, dtype="float32")
    with pytest.raises(RuntimeError, match="cuda:0 is not available"):
        ember.zeros(2, device="cuda")


def test_to_and_casts():
    x = ember.tensor([1.7, -2.7, 0.0])
    assert x.to(ember.int32).tolist() == [1, -2, 0]
    assert x.to(ember.bool).tolist() == [True, True, False]
    assert x.double().dtype == ember.float64 and x.half().dtype == ember.float16
    assert x.to("cpu") is x and x.to(ember.float32) is x
    assert ember.tensor([0.1]).bfloat16().float().item() == pytest.approx(0.10009765625)
    assert ember.tensor([300]).to(ember.uint8).tolist() == [44]


def test_threads_and_devices():
    n = ember.get_num_threads()
    ember.set_num_threads(1)
    assert ember.get_num_threads() == 1
    ember.set_num_threads(n)
    with pytest.raises(RuntimeError, match="positive"):
        ember.set_num_threads(0)
    assert ember.device("cuda:1").index == 1 and str(ember.device("cpu")) == "cpu"
    assert ember.zeros(1).device == ember.device("cpu")
    with pytest.raises(RuntimeError, match="Expected one of"):
        ember.device("tpu")
