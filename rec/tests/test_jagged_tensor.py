"""emberrec.sparse and emberrec.ops against NumPy references (a KJT is a dict of lists of rows)."""
import numpy as np
import pytest

import ember
from emberrec import ops
from emberrec.sparse.jagged_tensor import JaggedTensor, KeyedJaggedTensor, KeyedTensor


def random_kjt_parts(rng, n_keys, batch, max_len=4, weighted=False):
    lengths = rng.integers(0, max_len + 1, n_keys * batch)
    values = rng.integers(0, 1000, lengths.sum())
    weights = rng.random(lengths.sum()).astype(np.float32) if weighted else None
    return lengths, values, weights


def rows_of(lengths, values, n_keys, batch):
    """{key index: [row, ...]}: the NumPy reference layout, key-major."""
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    return [[values[bounds[k * batch + b]:bounds[k * batch + b + 1]].tolist() for b in range(batch)]
            for k in range(n_keys)]


def kjt_rows(kjt):
    batch = kjt.stride()
    return rows_of(kjt.lengths().numpy(), kjt.values().numpy(), len(kjt.keys()), batch)


def make_kjt(lengths, values, weights=None, keys=None, **kwargs):
    n_keys = len(keys) if keys else None
    keys = keys or [f"f{i}" for i in range(n_keys or 1)]
    return KeyedJaggedTensor(keys=keys, values=ember.from_numpy(values),
                             weights=None if weights is None else ember.from_numpy(weights),
                             lengths=ember.from_numpy(lengths), **kwargs)


# ---- JaggedTensor ----

def test_lengths_and_offsets_are_computed_from_each_other_lazily():
    jt = JaggedTensor(values=ember.arange(6.0), lengths=ember.tensor([2, 0, 3, 1]))
    assert jt.offsets_or_none() is None
    assert jt.offsets().tolist() == [0, 2, 2, 5, 6]
    assert jt.offsets_or_none() is not None
    jt = JaggedTensor(values=ember.arange(6.0), offsets=ember.tensor([0, 2, 2, 5, 6], dtype=ember.int32))
    assert jt.lengths_or_none() is None
    assert jt.lengths().tolist() == [2, 0, 3, 1]
    assert jt.lengths().dtype == ember.int32


@pytest.mark.parametrize("desired_length", [None, 0, 1, 2, 5])
def test_to_padded_dense_matches_numpy(desired_length):
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 4, 7)
    values = rng.standard_normal((lengths.sum(), 3)).astype(np.float32)
    jt = JaggedTensor(values=ember.from_numpy(values), lengths=ember.from_numpy(lengths))
    width = lengths.max() if desired_length is None else desired_length
    want = np.full((7, width, 3), -2.5, np.float32)
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    for b in range(7):
        row = values[bounds[b]:bounds[b + 1]][:width]
        want[b, :len(row)] = row
    np.testing.assert_array_equal(jt.to_padded_dense(desired_length, padding_value=-2.5).numpy(), want)


def test_to_padded_dense_gradient_reaches_only_the_values_kept():
    values = ember.arange(1.0, 7.0).requires_grad_()
    jt = JaggedTensor(values=values, lengths=ember.tensor([3, 0, 1, 2]))
    (jt.to_padded_dense(2) * ember.arange(1.0, 9.0).view(4, 2)).sum().backward()
    # kept: sample 0 positions 0, 1; sample 2 position 0; sample 3 positions 0, 1
    assert values.grad.tolist() == [1.0, 2.0, 0.0, 5.0, 7.0, 8.0]


def test_weights_pad_and_split_with_their_values():
    jt = JaggedTensor(values=ember.tensor([1, 2, 3]), weights=ember.tensor([0.5, 0.25, 2.0]),
                      offsets=ember.tensor([0, 1, 3]))
    assert jt.to_padded_dense_weights(padding_value=9.0).tolist() == [[0.5, 9.0], [0.25, 2.0]]
    assert [w.tolist() for w in jt.to_dense_weights()] == [[0.5], [0.25, 2.0]]
    assert [v.tolist() for v in jt.to_dense()] == [[1], [2, 3]]
    assert JaggedTensor(values=ember.tensor([1]), lengths=ember.tensor([1])).to_padded_dense_weights() is None


def test_from_dense_and_from_dense_lengths():
    jt = JaggedTensor.from_dense([ember.tensor([1.0]), ember.tensor([]), ember.tensor([7.0, 8.0])],
                                 weights=[ember.tensor([0.1]), ember.tensor([]), ember.tensor([0.7, 0.8])])
    assert jt.lengths().tolist() == [1, 0, 2] and jt.values().tolist() == [1.0, 7.0, 8.0]
    assert jt.weights().tolist() == pytest.approx([0.1, 0.7, 0.8])
    dense = ember.arange(12.0).view(3, 4)
    jt = JaggedTensor.from_dense_lengths(dense, ember.tensor([2, 0, 4]), weights=dense * 10)
    assert jt.values().tolist() == [0.0, 1.0, 8.0, 9.0, 10.0, 11.0]
    assert jt.weights().tolist() == [0.0, 10.0, 80.0, 90.0, 100.0, 110.0]
    assert jt.to_padded_dense(4).tolist() == [[0, 1, 0, 0], [0, 0, 0, 0], [8, 9, 10, 11]]


def test_empty():
    jt = JaggedTensor.empty(is_weighted=True)
    assert jt.values().numel() == 0 and jt.weights().numel() == 0 and jt.lengths().dtype == ember.int32
    assert jt.to_padded_dense().shape == (0, 0)
    assert jt.to_dense() == []


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(values=ember.arange(3.0), lengths=ember.tensor([1, 1])), ValueError, "sum to 2, but there are 3"),
    (dict(values=ember.arange(3.0), lengths=ember.tensor([4, -1])), ValueError, "non-negative"),
    (dict(values=ember.arange(3.0), offsets=ember.tensor([1, 3])), ValueError, "start at 0"),
    (dict(values=ember.arange(3.0), offsets=ember.tensor([0, 2, 1, 3])), ValueError, "must not decrease"),
    (dict(values=ember.arange(3.0), offsets=ember.tensor([0, 2])), ValueError, "end at 2"),
    (dict(values=ember.arange(3.0)), ValueError, "lengths or offsets"),
    (dict(values=ember.arange(3.0), lengths=ember.tensor([1.0, 2.0])), TypeError, "integer dtype"),
    (dict(values=[1, 2], lengths=ember.tensor([2])), TypeError, "ember.Tensor"),
    (dict(values=ember.arange(3.0), lengths=ember.tensor([3]), weights=ember.ones(2)), ValueError, "weights"),
    (dict(values=ember.arange(3.0), lengths=ember.tensor([3, 0]), offsets=ember.tensor([0, 1, 3])), ValueError, "different"),
])
def test_jagged_tensor_rejects_inconsistent_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        JaggedTensor(**kwargs)


def test_jagged_tensor_bad_arguments():
    jt = JaggedTensor(values=ember.arange(3.0), lengths=ember.tensor([3]))
    with pytest.raises(ValueError, match="desired_length"):
        jt.to_padded_dense(-1)
    with pytest.raises(RuntimeError, match="no weights"):
        jt.weights()
    with pytest.raises(RuntimeError, match="cuda:0 is not available"):
        jt.to("cuda")
    assert jt.to("cpu") is jt
    with pytest.raises(ValueError, match="lengths must lie"):
        JaggedTensor.from_dense_lengths(ember.zeros(2, 3), ember.tensor([1, 4]))


# ---- KeyedJaggedTensor ----

def test_layout_stride_and_per_key_lengths_match_numpy():
    rng = np.random.default_rng(1)
    lengths, values, _ = random_kjt_parts(rng, 5, 6)
    kjt = make_kjt(lengths, values, keys=list("abcde"))
    assert kjt.stride() == 6 and kjt.stride_per_key() == [6] * 5 and not kjt.variable_stride_per_key()
    assert kjt.index_per_key() == {k: i for i, k in enumerate("abcde")}
    want = lengths.reshape(5, 6).sum(1)
    assert kjt.length_per_key() == want.tolist()
    assert kjt.offset_per_key() == [0, *np.cumsum(want).tolist()]
    assert kjt.offsets().tolist() == [0, *np.cumsum(lengths).tolist()]
    from_offsets = KeyedJaggedTensor.from_offsets_sync(list("abcde"), ember.from_numpy(values), kjt.offsets())
    assert from_offsets.length_per_key_or_none() == want.tolist()
    assert from_offsets.lengths().tolist() == lengths.tolist()


def test_getitem_and_to_dict_give_each_keys_samples():
    rng = np.random.default_rng(2)
    lengths, values, weights = random_kjt_parts(rng, 3, 4, weighted=True)
    kjt = make_kjt(lengths, values, weights, keys=["x", "y", "z"])
    want = rows_of(lengths, values, 3, 4)
    want_weights = rows_of(lengths, weights, 3, 4)
    for i, (key, jt) in enumerate(kjt.to_dict().items()):
        assert key == "xyz"[i]
        assert [r.tolist() for r in jt.to_dense()] == want[i]
        assert [r.tolist() for r in kjt[key].to_dense()] == want[i]
        assert [r.tolist() for r in jt.to_dense_weights()] == want_weights[i]
    with pytest.raises(KeyError, match="'w' is not a key"):
        kjt["w"]


@pytest.mark.parametrize("indices", [[2, 0, 1], [1], [0, 0, 2, 2, 2], [], [3, 1, 3]])
def test_permute_with_reorders_repeats_and_subsets_matches_numpy(indices):
    rng = np.random.default_rng(3)
    lengths, values, weights = random_kjt_parts(rng, 4, 5, weighted=True)
    kjt = make_kjt(lengths, values, weights, keys=list("abcd"))
    permuted = kjt.permute(indices)
    assert permuted.keys() == [list("abcd")[i] for i in indices]
    assert permuted.stride() == 5
    rows = rows_of(lengths, values, 4, 5)
    assert kjt_rows(permuted) == [rows[i] for i in indices]
    weight_rows = rows_of(lengths, weights, 4, 5)
    got_weights = rows_of(permuted.lengths().numpy(), permuted.weights().numpy(), len(indices), 5)
    assert got_weights == [weight_rows[i] for i in indices]
    assert permuted.length_per_key() == [lengths.reshape(4, 5).sum(1)[i] for i in indices]


def test_permute_carries_gradients_of_weights():
    weights = ember.tensor([1.0, 2.0, 3.0]).requires_grad_()
    kjt = KeyedJaggedTensor(["a", "b"], ember.tensor([5, 6, 7]), weights=weights, lengths=ember.tensor([1, 2]))
    (kjt.permute([1, 1]).weights() * ember.tensor([1.0, 10.0, 100.0, 1000.0])).sum().backward()
    assert weights.grad.tolist() == [0.0, 101.0, 1010.0]


def test_split_and_concat_are_inverse():
    rng = np.random.default_rng(4)
    lengths, values, weights = random_kjt_parts(rng, 6, 3, weighted=True)
    kjt = make_kjt(lengths, values, weights, keys=list("abcdef"))
    parts = kjt.split([2, 0, 3, 1])
    assert [p.keys() for p in parts] == [["a", "b"], [], ["c", "d", "e"], ["f"]]
    rows = rows_of(lengths, values, 6, 3)
    assert kjt_rows(parts[2]) == rows[2:5]
    assert parts[1].stride() == 3 and parts[1].values().numel() == 0
    joined = KeyedJaggedTensor.concat(parts)
    assert joined.keys() == kjt.keys() and joined.stride() == 3
    assert joined.values().tolist() == values.tolist() and joined.weights().tolist() == kjt.weights().tolist()
    assert joined.lengths().tolist() == lengths.tolist()


def test_from_jt_dict_and_empty():
    jts = {"a": JaggedTensor(ember.tensor([1, 2]), lengths=ember.tensor([2, 0])),
           "b": JaggedTensor(ember.tensor([3]), lengths=ember.tensor([0, 1]))}
    kjt = KeyedJaggedTensor.from_jt_dict(jts)
    assert kjt.keys() == ["a", "b"] and kjt.lengths().tolist() == [2, 0, 0, 1] and kjt.stride() == 2
    empty = KeyedJaggedTensor.empty(is_weighted=True)
    assert empty.keys() == [] and empty.stride() == 0 and empty.weights().numel() == 0
    like = KeyedJaggedTensor.empty_like(kjt)
    assert like.keys() == [] and like.stride() == 2


def test_to_and_pin_memory_on_a_cpu_only_build():
    kjt = KeyedJaggedTensor(["a"], ember.tensor([1]), lengths=ember.tensor([1]))
    assert kjt.to("cpu") is kjt and kjt.to(ember.device("cpu")) is kjt
    assert kjt.pin_memory() is kjt
    with pytest.raises(RuntimeError, match="cuda:0 is not available"):
        kjt.to("cuda:0")
    assert kjt.sync() is kjt


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(keys=["a", "b"], values=ember.arange(3), lengths=ember.tensor([1, 1, 1])), ValueError, "do not divide among 2 keys"),
    (dict(keys=["a", "b"], values=ember.arange(3), lengths=ember.tensor([3, 0, 0, 0]), stride=3), ValueError, "need 6 lengths"),
    (dict(keys=["a"], values=ember.arange(3), lengths=ember.tensor([1, 1])), ValueError, "sum to 2, but there are 3"),
    (dict(keys=["a"], values=ember.arange(3), lengths=ember.tensor([5, -2])), ValueError, "non-negative"),
    (dict(keys="ab", values=ember.arange(3), lengths=ember.tensor([3])), TypeError, "list of str"),
    (dict(keys=[], values=ember.arange(3), lengths=ember.tensor([3])), ValueError, "no keys"),
    (dict(keys=["a"], values=ember.arange(3), lengths=ember.tensor([3]), length_per_key=[2]), ValueError, "length_per_key"),
    (dict(keys=["a"], values=ember.arange(3), lengths=ember.tensor([3]), offset_per_key=[0, 2]), ValueError, "offset_per_key"),
    (dict(keys=["a"], values=ember.arange(3), lengths=ember.tensor([3]), index_per_key={"b": 0}), ValueError, "index_per_key"),
    (dict(keys=["a"], values=ember.arange(3), lengths=ember.tensor([3]), weights=ember.ones(4)), ValueError, "weights"),
    (dict(keys=["a"], values=ember.arange(3), lengths=ember.tensor([3]), inverse_indices=(["a"], ember.zeros(1))),
     NotImplementedError, "variable batch"),
])
def test_keyed_jagged_tensor_rejects_inconsistent_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        KeyedJaggedTensor(**kwargs)


def test_keyed_jagged_tensor_method_errors():
    kjt = KeyedJaggedTensor(["a", "b"], ember.arange(3), lengths=ember.tensor([1, 2]))
    with pytest.raises(IndexError, match=r"\[0, 2\)"):
        kjt.permute([0, 2])
    with pytest.raises(TypeError, match="list of ints"):
        kjt.permute("ab")
    with pytest.raises(ValueError, match="add up to 1"):
        kjt.split([1])
    with pytest.raises(ValueError, match="non-negative"):
        kjt.split([3, -1])
    assert kjt.permute([np.int64(1), np.int64(0)]).keys() == ["b", "a"]  # NumPy integers are ints too
    with pytest.raises(ValueError, match="different strides"):
        KeyedJaggedTensor.concat([kjt, KeyedJaggedTensor(["c"], ember.arange(2), lengths=ember.tensor([1, 1]))])
    weighted = KeyedJaggedTensor(["c", "d"], ember.arange(3), weights=ember.ones(3), lengths=ember.tensor([1, 2]))
    with pytest.raises(ValueError, match="weights"):
        KeyedJaggedTensor.concat([kjt, weighted])
    with pytest.raises(RuntimeError, match="no weights"):
        kjt.weights()


# ---- KeyedTensor ----

def test_keyed_tensor_lookup_and_regroup_match_numpy():
    rng = np.random.default_rng(5)
    a, b, c = (rng.standard_normal((4, d)).astype(np.float32) for d in (2, 3, 1))
    kt1 = KeyedTensor.from_tensor_list(["a", "b"], [ember.from_numpy(a), ember.from_numpy(b)])
    kt2 = KeyedTensor(["c"], [1], ember.from_numpy(c))
    assert kt1.length_per_key() == [2, 3] and kt1.offset_per_key() == [0, 2, 5] and kt1.key_dim() == 1
    np.testing.assert_array_equal(kt1["b"].numpy(), b)
    np.testing.assert_array_equal(kt1.to_dict()["a"].numpy(), a)
    groups = KeyedTensor.regroup([kt1, kt2], [["c", "a"], ["b"], ["a", "b", "c"]])
    np.testing.assert_array_equal(groups[0].numpy(), np.concatenate([c, a], 1))
    np.testing.assert_array_equal(groups[1].numpy(), b)
    np.testing.assert_array_equal(groups[2].numpy(), np.concatenate([a, b, c], 1))
    as_dict = KeyedTensor.regroup_as_dict([kt1, kt2], [["c"], ["a"]], ["first", "second"])
    np.testing.assert_array_equal(as_dict["second"].numpy(), a)
    with pytest.raises(ValueError, match="as long"):
        KeyedTensor.regroup_as_dict([kt1], [["a"]], [])


def test_keyed_tensor_regroup_carries_gradients_and_key_dim_0():
    values = ember.arange(6.0).view(3, 2).requires_grad_()
    kt = KeyedTensor(["x", "y"], [1, 2], values, key_dim=0)
    assert kt["y"].tolist() == [[2.0, 3.0], [4.0, 5.0]]
    (out,) = KeyedTensor.regroup([kt], [["y", "y"]])
    out.sum().backward()
    assert values.grad.tolist() == [[0.0, 0.0], [2.0, 2.0], [2.0, 2.0]]


def test_keyed_tensor_errors():
    with pytest.raises(ValueError, match="adds up to 3"):
        KeyedTensor(["a", "b"], [1, 2], ember.zeros(2, 4))
    with pytest.raises(ValueError, match="2 keys but 1"):
        KeyedTensor(["a", "b"], [4], ember.zeros(2, 4))
    with pytest.raises(ValueError, match="key_dim"):
        KeyedTensor(["a"], [4], ember.zeros(2, 4), key_dim=2)
    kt = KeyedTensor(["a"], [4], ember.zeros(2, 4))
    with pytest.raises(ValueError, match=r"\['b'\]"):
        KeyedTensor.regroup([kt], [["a", "b"]])
    with pytest.raises(KeyError):
        kt["b"]


# ---- ops ----

def test_permute_2d_sparse_data_and_dense_to_jagged_round_trip():
    lengths = ember.tensor([[1, 2], [0, 3]])
    values = ember.arange(6)
    out_lengths, out_values, out_weights = ops.permute_2D_sparse_data(ember.tensor([1, 0]), lengths, values)
    assert out_lengths.tolist() == [[0, 3], [1, 2]] and out_values.tolist() == [3, 4, 5, 0, 1, 2]
    assert out_weights is None
    offsets = ops.asynchronous_complete_cumsum(ember.tensor([2, 0, 1]))
    assert offsets.tolist() == [0, 2, 2, 3]
    assert ops.asynchronous_exclusive_cumsum(ember.tensor([2, 0, 1])).tolist() == [0, 2, 2]
    dense = ops.jagged_2d_to_dense(ember.arange(6.0).view(3, 2), offsets, 2)
    assert dense.tolist() == [[[0, 1], [2, 3]], [[0, 0], [0, 0]], [[4, 5], [0, 0]]]
    back, _ = ops.dense_to_jagged(dense, [offsets])
    assert back.tolist() == [[0, 1], [2, 3], [4, 5]]
    assert ops.jagged_1d_to_dense(ember.tensor([7, 8, 9]), offsets, 3, padding_value=-1).tolist() == \
        [[7, 8, -1], [-1, -1, -1], [9, -1, -1]]
    with pytest.raises(NotImplementedError, match="one jagged dimension"):
        ops.jagged_to_padded_dense(values, [offsets, offsets], [1, 1])
    with pytest.raises(IndexError):
        ops.permute_2D_sparse_data(ember.tensor([2]), lengths, values)


def test_permute_and_padding_on_random_layouts_with_empty_keys_and_samples():
    """Random key counts, batch sizes and lengths (whole keys and batches empty at either end)."""
    rng = np.random.default_rng(7)
    for _ in range(25):
        n_keys, batch = int(rng.integers(1, 6)), int(rng.integers(1, 5))
        lengths = rng.integers(0, 4, n_keys * batch) * (rng.random(n_keys * batch) > 0.4)
        lengths[:batch] *= rng.integers(0, 2)  # sometimes the first key is empty
        values = rng.integers(0, 100, lengths.sum())
        kjt = make_kjt(lengths, values, keys=[f"k{i}" for i in range(n_keys)])
        indices = rng.integers(0, n_keys, int(rng.integers(0, 2 * n_keys))).tolist()
        rows = rows_of(lengths, values, n_keys, batch)
        assert kjt_rows(kjt.permute(indices)) == [rows[i] for i in indices]
        width = int(rng.integers(0, 4))
        for key, key_rows in zip(kjt.keys(), rows):
            padded = kjt[key].to_padded_dense(width, padding_value=-1).tolist()
            assert padded == [(r + [-1] * width)[:width] for r in key_rows]
