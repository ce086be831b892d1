"""MapDataPipes (`emberdata.datapipes.map`): SequenceWrapper, Mapper, Batcher, Concater, Zipper, Shuffler."""
import copy
import random
import warnings

from emberdata._seed import draw_seed
from emberdata.datapipes._base import (
    DataChunk,
    IterDataPipe,
    MapDataPipe,
    check_callable,
    check_datapipe,
    check_int,
    functional_datapipe,
)

__all__ = ["Batcher", "Concater", "IterToMapConverter", "MapDataPipe", "Mapper", "SequenceWrapper", "Shuffler", "Zipper"]


class SequenceWrapper(MapDataPipe):
    """A sequence (or mapping) as a MapDataPipe; `deepcopy=True` protects it from in-place edits."""

    def __init__(self, sequence, deepcopy=True):
        if not hasattr(sequence, "__getitem__") or not hasattr(sequence, "__len__"):
            raise TypeError(f"SequenceWrapper: sequence must support indexing and len(), got {type(sequence).__name__}")
        if deepcopy:
            try:
                sequence = copy.deepcopy(sequence)
            except TypeError:
                warnings.warn("SequenceWrapper: the sequence cannot be deep-copied; in-place changes will be seen", stacklevel=2)
        self.sequence = sequence

    def __getitem__(self, index):
        return self.sequence[index]

    def __len__(self):
        return len(self.sequence)


def default_fn(data):
    """Mapper's default `fn`: the item unchanged (PyTorch's name)."""
    return data


@functional_datapipe("map")
class Mapper(MapDataPipe):
    """`fn(datapipe[index])`."""

    def __init__(self, datapipe, fn=default_fn):
        self.datapipe = check_datapipe(datapipe, "Mapper: datapipe", MapDataPipe)
        self.fn = check_callable(fn, "Mapper: fn")

    def __getitem__(self, index):
        return self.fn(self.datapipe[index])

    def __len__(self):
        return len(self.datapipe)


@functional_datapipe("batch")
class Batcher(MapDataPipe):
    """Item `i` is the batch of samples `i*batch_size ... (i+1)*batch_size - 1`."""

    def __init__(self, datapipe, batch_size, drop_last=False, wrapper_class=DataChunk):
        self.datapipe = check_datapipe(datapipe, "Batcher: datapipe", MapDataPipe)
        self.batch_size = check_int(batch_size, "Batcher: batch_size", minimum=1)
        self.drop_last = drop_last
        self.wrapper_class = wrapper_class

    def __getitem__(self, index):
        if not 0 <= index < len(self):
            raise IndexError(f"Batcher: index {index} out of range for {len(self)} batches")
        start = index * self.batch_size
        stop = min(start + self.batch_size, len(self.datapipe))
        return self.wrapper_class([self.datapipe[i] for i in range(start, stop)])

    def __len__(self):
        n = len(self.datapipe)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def _check_all(datapipes, name):
    if not datapipes:
        raise ValueError(f"{name}: expected at least one MapDataPipe")
    for i, dp in enumerate(datapipes):
        check_datapipe(dp, f"{name}: datapipes[{i}]", MapDataPipe)
    return datapipes


@functional_datapipe("concat")
class Concater(MapDataPipe):
    """Indices run through the first DataPipe, then the next ones."""

    def __init__(self, *datapipes):
        self.datapipes = _check_all(datapipes, "Concater")

    def __getitem__(self, index):
        offset = index
        for dp in self.datapipes:
            if offset < len(dp):
                return dp[offset]
            offset -= len(dp)
        raise IndexError(f"Concater: index {index} out of range for length {len(self)}")

    def __len__(self):
        return sum(len(dp) for dp in self.datapipes)


@functional_datapipe("zip")
class Zipper(MapDataPipe):
    """Item `i` is the tuple of every DataPipe's item `i`; the length is the shortest's."""

    def __init__(self, *datapipes):
        self.datapipes = _check_all(datapipes, "Zipper")

    def __getitem__(self, index):
        if not 0 <= index < len(self):
            raise IndexError(f"Zipper: index {index} out of range for length {len(self)}")
        return tuple(dp[index] for dp in self.datapipes)

    def __len__(self):
        return min(len(dp) for dp in self.datapipes)


@functional_datapipe("shuffle")
class Shuffler(MapDataPipe):
    """`datapipe` in a shuffled order of `indices`, as a MapDataPipe (PyTorch 1.12): item `key`
    is `datapipe[shuffled[position of key in indices]]`, and iterating follows the shuffled order.

    The order is drawn from ember's generator when the Shuffler is built (so `ember.manual_seed`
    reproduces it; PyTorch uses Python's `random`); `set_seed` draws it again from a seed (what
    DataLoader2 does each epoch, identically in every worker and rank) and `set_shuffle(False)`
    gives back the order of `indices`.
    """

    def __init__(self, datapipe, *, indices=None):
        self.datapipe = check_datapipe(datapipe, "Shuffler: datapipe", MapDataPipe)
        self.indices = list(range(len(datapipe))) if indices is None else list(indices)
        self._positions = {key: i for i, key in enumerate(self.indices)}
        self._enabled = True
        self.set_seed(draw_seed())

    def set_shuffle(self, shuffle=True):
        self._enabled = bool(shuffle)
        return self

    def set_seed(self, seed):
        self._shuffled = list(self.indices)
        random.Random(check_int(seed, "Shuffler.set_seed: seed")).shuffle(self._shuffled)
        return self

    def _order(self):
        return self._shuffled if self._enabled else self.indices

    def __getitem__(self, key):
        try:
            position = self._positions[key]
        except (KeyError, TypeError):
            raise IndexError(f"Shuffler: index {key!r} is not one of its indices") from None
        return self.datapipe[self._order()[position]]

    def __iter__(self):
        for index in self._order():
            yield self.datapipe[index]

    def __len__(self):
        return len(self.indices)


class IterToMapConverter(MapDataPipe):
    """A MapDataPipe from `(key, value)` samples (or `key_value_fn(sample)`), loaded on first access."""

    def __init__(self, datapipe, key_value_fn=None):
        self.datapipe = check_datapipe(datapipe, "IterToMapConverter: datapipe", IterDataPipe)
        self.key_value_fn = check_callable(key_value_fn, "IterToMapConverter: key_value_fn", allow_none=True)
        self._map = None

    def _load(self):
        if self._map is None:
            self._map = {}
            for sample in self.datapipe:
                pair = self.key_value_fn(sample) if self.key_value_fn else sample
                if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                    raise TypeError(f"IterToMapConverter: expected (key, value) pairs, got {pair!r}; pass key_value_fn")
                self._map[pair[0]] = pair[1]
        return self._map

    def __getitem__(self, index):
        try:
            return self._load()[index]
        except KeyError:
            raise IndexError(f"IterToMapConverter: key {index!r} not found") from None

    def __len__(self):
        return len(self._load())

    def __iter__(self):
        yield from self._load().values()


# This one crosses kinds: `iter_dp.to_map_datapipe()` gives a MapDataPipe.
IterDataPipe.register_datapipe_as_function("to_map_datapipe", IterToMapConverter)
