"""DLPack: `Tensor.__dlpack__`, `Tensor.__dlpack_device__` and `ember.from_dlpack`."""
import ctypes
import gc
import weakref

import numpy as np
import pytest

import ember

NUMPY_SHARED = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex64", "complex128"]
NUMPY_REFUSED = ["uint16", "uint32", "uint64"]


def sample(dtype_name, shape=(3, 4)):
    rng = np.random.default_rng(0)
    if dtype_name == "bool":
        return rng.random(shape) > 0.5
    if dtype_name.startswith(("int", "uint")):
        return rng.integers(0, 100, shape).astype(dtype_name)
    return rng.uniform(-5, 5, shape).astype(dtype_name)


# ---- a hand-made producer, to see exactly what the consumer does with the capsule ----


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_DLTENSOR = ctypes.create_string_buffer(b"dltensor")


class HandMadeProducer:
    """A float32 DLManagedTensor over `array` whose deleter counts its calls."""

    def __init__(self, array, strides=None, device_type=1, dtype=(2, 32, 1), byte_offset=0):
        self.array = array
        self.deleted = 0
        self.shape = (ctypes.c_int64 * array.ndim)(*array.shape)
        self.strides = None if strides is None else (ctypes.c_int64 * array.ndim)(*strides)
        self.deleter = DELETER(self._delete)
        self.managed = DLManagedTensor(
            DLTensor(
                array.ctypes.data, DLDevice(device_type, 0), array.ndim, DLDataType(*dtype),
                self.shape, self.strides, byte_offset,
            ),
            None,
            self.deleter,
        )

    def _delete(self, _managed):
        self.deleted += 1

    def capsule(self, name=_DLTENSOR):
        self.name = name  # the capsule keeps a pointer to its name
        return _capsule_new(ctypes.addressof(self.managed), name, None)


# ---- export: ember -> NumPy ----


@pytest.mark.parametrize("name", NUMPY_SHARED)
def test_numpy_reads_ember_memory_without_copy(name):
    t = ember.from_numpy(sample(name)).clone()
    a = np.from_dlpack(t)
    assert a.dtype == np.dtype(name)
    np.testing.assert_array_equal(a, t.numpy())
    assert a.ctypes.data == t.data_ptr()
    t[0, 0] = 1
    assert a[0, 0] == 1


def test_dlpack_device_is_the_cpu():
    assert ember.zeros(2).__dlpack_device__() == (1, 0)


@pytest.mark.parametrize(
    "make",
    [
        lambda t: t.T,
        lambda t: t[::2, 1::3],
        lambda t: t.flip(0),
        lambda t: t.flip((0, 1))[1:, ::2],
        lambda t: t[1, 2],
        lambda t: t[:, :0],
        lambda t: t[2:2],
        lambda t: t[:1].expand(5, 6),
    ],
    ids=["transposed", "sliced", "negative-stride", "negative-both", "0-d", "empty-cols", "empty-rows", "broadcast"],
)
def test_numpy_sees_every_layout(make):
    base = ember.arange(36, dtype=ember.float32).reshape(6, 6)
    view = make(base)
    a = np.from_dlpack(view)
    assert a.shape == tuple(view.shape)
    np.testing.assert_array_equal(a, np.asarray(view))
    if view.numel() > 0:
        assert a.ctypes.data == view.data_ptr()


def test_copy_true_exports_a_fresh_buffer():
    t = ember.ones(4)
    a = np.from_dlpack(t, copy=True)
    t.copy_(ember.zeros(4))
    np.testing.assert_array_equal(a, np.ones(4, dtype=np.float32))


def test_exported_capsule_keeps_the_storage_alive_until_numpy_frees_it():
    source = np.arange(100_000, dtype=np.float64)
    alive = weakref.ref(source)
    exported = np.from_dlpack(ember.from_numpy(source))
    del source
    gc.collect()
    assert alive() is not None
    np.testing.assert_array_equal(exported, np.arange(100_000, dtype=np.float64))
    del exported
    gc.collect()
    assert alive() is None


def test_unconsumed_capsule_releases_the_storage():
    source = np.arange(10.0)
    alive = weakref.ref(source)
    capsule = ember.from_numpy(source).__dlpack__()
    del source
    gc.collect()
    assert alive() is not None
    del capsule
    gc.collect()
    assert alive() is None


def test_export_argument_errors():
    t = ember.zeros(3)
    with pytest.raises(ValueError, match="stream must be None"):
        t.__dlpack__(stream=1)
    with pytest.raises(BufferError, match=r"dl_device must be \(1, 0\)"):
        t.__dlpack__(dl_device=(2, 0))
    assert type(t.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=False)).__name__ == "PyCapsule"


# ---- import: NumPy (and others) -> ember ----


@pytest.mark.parametrize("name", NUMPY_SHARED)
def test_from_dlpack_shares_numpy_memory(name):
    a = sample(name)
    t = ember.from_dlpack(a)
    assert t.dtype == getattr(ember, name)
    assert t.shape == a.shape
    assert t.data_ptr() == a.ctypes.data
    np.testing.assert_array_equal(t.numpy(), a)
    a[1, 1] = a[0, 0]
    assert t[1, 1].item() == a[0, 0]


@pytest.mark.parametrize("name", NUMPY_REFUSED)
def test_from_dlpack_refuses_dtypes_ember_lacks(name):
    with pytest.raises(TypeError, match="unsupported DLPack dtype"):
        ember.from_dlpack(np.zeros(3, dtype=name))


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a.T,
        lambda a: a[::2, 1::3],
        lambda a: a[::-1],
        lambda a: a[::-2, ::-1],
        lambda a: np.asarray(a[1, 2]),
        lambda a: a[:, :0],
        lambda a: a[3:3],
    ],
    ids=["transposed", "sliced", "negative-stride", "negative-both", "0-d", "empty-cols", "empty-rows"],
)
def test_from_dlpack_handles_every_numpy_layout(make):
    base = np.arange(36, dtype=np.float32).reshape(6, 6)
    a = make(base)
    t = ember.from_dlpack(a)
    assert t.shape == a.shape
    np.testing.assert_array_equal(np.asarray(t), a)
    if a.size > 0:
        assert t.data_ptr() == a.ctypes.data


def test_from_dlpack_writes_through_a_negative_stride_view():
    a = np.zeros(5, dtype=np.int64)
    t = ember.from_dlpack(a[::-1])
    t[0] = 7
    assert a[4] == 7


def test_consumer_keeps_the_producer_alive_until_it_dies():
    a = np.arange(10_000, dtype=np.float64)
    alive = weakref.ref(a)
    t = ember.from_dlpack(a)
    view = t[10:20]
    del a, t
    gc.collect()
    assert alive() is not None
    np.testing.assert_array_equal(view.numpy(), np.arange(10, 20, dtype=np.float64))
    del view
    gc.collect()
    assert alive() is None


def test_ember_round_trip_shares_storage():
    t = ember.arange(12, dtype=ember.float32).reshape(3, 4).T
    back = ember.from_dlpack(t)
    assert back.data_ptr() == t.data_ptr() and back.stride() == t.stride()
    back[0, 0] = 42
    assert t[0, 0].item() == 42


def test_bfloat16_round_trips_through_a_capsule():
    t = ember.tensor([1.5, -2.0, 3.25], dtype=ember.bfloat16)
    back = ember.from_dlpack(t.__dlpack__())
    assert back.dtype == ember.bfloat16
    assert back.tolist() == [1.5, -2.0, 3.25]


def test_raw_capsule_is_consumed_once():
    capsule = ember.arange(4).__dlpack__()
    assert ember.from_dlpack(capsule).tolist() == [0, 1, 2, 3]
    with pytest.raises(RuntimeError, match="already consumed"):
        ember.from_dlpack(capsule)


def test_producer_deleter_runs_exactly_once_when_the_last_view_dies():
    producer = HandMadeProducer(np.arange(6, dtype=np.float32).reshape(2, 3))
    capsule = producer.capsule()
    t = ember.from_dlpack(capsule)
    assert not _capsule_is_valid(capsule, b"dltensor")
    assert _capsule_is_valid(capsule, b"used_dltensor")
    view = t.T
    del t, capsule
    gc.collect()
    assert producer.deleted == 0
    assert view.tolist() == [[0, 3], [1, 4], [2, 5]]
    del view
    gc.collect()
    assert producer.deleted == 1


def test_hand_made_capsule_with_strides_and_byte_offset():
    buffer = np.arange(12, dtype=np.float32)
    producer = HandMadeProducer(buffer[:6].reshape(2, 3), strides=(1, 2), byte_offset=8)
    t = ember.from_dlpack(producer.capsule())
    assert t.tolist() == [[2, 4, 6], [3, 5, 7]]


def test_misaligned_data_is_refused():
    producer = HandMadeProducer(np.zeros(4, dtype=np.float32), byte_offset=2)
    with pytest.raises(ValueError, match="not aligned to the element size"):
        ember.from_dlpack(producer.capsule())


def test_non_cpu_capsule_is_refused_and_left_unconsumed():
    producer = HandMadeProducer(np.zeros(3, dtype=np.float32), device_type=2)
    capsule = producer.capsule()
    with pytest.raises(RuntimeError, match=r"on cuda \(device type 2"):
        ember.from_dlpack(capsule)
    assert _capsule_is_valid(capsule, b"dltensor")


def test_vector_lanes_are_refused():
    producer = HandMadeProducer(np.zeros(4, dtype=np.float32), dtype=(2, 32, 4))
    with pytest.raises(TypeError, match="lanes 4"):
        ember.from_dlpack(producer.capsule())


def test_versioned_capsule_is_refused_by_name():
    producer = HandMadeProducer(np.zeros(2, dtype=np.float32))
    with pytest.raises(TypeError, match="named 'dltensor_versioned'"):
        ember.from_dlpack(producer.capsule(ctypes.create_string_buffer(b"dltensor_versioned")))


def test_producer_on_another_device_is_refused_before_export():
    class CudaTensor:
        def __dlpack_device__(self):
            return (2, 1)

        def __dlpack__(self, stream=None):
            raise AssertionError("must not be asked for a capsule")

    with pytest.raises(RuntimeError, match=r"cuda \(device type 2, id 1\)"):
        ember.from_dlpack(CudaTensor())


def test_from_dlpack_rejects_other_objects():
    with pytest.raises(TypeError, match="expected an object with __dlpack__"):
        ember.from_dlpack([1, 2, 3])


def test_readonly_numpy_array_is_refused_by_numpy():
    a = np.zeros(3)
    a.flags.writeable = False
    with pytest.raises(BufferError):
        ember.from_dlpack(a)


# ---- PyTorch, when installed ----


def test_pytorch_round_trip():
    torch = pytest.importorskip("torch")
    t = ember.arange(12, dtype=ember.float32).reshape(3, 4)
    pt = torch.from_dlpack(t)
    assert pt.data_ptr() == t.data_ptr()
    pt[0, 0] = 5
    assert t[0, 0].item() == 5
    source = torch.arange(6, dtype=torch.bfloat16).reshape(2, 3).T
    e = ember.from_dlpack(source)
    assert e.dtype == ember.bfloat16 and e.data_ptr() == source.data_ptr()
    assert e.float().tolist() == source.float().tolist()
    del source
    gc.collect()
    assert e.float().tolist() == [[0, 3], [1, 4], [2, 5]]
