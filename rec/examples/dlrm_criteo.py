"""DLRM trained on Criteo data, as TorchRec's DLRM example: the TSV files are converted to
TorchRec's binary (npy) form, read back in batches, and fed to DLRM with one embedding table
per categorical feature (hashes taken modulo --num-embeddings).

    python rec/examples/dlrm_criteo.py --tsv day_0 day_1        # Criteo 1TB / Kaggle TSV files
    python rec/examples/dlrm_criteo.py                          # a small generated file instead

Without --tsv it writes a few thousand synthetic rows in Criteo's format (label, 13 integers,
26 hex hashes, some fields empty) whose labels depend on the features, so the loss falls."""
import argparse
import os
import tempfile

import numpy as np

import ember
from emberrec import EmbeddingBagCollection, EmbeddingBagConfig
from emberrec.datasets.criteo import (
    CAT_FEATURE_COUNT, DEFAULT_CAT_NAMES, INT_FEATURE_COUNT, BinaryCriteoUtils, InMemoryBinaryCriteoIterDataPipe)
from emberrec.metrics.auc import compute_auc
from emberrec.models.dlrm import DLRM, DLRMTrain


def write_synthetic_criteo(path, rows, seed=0):
    """Criteo-format TSV rows whose label is likelier when int_0 is large and cat_0 is even."""
    rng = np.random.default_rng(seed)
    ints = rng.integers(0, 100, (rows, INT_FEATURE_COUNT))
    cats = rng.integers(0, 2**32, (rows, CAT_FEATURE_COUNT), dtype=np.uint64) % 50
    score = (ints[:, 0] > 50).astype(float) + (cats[:, 0] % 2 == 0) - 1 + rng.normal(0, 0.3, rows)
    labels = (score > 0).astype(int)
    with open(path, "w") as out:
        for label, row_ints, row_cats in zip(labels, ints, cats):
            fields = [str(label)] + [str(v) if v % 17 else "" for v in row_ints]  # some fields missing
            fields += [f"{v:08x}" for v in row_cats]
            out.write("\t".join(fields) + "\n")


def binary_criteo(tsv_paths, folder):
    """(dense, sparse, labels) npy paths, one of each per TSV file."""
    npys = {"dense": [], "sparse": [], "labels": []}
    for i, tsv in enumerate(tsv_paths):
        paths = [os.path.join(folder, f"day_{i}_{kind}.npy") for kind in npys]
        BinaryCriteoUtils.tsv_to_npys(tsv, *paths)
        for kind, path in zip(npys, paths):
            npys[kind].append(path)
    return npys


def make_dlrm(num_embeddings, embedding_dim):
    tables = [EmbeddingBagConfig(name=f"t_{name}", embedding_dim=embedding_dim, num_embeddings=num_embeddings,
                                 feature_names=[name]) for name in DEFAULT_CAT_NAMES]
    return DLRM(EmbeddingBagCollection(tables), dense_in_features=INT_FEATURE_COUNT,
                dense_arch_layer_sizes=[32, embedding_dim], over_arch_layer_sizes=[32, 16, 1])


def train(args, folder):
    tsv = args.tsv
    if not tsv:
        tsv = [os.path.join(folder, "synthetic_day_0.tsv")]
        write_synthetic_criteo(tsv[0], args.rows)
    npys = binary_criteo(tsv, folder)
    batches = InMemoryBinaryCriteoIterDataPipe(npys["dense"], npys["sparse"], npys["labels"], batch_size=args.batch_size,
                                               rank=0, world_size=1, shuffle_batches=True,
                                               hashes=[args.num_embeddings] * CAT_FEATURE_COUNT)
    model = DLRMTrain(make_dlrm(args.num_embeddings, args.embedding_dim))
    optimizer = ember.optim.Adagrad(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        losses, logits, labels = [], [], []
        for batch in batches:
            optimizer.zero_grad()
            loss, (_, batch_logits, batch_labels) = model(batch)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            logits.append(batch_logits)
            labels.append(batch_labels.float())
        auc = compute_auc(1, ember.cat(logits)[None], ember.cat(labels)[None], ember.ones(1, sum(len(l) for l in labels)))
        print(f"epoch {epoch}: loss {np.mean(losses):.4f}  auc {auc.item():.4f}  ({len(losses)} batches)")
    return model.model, batches


def parse_args(argv=None, **defaults):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tsv", nargs="*", help="Criteo TSV files (default: a generated one)")
    parser.add_argument("--rows", type=int, default=4096, help="rows of the generated file")
    parser.add_argument("--num-embeddings", type=int, default=1000)
    parser.add_argument("--embedding-dim", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.set_defaults(**defaults)
    return parser.parse_args(argv)


if __name__ == "__main__":
    ember.manual_seed(0)
    with tempfile.TemporaryDirectory() as folder:
        train(parse_args(), folder)
