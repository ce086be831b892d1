"""A Dataset defined in the script, read by DataLoader worker processes (num_workers=2), with
the `if __name__ == "__main__":` guard the multiprocessing docs ask for; each worker seeds its
own NumPy generator through worker_init_fn, as the reproducibility notes recommend."""
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info


class NoisySquares(Dataset):
    def __len__(self):
        return 64

    def __getitem__(self, idx):
        worker = get_worker_info()
        noise = np.random.uniform(-0.01, 0.01)
        return torch.tensor([float(idx), idx * idx + noise]), worker.id if worker else -1


def seed_worker(worker_id):
    np.random.seed(torch.initial_seed() % 2**32)


def main():
    loader = DataLoader(NoisySquares(), batch_size=8, shuffle=True, num_workers=2,
                        worker_init_fn=seed_worker, persistent_workers=True)
    for epoch in range(2):
        seen, workers = [], set()
        for batch, worker_ids in loader:
            seen += batch[:, 0].long().tolist()
            workers |= set(worker_ids.tolist())
            assert ((batch[:, 1] - batch[:, 0] ** 2).abs() < 0.02).all()
        assert sorted(seen) == list(range(64)), seen
        print(f"epoch {epoch}: 64 samples from workers {sorted(workers)}")
    assert workers == {0, 1}


if __name__ == "__main__":
    main()
