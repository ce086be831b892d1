import pytest

import ember
from emberdata import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
    random_split,
    TensorDataset,
    ConcatDataset,
)


def test_sequential_and_random():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    g = ember.Generator().manual_seed(0)
    perm = list(RandomSampler(range(10), generator=g))
    assert sorted(perm) == list(range(10)) and perm != list(range(10))
    ember.manual_seed(5)
    a = list(RandomSampler(range(10)))
    ember.manual_seed(5)
    assert list(RandomSampler(range(10))) == a
    with_repl = list(RandomSampler(range(3), replacement=True, num_samples=20))
    assert len(with_repl) == 20 and set(with_repl) <= {0, 1, 2}
    with pytest.raises(ValueError, match="num_samples should not be specified"):
        RandomSampler(range(3), num_samples=5)
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(range(3), replacement=1)


def test_subset_weighted_batch():
    assert sorted(SubsetRandomSampler([5, 7, 9])) == [5, 7, 9]
    draws = list(WeightedRandomSampler([0.0, 1.0, 0.0], 10))
    assert draws == [1] * 10
    assert sorted(WeightedRandomSampler([1, 1, 1], 3, replacement=False)) == [0, 1, 2]
    with pytest.raises(ValueError, match="non-negative"):
        WeightedRandomSampler([-1.0, 1.0], 2)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler([1.0], 0)
    assert list(BatchSampler(range(5), 2, False)) == [[0, 1], [2, 3], [4]]
    assert len(BatchSampler(range(5), 2, True)) == 2
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        BatchSampler(range(5), 0, False)


def test_distributed_sampler_partitions_and_epochs(monkeypatch):
    ranks = [list(DistributedSampler(range(10), num_replicas=3, rank=r, seed=1)) for r in range(3)]
    assert all(len(r) == 4 for r in ranks)
    flat = sum(ranks, [])
    assert set(flat) == set(range(10)) and len(flat) == 12  # padded by repeating
    s = DistributedSampler(range(10), num_replicas=2, rank=0)
    e0 = list(s)
    s.set_epoch(1)
    assert list(s) != e0
    dropped = [list(DistributedSampler(range(10), num_replicas=3, rank=r, drop_last=True)) for r in range(3)]
    assert all(len(r) == 3 for r in dropped) and len(set(sum(dropped, []))) == 9
    assert list(DistributedSampler(range(4), 2, 1, shuffle=False)) == [1, 3]
    with pytest.raises(ValueError, match="Invalid rank"):
        DistributedSampler(range(4), 2, 2)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(RuntimeError, match="WORLD_SIZE is not set"):
        DistributedSampler(range(4))
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    assert DistributedSampler(range(4)).rank == 1


def test_datasets():
    ds = TensorDataset(ember.arange(4), ember.arange(4) * 2)
    assert len(ds) == 4 and ds[1][1].item() == 2
    with pytest.raises(ValueError, match="size mismatch"):
        TensorDataset(ember.arange(3), ember.arange(4))
    cat = ConcatDataset([list(range(3)), list(range(10, 12))])
    assert [cat[i] for i in range(len(cat))] == [0, 1, 2, 10, 11] and cat[-1] == 11
    parts = random_split(list(range(10)), [3, 7], generator=ember.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [3, 7]
    assert sorted([parts[0][i] for i in range(3)] + [parts[1][i] for i in range(7)]) == list(range(10))
    assert [len(p) for p in random_split(list(range(10)), [0.5, 0.5])] == [5, 5]
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(list(range(10)), [3, 3])
