"""ember.save / ember.load: PyTorch checkpoints read without PyTorch (fixtures written by
`fixtures/make_pth_fixtures.py`), round trips, torch.load of ember's files, and refusals."""
import collections
import io
import os
import pickle
import struct
import zipfile

import numpy as np
import pytest

import ember
from ember.serialization import _zip

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
DTYPES = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64,
          ember.float16, ember.bfloat16, ember.float32, ember.float64]


def values(t):
    t = t.detach()
    return np.asarray(t.float() if t.dtype == ember.bfloat16 else t)


def flatten(obj, prefix=""):
    if isinstance(obj, ember.Tensor):
        yield prefix, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from flatten(v, f"{prefix}/{k}" if prefix else k)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from flatten(v, f"{prefix}/{i}")


def sample(dtype):
    base = ember.arange(-6, 6).reshape(3, 4)
    if dtype == ember.bool:
        return base % 3 == 0
    return (base + 6 if dtype == ember.uint8 else base).to(dtype)


# ---- checkpoints written by PyTorch ----

@pytest.fixture(scope="module", params=["zip", "legacy"])
def torch_checkpoint(request):
    return ember.load(os.path.join(FIXTURES, f"torch_{request.param}.pth"))


def test_torch_fixture_values_match_expected(torch_checkpoint):
    expected = np.load(os.path.join(FIXTURES, "torch_expected.npz"))
    got = dict(flatten(torch_checkpoint))
    assert sorted(got) == sorted(expected.files)
    for key, t in got.items():
        np.testing.assert_array_equal(values(t), expected[key], err_msg=key)
        assert values(t).dtype == expected[key].dtype, key


def test_torch_fixture_every_dtype(torch_checkpoint):
    for d in DTYPES:
        t = torch_checkpoint["dtypes"][d.name]
        assert t.dtype == d and t.shape == (3, 4)
        np.testing.assert_array_equal(values(t), values(sample(d)))


def test_torch_fixture_views_share_one_storage(torch_checkpoint):
    v = torch_checkpoint["views"]
    base, t, strided, row = v["base"], v["t"], v["strided"], v["row"]
    assert all(base._same_storage(x) for x in (t, strided, row))
    assert (t.stride(), strided.stride(), strided.storage_offset(), row.storage_offset()) == ((1, 6), (6, 2), 6, 12)
    assert not t.is_contiguous()
    base[2, 0] = -1.0  # one storage: the write shows through every view
    assert t[0, 2].item() == strided[1, 0].item() == row[0].item() == -1.0
    assert torch_checkpoint["expanded"].stride() == (0, 1)


def test_torch_fixture_shapes_and_grads(torch_checkpoint):
    c = torch_checkpoint
    assert c["scalar_f"].shape == () and c["scalar_f"].item() == 3.5
    assert c["scalar_i"].dtype == ember.int64 and c["scalar_i"].item() == -7
    assert c["empty"].shape == (0, 3)
    assert c["param"].requires_grad and c["param"].is_leaf
    assert not c["frozen"].requires_grad
    assert c["needs_grad"].requires_grad


def test_torch_fixture_state_dict_and_containers(torch_checkpoint):
    sd = torch_checkpoint["state_dict"]
    assert type(sd) is collections.OrderedDict
    assert list(sd) == ["scale", "fc.weight", "fc.bias", "bn.weight", "bn.bias", "bn.running_mean",
                        "bn.running_var", "bn.num_batches_tracked"]
    assert sd._metadata == {"": {"version": 1}, "fc": {"version": 1}, "bn": {"version": 2}}
    assert sd["bn.num_batches_tracked"].dtype == ember.int64 and sd["bn.num_batches_tracked"].item() == 1
    assert not any(t.requires_grad for t in sd.values())
    n = torch_checkpoint["nested"]
    assert n["list"] == [1, 2.5, "three", None, True, (4, [5])]
    assert n["tuple"][1] == "x" and n["tuple"][0].tolist() == [1, 2]
    assert type(n["size"]) is ember.Size and n["size"] == (2, 3)
    assert n["dtype"] is ember.bfloat16 and n["device"] == ember.device("cpu")
    assert n["bytes"] == b"\x00\xffraw"


def test_parameters_go_through_nn_parameter_when_it_exists(monkeypatch):
    made = []

    class Recorder:
        def __init__(self, data, requires_grad):
            made.append(self)
            self.data, self.requires_grad = data, requires_grad

    monkeypatch.setattr(ember.nn, "Parameter", Recorder, raising=False)
    c = ember.load(os.path.join(FIXTURES, "torch_zip.pth"))
    assert isinstance(c["param"], Recorder) and c["param"].requires_grad and len(made) == 2
    assert c["param"].data.tolist() == [0.0, 1.0, 2.0, 3.0] and not c["frozen"].requires_grad


# ---- round trips ----

def rich_object():
    base = ember.arange(24.0).reshape(4, 6)
    return {
        "dtypes": {d.name: sample(d) for d in DTYPES},
        "base": base, "t": base.t(), "strided": base[1:3, ::2], "flipped": base.flip(1),
        "scalar": ember.tensor(2.5), "empty": ember.zeros(0, 2, dtype=ember.int32),
        "grad": ember.ones(3, requires_grad=True),
        "od": collections.OrderedDict(w=ember.ones(2), b=ember.zeros(1)),
        "misc": [1, 2.5, "s", None, True, (3, 4), {"k": b"bytes"}, ember.Size([2, 3]), ember.float16,
                 ember.device("cpu"), {1, 2}],
    }


def check_rich(r):
    src = rich_object()
    for (k, a), (k2, b) in zip(flatten(src), flatten(r)):
        assert k == k2 and a.dtype == b.dtype and a.shape == b.shape, k
        np.testing.assert_array_equal(values(a), values(b), err_msg=k)
    assert r["base"]._same_storage(r["t"]) and r["base"]._same_storage(r["strided"])
    assert (r["t"].stride(), r["strided"].stride(), r["strided"].storage_offset()) == ((1, 6), (6, 2), 6)
    assert r["grad"].requires_grad and r["grad"].is_leaf and not r["base"].requires_grad
    assert type(r["od"]) is collections.OrderedDict and list(r["od"]) == ["w", "b"]
    assert r["misc"][:7] == src["misc"][:7] and r["misc"][10] == {1, 2}
    assert type(r["misc"][7]) is ember.Size and r["misc"][8] is ember.float16 and r["misc"][9] == ember.device("cpu")


@pytest.mark.parametrize("zip_format", [True, False])
def test_round_trip_path_and_buffer(tmp_path, zip_format):
    path = tmp_path / "obj.pt"
    ember.save(rich_object(), path, _use_new_zipfile_serialization=zip_format)
    check_rich(ember.load(path))
    buf = io.BytesIO()
    ember.save(rich_object(), buf, _use_new_zipfile_serialization=zip_format)
    buf.seek(0)
    check_rich(ember.load(buf))


@pytest.mark.parametrize("dtype", [ember.complex64, ember.complex128])
def test_complex_round_trip_and_torch_reads_it(tmp_path, dtype):
    z = ember.tensor([1 + 2j, -3.5 - 4j, 0.25j], dtype=dtype)
    ember.save({"z": z}, tmp_path / "z.pt")
    back = ember.load(tmp_path / "z.pt")["z"]
    assert back.dtype == dtype and back.tolist() == z.tolist()
    torch = pytest.importorskip("torch")
    assert torch.load(tmp_path / "z.pt")["z"].tolist() == z.tolist()


def test_tensor_and_same_object_twice(tmp_path):
    t = ember.arange(5)
    ember.save([t, t], tmp_path / "t.pt")
    a, b = ember.load(tmp_path / "t.pt")
    assert a is b and a.tolist() == [0, 1, 2, 3, 4]


def test_mmap_loads_copy_on_write(tmp_path):
    path = tmp_path / "m.pt"
    ember.save({"w": ember.arange(6.0).reshape(2, 3), "d": ember.arange(4, dtype=ember.float64)}, path)
    before = path.read_bytes()
    r = ember.load(path, mmap=True)
    assert r["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and r["d"].tolist() == [0.0, 1.0, 2.0, 3.0]
    r["w"].add_(1.0)
    assert r["w"][0, 0].item() == 1.0 and path.read_bytes() == before
    with pytest.raises(ValueError, match="mmap"):
        ember.load(io.BytesIO(before), mmap=True)
    legacy = tmp_path / "l.pt"
    ember.save({"w": ember.ones(1)}, legacy, _use_new_zipfile_serialization=False)
    with pytest.raises(RuntimeError, match="mmap can only be used"):
        ember.load(legacy, mmap=True)


def test_map_location_forms(tmp_path):
    path = tmp_path / "m.pt"
    ember.save({"w": ember.ones(2)}, path)
    for loc in ("cpu", ember.device("cpu"), {"cpu": "cpu"}, lambda storage, location: storage, lambda s, loc: None):
        assert ember.load(path, map_location=loc)["w"].tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="cuda:0 is not available"):
        ember.load(path, map_location="cuda")
    with pytest.raises(TypeError, match="map_location"):
        ember.load(path, map_location=3)


def test_checkpoint_saved_on_another_device_needs_map_location(tmp_path):
    buf = io.BytesIO()
    ember.save({"w": ember.ones(2)}, buf)
    pkl_location = b"X\x03\x00\x00\x00cpu"
    z = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as w:
        for name in z.namelist():
            data = z.read(name)
            w.writestr(name, data.replace(pkl_location, b"X\x03\x00\x00\x00mps") if name.endswith("data.pkl") else data)
    path = tmp_path / "mps.pt"
    path.write_bytes(out.getvalue())
    with pytest.raises(RuntimeError, match="map_location='cpu'"):
        ember.load(path)
    assert ember.load(path, map_location="cpu")["w"].tolist() == [1.0, 1.0]
    assert ember.load(path, map_location={"mps": "cpu"})["w"].tolist() == [1.0, 1.0]


# ---- the zip container ----

def test_zip_records_are_64_byte_aligned(tmp_path):
    path = tmp_path / "a.pt"
    ember.save({"a": ember.ones(3), "b": ember.ones(5, dtype=ember.int8), "c": ember.zeros(2, 2)}, path)
    raw = path.read_bytes()
    z = zipfile.ZipFile(path)
    assert z.testzip() is None
    names = z.namelist()
    assert names[0] == "archive/data.pkl" and names[-1] == "archive/version" and "archive/data/2" in names
    for info in z.infolist():
        name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26: info.header_offset + 30])
        assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0, info.filename
    assert z.read("archive/byteorder") == b"little" and z.read("archive/version") == b"3\n"


def test_zip64_fields_when_sizes_are_large(tmp_path, monkeypatch):
    monkeypatch.setattr(_zip, "_ZIP64_LIMIT", 16)  # every record and offset above it takes zip64 fields
    path = tmp_path / "z64.pt"
    ember.save({"w": ember.arange(10.0), "i": ember.arange(3)}, path)
    z = zipfile.ZipFile(path)
    assert z.testzip() is None and z.getinfo("archive/data/0").file_size == 40
    r = ember.load(path)
    assert r["w"].tolist() == list(map(float, range(10))) and r["i"].tolist() == [0, 1, 2]


# ---- PyTorch reads what ember.save wrote ----

@pytest.mark.parametrize("zip_format", [True, False])
def test_torch_loads_ember_checkpoints(tmp_path, zip_format):
    torch = pytest.importorskip("torch")
    obj = rich_object()
    path = tmp_path / "e.pt"
    ember.save(obj, path, _use_new_zipfile_serialization=zip_format)
    r = torch.load(path, weights_only=True)
    for (k, a), (_, b) in zip(flatten(obj), ((k, v) for k, v in flatten_torch(r))):
        assert str(b.dtype) == f"torch.{a.dtype.name}" and tuple(b.shape) == tuple(a.shape), k
        np.testing.assert_array_equal(values(a), (b.detach().float() if b.dtype == torch.bfloat16 else b.detach()).numpy())
    assert r["base"].untyped_storage().data_ptr() == r["t"].untyped_storage().data_ptr()
    assert r["strided"].stride() == (6, 2) and r["strided"].storage_offset() == 6
    assert r["grad"].requires_grad and r["misc"][7] == torch.Size([2, 3]) and r["misc"][8] is torch.float16
    assert isinstance(r["od"], collections.OrderedDict)


def flatten_torch(obj, prefix=""):
    import torch

    if isinstance(obj, torch.Tensor):
        yield prefix, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from flatten_torch(v, f"{prefix}/{k}" if prefix else k)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from flatten_torch(v, f"{prefix}/{i}")


@pytest.mark.skipif(not hasattr(ember.nn, "Parameter"), reason="ember.nn.Parameter does not exist yet")
def test_parameters_round_trip(tmp_path):
    p = ember.nn.Parameter(ember.arange(3.0))
    ember.save({"p": p}, tmp_path / "p.pt")
    assert isinstance(ember.load(tmp_path / "p.pt")["p"], ember.nn.Parameter)


# ---- refusals and damaged files ----

def zip_with_pickle(data_pkl):
    buf = io.BytesIO()
    w = _zip.ZipWriter(buf)
    w.write_record("archive/data.pkl", data_pkl)
    w.write_record("archive/version", b"3\n")
    w.close()
    return buf.getvalue()


MALICIOUS = b"\x80\x02cos\nsystem\nq\x00X\x14\x00\x00\x00touch /tmp/ember-pwn\x85R."


@pytest.mark.parametrize("wrap", ["zip", "legacy"])
def test_foreign_globals_are_refused_by_name(tmp_path, wrap):
    path = tmp_path / "evil.pt"
    if wrap == "zip":
        path.write_bytes(zip_with_pickle(MALICIOUS))
    else:
        head = b"".join(pickle.dumps(x, protocol=2) for x in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}))
        path.write_bytes(head + MALICIOUS + pickle.dumps([], protocol=2))
    with pytest.raises(pickle.UnpicklingError, match=r"os\.system") as e:
        ember.load(path)
    assert str(path) in str(e.value)
    assert not os.path.exists("/tmp/ember-pwn")


def test_weights_only_false_trusts_the_file(tmp_path):
    import fractions

    path = tmp_path / "f.pt"
    path.write_bytes(zip_with_pickle(pickle.dumps({"f": fractions.Fraction(1, 3)}, protocol=2)))
    with pytest.raises(pickle.UnpicklingError, match=r"fractions\.Fraction"):
        ember.load(path)
    assert ember.load(path, weights_only=False) == {"f": fractions.Fraction(1, 3)}
    with pytest.raises(RuntimeError, match="pickle_module"):
        ember.load(path, pickle_module=pickle)


@pytest.mark.parametrize("zip_format", [True, False])
def test_truncated_files_name_the_file(tmp_path, zip_format):
    path = tmp_path / "t.pt"
    ember.save({"w": ember.arange(1000.0)}, path, _use_new_zipfile_serialization=zip_format)
    raw = path.read_bytes()
    for cut in (len(raw) - 3, len(raw) // 2, 40, 3):
        path.write_bytes(raw[:cut])
        with pytest.raises((RuntimeError, pickle.UnpicklingError), match=str(path)):
            ember.load(path)


def test_corrupt_storage_bytes_fail_the_crc(tmp_path):
    path = tmp_path / "c.pt"
    ember.save({"w": ember.arange(100.0)}, path)
    raw = bytearray(path.read_bytes())
    info = zipfile.ZipFile(path).getinfo("archive/data/0")
    name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26: info.header_offset + 30])
    raw[info.header_offset + 30 + name_len + extra_len + 5] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(RuntimeError, match=f"{path}.*CRC"):
        ember.load(path)


def test_layouts_outside_their_storage_are_refused(tmp_path):
    # A 4-element storage claimed by a (3, 3) tensor.
    pid = b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x04tQ"
    pkl = b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(" + pid + b"K\x00K\x03K\x03\x86K\x03K\x01\x86\x89}tR."
    buf = io.BytesIO()
    w = _zip.ZipWriter(buf)
    w.write_record("archive/data.pkl", pkl)
    w.write_record("archive/data/0", bytes(16))
    w.close()
    path = tmp_path / "oob.pt"
    path.write_bytes(buf.getvalue())
    with pytest.raises(pickle.UnpicklingError, match="does not fit its storage"):
        ember.load(path)


def test_not_a_checkpoint(tmp_path):
    path = tmp_path / "x.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("hello.txt", "hi")
    with pytest.raises(RuntimeError, match="no data.pkl"):
        ember.load(path)
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint at all")
    with pytest.raises((RuntimeError, pickle.UnpicklingError), match="junk.pt"):
        ember.load(junk)
    with pytest.raises(FileNotFoundError):
        ember.load(tmp_path / "missing.pt")
    with pytest.raises(AttributeError, match="write"):
        ember.save(ember.ones(1), 42)


@pytest.mark.parametrize("target", [b"ctorch\nTensor\n", b"ctorch._utils\n_rebuild_tensor_v2\n", b"ctorch\nFloatStorage\n",
                                    b"ctorch\nSize\n", b"ctorch\nfloat32\n"])
def test_build_cannot_change_shared_objects(tmp_path, target):
    # BUILD with (None, {"abs": 1}): setattr(target, "abs", 1) on an object every load shares.
    path = tmp_path / "build.pt"
    path.write_bytes(zip_with_pickle(b"\x80\x02" + target + b"N}X\x03\x00\x00\x00absK\x01s\x86b."))
    with pytest.raises(pickle.UnpicklingError, match=str(path)):
        ember.load(path)
    assert callable(ember.Tensor.abs) and not hasattr(ember.float32, "abs") and not hasattr(ember.Size, "abs")


def test_storage_sizes_beyond_the_file_are_refused_before_allocating(tmp_path):
    # A legacy pickle whose storage claims 2**50 floats, in a file of a few hundred bytes.
    pid = b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpu\x8a\x07\x00\x00\x00\x00\x00\x00\x04NtQ"
    pkl = b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(" + pid + b"K\x00K\x01\x85K\x01\x85\x89}tR."
    head = b"".join(pickle.dumps(x, protocol=2) for x in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}))
    path = tmp_path / "huge.pt"
    path.write_bytes(head + pkl + pickle.dumps(["0"], protocol=2))
    with pytest.raises(RuntimeError, match="more than the file holds"):
        ember.load(path)
