"""TorchRec's `RandomRecDataset`: endless (or `num_batches`) random Batches for recommendation
models, for benchmarks and smoke tests."""
import ember
from emberdata.dataset import IterableDataset

from emberrec.datasets.utils import Batch
from emberrec.sparse.jagged_tensor import KeyedJaggedTensor

__all__ = ["RandomRecDataset"]


def _per_key(name, one, many, keys, default):
    """`many` (one value per key), else `one` (or `default`) for every key."""
    if many is None:
        many = [one if one is not None else default] * len(keys)
    if len(many) != len(keys):
        raise ValueError(f"length of {name} must be equal to the number of keys ({len(keys)}), got {len(many)}")
    return list(many)


class RandomRecDataset(IterableDataset):
    """Batches of `batch_size` samples: `num_dense` standard-normal dense features, binary
    int64 labels, and for each of `keys` between min_ids_per_feature and ids_per_feature ids
    per sample (exactly ids_per_feature by default), uniform below hash_size. `hash_sizes`,
    `ids_per_features` and `min_ids_per_features` give one value per key instead.
    `manual_seed` makes the batches repeat from run to run. `num_generated_batches` batches are
    made once and cycled through (a negative value makes every batch afresh); iteration stops
    after `num_batches` (never, when None).

    Unlike TorchRec 0.2, the cached batches differ from each other (0.2 repeated one batch)."""

    def __init__(self, keys, batch_size, hash_size=100, hash_sizes=None, ids_per_feature=2, ids_per_features=None,
                 num_dense=50, manual_seed=None, num_batches=None, num_generated_batches=10, min_ids_per_feature=None,
                 min_ids_per_features=None):
        super().__init__()
        if isinstance(keys, str) or not all(isinstance(k, str) for k in keys):
            raise TypeError(f"keys must be a list of str, got {keys!r}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        if num_generated_batches == 0:
            raise ValueError("num_generated_batches must be positive (cached batches) or negative (fresh batches), got 0")
        self.keys = list(keys)
        self.batch_size = batch_size
        self.hash_sizes = _per_key("hash_sizes", hash_size, hash_sizes, keys, 100)
        self.ids_per_features = _per_key("ids_per_features", ids_per_feature, ids_per_features, keys, 2)
        fixed = min_ids_per_feature if min_ids_per_feature is not None else ids_per_feature
        self.min_ids_per_features = _per_key("min_ids_per_features", fixed, min_ids_per_features, keys, 0)
        for key, low, high, size in zip(self.keys, self.min_ids_per_features, self.ids_per_features, self.hash_sizes):
            if not 0 <= low <= high or size < 1:
                raise ValueError(f"key {key!r}: needs 0 <= min ids ({low}) <= ids ({high}) and hash size ({size}) >= 1")
        self.num_dense = num_dense
        self.num_batches = num_batches
        self.num_generated_batches = num_generated_batches
        self.generator = None
        if manual_seed is not None:
            self.generator = ember.Generator()
            self.generator.manual_seed(manual_seed)
        self._generated = [self._generate_batch() for _ in range(max(num_generated_batches, 0))]

    def _generate_batch(self):
        values, lengths = [], []
        for size, low, high in zip(self.hash_sizes, self.min_ids_per_features, self.ids_per_features):
            key_lengths = ember.randint(low, high + 1, (self.batch_size,), dtype=ember.int32, generator=self.generator)
            lengths.append(key_lengths)
            values.append(ember.randint(0, size, (int(key_lengths.sum()),), generator=self.generator))
        sparse = KeyedJaggedTensor.from_lengths_sync(keys=self.keys, values=ember.cat(values), lengths=ember.cat(lengths))
        return Batch(dense_features=ember.randn(self.batch_size, self.num_dense, generator=self.generator),
                     sparse_features=sparse,
                     labels=ember.randint(0, 2, (self.batch_size,), generator=self.generator))

    def __iter__(self):
        index = 0
        while self.num_batches is None or index < self.num_batches:
            yield self._generated[index % len(self._generated)] if self._generated else self._generate_batch()
            index += 1
