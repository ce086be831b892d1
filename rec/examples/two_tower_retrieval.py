"""TwoTower retrieval, as TorchRec's retrieval example: train a two-tower (user, item) model on
MovieLens ratings, index the item tower's embeddings in a FAISS IVFPQ index, and retrieve each
user's nearest items through it.

    python rec/examples/two_tower_retrieval.py --movielens ~/data/ml-20m
    python rec/examples/two_tower_retrieval.py          # a small generated ratings.csv instead

The generated ratings give users and items one of a few tastes each: users rate items of their
own taste high and others low, so retrieval should return items of the user's taste. Needs
faiss-cpu (pip install "emberrec[faiss]")."""
import argparse
import os
import tempfile

import faiss
import numpy as np

import ember
import ember.nn as nn
from emberrec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor
from emberrec.datasets.movielens import movielens_20m
from emberrec.datasets.utils import Batch
from emberrec.modules.mlp import MLP

QUERY, CANDIDATE = "userId", "movieId"


def projection(embedding_dim, layer_sizes):
    """An MLP, then a linear layer: the tower's output may be negative (TorchRec's towers end in
    a ReLU, whose non-negative outputs can only make dot products of 0 or more)."""
    return nn.Sequential(MLP(embedding_dim, layer_sizes[:-1]), nn.Linear(layer_sizes[-2], layer_sizes[-1]))


class TwoTower(nn.Module):
    """Embeds users and items into one space: each tower is an embedding bag and a projection."""

    def __init__(self, embedding_bag_collection, layer_sizes):
        super().__init__()
        query_table, candidate_table = embedding_bag_collection.embedding_bag_configs
        self.ebc = embedding_bag_collection
        self.query_proj = projection(query_table.embedding_dim, layer_sizes)
        self.candidate_proj = projection(candidate_table.embedding_dim, layer_sizes)

    def forward(self, kjt):
        pooled = self.ebc(kjt)
        return self.query_proj(pooled[QUERY]), self.candidate_proj(pooled[CANDIDATE])


class TwoTowerTrainTask(nn.Module):
    """The dot product of the towers as a logit, under binary cross-entropy."""

    def __init__(self, two_tower):
        super().__init__()
        self.two_tower = two_tower
        self.loss_fn = nn.BCEWithLogitsLoss()

    def forward(self, batch):
        query, candidate = self.two_tower(batch.sparse_features)
        logits = (query * candidate).sum(1)
        return self.loss_fn(logits, batch.labels.float()), logits.detach()


class TwoTowerRetrieval(nn.Module):
    """The trained towers apart, with a FAISS index of every item's embedding: forward(users)
    returns the k nearest items of each user and their logits."""

    def __init__(self, faiss_index, query_ebc, candidate_ebc, layer_sizes, k):
        super().__init__()
        self.faiss_index = faiss_index
        self.query_ebc, self.candidate_ebc = query_ebc, candidate_ebc
        self.query_proj = projection(query_ebc.embedding_bag_configs[0].embedding_dim, layer_sizes)
        self.candidate_proj = projection(candidate_ebc.embedding_bag_configs[0].embedding_dim, layer_sizes)
        self.k = k

    def forward(self, query_kjt):
        query = self.query_proj(self.query_ebc(query_kjt).values())
        _, candidates = self.faiss_index.search(query.numpy(), self.k)
        ids = ember.from_numpy(candidates.reshape(-1).astype(np.int64))
        candidate_kjt = KeyedJaggedTensor([CANDIDATE], ids, lengths=ember.ones(len(ids), dtype=ember.int64))
        candidate = self.candidate_proj(self.candidate_ebc(candidate_kjt).values()).view(-1, self.k, query.shape[1])
        return ember.from_numpy(candidates), (query[:, None, :] * candidate).sum(2)


def train_to_retrieval_state(state, query_table, candidate_table):
    """TwoTowerTrainTask's state dict as TwoTowerRetrieval's (TorchRec's key mapping)."""
    state = {k.removeprefix("two_tower."): v for k, v in state.items()}
    state[f"query_ebc.embedding_bags.{query_table}.weight"] = state.pop(f"ebc.embedding_bags.{query_table}.weight")
    state[f"candidate_ebc.embedding_bags.{candidate_table}.weight"] = state.pop(f"ebc.embedding_bags.{candidate_table}.weight")
    return state


def get_index(embedding_dim, num_centroids, num_probe, num_subquantizers, bits_per_code):
    """A FAISS IVFPQ index on the CPU (TorchRec's knn_index.get_index)."""
    index = faiss.IndexIVFPQ(faiss.IndexFlatL2(embedding_dim), embedding_dim, num_centroids, num_subquantizers,
                             bits_per_code)
    index.nprobe = num_probe
    return index


def write_synthetic_movielens(root, users, items, tastes, per_user, seed=0):
    rng = np.random.default_rng(seed)
    with open(os.path.join(root, "ratings.csv"), "w") as out:
        out.write("userId,movieId,rating,timestamp\n")
        for user in range(users):
            for item in rng.choice(items, per_user, replace=False):
                rating = rng.choice([4.0, 5.0]) if item % tastes == user % tastes else rng.choice([1.0, 2.0])
                out.write(f"{user},{item},{rating},{1112486027 + item}\n")


def rating_batches(rows, batch_size, seed=0):
    """Batches of (user, item) pairs labeled 1 for ratings above 3, shuffled."""
    order = np.random.default_rng(seed).permutation(len(rows))
    users = np.array([r[QUERY] for r in rows], np.int64)[order]
    items = np.array([r[CANDIDATE] for r in rows], np.int64)[order]
    labels = np.array([r["rating"] > 3 for r in rows], np.int64)[order]
    for start in range(0, len(rows) - batch_size + 1, batch_size):
        part = slice(start, start + batch_size)
        ids = ember.from_numpy(np.concatenate([users[part], items[part]]))
        kjt = KeyedJaggedTensor([QUERY, CANDIDATE], ids, lengths=ember.ones(2 * batch_size, dtype=ember.int64))
        yield Batch(ember.zeros(batch_size, 0), kjt, ember.from_numpy(labels[part]))


def main(args):
    root = args.movielens
    with tempfile.TemporaryDirectory() as folder:
        if root is None:
            root = folder
            write_synthetic_movielens(root, args.users, args.items, args.tastes, args.ratings_per_user)
        rows = list(movielens_20m(root))
        num_users, num_items = (max(r[column] for r in rows) + 1 for column in (QUERY, CANDIDATE))
        tables = [EmbeddingBagConfig(name="t_user", embedding_dim=args.dim, num_embeddings=num_users, feature_names=[QUERY]),
                  EmbeddingBagConfig(name="t_item", embedding_dim=args.dim, num_embeddings=num_items, feature_names=[CANDIDATE])]
        layer_sizes = [32, args.dim]
        task = TwoTowerTrainTask(TwoTower(EmbeddingBagCollection(tables), layer_sizes))
        optimizer = ember.optim.Adam(task.parameters(), lr=args.lr)
        for epoch in range(args.epochs):
            losses = []
            for batch in rating_batches(rows, args.batch_size, seed=epoch):
                optimizer.zero_grad()
                loss, _ = task(batch)
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
            print(f"epoch {epoch}: loss {np.mean(losses):.4f}")

    with ember.no_grad():
        index = get_index(args.dim, args.centroids, args.probe, args.subquantizers, args.bits_per_code)
        retrieval = TwoTowerRetrieval(index, EmbeddingBagCollection(tables[:1]), EmbeddingBagCollection(tables[1:]),
                                      layer_sizes, k=args.k)
        retrieval.load_state_dict(train_to_retrieval_state(task.state_dict(), "t_user", "t_item"))
        all_items = KeyedJaggedTensor([CANDIDATE], ember.arange(num_items), lengths=ember.ones(num_items, dtype=ember.int64))
        items = retrieval.candidate_proj(retrieval.candidate_ebc(all_items).values()).numpy()
        index.train(items)
        index.add(items)
        users = ember.arange(num_users)
        candidates, logits = retrieval(KeyedJaggedTensor([QUERY], users, lengths=ember.ones(num_users, dtype=ember.int64)))
    same_taste = (candidates.numpy() % args.tastes == users.numpy()[:, None] % args.tastes).mean()
    print(f"indexed {index.ntotal} items (IVFPQ: {args.centroids} cells, {args.subquantizers} x {args.bits_per_code}-bit codes)")
    print(f"top-{args.k} items of the user's taste: {same_taste:.2%} (chance: {1 / args.tastes:.2%}); "
          f"logits {tuple(logits.shape)}")
    return same_taste


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--movielens", help="folder with MovieLens 20M's ratings.csv (default: generated ratings)")
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--items", type=int, default=640)
    parser.add_argument("--tastes", type=int, default=4)
    parser.add_argument("--ratings-per-user", type=int, default=40)
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--centroids", type=int, default=8)
    parser.add_argument("--probe", type=int, default=4)
    parser.add_argument("--subquantizers", type=int, default=4)
    parser.add_argument("--bits-per-code", type=int, default=4)
    return parser.parse_args(argv)


if __name__ == "__main__":
    ember.manual_seed(0)
    main(parse_args())
