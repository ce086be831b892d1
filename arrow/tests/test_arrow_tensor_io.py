import ember
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import emberarrow as ta
from emberarrow import functional as F
import emberarrow.dtypes as dt
from emberarrow import tensor_conversion as tc


def test_default_conversions():
    df = ta.dataframe({
        "a": [1, 2, 3],
        "b": ta.column([1.5, None, 2.0], dt.Float64(True)),
        "l": [[1, 2], [3], []],
        "m": [{"x": 1}, {}, {"y": 2, "z": 3}],
        "s": ["p", "q", "r"],
    })
    out = df.to_tensor()
    assert out.a.tolist() == [1, 2, 3] and str(out.a.dtype) == "ember.int64"
    assert isinstance(out.b, tc.WithPresence)
    assert out.b.values.tolist() == [1.5, 0.0, 2.0]  # a null slot is 0, never left-over memory
    assert out.b.presence.tolist() == [True, False, True]
    assert out.l.offsets.tolist() == [0, 2, 3, 3] and out.l.values.tolist() == [1, 2, 3]
    assert out.m.offsets.tolist() == [0, 1, 1, 3] and out.m.keys == ["x", "y", "z"] and out.m.values.tolist() == [1, 2, 3]
    assert out.s == ["p", "q", "r"]


def test_zero_copy_from_arrow_buffers():
    col = ta.column(list(range(10)))
    tensor = col.to_tensor()
    assert tensor.data_ptr() == col.to_arrow().buffers()[1].address
    sliced = ta.from_arrow(pa.array(np.arange(10, dtype=np.int32)).slice(3, 4))
    assert sliced.to_tensor().tolist() == [3, 4, 5, 6]


def test_sliced_lists_are_rebased():
    col = ta.from_arrow(pa.array([[9, 9], [1], [2, 3]]).slice(1))
    packed = col.to_tensor()
    assert packed.offsets.tolist() == [0, 1, 3] and packed.values.tolist() == [1, 2, 3]


def test_per_column_conversions_and_callables():
    df = ta.dataframe({"ids": [[1, 2, 3], [4]], "n": [5, 6]})
    out = df.to_tensor({"ids": tc.PadSequence(padding_value=-1)})
    assert out.ids.tolist() == [[1, 2, 3], [4, -1, -1]] and out.n.tolist() == [5, 6]
    assert df["ids"].to_tensor(tc.PadSequence(batch_first=False)).tolist() == [[1, 4], [2, 0], [3, 0]]
    assert df.to_tensor(lambda frame: len(frame)) == 2
    with pytest.raises(KeyError, match="nope"):
        df.to_tensor({"nope": tc.PadSequence()})
    with pytest.raises(ValueError, match="nulls"):
        ta.column([[1], None]).to_tensor(tc.PadSequence())


def test_dense():
    df = ta.dataframe({"a": ta.column([1.0, None, 3.0], dt.Float32(True)), "b": ta.column([4.0, 5.0, 6.0], dt.float32)})
    dense = df.to_tensor(tc.Dense())
    assert dense.tolist() == [[1.0, 0.0, 3.0], [4.0, 5.0, 6.0]]  # TorchArrow copied the null slot raw
    present = df.to_tensor(tc.Dense(batch_first=True, with_presence=True))
    assert present.values.tolist() == [[1.0, 4.0], [0.0, 5.0], [3.0, 6.0]]
    assert present.presence.tolist() == [[True, True], [False, True], [True, True]]
    with pytest.raises(TypeError, match="not numerical"):
        ta.dataframe({"s": ["x"]}).to_tensor(tc.Dense())


def test_dense_fill_and_log_in_one_pass():
    # Sliced at an offset that is not a whole byte of the validity bitmap.
    counts = ta.from_arrow(pa.array([9, 9, 9, 1, None, 3, None, 40], type=pa.int32()).slice(3))
    df = ta.dataframe({"a": counts, "b": ta.column([0.5, 1.0, 2.0, 4.0, 8.0], dt.float32), "c": ta.column([10, None, 30, 40, 50], dt.Int64(True))})
    fused = df.to_tensor(tc.Dense(batch_first=True, fill_null=2, log_offset=3))
    stepwise = (df.fill_null(2) + 3).log().to_tensor(tc.Dense(batch_first=True))
    assert fused.dtype == stepwise.dtype == ember.float32 and fused.shape == (5, 3)
    assert np.allclose(fused.numpy(), stepwise.numpy(), rtol=1e-6, atol=0)
    assert df.to_tensor(tc.Dense(fill_null=-1)).tolist()[0] == [1.0, -1.0, 3.0, -1.0, 40.0]
    wide = ta.dataframe({"x": ta.column([1.0, None], dt.Float64(True)), "n": ta.column([1, 2], dt.int32)})
    assert wide.to_tensor(tc.Dense(log_offset=1)).dtype == ember.float64
    exact = ta.dataframe({"x": ta.column([2**60 + 1, None], dt.Int64(True)), "y": ta.column([1, 2], dt.int8)})
    block = exact.to_tensor(tc.Dense(batch_first=True, fill_null=7))
    assert block.dtype == ember.int64 and block.tolist() == [[2**60 + 1, 1], [7, 2]]  # integers stay exact
    empty = ta.dataframe({"a": ta.column([], dt.float32), "b": ta.column([], dt.int64)})
    assert empty.to_tensor(tc.Dense(batch_first=True, log_offset=1)).shape == (0, 2)
    with pytest.raises(TypeError, match="log_offset"):
        tc.Dense(log_offset="3")
    with pytest.raises(TypeError, match="fill_null"):
        tc.Dense(fill_null=None)


def test_transform_with_tensors():
    col = ta.column([1, 2, 3])
    assert list(col.transform(lambda t: t * 2, format="torch")) == [2, 4, 6]


def test_parquet_and_csv(tmp_path):
    table = pa.table({"a": [1, 2, None, 4], "s": ["w", "x", "y", "z"], "l": [[1], [], [2, 3], None]})
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=2)
    df = ta.read_parquet(path)
    assert df.to_pylist() == ta.from_arrow(table).to_pylist()
    assert ta.read_parquet(path, columns=["s"]).columns == ["s"]
    csv = tmp_path / "t.csv"
    csv.write_text("a,b\n1,x\n,y\n3,z\n")
    frame = ta.read_csv(csv)
    assert list(frame["a"]) == [1, None, 3] and list(frame["b"]) == ["x", "y", "z"]
    typed = ta.read_csv(csv, dtype=dt.Struct([dt.Field("a", dt.Float64(True)), dt.Field("b", dt.string)]))
    assert typed["a"].dtype == dt.Float64(True)
    with pytest.raises(FileNotFoundError):
        ta.read_parquet(tmp_path / "missing.parquet")


def test_emberdata_pipes(tmp_path):
    from emberdata.datapipes.iter import IterableWrapper

    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"v": list(range(5))}), path, row_group_size=2)
    frames = list(IterableWrapper([str(path)]).load_parquet_as_df(columns=["v"]))
    assert [list(f["v"]) for f in frames] == [[0, 1], [2, 3], [4]]
    rows = IterableWrapper([(i, str(i)) for i in range(5)])
    made = list(rows.dataframe(dataframe_size=2, columns=["n", "s"]))
    assert [len(f) for f in made] == [2, 2, 1] and made[2][0] == (4, "4")
    typed = list(rows.dataframe(dtype_generator=lambda: dt.Struct([dt.Field("n", dt.int32), dt.Field("s", dt.string)])))
    assert typed[0].dtype.get("n") == dt.int32


def test_emberdata_does_not_import_pyarrow():
    import subprocess
    import sys

    code = "import sys, emberdata, emberdata.datapipes.iter; print('pyarrow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _hash_to_tensors(df):
    from emberarrow import functional

    df["h"] = functional.sigrid_hash(df["v"], 0, 100)
    return df.to_tensor()


def test_dataloader_workers_preprocess_frames():
    from emberdata import DataLoader
    from emberdata.datapipes.iter import IterableWrapper

    pipe = IterableWrapper([(i, [i]) for i in range(40)]).dataframe(dataframe_size=10, columns=["v", "l"])
    out = list(DataLoader(pipe.sharding_filter().map(_hash_to_tensors), batch_size=None, num_workers=2))
    assert sorted(int(batch.v[0]) for batch in out) == [0, 10, 20, 30]
    first = next(b for b in out if int(b.v[0]) == 0)
    assert first.h.values.tolist() == [6, 60, 54, 54, 9, 4, 91, 11, 67, 79]  # TorchArrow's vector for 0..9


def test_frames_cross_process_boundaries():
    import multiprocessing as mp

    df = ta.dataframe({"a": [1, None], "l": [[1], [2, 3]]})
    with mp.get_context("spawn").Pool(1) as pool:
        assert pool.apply(_row_count, (df,)) == 2


def _row_count(frame):
    return len(frame) if frame.to_pylist()[1].l == [2, 3] else -1


def test_key_major_jagged():
    sparse = ta.dataframe({
        "a": ta.column([[1, 2], None, [3]], dt.List(dt.int64, True)),
        "b": ta.column([[10], [20, 30], []], dt.List(dt.int32)),
    })
    parts = sparse.to_tensor(tc.KeyMajorJagged())
    assert parts.keys == ["a", "b"]
    assert parts.values.tolist() == [1, 2, 3, 10, 20, 30]  # all of key a, then all of key b
    assert parts.lengths.tolist() == [2, 0, 1, 1, 2, 0]
    big = ta.dataframe({"k": ta.from_arrow(pa.ListArray.from_arrays(np.arange(0, 400_001, 2, dtype=np.int32), pa.array(np.arange(400_000))))})
    assert np.array_equal(big.to_tensor(tc.KeyMajorJagged()).values.numpy(), np.arange(400_000))
    with pytest.raises(TypeError, match="expected lists of integer ids"):
        ta.dataframe({"s": [["x"]]}).to_tensor(tc.KeyMajorJagged())
    with pytest.raises(ValueError, match="null ids"):
        ta.dataframe({"a": ta.column([[1, None]])}).to_tensor(tc.KeyMajorJagged())


def test_key_major_jagged_applies_the_examples_steps_while_writing():
    lists = pa.array([[1], [1, 2, 3], None, [], [4, 5], [6]], type=pa.list_(pa.int64())).slice(1)
    ids = pa.array([0, 7, None, 8, None, 9], type=pa.int32()).slice(1)
    df = ta.dataframe({"lists": ta.from_arrow(lists), "ids": ta.from_arrow(ids)})
    fused = df.to_tensor(tc.KeyMajorJagged(fill_null=0, sigrid_hash=(5, 1000), firstx=1))
    # The same steps one column at a time, as TorchRec's example writes them.
    hashed_lists = F.firstx(F.sigrid_hash(df["lists"], 5, 1000), 1)
    hashed_ids = F.firstx(F.array_constructor(F.sigrid_hash(df["ids"].fill_null(0).cast(dt.int64), 5, 1000)), 1)
    stepwise = ta.dataframe({"lists": hashed_lists, "ids": hashed_ids}).to_tensor(tc.KeyMajorJagged())
    assert fused.values.tolist() == stepwise.values.tolist()
    assert fused.lengths.tolist() == stepwise.lengths.tolist() == [1, 0, 0, 1, 1, 1, 1, 1, 1, 1]
    # Without fill_null a null id gives its row no id; without steps the ids go through as they are.
    plain = df.to_tensor(tc.KeyMajorJagged())
    assert plain.values.tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 9] and plain.lengths.tolist() == [3, 0, 0, 2, 1, 1, 0, 1, 0, 1]
    with pytest.raises(ValueError, match="larger than 0"):
        tc.KeyMajorJagged(sigrid_hash=(0, 0))
    with pytest.raises(TypeError, match="salt, max_value"):
        tc.KeyMajorJagged(sigrid_hash=5)
    with pytest.raises(ValueError, match="firstx"):
        tc.KeyMajorJagged(firstx=-1)
    with pytest.raises(TypeError, match="fill_null"):
        tc.KeyMajorJagged(fill_null=1.5)
