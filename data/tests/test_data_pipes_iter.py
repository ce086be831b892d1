import pickle
from collections import namedtuple

import pytest

import ember
from emberdata.datapipes import DataChunk, IterDataPipe, functional_datapipe
from emberdata.datapipes import _base
from emberdata.datapipes.iter import (
    Batcher,
    BucketBatcher,
    Demultiplexer,
    Forker,
    IterableWrapper,
    Mapper,
    Sampler,
    ShardingFilter,
    Shuffler,
)
from emberdata.datapipes.graph_settings import apply_sharding, apply_shuffle_seed, apply_shuffle_settings
from emberdata.sampler import SequentialSampler

import emberdata_test_helpers as helpers


def dp(n=10):
    return IterableWrapper(range(n))


def test_iterable_wrapper_deepcopies_and_has_len():
    data = [[1], [2]]
    w = IterableWrapper(data)
    for x in w:
        x.append(0)
    assert data == [[1], [2]] and len(w) == 2
    shallow = IterableWrapper(data, deepcopy=False)
    for x in shallow:
        x.append(0)
    assert data == [[1, 0], [2, 0]]
    with pytest.raises(TypeError, match="iterable"):
        IterableWrapper(3)


def test_functional_registration_and_unknown_name():
    @functional_datapipe("times_three_for_test")
    class Times3(IterDataPipe):
        def __init__(self, source):
            self.source = source

        def __iter__(self):
            return (3 * x for x in self.source)

    assert list(dp(3).times_three_for_test()) == [0, 3, 6]
    assert "times_three_for_test" in dir(dp(3))
    with pytest.raises(Exception, match="already taken"):
        functional_datapipe("times_three_for_test")(Times3)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        dp().nope
    with pytest.raises(TypeError, match="IterDataPipe or MapDataPipe"):
        functional_datapipe("x_for_test")(object)


def test_len_missing_is_type_error():
    class NoLen(IterDataPipe):
        def __iter__(self):
            yield 1

    with pytest.raises(TypeError, match="valid length"):
        len(NoLen())


def test_mapper_columns():
    assert list(dp(3).map(helpers.double)) == [0, 2, 4]
    rows = IterableWrapper([(1, 2), (3, 4)])
    assert list(rows.map(helpers.double, input_col=1)) == [(1, 4), (3, 8)]
    assert list(rows.map(helpers.double, input_col=0, output_col=-1)) == [(1, 2, 2), (3, 4, 6)]
    assert list(rows.map(lambda a, b: a + b, input_col=[0, 1])) == [(3,), (7,)]
    dicts = IterableWrapper([{"a": 1}])
    assert list(dicts.map(helpers.double, input_col="a", output_col="b")) == [{"a": 1, "b": 2}]
    with pytest.raises(ValueError, match="output_col"):
        dp().map(helpers.double, output_col=1)
    with pytest.raises(TypeError, match="fn must be callable"):
        dp().map(3)
    with pytest.raises(TypeError, match="datapipe must be an IterDataPipe"):
        Mapper([1, 2], helpers.double)
    assert len(dp(4).map(helpers.double)) == 4


def test_filter_plain_and_batched():
    assert list(dp(6).filter(helpers.is_even)) == [0, 2, 4]
    batches = IterableWrapper([DataChunk([1, 3]), DataChunk([2, 5])])
    assert list(batches.filter(helpers.is_even)) == [[2]]
    with pytest.warns(DeprecationWarning, match="drop_empty_batches"):
        kept = batches.filter(helpers.is_even, drop_empty_batches=False)
    assert list(kept) == [[], [2]]
    with pytest.raises(ValueError, match="must return a bool"):
        list(dp(2).filter(helpers.double))


def test_shuffler_is_a_permutation_and_seeded():
    out = list(dp(100).shuffle(buffer_size=7))
    assert sorted(out) == list(range(100)) and out != list(range(100))
    s, same = dp(50).shuffle().set_seed(3), dp(50).shuffle().set_seed(3)
    first, second = list(s), list(s)
    assert first != second  # a second pass moves on to a derived seed ...
    assert [list(same), list(same)] == [first, second]  # ... the same one for the same set_seed
    assert list(dp(50).shuffle().set_seed(3)) != list(dp(50).shuffle().set_seed(4))
    ember.manual_seed(1)
    a = list(dp(50).shuffle())
    ember.manual_seed(1)
    assert list(dp(50).shuffle()) == a
    assert list(dp(5).shuffle().set_shuffle(False)) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="buffer_size must be >= 1"):
        dp().shuffle(buffer_size=0)
    assert len(dp(5).shuffle()) == 5


def test_shuffler_buffer_bounds_how_far_samples_move():
    out = list(dp(200).shuffle(buffer_size=5).set_seed(0))
    # With a buffer of 5, a sample can only be yielded after at most 4 later ones were read... so
    # sample i never comes out before position i - 5.
    assert all(pos >= value - 5 for pos, value in enumerate(out))


def test_shuffler_unbatch_level():
    batched = IterableWrapper([[0, 1], [2, 3]])
    assert sorted(batched.shuffle(unbatch_level=1)) == [0, 1, 2, 3]


def test_batch_unbatch_roundtrip():
    b = list(dp(7).batch(3))
    assert b == [[0, 1, 2], [3, 4, 5], [6]] and isinstance(b[0], DataChunk)
    assert list(dp(7).batch(3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(dp(7).batch(3)) == 3 and len(dp(7).batch(3, drop_last=True)) == 2
    assert list(dp(7).batch(3).unbatch()) == list(range(7))
    nested = dp(8).batch(2).batch(2)
    assert list(nested.unbatch(unbatch_level=2)) == list(range(8))
    assert list(nested.unbatch(unbatch_level=-1)) == list(range(8))
    with pytest.raises(IndexError, match="exceeds"):
        list(dp(4).batch(2).unbatch(unbatch_level=3))
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        Batcher(dp(), 0)


def test_collate_gives_ember_tensors():
    out = list(dp(4).batch(2).collate())
    assert isinstance(out[0], ember.Tensor) and out[1].tolist() == [2, 3]
    assert list(dp(4).batch(2).collate(collate_fn=sum)) == [1, 5]


def test_sharding_filter_and_apply_sharding():
    pipe = dp(10).sharding_filter()
    shards = []
    for i in range(3):
        apply_sharding(pipe, 3, i)
        shards.append(list(pipe))
        assert len(pipe) == len(shards[-1])
    assert sorted(sum(shards, [])) == list(range(10))
    with pytest.raises(ValueError, match="instance_id"):
        apply_sharding(pipe, 2, 2)
    with pytest.raises(RuntimeError, match="Sharding twice"):
        apply_sharding(dp().sharding_filter().sharding_filter(), 2, 0)


def test_zip_concat_mux_cycle_header_enumerate():
    assert list(dp(3).zip(dp(5))) == [(0, 0), (1, 1), (2, 2)]
    assert len(dp(3).zip(dp(5))) == 3
    assert list(dp(2).concat(dp(3))) == [0, 1, 0, 1, 2]
    assert len(dp(2).concat(dp(3))) == 5
    mux = IterableWrapper(range(3)).mux(IterableWrapper(range(10, 15)), IterableWrapper(range(20, 25)))
    assert list(mux) == [0, 10, 20, 1, 11, 21, 2, 12, 22]
    assert list(dp(2).cycle(3)) == [0, 1] * 3 and len(dp(2).cycle(3)) == 6
    assert list(dp(2).cycle().header(5)) == [0, 1, 0, 1, 0]
    with pytest.raises(TypeError, match="forever"):
        len(dp(2).cycle())
    with pytest.raises(ValueError, match="count must be >= 0"):
        dp().cycle(-1)
    assert list(dp(10).header(3)) == [0, 1, 2] and len(dp(10).header(3)) == 3
    assert list(dp(10).header(0)) == []
    assert list(IterableWrapper("ab").enumerate(starting_index=5)) == [(5, "a"), (6, "b")]
    with pytest.raises(ValueError, match="at least one"):
        from emberdata.datapipes.iter import Zipper

        Zipper()


def test_set_length_states_the_length_and_keeps_every_sample():
    evens = dp(10).filter(_is_even)
    with pytest.raises(TypeError, match="valid length"):
        len(evens)
    sized = evens.set_length(5)
    assert list(sized) == [0, 2, 4, 6, 8] and len(sized) == 5
    # Unlike header(), a wrong length cuts nothing: it is only what len() reports.
    assert list(evens.set_length(2)) == [0, 2, 4, 6, 8]
    assert len(sized.shuffle().sharding_filter()) == 5
    with pytest.raises(ValueError, match="length must be >= 0"):
        dp().set_length(-1)
    with pytest.raises(TypeError, match="length must be an int"):
        dp().set_length(2.0)


def _is_even(x):
    return x % 2 == 0


def test_fork_children_see_everything_and_buffer_is_bounded():
    a, b = dp(5).fork(num_instances=2)
    assert list(a.zip(b)) == [(i, i) for i in range(5)]
    assert list(a) == list(range(5)) and list(b) == list(range(5))
    assert len(a) == 5
    assert Forker(dp(3), 1) is not None
    a, b = dp(100).fork(2, buffer_size=10)
    it = iter(a)
    for _ in range(10):
        next(it)
    with pytest.raises(BufferError, match="buffer_size=10"):
        next(it)
    with pytest.raises(ValueError, match="buffer_size"):
        dp().fork(2, buffer_size=0)
    a, b = dp(50).fork(2, buffer_size=-1)
    assert list(a) == list(range(50)) and list(b) == list(range(50))


def test_fork_stale_iterator():
    a, b = dp(5).fork(2)
    ia = iter(a)
    next(ia)
    list(a)  # a new pass while ia is running
    with pytest.raises(RuntimeError, match="stale"):
        next(ia)


def test_demux_routes_and_bounds():
    evens, odds = dp(10).demux(2, helpers_mod2)
    assert list(evens) == [0, 2, 4, 6, 8] and list(odds) == [1, 3, 5, 7, 9]
    evens, odds = dp(10).demux(2, helpers_mod2)
    assert list(evens.zip(odds)) == [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9)]
    evens, odds = dp(100).demux(2, helpers_mod2, buffer_size=5)
    with pytest.raises(BufferError, match="buffer_size=5"):
        list(evens)
    with pytest.raises(ValueError, match="classifier_fn must return"):
        list(Demultiplexer(dp(3), 2, helpers.double)[0])
    keep, = dp(6).demux(1, none_for_odd, drop_none=True)
    assert list(keep) == [0, 2, 4]
    with pytest.raises(TypeError, match="no valid length"):
        len(dp(3).demux(2, helpers_mod2)[0])


def helpers_mod2(x):
    return x % 2


def none_for_odd(x):
    return None if x % 2 else 0


def test_groupby_keep_key():
    assert list(dp(4).groupby(helpers_mod2, keep_key=True, group_size=2)) == [(0, [0, 2]), (1, [1, 3])]
    assert list(dp(3).groupby(helpers_mod2, keep_key=True)) == [(0, [0, 2]), (1, [1])]


def test_groupby():
    groups = list(dp(12).groupby(helpers_mod2, group_size=2))
    assert all(len(g) == 2 and len({x % 2 for x in g}) == 1 for g in groups)
    assert sorted(sum(groups, [])) == list(range(12))
    groups = list(dp(7).groupby(helpers_mod2, buffer_size=3))
    assert sorted(sum(groups, [])) == list(range(7)) and all(len(g) <= 3 for g in groups)
    assert sorted(map(len, dp(5).groupby(helpers_mod2, group_size=3))) == [2, 3]
    assert [len(g) for g in dp(5).groupby(helpers_mod2, group_size=3, drop_remaining=True)] == [3]
    with pytest.raises(RuntimeError, match="guaranteed_group_size=3"):
        list(dp(10).groupby(helpers_mod2, buffer_size=4, group_size=3))
    kept = list(dp(10).groupby(helpers_mod2, buffer_size=4, group_size=3, drop_remaining=True))
    assert all(len(g) == 3 for g in kept)
    with pytest.raises(ValueError, match="needs group_size"):
        dp().groupby(helpers_mod2, guaranteed_group_size=2)
    with pytest.raises(ValueError, match="group_size"):
        dp().groupby(helpers_mod2, buffer_size=2, group_size=3)


def test_in_batch_shuffle_and_bucketbatch():
    ember.manual_seed(0)
    out = list(dp(20).batch(10).in_batch_shuffle())
    assert [sorted(b) for b in out] == [list(range(10)), list(range(10, 20))] and out[0] != list(range(10))
    with pytest.raises(TypeError, match="batches"):
        list(dp(3).in_batch_shuffle())
    batches = list(dp(40).bucketbatch(batch_size=4, batch_num=5, sort_key=sorted))
    assert sorted(sum(batches, [])) == list(range(40)) and all(len(b) == 4 for b in batches)
    # Sorted buckets of 20: each batch holds 4 consecutive values of its bucket.
    assert all(b == sorted(b) and b[-1] - b[0] == 3 for b in batches)
    batches = list(BucketBatcher(dp(10), batch_size=3, drop_last=True, batch_num=2))
    assert all(len(b) == 3 for b in batches)


def test_sampler_datapipe():
    assert list(Sampler(dp(3))) == [0, 1, 2]
    assert list(Sampler(dp(3), SequentialSampler)) == [0, 1, 2] and len(Sampler(dp(4))) == 4


def test_shuffle_settings_and_seeds_over_the_graph():
    pipe = dp(30).shuffle().map(helpers.double).shuffle()
    apply_shuffle_settings(pipe, shuffle=False)
    assert list(pipe) == [2 * i for i in range(30)]
    apply_shuffle_settings(pipe, shuffle=True)
    apply_shuffle_seed(pipe, 5)
    first = list(pipe)
    other = dp(30).shuffle().map(helpers.double).shuffle()
    apply_shuffle_seed(other, 5)
    assert list(other) == first != [2 * i for i in range(30)]


def test_pickling_graphs_and_lambdas(monkeypatch):
    pipe = dp(10).shuffle().map(helpers.double).batch(3)
    a, b = dp(4).fork(2)
    assert list(pickle.loads(pickle.dumps(pipe)).unbatch()).__len__() == 10
    a2 = pickle.loads(pickle.dumps(a.zip(b)))
    assert list(a2) == [(i, i) for i in range(4)]
    monkeypatch.setattr(_base, "DILL_AVAILABLE", False)
    with pytest.raises(pickle.PicklingError, match=r"Mapper.fn: .*<lambda>.*install `dill`"):
        pickle.dumps(dp().map(lambda x: x))


def test_pickling_lambda_with_dill():
    pytest.importorskip("dill")
    pipe = pickle.loads(pickle.dumps(dp(3).map(lambda x: x + 1)))
    assert list(pipe) == [1, 2, 3]


def test_namedtuple_mapping_and_len_propagation():
    Point = namedtuple("Point", "x y")
    out = list(IterableWrapper([Point(1, 2)]).map(helpers.double, input_col=0))
    assert out == [(2, 2)]
    assert len(ShardingFilter(dp(10))) == 10
    assert isinstance(Shuffler(dp(3)), IterDataPipe)
