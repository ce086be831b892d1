import pickle

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import emberarrow as ta
import emberarrow.dtypes as dt
from emberarrow import me


def frame():
    return ta.dataframe({"k": ["b", "a", "b", None, "c", "a"], "x": [1, 2, None, 4, 5, 6], "y": [0.5, 1.5, 2.5, 3.5, None, 5.5]})


def rows(df):
    return [tuple(r) for r in df]


def test_construction():
    df = frame()
    assert df.columns == ["k", "x", "y"] and len(df) == 6
    assert df.dtype == dt.Struct([dt.Field("k", dt.String(True)), dt.Field("x", dt.Int64(True)), dt.Field("y", dt.Float32(True))])
    assert isinstance(df, ta.DataFrame) and isinstance(df, ta.Column)
    assert df[0] == ("b", 1, 0.5) and df[0].x == 1
    t = ta.dataframe([(1, "a"), (2, "b")], columns=["n", "s"])
    assert rows(t) == [(1, "a"), (2, "b")] and t.dtype.get("s") == dt.string
    typed = ta.dataframe({"a": [1]}, dtype=dt.Struct([dt.Field("a", dt.Int32(True))]))
    assert typed["a"].dtype == dt.Int32(True)
    assert rows(ta.DataFrame([(1, "a")], columns=["n", "s"])) == [(1, "a")]  # TorchData calls it so
    assert list(ta.from_pysequence([1, None], dt.Int32(True))) == [1, None]
    empty = ta.dataframe()
    assert len(empty) == 0 and empty.columns == []
    with pytest.raises(TypeError, match="equal length"):
        ta.dataframe({"a": [1, 2], "b": [1]})
    with pytest.raises(TypeError, match="requires dtype or columns"):
        ta.dataframe([(1, 2)])
    with pytest.raises(TypeError, match="Wrong type"):
        ta.dataframe({"a": ta.column([1])}, dtype=dt.Struct([dt.Field("a", dt.string)]))


def test_column_access_and_setitem():
    df = frame()
    assert list(df["x"]) == [1, 2, None, 4, 5, 6]
    assert df[["y", "k"]].columns == ["y", "k"]
    with pytest.raises(KeyError, match="'z' not among"):
        df["z"]
    df["z"] = df["x"] * 2
    assert df.columns == ["k", "x", "y", "z"] and df["z"][1] == 4
    df["k"] = ta.column(list("uvwxyz"))
    assert df.dtype.get("k") == dt.string
    before = df.dtype
    with pytest.raises(TypeError, match="equal length"):
        df["w"] = [1, 2]
    assert df.dtype == before and "w" not in df  # bad input changed nothing


def test_rows_slices_filters():
    df = frame()
    assert rows(df[1:3]) == rows(df)[1:3]
    assert rows(df[[5, 0]]) == [rows(df)[5], rows(df)[0]]
    assert rows(df[df["x"] > 3]) == [(None, 4, 3.5), ("c", 5, None), ("a", 6, 5.5)]
    assert rows(df.head(2)) == rows(df)[:2] and rows(df.tail(1)) == rows(df)[-1:]
    assert rows(df.filter(lambda r: r.y is not None and r.y > 2)) == [("b", None, 2.5), (None, 4, 3.5), ("a", 6, 5.5)]


def test_select_where_me():
    df = frame()
    assert df.select("*", "-y").columns == ["k", "x"]
    out = df.select("k", double=me["x"] * 2, total=me["x"].fill_null(0) + me["y"].fill_null(0))
    assert out.columns == ["k", "double", "total"] and list(out["double"]) == [2, 4, None, 8, 10, 12]
    assert list(out["total"]) == pytest.approx([1.5, 3.5, 2.5, 7.5, 5.0, 11.5])
    assert rows(df.where(me["x"] > 1, me["y"] < 5)) == [("a", 2, 1.5), (None, 4, 3.5)]
    for bad in [("-y",), ("*", "*"), ("*", "k"), ("nope",)]:
        with pytest.raises(ValueError):
            df.select(*bad)
    with pytest.raises(TypeError, match="boolean"):
        df.where(me["x"] + 1)


def test_reshape():
    df = frame()
    assert df.drop("y").columns == ["k", "x"] and df.drop(["k", "x"]).columns == ["y"]
    assert df.rename({"x": "ex"}).columns == ["k", "ex", "y"]
    assert df.reorder(["y", "k"]).columns == ["y", "k"]
    assert df.pipe(lambda d, n: d.head(n), 2).columns == df.columns
    for call in [lambda: df.drop("nope"), lambda: df.rename({"nope": "a"}), lambda: df.reorder(["nope"])]:
        with pytest.raises(KeyError):
            call()
    assert len(df.drop(["k", "x", "y"])) == 6


def test_nulls_and_duplicates_against_pandas():
    df, pdf = frame(), frame().to_pandas()
    assert rows(df.drop_null()) == [tuple(r) for r in pdf.dropna().itertuples(index=False)]
    assert df.drop_null().dtype.get("x") == dt.int64
    assert len(df.drop_null(how="all")) == 6
    filled = df.fill_null({"x": 0})
    assert list(filled["x"]) == [1, 2, 0, 4, 5, 6] and filled["k"].null_count == 1
    assert list(df.fill_null(7)["y"])[4] == 7
    dup = ta.dataframe({"a": [1, 1, 2, 1], "b": ["x", "x", "y", "z"]})
    pdup = dup.to_pandas()
    assert rows(dup.drop_duplicates()) == [tuple(r) for r in pdup.drop_duplicates().itertuples(index=False)]
    assert rows(dup.drop_duplicates(subset="a")) == [tuple(r) for r in pdup.drop_duplicates(subset="a").itertuples(index=False)]


def test_sort_against_pandas():
    df = frame()
    got = df.sort(by=["k", "y"], ascending=False)
    want = df.to_pandas().sort_values(["k", "y"], ascending=False, na_position="last", kind="stable")
    assert [r[1] for r in got] == [None if pd.isna(v) else int(v) for v in want["x"]]
    assert rows(df.sort(by="x", na_position="first"))[0][1] is None


def test_groupby_against_pandas():
    df = frame()
    pdf = df.to_pandas()
    g = df.groupby("k")
    assert list(g.size) == [("b", 2), ("a", 2), ("c", 1)]  # first appearance, null key dropped
    summed = g.sum()
    assert summed.columns == ["k", "x.sum", "y.sum"]
    want = pdf.groupby("k", sort=False).sum(min_count=1)  # an all-null group sums to null, as in TorchArrow
    assert [None if pd.isna(v) else v for v in want["y"]] == list(summed["y.sum"])
    assert list(g.max()["x.max"]) == [1, 6, 5]  # TorchArrow's grouped max returned the min
    assert list(g.min()["x.min"]) == [1, 2, 5]
    assert list(g.count()["x.count"]) == [1, 2, 1]
    nulls = lambda values: [None if pd.isna(v) else pytest.approx(v) for v in values]  # noqa: E731
    assert list(g.mean()["y.mean"]) == nulls(pdf.groupby("k", sort=False)["y"].mean())
    assert list(g.median()["y.median"]) == nulls(pdf.groupby("k", sort=False)["y"].median())
    assert list(df.groupby("k")["x"].sum()) == [1, 8, 5]
    agg = df.groupby("k").agg({"y": "max", "x": ["min", "mean"]})
    assert agg.columns == ["k", "y.max", "x.min", "x.mean"]
    t = ta.dataframe({"a": [1, 1, 2], "b": [1, 2, 3], "c": [2, 2, 1]})
    assert rows(t.groupby("a").agg(["sum", "min"])) == [(1, 3, 4, 1, 2), (2, 3, 1, 3, 1)]
    groups = {key: rows(sub) for key, sub in ta.dataframe({"A": ["a", "b", "a"], "B": [1, 2, 3]}).groupby("A")}
    assert groups == {("a",): [(1,), (3,)], ("b",): [(2,)]}
    with pytest.raises(KeyError):
        df.groupby("nope")
    with pytest.raises(ValueError, match="undefined aggregation"):
        g.agg("nope")


def test_join_against_pandas():
    left = ta.dataframe({"id": [3, 1, 2, 1], "l": ["c", "a", "b", "a2"]})
    right = ta.dataframe({"id": [1, 3, 4], "r": [10.0, 30.0, 40.0]})
    for how in ["inner", "left", "outer"]:
        got = left.join(right, on="id", how=how)
        want = left.to_pandas().merge(right.to_pandas(), on="id", how=how)
        key = lambda r: tuple("~" if v is None or (isinstance(v, float) and np.isnan(v)) else v for v in r)  # noqa: E731
        assert sorted(map(key, rows(got))) == sorted(map(key, want.itertuples(index=False)))
    assert [r.id for r in left.join(right, how="left")] == [3, 1, 2, 1]  # left order kept
    with pytest.raises(ValueError, match="how"):
        left.join(right, how="cross")
    with pytest.raises(KeyError):
        left.join(right, on="nope")


def test_describe_and_summaries():
    df = frame()
    d = df.describe()
    assert d.columns == ["metric", "x", "y"]
    pdesc = df.to_pandas().describe()
    assert d["x"][1] == pytest.approx(pdesc["x"]["mean"]) and d["y"][2] == pytest.approx(pdesc["y"]["std"])
    assert rows(df.drop("k").min()) == [(1, 0.5)]
    assert rows(df.drop("k").sum())[0][0] == 18


def test_operators_on_frames():
    df = ta.dataframe({"a": [1, 2], "b": [3, 4]})
    assert rows(df + 1) == [(2, 4), (3, 5)] and rows(10 - df) == [(9, 7), (8, 6)]
    assert rows(df * df) == [(1, 9), (4, 16)]
    assert rows(df > 1) == [(False, True), (True, True)]
    assert rows(df.isin([1, 4])) == [(True, False), (False, True)]


def test_map_and_transform_over_columns():
    df = ta.dataframe({"a": [1, 2, None], "b": [10, 20, 30]})
    assert list(df.map(lambda a, b: a + b, columns=["a", "b"], na_action="ignore")) == [11, 22, None]
    assert list(df.map({(1, 10): "one"}, columns=["a", "b"], dtype=dt.String(True))) == ["one", None, None]
    assert list(df.transform(lambda a, b: a.fill_null(0) + b, columns=["a", "b"], dtype=dt.int64)) == [11, 22, 30]


def test_arrow_pandas_pickle_round_trips():
    df = frame()
    table = df.to_arrow()
    assert isinstance(table, pa.Table) and table.column_names == df.columns
    assert table["x"].chunk(0).buffers()[1].address == df["x"].to_arrow().buffers()[1].address  # zero-copy
    again = ta.from_arrow(table)
    assert rows(again) == rows(df)
    pdf = df.to_pandas()
    assert list(pdf.columns) == df.columns and pd.isna(pdf["x"][2])
    back = ta.from_pandas(pdf)
    assert [r[0] for r in back] == [r[0] for r in df] and back["x"].null_count == 1
    assert rows(pickle.loads(pickle.dumps(df))) == rows(df)
    row = pickle.loads(pickle.dumps(df[1]))  # rows (and to_tensor's tuples) reach workers and back
    assert row == df[1] and row.k == "a"
    assert df.to_pylist()[0].k == "b"


def test_from_arrow_nested_chunked_sliced():
    nested = pa.table({
        "ids": pa.chunked_array([pa.array([[1, 2], None]), pa.array([[3]])]),
        "m": pa.array([[("a", 1)], [], None], type=pa.map_(pa.string(), pa.int64())),
        "s": pa.array([{"u": 1, "v": "x"}, None, {"u": 3, "v": None}]),
        "big": pa.array(["p", "q", "r"], type=pa.large_string()),
        "cat": pa.array(["x", "y", "x"]).dictionary_encode(),
    })
    df = ta.from_arrow(nested)
    assert list(df["ids"]) == [[1, 2], None, [3]]
    assert list(df["m"]) == [{"a": 1}, {}, None]
    assert list(df["s"])[0] == (1, "x") and list(df["s"])[1] is None
    assert df.dtype.get("big") == dt.String(True) and list(df["cat"]) == ["x", "y", "x"]
    part = ta.from_arrow(nested.slice(1, 2))
    assert list(part["ids"]) == [None, [3]] and list(part["m"]) == [{}, None]
    assert ta.from_arrow(pa.array([1, 2])).dtype == dt.int64  # an array: nullable only with nulls
    chunked = ta.from_arrow(pa.chunked_array([[1, None], [3]]))
    assert list(chunked) == [1, None, 3]
    with pytest.raises(TypeError, match="from_arrow"):
        ta.from_arrow([1, 2])
    with pytest.raises(TypeError, match="no emberarrow dtype"):
        ta.from_arrow(pa.array([1], type=pa.uint8()))


def test_join_carries_nested_columns_and_suffixes():
    left = ta.dataframe({"id": [1, 2], "v": [[1], [2, 3]], "w": [1, 2]})
    right = ta.dataframe({"id": [2, 5], "w": [20, 50], "m": [{"a": 1}, {}]})
    out = left.join(right, on="id", how="outer")
    assert out.columns == ["id", "v", "w", "w_right", "m"]
    assert rows(out) == [(1, [1], 1, None, None), (2, [2, 3], 2, 20, {"a": 1}), (5, None, None, 50, {})]


EMPTY = dt.Struct([dt.Field("k", dt.String(True)), dt.Field("x", dt.Int64(True)), dt.Field("l", dt.List(dt.int64))])


def test_empty_frames():
    from emberarrow import functional as F

    e = ta.dataframe(EMPTY)
    assert len(e) == 0 and e.columns == ["k", "x", "l"]
    for result in [e.sort(by="x"), e.select("*", y=me["x"] + 1), e.where(me["x"] > 1), e.drop_duplicates(),
                   e.drop_null(), e.fill_null(0), e.join(e, on="k"), e.groupby("k").agg({"x": ["sum", "median"]}),
                   e.groupby("k").size, e.head()]:
        assert len(result) == 0
    assert list(e.describe()["x"])[0] == 0
    assert e.to_tensor().x.values.tolist() == [] and len(e.to_pandas()) == 0 and e.to_arrow().num_rows == 0
    x, lists = e["x"], e["l"]
    for result in [F.sigrid_hash(x, 0, 10), F.sigrid_hash(lists, 0, 10), F.bucketize(x, [1]), F.firstx(lists, 1),
                   F.id_overlap_count(lists, lists), F.add_tokens(lists, [1], True), F.array_constructor(x, x),
                   F.scale_to_0_1(x), F.scale_to_z_score(x), x.cumsum(), x.log(), x // 2, lists.list.get(0)]:
        assert len(result) == 0
    assert x.quantile(0.5) != x.quantile(0.5)  # NaN, as pandas
    with pytest.raises(TypeError, match="cannot sum column 'l'"):
        e.groupby("k").sum()
