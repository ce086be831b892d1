"""A map-style Dataset and an IterableDataset defined in the script, read through DataLoader
with shuffling, a custom collate_fn, a weighted sampler, and random_split, as the data loading
tutorial does (no __main__ guard, num_workers=0)."""
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, WeightedRandomSampler, random_split


class SquaresDataset(Dataset):
    """Sample i is (i, i * i) as tensors, with an optional transform."""

    def __init__(self, n, transform=None):
        self.n, self.transform = n, transform

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        if torch.is_tensor(idx):
            idx = idx.tolist()
        sample = {"x": torch.tensor([float(idx)]), "y": torch.tensor(float(idx * idx))}
        return self.transform(sample) if self.transform else sample


class Normalize:
    def __init__(self, scale):
        self.scale = scale

    def __call__(self, sample):
        return {"x": sample["x"] / self.scale, "y": sample["y"] / self.scale ** 2}


class Sentences(IterableDataset):
    """Variable-length token sequences, padded by the collate function below."""

    def __iter__(self):
        for length in [3, 1, 4, 1, 5, 9, 2, 6]:
            yield torch.arange(1, length + 1)


def pad_collate(batch):
    lengths = torch.tensor([len(seq) for seq in batch])
    padded = torch.zeros(len(batch), int(lengths.max()), dtype=torch.long)
    for i, seq in enumerate(batch):
        padded[i, :len(seq)] = seq
    return padded, lengths


dataset = SquaresDataset(100, transform=Normalize(100.0))
torch.manual_seed(0)
train_set, val_set = random_split(dataset, [80, 20])
loader = DataLoader(train_set, batch_size=16, shuffle=True, num_workers=0, drop_last=True)
seen = []
for i_batch, batch in enumerate(loader):
    assert batch["x"].shape == (16, 1) and batch["y"].shape == (16,)
    assert torch.allclose(batch["x"][:, 0] ** 2, batch["y"])
    seen += (batch["x"][:, 0] * 100).round().long().tolist()
print(f"{i_batch + 1} batches, {len(set(seen))} distinct training samples")
assert len(seen) == 80 and set(seen) == set(train_set.indices)

weights = [1.0 if i % 2 == 0 else 0.0 for i in range(len(dataset))]
sampler = WeightedRandomSampler(weights, num_samples=50, replacement=True)
evens = next(iter(DataLoader(dataset, batch_size=50, sampler=sampler)))
assert all(round(v * 100) % 2 == 0 for v in evens["x"][:, 0].tolist())

for padded, lengths in DataLoader(Sentences(), batch_size=4, collate_fn=pad_collate):
    print(padded.shape, lengths.tolist())
    assert padded.shape == (4, int(lengths.max()))
validation = next(iter(DataLoader(val_set, batch_size=20)))
print("validation batch x:", validation["x"].shape)
assert validation["x"].shape == (20, 1)
