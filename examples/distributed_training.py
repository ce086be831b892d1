"""Data-parallel training on several processes with ember.distributed:

    python -m ember.distributed.run --nproc-per-node 2 examples/distributed_training.py

(or `mpiexec -n 2 python examples/distributed_training.py`). Each rank reads its own shard of
the data (DistributedSampler), DistributedDataParallel averages the gradients during backward,
so every rank holds the same model; rank 0 reports the loss averaged over all ranks and saves
the trained weights. Needs `pip install 'ember[distributed]'`."""
import argparse
import os
import tempfile

import numpy as np

import ember
import ember.distributed as dist
from ember import nn
from ember.nn.parallel import DistributedDataParallel
from emberdata import DataLoader, DistributedSampler, TensorDataset


def blobs(n=2048, classes=4, features=16, seed=0):
    """The same generated data set on every rank: points scattered around one centre per class."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((classes, features))
    labels = rng.integers(0, classes, n)
    points = centres[labels] + rng.standard_normal((n, features))
    return TensorDataset(ember.from_numpy(points.astype(np.float32)), ember.from_numpy(labels))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64, help="per rank")
    parser.add_argument("--save", default=os.path.join(tempfile.gettempdir(), "ember_ddp_example.pt"))
    args = parser.parse_args()

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    ember.manual_seed(0)  # the same initial weights everywhere (DDP also broadcasts rank 0's)

    data = blobs()
    sampler = DistributedSampler(data)  # ranks come from the process group
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4)))
    optimizer = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)  # a new shuffle every epoch, the same on every rank
        total = ember.zeros(2, dtype=ember.float64)  # [sum of losses, batches]
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            total += ember.tensor([loss.item(), 1.0], dtype=ember.float64)
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch}: mean loss over {world} ranks {total[0].item() / total[1].item():.4f}", flush=True)

    with ember.no_grad():
        x, y = data[:]
        accuracy = (model(x).argmax(1) == y).float().mean().item()
    if rank == 0:
        ember.save(model.module.state_dict(), args.save)
        print(f"accuracy {accuracy:.3f}; weights saved to {args.save}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
