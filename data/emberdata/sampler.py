"""Samplers (torch.utils.data.sampler and .distributed), drawing from ember's generators."""
import math
import os

import ember

from emberdata._dist import process_group
from emberdata._seed import draw_seed


def _check_bool(value, name):
    if not isinstance(value, bool):
        raise TypeError(f"{name} should be a boolean value, but got {name}={value!r}")


def _check_positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value!r}")


class Sampler:
    """Base class: an iterable of indices (or of index lists for batch samplers)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


def _generator_or_fresh(generator):
    """The given generator, or a new one seeded from ember's default generator (PyTorch does the same)."""
    return generator if generator is not None else ember.Generator().manual_seed(draw_seed())


class RandomSampler(Sampler):
    """A random permutation, or `num_samples` draws with replacement."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        _check_bool(replacement, "replacement")
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if num_samples is not None and not replacement and num_samples != len(data_source):
            raise ValueError("With replacement=False, num_samples should not be specified, since a random permute will be performed.")
        _check_positive_int(self.num_samples, "num_samples")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        generator = _generator_or_fresh(self.generator)
        if self.replacement:
            yield from ember.randint(0, n, (self.num_samples,), generator=generator).tolist()
        else:
            yield from ember.randperm(n, generator=generator).tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in ember.randperm(len(self.indices), generator=_generator_or_fresh(self.generator)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices drawn with probabilities proportional to `weights`."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        _check_positive_int(num_samples, "num_samples")
        _check_bool(replacement, "replacement")
        weights = [float(w) for w in (weights.tolist() if hasattr(weights, "tolist") else weights)]
        if not weights or any(w < 0 or math.isnan(w) for w in weights) or sum(weights) <= 0:
            raise ValueError(f"weights should be a non-empty sequence of non-negative numbers with a positive sum, got {weights[:8]}")
        if not replacement and num_samples > sum(1 for w in weights if w > 0):
            raise ValueError(f"cannot draw num_samples={num_samples} without replacement from {len(weights)} weights")
        self.weights = ember.tensor(weights, dtype=ember.float64)
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        draws = ember.multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)
        yield from draws.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of `batch_size`."""

    def __init__(self, sampler, batch_size, drop_last):
        _check_positive_int(batch_size, "batch_size")
        _check_bool(drop_last, "drop_last")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def _env_int(name):
    value = os.environ.get(name)
    if value is None:
        raise RuntimeError(
            f"DistributedSampler: {name} is not set; pass num_replicas and rank, initialise the process group "
            "(ember.distributed.init_process_group), or set RANK and WORLD_SIZE"
        )
    return int(value)


class DistributedSampler(Sampler):
    """Each of `num_replicas` ranks gets its own slice of the (shuffled) indices.

    The permutation is seeded by `seed + epoch`: call `set_epoch` each epoch for a new order that
    every rank shares. Without `num_replicas`/`rank`, they come from the process group when one is
    initialised (ember.distributed), else from WORLD_SIZE/RANK.
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        dist = process_group()
        if num_replicas is None:
            num_replicas = dist.get_world_size() if dist is not None else _env_int("WORLD_SIZE")
        if rank is None:
            rank = dist.get_rank() if dist is not None else _env_int("RANK")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.drop_last, self.shuffle, self.seed = 0, drop_last, shuffle, seed
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = ember.Generator().manual_seed(self.seed + self.epoch)
            indices = ember.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[: self.total_size]
        else:
            padding = self.total_size - len(indices)
            indices += (indices * math.ceil(padding / max(len(indices), 1)))[:padding]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        self.epoch = epoch
