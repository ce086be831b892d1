"""The everyday IterDataPipes: wrap, map, filter, batch, shuffle, shard, zip, concat, ..."""
import copy
import random
import warnings

from emberdata._seed import take_seed
from emberdata.sampler import SequentialSampler
from emberdata.datapipes._base import (
    DataChunk,
    IterDataPipe,
    MapDataPipe,
    check_callable,
    check_datapipe,
    check_int,
    functional_datapipe,
)


class IterableWrapper(IterDataPipe):
    """Wraps any iterable; with `deepcopy=True` each iteration sees a copy, so in-place edits don't leak."""

    def __init__(self, iterable, deepcopy=True):
        if not hasattr(iterable, "__iter__"):
            raise TypeError(f"IterableWrapper: iterable must be iterable, got {type(iterable).__name__}")
        self.iterable = iterable
        self.deepcopy = deepcopy

    def __iter__(self):
        source = self.iterable
        if self.deepcopy:
            try:
                source = copy.deepcopy(self.iterable)
            except TypeError:
                warnings.warn("IterableWrapper: the iterable cannot be deep-copied; in-place changes will be seen", stacklevel=2)
        yield from source

    def __len__(self):
        if hasattr(self.iterable, "__len__"):
            return len(self.iterable)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")


def _select(data, col):
    if isinstance(col, (list, tuple)):
        return [data[c] for c in col]
    return data[col]


def _apply_fn(fn, data, input_col, output_col):
    """Mapper's column logic, as TorchData has it: read input_col, write output_col (or replace)."""
    if input_col is None:
        return fn(data)
    args = _select(data, input_col)
    result = fn(*args) if isinstance(input_col, (list, tuple)) else fn(args)
    is_tuple = isinstance(data, tuple)
    data = list(data) if is_tuple else copy.copy(data)
    if output_col is None:
        if isinstance(input_col, (list, tuple)):
            data[input_col[0]] = result
            for idx in sorted(input_col[1:], reverse=True):
                del data[idx]
        else:
            data[input_col] = result
    elif output_col == -1 and isinstance(data, list):
        data.append(result)
    else:
        data[output_col] = result
    return tuple(data) if is_tuple else data


def _check_cols(input_col, output_col):
    if input_col is None and output_col is not None:
        raise ValueError("`output_col` must be None when `input_col` is None")
    if isinstance(output_col, (list, tuple)):
        if len(output_col) > 1:
            raise ValueError("`output_col` must be a single column")
        output_col = output_col[0]
    return output_col


@functional_datapipe("map")
class Mapper(IterDataPipe):
    """Applies `fn` to each sample, or to `input_col` of it writing to `output_col` (-1 appends)."""

    def __init__(self, datapipe, fn, input_col=None, output_col=None):
        self.datapipe = check_datapipe(datapipe, "Mapper: datapipe")
        self.fn = check_callable(fn, "Mapper: fn")
        self.input_col = input_col
        self.output_col = _check_cols(input_col, output_col)

    def __iter__(self):
        for data in self.datapipe:
            yield _apply_fn(self.fn, data, self.input_col, self.output_col)

    def __len__(self):
        return len(self.datapipe)


@functional_datapipe("filter")
class Filter(IterDataPipe):
    """Keeps samples for which `filter_fn` is true; inside batches it filters each batch's items.

    `drop_empty_batches` (default True) is deprecated, as in PyTorch 1.12: passing it warns.
    """

    def __init__(self, datapipe, filter_fn, drop_empty_batches=None, input_col=None):
        self.datapipe = check_datapipe(datapipe, "Filter: datapipe")
        self.filter_fn = check_callable(filter_fn, "Filter: filter_fn")
        if drop_empty_batches is None:
            drop_empty_batches = True
        else:
            warnings.warn("Filter: `drop_empty_batches` is deprecated since PyTorch 1.12 and will be removed",
                          DeprecationWarning, stacklevel=2)
        self.drop_empty_batches = drop_empty_batches
        self.input_col = input_col

    def _keep(self, data):
        value = data if self.input_col is None else _select(data, self.input_col)
        result = self.filter_fn(*value) if isinstance(self.input_col, (list, tuple)) else self.filter_fn(value)
        if not isinstance(result, bool):
            raise ValueError(f"Filter: filter_fn must return a bool, got {type(result).__name__}")
        return result

    def __iter__(self):
        for data in self.datapipe:
            if isinstance(data, DataChunk):
                kept = DataChunk([d for d in data if self._keep(d)])
                if kept or not self.drop_empty_batches:
                    yield kept
            elif self._keep(data):
                yield data


@functional_datapipe("shuffle")
class Shuffler(IterDataPipe):
    """Shuffles through a buffer of `buffer_size` samples (memory is bounded by it).

    Deterministic: the seed is the one given by `set_seed` (DataLoader/DataLoader2 set it once per
    epoch, identical on every worker and rank; a second pass in the same epoch uses a seed derived
    from it), otherwise one drawn from ember's default generator at each iteration, so
    `ember.manual_seed` reproduces the order. `unbatch_level` unbatches first.
    """

    def __init__(self, datapipe, *, buffer_size=10000, unbatch_level=0):
        check_datapipe(datapipe, "Shuffler: datapipe")
        self.buffer_size = check_int(buffer_size, "Shuffler: buffer_size", minimum=1)
        self.unbatch_level = check_int(unbatch_level, "Shuffler: unbatch_level", minimum=0)
        self.datapipe = datapipe if unbatch_level == 0 else datapipe.unbatch(unbatch_level=unbatch_level)
        self._enabled = True
        self._seed = None

    def set_shuffle(self, shuffle=True):
        self._enabled = bool(shuffle)
        return self

    def set_seed(self, seed):
        self._seed = check_int(seed, "Shuffler.set_seed: seed")
        return self

    def __iter__(self):
        if not self._enabled:
            yield from self.datapipe
            return
        rng = random.Random(take_seed(self))
        buffer = []
        for x in self.datapipe:
            if len(buffer) == self.buffer_size:
                idx = rng.randint(0, len(buffer) - 1)
                buffer[idx], x = x, buffer[idx]
                yield x
            else:
                buffer.append(x)
        rng.shuffle(buffer)
        yield from buffer

    def __len__(self):
        return len(self.datapipe)


@functional_datapipe("batch")
class Batcher(IterDataPipe):
    """Groups consecutive samples into `wrapper_class` batches of `batch_size`."""

    def __init__(self, datapipe, batch_size, drop_last=False, wrapper_class=DataChunk):
        self.datapipe = check_datapipe(datapipe, "Batcher: datapipe")
        self.batch_size = check_int(batch_size, "Batcher: batch_size", minimum=1)
        self.drop_last = drop_last
        self.wrapper_class = wrapper_class

    def __iter__(self):
        batch = []
        for x in self.datapipe:
            batch.append(x)
            if len(batch) == self.batch_size:
                yield self.wrapper_class(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.wrapper_class(batch)

    def __len__(self):
        n = len(self.datapipe)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


@functional_datapipe("unbatch")
class UnBatcher(IterDataPipe):
    """Undoes `unbatch_level` levels of batching (-1: all of them)."""

    def __init__(self, datapipe, unbatch_level=1):
        self.datapipe = check_datapipe(datapipe, "UnBatcher: datapipe")
        if not isinstance(unbatch_level, int) or unbatch_level < -1:
            raise ValueError(f"UnBatcher: unbatch_level must be -1 or >= 0, got {unbatch_level!r}")
        self.unbatch_level = unbatch_level

    def __iter__(self):
        for x in self.datapipe:
            yield from self._dive(x, self.unbatch_level)

    def _dive(self, x, level):
        if level == 0:
            yield x
        elif isinstance(x, list):
            for item in x:
                yield from self._dive(item, level - 1 if level > 0 else -1)
        elif level == -1:
            yield x
        else:
            raise IndexError(f"unbatch_level {self.unbatch_level} exceeds the depth of the DataPipe")


@functional_datapipe("collate")
class Collator(IterDataPipe):
    """Applies `collate_fn` (default: `default_collate`, giving ember tensors) to each batch."""

    def __init__(self, datapipe, collate_fn=None):
        from emberdata._collate import default_collate

        self.datapipe = check_datapipe(datapipe, "Collator: datapipe")
        self.collate_fn = check_callable(collate_fn or default_collate, "Collator: collate_fn")

    def __iter__(self):
        for batch in self.datapipe:
            yield self.collate_fn(batch)

    def __len__(self):
        return len(self.datapipe)


@functional_datapipe("sharding_filter")
class ShardingFilter(IterDataPipe):
    """Keeps every `num_of_instances`-th sample from `instance_id` once sharding is applied."""

    def __init__(self, source_datapipe):
        self.source_datapipe = check_datapipe(source_datapipe, "ShardingFilter: source_datapipe")
        self.num_of_instances = 1
        self.instance_id = 0

    def is_shardable(self):
        return True

    def apply_sharding(self, num_of_instances, instance_id):
        self.num_of_instances = num_of_instances
        self.instance_id = instance_id

    def __iter__(self):
        for i, item in enumerate(self.source_datapipe):
            if i % self.num_of_instances == self.instance_id:
                yield item

    def __len__(self):
        n = len(self.source_datapipe)
        return n // self.num_of_instances + (1 if self.instance_id < n % self.num_of_instances else 0)


def _check_all(datapipes, name):
    if not datapipes:
        raise ValueError(f"{name}: expected at least one DataPipe")
    for i, dp in enumerate(datapipes):
        check_datapipe(dp, f"{name}: datapipes[{i}]")
    return datapipes


@functional_datapipe("zip")
class Zipper(IterDataPipe):
    """Tuples of one sample from each DataPipe; stops with the shortest."""

    def __init__(self, *datapipes):
        self.datapipes = _check_all(datapipes, "Zipper")

    def __iter__(self):
        yield from zip(*self.datapipes)

    def __len__(self):
        return min(len(dp) for dp in self.datapipes)


@functional_datapipe("concat")
class Concater(IterDataPipe):
    """The DataPipes one after the other."""

    def __init__(self, *datapipes):
        self.datapipes = _check_all(datapipes, "Concater")

    def __iter__(self):
        for dp in self.datapipes:
            yield from dp

    def __len__(self):
        return sum(len(dp) for dp in self.datapipes)


@functional_datapipe("mux")
class Multiplexer(IterDataPipe):
    """One sample from each DataPipe in turn; stops, without a partial round, when the shortest ends."""

    def __init__(self, *datapipes):
        self.datapipes = _check_all(datapipes, "Multiplexer")

    def __iter__(self):
        iterators = [iter(dp) for dp in self.datapipes]
        while True:
            round_ = []
            for it in iterators:
                try:
                    round_.append(next(it))
                except StopIteration:
                    return
            yield from round_

    def __len__(self):
        return min(len(dp) for dp in self.datapipes) * len(self.datapipes)


@functional_datapipe("cycle")
class Cycler(IterDataPipe):
    """Repeats the source `count` times (None: forever)."""

    def __init__(self, source_datapipe, count=None):
        self.source_datapipe = check_datapipe(source_datapipe, "Cycler: source_datapipe")
        self.count = check_int(count, "Cycler: count", minimum=0, allow_none=True)

    def __iter__(self):
        i = 0
        while self.count is None or i < self.count:
            yield from self.source_datapipe
            i += 1

    def __len__(self):
        if self.count is None:
            raise TypeError(f"{type(self).__name__} instance cycles forever, it has no valid length")
        return self.count * len(self.source_datapipe)


@functional_datapipe("header")
class Header(IterDataPipe):
    """The first `limit` samples."""

    def __init__(self, source_datapipe, limit=10):
        self.source_datapipe = check_datapipe(source_datapipe, "Header: source_datapipe")
        self.limit = check_int(limit, "Header: limit", minimum=0)

    def __iter__(self):
        if self.limit == 0:
            return
        for i, value in enumerate(self.source_datapipe):
            yield value
            if i + 1 == self.limit:
                return

    def __len__(self):
        try:
            return min(self.limit, len(self.source_datapipe))
        except TypeError:
            return self.limit


@functional_datapipe("set_length")
class LengthSetter(IterDataPipe):
    """Gives the source the `len()` `length`; the samples pass through unchanged (TorchData 0.4).

    For pipes whose length is known but cannot be computed, such as a parsed file behind a
    `filter`: `Header` would cut the samples, this only states how many there are.
    """

    def __init__(self, source_datapipe, length):
        self.source_datapipe = check_datapipe(source_datapipe, "LengthSetter: source_datapipe")
        self.length = check_int(length, "LengthSetter: length", minimum=0)

    def __iter__(self):
        yield from self.source_datapipe

    def __len__(self):
        return self.length


@functional_datapipe("enumerate")
class Enumerator(IterDataPipe):
    """`(index, sample)` pairs, counting from `starting_index`."""

    def __init__(self, source_datapipe, starting_index=0):
        self.source_datapipe = check_datapipe(source_datapipe, "Enumerator: source_datapipe")
        self.starting_index = check_int(starting_index, "Enumerator: starting_index")

    def __iter__(self):
        yield from enumerate(self.source_datapipe, self.starting_index)

    def __len__(self):
        return len(self.source_datapipe)


@functional_datapipe("in_batch_shuffle")
class InBatchShuffler(IterDataPipe):
    """Shuffles the items inside each batch (seeded like Shuffler)."""

    def __init__(self, datapipe):
        self.datapipe = check_datapipe(datapipe, "InBatchShuffler: datapipe")
        self._seed = None
        self._enabled = True

    def set_shuffle(self, shuffle=True):
        self._enabled = bool(shuffle)
        return self

    def set_seed(self, seed):
        self._seed = check_int(seed, "InBatchShuffler.set_seed: seed")
        return self

    def __iter__(self):
        rng = random.Random(take_seed(self))
        for batch in self.datapipe:
            if not isinstance(batch, list):
                raise TypeError(f"InBatchShuffler: expected batches (lists), got {type(batch).__name__}")
            batch = list(batch)
            if self._enabled:
                rng.shuffle(batch)
            yield DataChunk(batch)

    def __len__(self):
        return len(self.datapipe)


@functional_datapipe("bucketbatch")
class BucketBatcher(IterDataPipe):
    """Batches drawn from sorted buckets, so a batch holds samples of similar `sort_key` order.

    Buckets of `batch_size * batch_num` samples are taken (after shuffling groups of `bucket_num`
    buckets when `bucket_num > 1` or `sort_key` is None), sorted by `sort_key(bucket) -> bucket`,
    cut into batches, and the batches shuffled. Memory: at most `batch_size * batch_num *
    bucket_num` samples.
    """

    def __init__(self, datapipe, batch_size, drop_last=False, batch_num=100, bucket_num=1, sort_key=None, use_in_batch_shuffle=True):
        check_datapipe(datapipe, "BucketBatcher: datapipe")
        self.batch_size = check_int(batch_size, "BucketBatcher: batch_size", minimum=1)
        self.batch_num = check_int(batch_num, "BucketBatcher: batch_num", minimum=1)
        self.bucket_num = check_int(bucket_num, "BucketBatcher: bucket_num", minimum=1)
        self.drop_last = drop_last
        self.sort_key = check_callable(sort_key, "BucketBatcher: sort_key", allow_none=True)
        bucket_size = batch_size * batch_num
        if bucket_num > 1 or sort_key is None:
            pool = bucket_size * bucket_num
            if use_in_batch_shuffle:
                datapipe = datapipe.batch(pool).in_batch_shuffle().unbatch()
            else:
                datapipe = datapipe.shuffle(buffer_size=pool)
        self.datapipe = InBatchShuffler(
            _BucketSplitter(Batcher(datapipe, bucket_size), batch_size, drop_last, self.sort_key)
        ).unbatch()

    def __iter__(self):
        yield from self.datapipe


class _BucketSplitter(IterDataPipe):
    """Sorts one bucket and cuts it into batches (the batch list is shuffled downstream)."""

    def __init__(self, datapipe, batch_size, drop_last, sort_key):
        self.datapipe, self.batch_size, self.drop_last, self.sort_key = datapipe, batch_size, drop_last, sort_key

    def __iter__(self):
        for bucket in self.datapipe:
            bucket = self.sort_key(bucket) if self.sort_key else bucket
            batches = [DataChunk(bucket[i : i + self.batch_size]) for i in range(0, len(bucket), self.batch_size)]
            if self.drop_last and len(batches[-1]) < self.batch_size:
                batches.pop()
            if batches:
                yield DataChunk(batches)


@functional_datapipe("groupby")
class Grouper(IterDataPipe):
    """Groups samples by `group_key_fn`, holding at most `buffer_size` samples.

    A group is yielded when it reaches `group_size`. When the buffer is full the largest group is
    yielded early; if it is smaller than `guaranteed_group_size` (default: `group_size`) it is
    dropped with `drop_remaining=True`, else a RuntimeError is raised. At the end the remaining
    groups are yielded (dropped with `drop_remaining=True`). With `keep_key` each group comes as
    `(key, group)`.
    """

    def __init__(self, datapipe, group_key_fn, *, keep_key=False, buffer_size=10000, group_size=None,
                 guaranteed_group_size=None, drop_remaining=False):
        self.datapipe = check_datapipe(datapipe, "Grouper: datapipe")
        self.group_key_fn = check_callable(group_key_fn, "Grouper: group_key_fn")
        self.keep_key = keep_key
        self.buffer_size = check_int(buffer_size, "Grouper: buffer_size", minimum=1)
        self.group_size = check_int(group_size, "Grouper: group_size", minimum=1, allow_none=True)
        if group_size is not None and group_size > buffer_size:
            raise ValueError(f"Grouper: group_size ({group_size}) must be <= buffer_size ({buffer_size})")
        check_int(guaranteed_group_size, "Grouper: guaranteed_group_size", minimum=1, allow_none=True)
        if guaranteed_group_size is not None and (group_size is None or guaranteed_group_size > group_size):
            raise ValueError("Grouper: guaranteed_group_size needs group_size, and must be <= group_size")
        self.guaranteed_group_size = guaranteed_group_size if guaranteed_group_size is not None else group_size
        self.drop_remaining = drop_remaining

    def _output(self, key, group):
        return (key, DataChunk(group)) if self.keep_key else DataChunk(group)

    def _evict_biggest(self, groups):
        """Makes room: the biggest group, and what to yield for it (None when it may be dropped)."""
        biggest = max(groups, key=lambda k: len(groups[k]))
        group = groups.pop(biggest)
        if self.guaranteed_group_size is not None and len(group) < self.guaranteed_group_size:
            if self.drop_remaining:
                return group, None
            raise RuntimeError(
                f"Grouper: the buffer of {self.buffer_size} is full and its biggest group has {len(group)} samples, "
                f"fewer than guaranteed_group_size={self.guaranteed_group_size}; raise buffer_size or set drop_remaining=True"
            )
        return group, self._output(biggest, group)

    def __iter__(self):
        groups, buffered = {}, 0
        for x in self.datapipe:
            key = self.group_key_fn(x)
            groups.setdefault(key, []).append(x)
            buffered += 1
            if self.group_size is not None and len(groups[key]) == self.group_size:
                buffered -= len(groups[key])
                yield self._output(key, groups.pop(key))
            elif buffered == self.buffer_size:
                group, out = self._evict_biggest(groups)
                buffered -= len(group)
                if out is not None:
                    yield out
        if not self.drop_remaining:
            for key, group in groups.items():
                yield self._output(key, group)


class Sampler(IterDataPipe):
    """Iterates `sampler(datapipe, *sampler_args, **sampler_kwargs)` (no functional name, as in PyTorch)."""

    def __init__(self, datapipe, sampler=SequentialSampler, sampler_args=None, sampler_kwargs=None):
        self.datapipe = check_datapipe(datapipe, "Sampler: datapipe")
        self.sampler_cls = check_callable(sampler, "Sampler: sampler")
        self.sampler_args = tuple(sampler_args or ())
        self.sampler_kwargs = dict(sampler_kwargs or {})
        self.sampler = self.sampler_cls(self.datapipe, *self.sampler_args, **self.sampler_kwargs)

    def __iter__(self):
        yield from self.sampler

    def __len__(self):
        return len(self.sampler)


class MapToIterConverter(IterDataPipe):
    """Iterates a MapDataPipe over `indices` (default: `range(len(datapipe))`)."""

    def __init__(self, datapipe, indices=None):
        self.datapipe = check_datapipe(datapipe, "MapToIterConverter: datapipe", MapDataPipe)
        self.indices = list(range(len(datapipe))) if indices is None else list(indices)

    def __iter__(self):
        for i in self.indices:
            yield self.datapipe[i]

    def __len__(self):
        return len(self.indices)


MapDataPipe.register_datapipe_as_function("to_iter_datapipe", MapToIterConverter)
