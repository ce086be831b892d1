"""The sparse tensor conversions (TorchArrow's rec.JaggedSparse / PackedSparse / IndividualSparse,
and emberrec's KeyedJaggedTensor) against layouts worked out by hand and a NumPy reference."""
import sys

import numpy as np
import pyarrow as pa
import pytest

import ember
import emberarrow as ta
import emberarrow.dtypes as dt
from emberarrow import functional as F
from emberarrow import tensor_conversion as tc
from emberrec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor

PAIR = pa.struct([("id", pa.int64()), ("weight", pa.float32())])


def ids_frame():
    """Keys a (a null row), b (int32 ids, an empty list) and c (one id per row, a null)."""
    return ta.dataframe({
        "a": ta.column([[1, 2], None, [3]], dt.List(dt.int64, True)),
        "b": ta.column([[10], [20, 30], []], dt.List(dt.int32)),
        "c": ta.column([7, None, 9], dt.Int64(True)),
    })


def weighted_frame():
    """Key w: lists of (id, weight) structs (sliced: the first row is not part of it); key m: maps."""
    pairs = pa.array([[(0, 9.0)], [(1, 0.5)], None, [(2, 1.0), (3, 2.0)]], type=pa.list_(PAIR)).slice(1)
    maps = pa.array([[(7, 0.25)], [(8, 1.0), (9, 2.0)], None], type=pa.map_(pa.int64(), pa.float32()))
    return ta.dataframe({"w": ta.from_arrow(pairs), "m": ta.from_arrow(maps)})


def as_lists(tensors):
    return [t.tolist() if isinstance(t, ember.Tensor) else t for t in tensors]


# ---- KeyedJaggedTensor ----

def test_keyed_jagged_tensor_is_key_major():
    kjt = ids_frame().to_tensor(tc.KeyedJaggedTensor())
    assert isinstance(kjt, KeyedJaggedTensor)
    assert kjt.keys() == ["a", "b", "c"] and kjt.stride() == 3
    assert kjt.values().tolist() == [1, 2, 3, 10, 20, 30, 7, 9]  # every id of a, then of b, then of c
    assert kjt.lengths().tolist() == [2, 0, 1, 1, 2, 0, 1, 0, 1]
    assert kjt.length_per_key() == [3, 3, 2] and kjt.offset_per_key() == [0, 3, 6, 8]
    assert kjt.values().dtype == ember.int64 and kjt.lengths().dtype == ember.int32
    assert kjt.weights_or_none() is None
    assert kjt["b"].to_dense()[1].tolist() == [20, 30]


def test_weighted_keyed_jagged_tensor_from_structs_and_maps():
    kjt = weighted_frame().to_tensor(tc.KeyedJaggedTensor(weighted=True))
    assert kjt.keys() == ["w", "m"]
    assert kjt.values().tolist() == [1, 2, 3, 7, 8, 9]
    assert kjt.weights().tolist() == [0.5, 1.0, 2.0, 0.25, 1.0, 2.0]
    assert kjt.weights().dtype == ember.float32
    assert kjt.lengths().tolist() == [1, 0, 2, 1, 2, 0]


def test_steps_apply_to_ids_and_firstx_keeps_their_weights():
    kjt = weighted_frame().to_tensor(tc.KeyedJaggedTensor(weighted=True, sigrid_hash=(3, 100), firstx=1))
    hashed = F.sigrid_hash(ta.column([1, 2, 7, 8]), 3, 100).to_pylist()
    assert kjt.values().tolist() == hashed and kjt.weights().tolist() == [0.5, 1.0, 0.25, 1.0]
    assert kjt.lengths().tolist() == [1, 0, 1, 1, 1, 0]
    # Unweighted, the steps are KeyMajorJagged's: the same ids and lengths.
    steps = {"fill_null": 0, "sigrid_hash": (5, 1000), "firstx": 1}
    fused = ids_frame().to_tensor(tc.KeyedJaggedTensor(**steps))
    parts = ids_frame().to_tensor(tc.KeyMajorJagged(**steps))
    assert fused.values().tolist() == parts.values.tolist() and fused.lengths().tolist() == parts.lengths.tolist()


def test_matches_a_numpy_reference_on_sliced_columns_beyond_one_kernel_chunk():
    rng = np.random.default_rng(0)
    rows, keys = 20_000, ["k0", "k1", "k2"]
    columns, expected_values, expected_weights, expected_lengths = {}, [], [], []
    for key in keys:
        lengths = rng.integers(0, 4, rows + 1)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        ids, weights = rng.integers(-2**40, 2**40, offsets[-1]), rng.random(offsets[-1]).astype(np.float32)
        null = rng.random(rows + 1) < 0.1
        pairs = pa.StructArray.from_arrays([pa.array(ids), pa.array(weights)], fields=list(PAIR))
        column = pa.ListArray.from_arrays(pa.array(offsets), pairs, mask=pa.array(null)).slice(1)
        columns[key] = ta.from_arrow(column)
        for r in range(1, rows + 1):  # the reference, row by row
            keep = slice(offsets[r], offsets[r + 1]) if not null[r] else slice(0, 0)
            expected_values.extend(ids[keep]), expected_weights.extend(weights[keep])
            expected_lengths.append(keep.stop - keep.start)
    kjt = ta.dataframe(columns).to_tensor(tc.KeyedJaggedTensor(weighted=True))
    assert kjt.stride() == rows
    assert np.array_equal(kjt.values().numpy(), expected_values)
    assert np.array_equal(kjt.weights().numpy(), np.array(expected_weights, np.float32))
    assert np.array_equal(kjt.lengths().numpy(), expected_lengths)
    # emberrec's own constructor, which validates, takes the parts as they are.
    checked = KeyedJaggedTensor(kjt.keys(), kjt.values(), weights=kjt.weights(), lengths=kjt.lengths())
    per_key = np.reshape(expected_lengths, (len(keys), rows)).sum(1).tolist()
    assert checked.length_per_key() == kjt.length_per_key() == per_key


def test_empty_frames_and_empty_lists():
    empty = ta.dataframe({"a": ta.column([], dt.List(dt.int64)), "b": ta.column([], dt.List(dt.int64))})
    kjt = empty.to_tensor(tc.KeyedJaggedTensor())
    assert kjt.keys() == ["a", "b"] and kjt.stride() == 0 and kjt.values().tolist() == [] and kjt.lengths().tolist() == []
    no_ids = ta.dataframe({"a": ta.column([[], []], dt.List(dt.int64))}).to_tensor(tc.KeyedJaggedTensor())
    assert no_ids.stride() == 2 and no_ids.values().tolist() == [] and no_ids.lengths().tolist() == [0, 0]
    weighted_empty = ta.dataframe({"w": ta.from_arrow(pa.array([], type=pa.list_(PAIR)))})
    assert weighted_empty.to_tensor(tc.KeyedJaggedTensor(weighted=True)).weights().tolist() == []
    with pytest.raises(ValueError, match="at least one sparse feature column"):
        ids_frame().drop(["a", "b", "c"]).to_tensor(tc.KeyedJaggedTensor())


def test_feeds_an_embedding_bag_collection():
    df = ta.dataframe({"f1": [[0, 2], [], [1]], "f2": [[3], [3, 4], [0]]})
    ebc = EmbeddingBagCollection(tables=[
        EmbeddingBagConfig(name="t1", embedding_dim=2, num_embeddings=5, feature_names=["f1"]),
        EmbeddingBagConfig(name="t2", embedding_dim=2, num_embeddings=5, feature_names=["f2"]),
    ])
    pooled = ebc(df.to_tensor(tc.KeyedJaggedTensor())).to_dict()
    t1, t2 = (ebc.embedding_bags[t].weight.detach().numpy() for t in ("t1", "t2"))
    assert np.allclose(pooled["f1"].detach().numpy(), [t1[0] + t1[2], np.zeros(2), t1[1]])
    assert np.allclose(pooled["f2"].detach().numpy(), [t2[3], t2[3] + t2[4], t2[0]])


# ---- TorchArrow's rec conversions ----

def test_jagged_sparse_combine_options():
    df = ids_frame()[["a", "b"]]
    jagged = df.to_tensor(tc.JaggedSparse(weighted=False))
    assert as_lists(jagged) == [["a", "b"], [3, 3], [2, 0, 1, 1, 2, 0], [1, 2, 3, 10, 20, 30]]
    combined = df.to_tensor(tc.JaggedSparse(weighted=False, combine_option=tc.CombineOption.COMBINED))
    assert as_lists(combined) == [[[2, 0, 1], [1, 2, 0]], [1, 2, 3, 10, 20, 30]]
    with_offset = df.to_tensor(tc.JaggedSparse(weighted=False, combine_option=tc.CombineOption.JAGGED_WITH_OFFSET))
    assert as_lists(with_offset) == [[2, 0, 1, 1, 2, 0], [1, 2, 3, 10, 20, 30], [3, 3], [0, 3, 6]]
    weighted = weighted_frame().to_tensor(tc.JaggedSparse(weighted=True))
    assert as_lists(weighted) == [["w", "m"], [3, 3], [1, 0, 2, 1, 2, 0], [1, 2, 3, 7, 8, 9], [0.5, 1.0, 2.0, 0.25, 1.0, 2.0]]
    weighted = weighted_frame().to_tensor(tc.JaggedSparse(weighted=True, combine_option=tc.CombineOption.JAGGED_WITH_OFFSET))
    assert as_lists(weighted)[2:] == [[0.5, 1.0, 2.0, 0.25, 1.0, 2.0], [3, 3], [0, 3, 6]]


def test_packed_sparse_pack_options():
    packed = ids_frame()[["a", "b"]].to_tensor(tc.PackedSparse(weighted=False))
    assert list(packed) == ["a", "b"]
    assert as_lists(packed["a"]) == [[0, 2, 2, 3], [2, 0, 1], [1, 2, 3]]  # (offsets, lengths, values)
    assert as_lists(packed["b"]) == [[0, 1, 3, 3], [1, 2, 0], [10, 20, 30]]
    flat = ids_frame()[["a", "b"]].to_tensor(tc.PackedSparse(weighted=False, pack_option=tc.PackOption.AS_PYLIST))
    assert as_lists(flat) == [[2, 0, 1], [1, 2, 3], [1, 2, 0], [10, 20, 30]]  # (lengths, values) per feature
    weighted = weighted_frame().to_tensor(tc.PackedSparse(weighted=True))
    assert as_lists(weighted["m"]) == [[0, 1, 3, 3], [1, 2, 0], [7, 8, 9], [0.25, 1.0, 2.0]]
    flat = weighted_frame().to_tensor(tc.PackedSparse(weighted=True, pack_option=tc.PackOption.AS_PYLIST))
    assert as_lists(flat) == [[1, 0, 2], [1, 2, 3], [0.5, 1.0, 2.0], [1, 2, 0], [7, 8, 9], [0.25, 1.0, 2.0]]


def test_individual_sparse_converts_one_column():
    offsets, lengths, values = ids_frame()["a"].to_tensor(tc.IndividualSparse(weighted=False))
    assert as_lists((offsets, lengths, values)) == [[0, 2, 2, 3], [2, 0, 1], [1, 2, 3]]
    assert offsets.dtype == lengths.dtype == ember.int32 and values.dtype == ember.int64
    row = weighted_frame().to_tensor({"w": tc.IndividualSparse(weighted=True)})
    assert as_lists(row.w) == [[0, 1, 1, 3], [1, 0, 2], [1, 2, 3], [0.5, 1.0, 2.0]]
    with pytest.raises(TypeError, match="one column"):
        ids_frame().to_tensor(tc.IndividualSparse(weighted=False))


# ---- bad input ----

@pytest.mark.parametrize("conversion", [
    tc.KeyedJaggedTensor(), tc.JaggedSparse(weighted=False), tc.PackedSparse(weighted=False)])
def test_wrong_column_types_name_the_column_and_the_types(conversion):
    who = type(conversion).__name__
    with pytest.raises(TypeError, match=rf"{who}: column 's' is List\(string\), expected lists of integer ids"):
        ta.dataframe({"a": [[1]], "s": [["x"]]}).to_tensor(conversion)
    with pytest.raises(TypeError, match=r"column 'f' is List\(float32\)"):
        ta.dataframe({"f": [[1.5]]}).to_tensor(conversion)
    with pytest.raises(TypeError, match="weighted features need weighted=True"):
        weighted_frame().to_tensor(conversion)
    with pytest.raises(ValueError, match="column 'a' holds null ids"):
        ta.dataframe({"a": ta.column([[1, None]])}).to_tensor(conversion)
    with pytest.raises(TypeError, match="needs a DataFrame"):
        ta.column([[1]]).to_tensor(conversion)


def test_weighted_columns_need_ids_and_weights_without_nulls():
    convert = tc.KeyedJaggedTensor(weighted=True)
    with pytest.raises(TypeError, match=r"column 'a' is List\(int64\), expected lists of \(id, weight\) pairs"):
        ta.dataframe({"a": [[1]]}).to_tensor(convert)
    with pytest.raises(TypeError, match=r"column 'm' is Map\(string, float32\)"):
        ta.dataframe({"m": [{"x": 1.0}]}).to_tensor(convert)
    null_weight = pa.array([[(1, None)]], type=pa.list_(PAIR))
    with pytest.raises(ValueError, match="column 'w' holds null weights"):
        ta.dataframe({"w": ta.from_arrow(null_weight)}).to_tensor(convert)
    null_pair = pa.array([[None, (1, 1.0)]], type=pa.list_(PAIR))
    with pytest.raises(ValueError, match=r"column 'w' holds null \(id, weight\) pairs"):
        ta.dataframe({"w": ta.from_arrow(null_pair)}).to_tensor(convert)
    null_map_weight = pa.array([[(1, None)]], type=pa.map_(pa.int64(), pa.float32()))
    with pytest.raises(ValueError, match="column 'm' holds null weights"):
        ta.dataframe({"m": ta.from_arrow(null_map_weight)}).to_tensor(convert)


def test_bad_arguments_and_a_failure_leaves_the_frame_as_it_was():
    with pytest.raises(TypeError, match="weighted must be True or False"):
        tc.JaggedSparse(weighted="yes")
    with pytest.raises(TypeError):
        tc.PackedSparse()  # weighted is required, as in TorchArrow
    with pytest.raises(TypeError, match="expected a CombineOption"):
        tc.JaggedSparse(weighted=False, combine_option=tc.PackOption.AS_PYDICT)
    with pytest.raises(TypeError, match="expected a PackOption"):
        tc.PackedSparse(weighted=False, pack_option="dict")
    with pytest.raises(ValueError, match="larger than 0"):
        tc.KeyedJaggedTensor(sigrid_hash=(0, 0))
    df = ids_frame()
    before = df.to_pylist()
    with pytest.raises(TypeError):
        df.to_tensor(tc.KeyedJaggedTensor(weighted=True))
    assert df.to_pylist() == before


def test_without_emberrec_the_conversion_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "emberrec.sparse.jagged_tensor", None)
    with pytest.raises(ImportError, match="pip install emberrec"):
        ids_frame().to_tensor(tc.KeyedJaggedTensor())
    # The conversions that give plain tensors do not need emberrec.
    assert ids_frame()[["a"]].to_tensor(tc.JaggedSparse(weighted=False))[0] == ["a"]
