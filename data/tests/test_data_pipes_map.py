import pytest

import ember
from emberdata.datapipes import MapDataPipe, IterDataPipe
from emberdata.datapipes.iter import IterableWrapper
from emberdata.datapipes.map import Batcher, SequenceWrapper, Zipper

import emberdata_test_helpers as helpers


def seq(n=5):
    return SequenceWrapper(list(range(n)))


def test_sequence_wrapper_and_map():
    s = seq()
    assert s[2] == 2 and len(s) == 5 and list(s) == [0, 1, 2, 3, 4]
    m = s.map(helpers.double)
    assert isinstance(m, MapDataPipe) and m[3] == 6 and len(m) == 5
    with pytest.raises(TypeError, match="indexing"):
        SequenceWrapper(iter([1]))


def test_batch_concat_zip():
    b = seq(5).batch(2)
    assert len(b) == 3 and b[2] == [4] and b[0] == [0, 1]
    assert len(seq(5).batch(2, drop_last=True)) == 2
    with pytest.raises(IndexError):
        b[3]
    c = seq(2).concat(seq(3))
    assert [c[i] for i in range(len(c))] == [0, 1, 0, 1, 2]
    with pytest.raises(IndexError):
        c[5]
    z = seq(2).zip(seq(3))
    assert len(z) == 2 and z[1] == (1, 1)
    with pytest.raises(TypeError, match="MapDataPipe"):
        Zipper(seq(), IterableWrapper([1]))
    with pytest.raises(ValueError, match="batch_size"):
        Batcher(seq(), -1)


def test_shuffle_is_a_map_datapipe_in_an_order_drawn_from_ember():
    ember.manual_seed(3)
    s = seq(20).shuffle()
    a = list(s)
    assert isinstance(s, MapDataPipe) and len(s) == 20 and [s[i] for i in range(20)] == a
    assert list(s) == a and sorted(a) == list(range(20)) and a != list(range(20))  # fixed once built
    ember.manual_seed(3)
    assert list(seq(20).shuffle()) == a
    assert list(s.set_seed(7)) == list(seq(20).shuffle().set_seed(7)) != a
    assert list(seq(3).shuffle(indices=[2, 0]).set_shuffle(False)) == [2, 0]
    keyed = SequenceWrapper({"a": 1, "b": 2}).shuffle(indices=["a", "b"])
    assert sorted(keyed[k] for k in ("a", "b")) == [1, 2]
    with pytest.raises(IndexError, match="not one of its indices"):
        keyed["c"]


def test_mapper_defaults_to_identity():
    assert list(seq(3).map()) == [0, 1, 2]


def test_conversions():
    it = seq(3).to_iter_datapipe()
    assert isinstance(it, IterDataPipe) and list(it) == [0, 1, 2]
    assert list(seq(3).to_iter_datapipe(indices=[2, 1])) == [2, 1]
    m = IterableWrapper([("a", 1), ("b", 2)]).to_map_datapipe()
    assert m["b"] == 2 and len(m) == 2
    m2 = IterableWrapper([1, 2]).to_map_datapipe(key_value_fn=pair_with_square)
    assert m2[2] == 4
    with pytest.raises(TypeError, match="key_value_fn"):
        len(IterableWrapper([1]).to_map_datapipe())
    with pytest.raises(IndexError, match="not found"):
        m["z"]


def pair_with_square(x):
    return x, x * x
