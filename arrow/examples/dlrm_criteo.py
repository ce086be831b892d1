"""Train emberrec's DLRM on Criteo-format data preprocessed by emberarrow inside emberdata DataPipes.

This is TorchRec's torcharrow example (examples/torcharrow: dataloader.py and run.py) on Ember,
on one process and the CPU:

1. Criteo-format TSV (a label, 13 integer features, 26 categorical ids as 8 hex digits; empty
   fields are missing) is written here, small and generated, with labels that depend on a few
   features so that there is something to learn. Pass --tsv to read a real day file instead.
2. The TSV becomes Parquet (categorical ids parsed from hex), one row group per batch, as
   TorchRec's convert_tsv_to_parquet script does.
3. The DataPipes list the Parquet files, load each row group as an emberarrow DataFrame and
   preprocess it as TorchRec's example does: fill nulls, bucketize int_0 into a 27th sparse
   feature, log(x + 3) of the dense features, and for each sparse feature sigrid_hash into the
   embedding tables, array_constructor and firstx(1).
4. The batch becomes tensors: the dense features with Dense(batch_first=True), the sparse ones
   as emberrec's KeyedJaggedTensor (key-major, one Rust pass over the id columns), the labels.
5. DLRM trains on them with binary cross-entropy; each epoch's mean loss is printed.

    python arrow/examples/dlrm_criteo.py [--rows 4096] [--batch-size 256] [--epochs 4]
"""
import argparse
import os
import tempfile

import numpy as np
import pyarrow.parquet as pq

import ember
import emberarrow as ta
import emberarrow.dtypes as dt
from emberarrow import functional
from emberarrow import tensor_conversion as tc
from emberdata import DataLoader
from emberdata.datapipes.iter import FileLister
from emberrec import EmbeddingBagCollection, EmbeddingBagConfig
from emberrec.models.dlrm import DLRM

LABEL = "label"
INT_NAMES = [f"int_{i}" for i in range(13)]
CAT_NAMES = [f"cat_{i}" for i in range(26)]
SPARSE_NAMES = CAT_NAMES + ["bucketize_int_0"]
# Criteo's columns as read from the TSV: the categorical ids are still hex strings.
TSV_DTYPE = dt.Struct([dt.Field(LABEL, dt.int32)]
                      + [dt.Field(name, dt.Int32(nullable=True)) for name in INT_NAMES]
                      + [dt.Field(name, dt.String(nullable=True)) for name in CAT_NAMES])


def write_criteo_tsv(path, rows, seed):
    """Criteo-like rows: counts (10% missing), ids from a small vocabulary per column (5% missing),
    and a label drawn from a logistic model of int_0, cat_0 and cat_1."""
    rng = np.random.default_rng(seed)
    counts = rng.geometric(0.1, (rows, len(INT_NAMES))) - 1
    vocabulary = rng.integers(0, 2**32, (len(CAT_NAMES), 50))
    picks = rng.integers(0, 50, (rows, len(CAT_NAMES)))
    effect = rng.normal(0, 2, 50)
    score = effect[picks[:, 0]] - effect[picks[:, 1]] + 0.5 * np.log(counts[:, 0] + 3) - 1
    labels = rng.random(rows) < 1 / (1 + np.exp(-score))
    missing_count = rng.random(counts.shape) < 0.10
    missing_id = rng.random(picks.shape) < 0.05
    with open(path, "w") as out:
        for r in range(rows):
            ints = ["" if missing_count[r, i] else str(counts[r, i]) for i in range(len(INT_NAMES))]
            cats = ["" if missing_id[r, c] else f"{vocabulary[c, picks[r, c]]:08x}" for c in range(len(CAT_NAMES))]
            out.write("\t".join([str(int(labels[r]))] + ints + cats) + "\n")


def tsv_to_parquet(tsv_path, parquet_path, row_group_size):
    """The TSV as Parquet with the categorical ids as Int64, one row group per batch."""
    df = ta.read_csv(tsv_path, dtype=TSV_DTYPE, delimiter="\t", header=False)
    for name in CAT_NAMES:
        df[name] = functional.hex_to_int(df[name])  # an empty field is null
    pq.write_table(df.to_arrow(), parquet_path, row_group_size=row_group_size)


def preproc(df, num_embeddings, salt):
    """TorchRec's torcharrow example, step by step in TorchArrow's API."""
    for name in INT_NAMES + CAT_NAMES:
        df[name] = df[name].fill_null(0)
    df["bucketize_int_0"] = functional.bucketize(df["int_0"], [0.5, 1.0, 1.5]).cast(dt.int64)
    df["dense_features"] = (ta.dataframe({name: df[name] for name in INT_NAMES}) + 3).log()
    for name in SPARSE_NAMES:
        hashed = functional.sigrid_hash(df[name], salt, num_embeddings)  # an index into the table
        df[name] = functional.firstx(functional.array_constructor(hashed), 1)
    df["sparse_features"] = ta.dataframe({name: df[name] for name in SPARSE_NAMES})
    return df[["dense_features", "sparse_features", LABEL]]


def criteo_collate(df):
    """(dense features (batch, 13), a KeyedJaggedTensor of the 27 sparse features, float labels)."""
    dense, sparse, labels = df.to_tensor({
        "dense_features": tc.Dense(batch_first=True),
        "sparse_features": tc.KeyedJaggedTensor(),
    })
    return dense, sparse, labels.float()


def dataloader(parquet_dir, num_embeddings, salt):
    datapipe = FileLister(parquet_dir, masks="*.parquet").load_parquet_as_df()
    datapipe = datapipe.map(lambda df: preproc(df, num_embeddings, salt))
    return DataLoader(datapipe, batch_size=None, collate_fn=criteo_collate)


def dlrm(num_embeddings, embedding_dim):
    tables = [EmbeddingBagConfig(name=f"table_{name}", embedding_dim=embedding_dim, num_embeddings=num_embeddings,
                                 feature_names=[name]) for name in SPARSE_NAMES]
    return DLRM(embedding_bag_collection=EmbeddingBagCollection(tables=tables), dense_in_features=len(INT_NAMES),
                dense_arch_layer_sizes=[32, embedding_dim], over_arch_layer_sizes=[32, 1])


def train(loader, model, epochs, lr):
    """Each epoch's mean loss."""
    optimizer = ember.optim.Adagrad(model.parameters(), lr=lr)
    loss_fn = ember.nn.BCEWithLogitsLoss()
    losses = []
    for epoch in range(epochs):
        total, batches = 0.0, 0
        for dense, kjt, labels in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(dense, kjt).squeeze(-1), labels)
            loss.backward()
            optimizer.step()
            total, batches = total + loss.item(), batches + 1
        losses.append(total / batches)
        print(f"epoch {epoch}: mean loss {losses[-1]:.4f} over {batches} batches", flush=True)
    return losses


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tsv", help="a Criteo-format TSV file to train on (default: generate one)")
    parser.add_argument("--rows", type=int, default=4096, help="rows to generate")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--num-embeddings", type=int, default=1024, help="rows of each embedding table")
    parser.add_argument("--embedding-dim", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--salt", type=int, default=0, help="sigrid_hash salt")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    ember.manual_seed(args.seed)
    with tempfile.TemporaryDirectory() as work:
        tsv = args.tsv or os.path.join(work, "day_0.tsv")
        if not args.tsv:
            write_criteo_tsv(tsv, args.rows, args.seed)
        parquet_dir = os.path.join(work, "parquet")
        os.mkdir(parquet_dir)
        tsv_to_parquet(tsv, os.path.join(parquet_dir, "day_0.parquet"), args.batch_size)
        loader = dataloader(parquet_dir, args.num_embeddings, args.salt)
        dense, kjt, labels = next(iter(loader))
        print(f"a batch: dense features {tuple(dense.shape)}, {len(kjt.keys())} sparse features "
              f"({kjt.values().numel()} ids), {labels.numel()} labels")
        losses = train(loader, dlrm(args.num_embeddings, args.embedding_dim), args.epochs, args.lr)
    print(f"DLRM trained on emberarrow-preprocessed Criteo data: mean loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    return losses


if __name__ == "__main__":
    main()
