import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import emberarrow as ta
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


def test_sparse_conversions_name_the_rec_issue():
    df = ta.dataframe({"ids": [[1], [2]]})
    for conversion in (tc.KeyedJaggedTensor(), tc.JaggedSparse(weighted=False), tc.PackedSparse(weighted=True), tc.IndividualSparse(weighted=False)):
        with pytest.raises(NotImplementedError, match="issue 24"):
            df.to_tensor(conversion)


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
    with pytest.raises(TypeError, match="not a list of integers"):
        ta.dataframe({"s": [["x"]]}).to_tensor(tc.KeyMajorJagged())
    with pytest.raises(ValueError, match="null ids"):
        ta.dataframe({"a": ta.column([[1, None]])}).to_tensor(tc.KeyMajorJagged())
