import math
import pickle
import statistics

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import emberarrow as ta
import emberarrow.dtypes as dt

VALUES = [3, None, -1, 7, 7, None, 0, 12]


def sliced():
    """The same values in an Arrow array that starts at an offset in its buffers."""
    return ta.from_arrow(pa.array([99, 98] + VALUES + [97]).slice(2, len(VALUES)))


@pytest.fixture(params=["fresh", "sliced"])
def col(request):
    return ta.column(VALUES) if request.param == "fresh" else sliced()


def test_construction_and_properties(col):
    assert list(col) == VALUES
    assert col.dtype == dt.Int64(True) and col.is_nullable
    assert len(col) == col.length == 8 and col.null_count == 2
    assert isinstance(col, ta.Column) and isinstance(col, ta.NumericalColumn)
    assert ta.column(dt.String(True)).dtype == dt.String(True) and len(ta.column(dt.string)) == 0
    assert list(ta.Column([1, 2])) == [1, 2]
    from_numpy = ta.column(np.arange(3, dtype=np.int32))
    assert from_numpy.dtype == dt.int32 and list(from_numpy) == [0, 1, 2]
    assert ta.column(np.array([1.5, 2.5])).dtype == dt.float64
    assert "dtype: Int64(nullable=True), length: 8, null_count: 2" in repr(col)


def test_indexing(col):
    assert col[0] == 3 and col[1] is None and col[-1] == 12
    assert list(col[2:5]) == VALUES[2:5] and list(col[::3]) == VALUES[::3]
    assert list(col[[0, 3, -1]]) == [3, 7, 12]
    mask = [v is not None and v > 2 for v in VALUES]
    assert list(col[mask]) == [3, 7, 7, 12]
    assert list(col[col > 2]) == [3, 7, 7, 12]  # null comparisons drop out
    assert list(col.head(2)) == VALUES[:2] and list(col.tail(2)) == VALUES[-2:]
    with pytest.raises(IndexError):
        col[8]
    with pytest.raises(IndexError):
        col[[0, 9]]
    with pytest.raises(TypeError):
        col["a"]
    with pytest.raises(ValueError, match="length"):
        col[[True, False]]


def test_append_cast_concat(col):
    assert list(col.append([5, None])) == VALUES + [5, None]
    assert list(ta.column([1, 2]).append([None])) == [1, 2, None]
    assert col.cast(dt.Float64(True)).dtype == dt.Float64(True)
    assert list(ta.column([1.7, -1.7, 2.5, -2.5]).cast(dt.int32)) == [2, -2, 3, -3]  # rounded, as Velox casts
    with pytest.raises(ValueError, match="non-nullable"):
        col.cast(dt.int64)
    with pytest.raises(TypeError, match="does not fit|fit dtype"):
        col.append(["x"])
    assert list(ta.concat([col, ta.column([1])])) == VALUES + [1]
    with pytest.raises(TypeError, match="dtype"):
        ta.concat([col, ta.column(["a"])])


def test_arithmetic_against_pandas(col):
    s = pd.Series(VALUES, dtype="Int64")
    other = ta.column([1, 2, 3, 4, 5, 6, -7, 8])
    o = pd.Series(list(other), dtype="Int64")
    for got, want in [(col + 1, s + 1), (2 * col, 2 * s), (col - other, s - o), (col * other, s * o),
                      (col // other, s // o), (col % other, s % o), (col // 3, s // 3), (-col, -s)]:
        assert list(got) == [None if pd.isna(v) else int(v) for v in want]
    assert (col + 1).dtype == dt.Int64(True)
    assert (col / 2).dtype == dt.Float32(True)  # TorchArrow divides integers in float32
    assert (col + 1.5).dtype == dt.Float32(True)
    e, f = ta.column([13, -13, 13, -13]), ta.column([3, 3, -3, -3])
    assert list(e % f) == [1, 2, -2, -1]
    assert list(2 ** ta.column([0, 1, 3])) == [1, 2, 8]
    assert list(ta.column([1.0, -1.0]) / 0) == [math.inf, -math.inf]
    with pytest.raises(ZeroDivisionError):
        col // 0
    with pytest.raises(ValueError, match="negative integer powers"):
        col ** -2
    with pytest.raises(TypeError, match="equal length"):
        col + ta.column([1])
    with pytest.raises(ValueError, match="out of range for int8"):
        ta.column([1], dt.int8) + 300
    with pytest.raises(TypeError):
        col + "a"


def test_comparisons_and_logic():
    a = ta.column([1, None, 3])
    assert list(a == 1) == [True, None, False] and (a == 1).dtype == dt.Boolean(True)
    assert list(a >= ta.column([0, 0, 4])) == [True, None, False]
    g, h = ta.column([True, False, True, False]), ta.column([False, False, True, True])
    assert list(g & h) == [False, False, True, False]
    assert list(g | h) == [True, False, True, True]
    assert list(g ^ h) == [True, False, False, True]
    assert list(~g) == [False, True, False, True]
    i = ta.column([1, 2, 0])
    assert list(i & ta.column([3, 2, 3])) == [1, 2, 0] and list(~i) == [-2, -3, -1]
    assert list(ta.column(["a", "b"]) == "a") == [True, False]
    with pytest.raises(ValueError, match="ambiguous"):
        bool(a)


def test_math(col):
    floats = ta.column([1.0, 4.2, None, -2.5, 2.5])
    assert floats.abs()[3] == 2.5 and floats.abs()[2] is None
    assert list(floats.ceil()) == [1, 5, None, -2, 3] and list(floats.floor()) == [1, 4, None, -3, 2]
    assert list(floats.round()) == [1, 4, None, -2, 2]  # half to even, as Python
    logs = col.log()
    assert logs.dtype == dt.Float32(True)
    assert logs[0] == pytest.approx(math.log(3)) and logs[1] is None and logs[6] == -math.inf
    assert math.isnan(logs[2])


def test_statistics_against_pandas(col):
    s = pd.Series(VALUES, dtype="float64")
    assert col.min() == -1 and col.max() == 12 and col.sum() == 28
    assert col.mean() == pytest.approx(s.mean())
    assert col.std() == pytest.approx(s.std())
    assert col.median() == s.median()
    assert col.mode() == 7
    assert col.quantile(0.3) == pytest.approx(s.quantile(0.3))
    assert col.quantile([0.1, 0.9], "midpoint") == pytest.approx(s.quantile([0.1, 0.9], interpolation="midpoint").tolist())
    assert list(col.cumsum()) == [3, None, 2, 9, 16, None, 16, 28]
    assert col.all() is False and col.any() is True
    d = col.describe()
    assert list(d["statistic"]) == ["count", "mean", "std", "min", "25%", "50%", "75%", "max"]
    assert d["value"][0] == 6 and d["value"][2] == pytest.approx(statistics.stdev(v for v in VALUES if v is not None))
    empty = ta.column(dt.Int64(True))
    assert empty.min() is None and empty.sum() is None and empty.mode() is None and empty.all() is True
    with pytest.raises(ValueError):
        empty.median()
    with pytest.raises(TypeError, match="mean"):
        ta.column([True, False]).mean()
    with pytest.raises(AttributeError):
        ta.column(["a"]).mean()


def test_null_handling(col):
    filled = col.fill_null(42)
    assert filled.dtype == dt.int64 and list(filled) == [42 if v is None else v for v in VALUES]
    assert ta.column([1.0, None], dt.Float64(True)).fill_null(4).dtype == dt.float64
    assert list(col.drop_null()) == [v for v in VALUES if v is not None] and col.drop_null().dtype == dt.int64
    assert list(col.drop_duplicates()) == [3, None, -1, 7, 0, 12]
    assert list(col.isin([7, 0])) == [False, False, False, True, True, False, True, False]
    with pytest.raises(TypeError, match="fill_null"):
        col.fill_null([1])
    with pytest.raises(TypeError, match="does not fit"):
        col.fill_null("x")
    assert list(col) == VALUES  # bad input changed nothing


def test_sort(col):
    assert list(col.sort()) == sorted(v for v in VALUES if v is not None) + [None, None]
    assert list(col.sort(ascending=False, na_position="first")) == [None, None] + sorted((v for v in VALUES if v is not None), reverse=True)
    with pytest.raises(ValueError, match="na_position"):
        col.sort(na_position="middle")


def test_user_functions(col):
    assert list(col.map(lambda x: x * 2, na_action="ignore")) == [None if v is None else v * 2 for v in VALUES]
    assert list(col.map({3: 30, None: -1})) == [30, -1, None, None, None, -1, None, None]
    assert list(col.map(str, na_action="ignore", dtype=dt.String(True)))[:2] == ["3", None]

    def hinted(x) -> str:
        return f"v{x}"
    assert col.map(hinted).dtype == dt.string
    assert list(ta.column([1, 2]).flatmap(lambda x: [x, x])) == [1, 1, 2, 2]
    assert list(col.filter(lambda x: x is not None and x > 5)) == [7, 7, 12]
    assert ta.column([1, 2, 3]).reduce(lambda a, b: a + b) == 6
    assert ta.column(dt.int64).reduce(lambda a, b: a + b, 10) == 10
    assert list(col.transform(lambda c: c.fill_null(0) + 1)) == [1 if v is None else v + 1 for v in VALUES]
    with pytest.raises(ValueError, match="same number of rows"):
        col.transform(lambda c: c[:2])
    with pytest.raises(ValueError, match="na_action"):
        col.map(abs, na_action="drop")


def test_if_else():
    cond = ta.column([True, False, None])
    assert list(ta.if_else(cond, ta.column([1, 2, 3]), ta.column([10.0, 20.0, 30.0]))) == [1, 20, None]
    with pytest.raises(TypeError, match="boolean"):
        ta.if_else(ta.column([1]), ta.column([1]), ta.column([2]))
    with pytest.raises(TypeError, match="compatible"):
        ta.if_else(ta.column([True]), ta.column([1]), ta.column(["a"]))


def test_strings():
    words = ["Hello World", None, "  pad ", "abc123", "", "ÉTÉ"]
    s = ta.column(words)
    py = lambda f: [None if w is None else f(w) for w in words]  # noqa: E731
    assert list(s.str.length()) == py(len)
    assert list(s.str.lower()) == py(str.lower) and list(s.str.upper()) == py(str.upper)
    assert list(s.str.strip()) == py(str.strip)
    assert list(s.str.slice(1, 3)) == py(lambda w: w[1:3])
    assert list(s.str.split()) == py(str.split)
    assert list(s.str.split("l", 1)) == py(lambda w: w.split("l", 1))
    for name in ["isalpha", "isnumeric", "isalnum", "isdecimal", "isspace", "islower", "isupper", "istitle"]:
        assert list(getattr(s.str, name)()) == py(getattr(str, name)), name
    assert list(s.str.startswith("He")) == py(lambda w: w.startswith("He"))
    assert list(s.str.endswith("23")) == py(lambda w: w.endswith("23"))
    assert list(s.str.find("l")) == py(lambda w: w.find("l"))
    assert list(s.str.count("l")) == py(lambda w: w.count("l"))
    assert list(s.str.replace("[0-9]", "#")) == py(lambda w: __import__("re").sub("[0-9]", "#", w))
    assert list(s.str.match("[a-z]+[0-9]")) == py(lambda w: __import__("re").match("[a-z]+[0-9]", w) is not None)
    assert list(s.str.contains("o W", regex=False)) == py(lambda w: "o W" in w)
    assert list(s.str.findall("[lo]")) == py(lambda w: __import__("re").findall("[lo]", w))  # no groups: as re
    assert list(s.str.cat(ta.column(["!"] * 6))) == py(lambda w: w + "!")
    with pytest.raises(TypeError):
        s.str.startswith(1)
    with pytest.raises(AttributeError):
        ta.column([1]).str


def test_torcharrow_string_examples():
    s = ["a b c", "1,2,3", "d e f g h", "hello.this.is.very.very.very.very.long"]
    c = ta.column(s)
    assert list(c.str.split(".", 0)) == [v.split(".") for v in s]  # n=0: all splits, as TorchArrow
    assert list(c.str.split(".", 2)) == [v.split(".", 2) for v in s]
    countries = ta.column(["Finland", "Colombia", "Florida", "Japan", "Puerto Rico", "Russia", "france"])
    assert list(countries[countries.str.count(r"(^F.*)") == 1]) == ["Finland", "Florida"]
    assert list(countries[countries.str.match(r"(^P.*)")]) == ["Puerto Rico"]
    found = countries.str.findall("^[Ff](.*)")  # whole matches, not the group
    assert list(found[found.list.length() > 0]) == [["Finland"], ["Florida"], ["france"]]
    found = countries.str.findall("[tCc]o")
    assert list(found[found.list.length() > 0]) == [["Co"], ["to", "co"]]


def test_lists():
    rows = [[1, 2, 3], None, [], [4, None]]
    arr = pa.array([[9]] + rows).slice(1)  # an offset list array
    for lst in (ta.column(rows), ta.from_arrow(arr)):
        assert list(lst) == rows
        assert list(lst.list.length()) == [3, None, 0, 2]
        assert list(lst.list.slice(1)) == [[2, 3], None, [], [None]]
        assert list(lst.list.map(lambda x: None if x is None else x * 10)) == [[10, 20, 30], None, [], [40, None]]
        assert list(lst.list.filter(lambda x: x is not None and x > 1)) == [[2, 3], None, [], [4]]
        assert list(lst.list.vmap(lambda c: c.fill_null(0) * 2)) == [[2, 4, 6], None, [], [8, 0]]
        assert list(lst.list.reduce(lambda a, b: a + (b or 0), 0)) == [6, None, 0, 4]
        assert list(lst.list.flatmap(lambda x: [x, x])) == [[1, 1, 2, 2, 3, 3], None, [], [4, 4, None, None]]
    full = ta.column([[1, 2], [3], [4, 5, 6]])
    assert list(full.list.get(0)) == [1, 3, 4] and list(full.list.get(-1)) == [2, 3, 6]
    with pytest.raises(IndexError):
        full.list.get(1)
    assert list(ta.column([["a", "b"], ["c"]]).list.join("-")) == ["a-b", "c"]
    words = ta.column(dt.List(dt.string)).append([["The", "fox"], ["jumps"], ["over", "the", "river"]])
    assert list(words.list.get(0)) == ["The", "jumps", "over"]
    assert list(words.list.map(str.upper)) == [["THE", "FOX"], ["JUMPS"], ["OVER", "THE", "RIVER"]]
    assert list(words.list.filter(lambda x: x.endswith("fox"))) == [["fox"], [], []]
    assert list(ta.column([["what", "a"], ["really?"]]).list.map(len, dtype=dt.List(dt.int64))) == [[4, 1], [7]]
    products = ta.column(dt.List(dt.int64)).append([list(range(1, i)) for i in range(1, 6)])
    assert list(products.list.reduce(__import__("operator").mul, 1)) == [1, 1, 2, 6, 24]
    nested = ta.column(dt.List(dt.List(dt.string))).append([[], [[]], [["a"]], [["b", "c"], ["d", "e", "f"]]])
    assert list(nested) == [[], [[]], [["a"]], [["b", "c"], ["d", "e", "f"]]]
    with pytest.raises(TypeError, match="List dtype"):
        words.list.map(len, dtype=dt.int64)


def test_maps():
    rows = [{"a": 1, "b": 2}, None, {}, {"b": 5}]
    m = ta.column(rows, dt.Map(dt.string, dt.int64, nullable=True))
    assert list(m) == rows
    assert list(m.maps.keys()) == [["a", "b"], None, [], ["b"]]
    assert list(m.maps.values()) == [[1, 2], None, [], [5]]
    assert list(m.maps.get("b", -1)) == [2, None, -1, 5]
    c = ta.column([{"abc": 123}, {"de": 45, "fg": 67}, None])  # TorchArrow's example
    assert list(c.maps.keys()) == [["abc"], ["de", "fg"], None]
    assert list(c.maps.get("de", 0)) == [0, 45, None]


def test_pickle_and_batches(col):
    again = pickle.loads(pickle.dumps(col))
    assert list(again) == VALUES and again.dtype == col.dtype
    batches = list(col.batch(3))
    assert [len(b) for b in batches] == [3, 3, 2]
    assert list(ta.Column.unbatch(batches)) == VALUES
    assert col.is_unique is False and ta.column([1, 2, 3]).is_monotonic_increasing


def test_torcharrow_conformance_details():
    c = ta.column(list(range(3)))
    assert str(c) == "Column([0, 1, 2])" and str(ta.column(["a"])) == "Column(['a'])"
    assert repr(c) == "0  0\n1  1\n2  2\ndtype: int64, length: 3, null_count: 0, device: cpu"
    lists = ta.column([[1, 2], [3, 4]])
    assert list(lists == [3, 4]) == [False, True] and list(lists < [3, 4]) == [True, False]
    assert list(lists != ta.column([[0, 1], [3, 4]])) == [True, False]
    assert list(ta.column(dt.boolean).append([True, 1, 0])) == [True, True, False]
    with pytest.raises(TypeError, match="floats are not converted"):
        ta.column([1, 2]).append([3.0])
    with pytest.raises(TypeError, match="floats are not converted"):
        ta.column([True]).append([1.0])
    assert list("pre_" + ta.column(["a", None])) == ["pre_a", None]
    with pytest.raises(TypeError, match="nested Python tuple"):
        ta.column([[(1, "a")]])
    with pytest.raises(TypeError, match="nullable structs require"):
        dt.Struct([dt.Field("a", dt.int64)], nullable=True)
    with pytest.raises(TypeError, match="is not supported"):
        lists.cast(dt.int64)


def test_namedtuple_return_hints_make_frames():
    import typing

    class Ret(typing.NamedTuple):
        plus: int
        minus: int

    def both(a: int, b: int) -> Ret:
        return Ret(a + b, a - b)

    df = ta.dataframe({"a": [1, 2], "b": [10, 20]})
    out = df.map(both, columns=["a", "b"])
    assert out.dtype == dt.Struct([dt.Field("plus", dt.int64), dt.Field("minus", dt.int64)])
    assert list(out) == [(11, -9), (22, -18)]
