"""ember.safetensors: the format checked byte by byte, round trips, refusals, and parity with the
`safetensors` package where it is installed."""
import json
import struct

import numpy as np
import pytest

import ember
from ember import safetensors as st

DTYPES = {ember.bool: "BOOL", ember.uint8: "U8", ember.int8: "I8", ember.int16: "I16", ember.int32: "I32",
          ember.int64: "I64", ember.float16: "F16", ember.bfloat16: "BF16", ember.float32: "F32",
          ember.float64: "F64"}


def split(data):
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:], n


def values(t):
    return np.asarray(t.float() if t.dtype == ember.bfloat16 else t)


def test_header_and_bytes_by_hand():
    data = st.save({"b": ember.tensor([True, False]), "a": ember.tensor([[1, 2], [3, 4]], dtype=ember.int16),
                    "s": ember.tensor(1.5)}, metadata={"format": "pt"})
    header, body, n = split(data)
    assert n % 8 == 0 and data[8:8 + n].decode().endswith(("}", " "))
    # Larger dtypes first, then by name; offsets are into the bytes after the header.
    assert header == {
        "__metadata__": {"format": "pt"},
        "s": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]},
        "a": {"dtype": "I16", "shape": [2, 2], "data_offsets": [4, 12]},
        "b": {"dtype": "BOOL", "shape": [2], "data_offsets": [12, 14]},
    }
    assert body == struct.pack("<f", 1.5) + struct.pack("<4h", 1, 2, 3, 4) + b"\x01\x00"


def test_round_trip_every_dtype(tmp_path):
    tensors = {d.name: ember.arange(-3, 3).reshape(2, 3).to(d) for d in DTYPES}
    tensors["scalar"], tensors["empty"] = ember.tensor(7.0, dtype=ember.float64), ember.zeros(0, 5)
    path = tmp_path / "m.safetensors"
    st.save_file(tensors, path, metadata={"k": "v"})
    header, _, _ = split(path.read_bytes())
    assert header["__metadata__"] == {"k": "v"} and header["bfloat16"]["dtype"] == "BF16"
    for loaded in (st.load_file(path), st.load(st.save(tensors)), st.load(bytearray(path.read_bytes()))):
        assert set(loaded) == set(tensors)
        for name, t in tensors.items():
            got = loaded[name]
            assert got.dtype == t.dtype and got.shape == t.shape and got.is_contiguous()
            np.testing.assert_array_equal(values(got), values(t))
    assert list(st.load_file(path))[:2] == ["int64", "float64"]  # file order: the crate's dtype order, descending


def test_loaded_tensors_own_their_memory(tmp_path):
    path = tmp_path / "m.safetensors"
    st.save_file({"a": ember.ones(3), "b": ember.ones(3)}, path)
    r = st.load_file(path)
    r["a"].add_(1)
    assert r["b"].tolist() == [1.0, 1.0, 1.0] and not r["a"]._same_storage(r["b"])


def test_refusals(tmp_path):
    x = ember.arange(6.0).reshape(2, 3)
    with pytest.raises(ValueError, match="non contiguous"):
        st.save({"t": x.t()})
    with pytest.raises(RuntimeError, match="share memory"):
        st.save({"x": x, "row": x[1]})
    with pytest.raises(TypeError, match="metadata"):
        st.save({"x": x}, metadata={"n": 1})
    with pytest.raises(TypeError, match="dict"):
        st.save([("x", x)])
    with pytest.raises(ValueError, match="expected ember.Tensor"):
        st.save({"x": [1, 2]})
    with pytest.raises(RuntimeError, match="cuda"):
        st.load_file(tmp_path / "x", device="cuda")
    with pytest.raises(FileNotFoundError) as e:
        st.load_file(tmp_path / "missing.safetensors")
    assert "missing.safetensors" in str(e.value)


def test_malformed_data_raises_safetensor_error():
    good = st.save({"x": ember.ones(4)})
    for bad in (good[:4], good[:-1], good + b"\x00", struct.pack("<Q", 1 << 40) + good[8:], good[:8] + b"[" + good[9:]):
        with pytest.raises(st.SafetensorError):
            st.load(bad)
    header = json.dumps({"x": {"dtype": "U16", "shape": [1], "data_offsets": [0, 2]}}).encode()
    with pytest.raises(NotImplementedError, match="U16"):
        st.load(struct.pack("<Q", len(header)) + header + b"\x00\x00")
    lying = json.dumps({"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 4]}}).encode()
    with pytest.raises(st.SafetensorError):
        st.load(struct.pack("<Q", len(lying)) + lying + bytes(4))


def test_parity_with_the_safetensors_package(tmp_path):
    sn = pytest.importorskip("safetensors.numpy")
    arrays = {"f": np.arange(6, dtype=np.float32).reshape(2, 3), "i": np.array([1, -2], dtype=np.int64)}
    ours = {k: ember.from_numpy(v) for k, v in arrays.items()}
    assert st.save(ours, metadata={"m": "1"}) == sn.save(arrays, metadata={"m": "1"})
    path = tmp_path / "p.safetensors"
    sn.save_file(arrays, path)
    for k, v in st.load_file(path).items():
        np.testing.assert_array_equal(np.asarray(v), arrays[k])
