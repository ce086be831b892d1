"""BERT4Rec (https://arxiv.org/abs/1904.06690) on an EmbeddingCollection, as TorchRec's
Bert4Rec example, small: a transformer encoder over each user's item sequence (a jagged
feature, looked up by the EmbeddingCollection), trained to recover masked items, then asked
for the item after each sequence.

    python rec/examples/bert4rec.py [--items 50 --users 256 --epochs 30]

The generated sequences walk through the items with a stride that is each user's own (1, 2
or 3), so the next item follows from the last few; hit@10 should far exceed chance."""
import argparse

import numpy as np

import ember
import ember.nn as nn
import ember.nn.functional as F
from emberrec import EmbeddingCollection, EmbeddingConfig, KeyedJaggedTensor

PAD = 0  # item ids run 1..items; the last id is the mask token


class BERT4Rec(nn.Module):
    """Item (EmbeddingCollection) and position embeddings, a transformer encoder, and a linear
    layer scoring every item at every position: forward(kjt) -> (batch, max_len, items + 2)."""

    def __init__(self, num_items, max_len, embedding_dim=32, nhead=2, num_layers=2, dropout=0.1):
        super().__init__()
        self.max_len = max_len
        # item rows start about as large as the position embeddings (N(0, 1)), so neither drowns the other
        self.ec = EmbeddingCollection([EmbeddingConfig(name="t_item", embedding_dim=embedding_dim,
                                                       num_embeddings=num_items + 2, feature_names=["item"],
                                                       weight_init_min=-1.0, weight_init_max=1.0)])
        self.position = nn.Embedding(max_len, embedding_dim)
        layer = nn.TransformerEncoderLayer(embedding_dim, nhead, dim_feedforward=4 * embedding_dim, dropout=dropout,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers)
        self.out = nn.Linear(embedding_dim, num_items + 2)

    def forward(self, kjt):
        sequences = self.ec(kjt)["item"]
        x = sequences.to_padded_dense(self.max_len) + self.position.weight
        padding = ember.arange(self.max_len)[None, :] >= sequences.lengths()[:, None]
        return self.out(self.encoder(x, src_key_padding_mask=padding))


def synthetic_sequences(users, items, max_len, rng):
    """Each user's items: a walk of stride 1, 2 or 3 from a random item, of 5 to max_len + 1 steps."""
    sequences = []
    for _ in range(users):
        stride, start, length = rng.integers(1, 4), rng.integers(0, items), rng.integers(5, max_len + 2)
        sequences.append((start + stride * np.arange(length)) % items + 1)
    return sequences


def as_kjt(sequences):
    return KeyedJaggedTensor(["item"], ember.from_numpy(np.concatenate(sequences).astype(np.int64)),
                             lengths=ember.tensor([len(s) for s in sequences]))


def masked_batch(sequences, mask_token, mask_prob, rng):
    """The sequences with items masked at random (one at least each), the flat positions
    (row * max_len + column) of the masks, and the masked items."""
    masked, positions, targets = [], [], []
    for row, sequence in enumerate(sequences):
        hide = rng.random(len(sequence)) < mask_prob
        hide[rng.integers(len(sequence))] = True
        masked.append(np.where(hide, mask_token, sequence))
        positions.append(row * MAX_LEN + np.flatnonzero(hide))
        targets.append(sequence[hide])
    return as_kjt(masked), ember.from_numpy(np.concatenate(positions)), ember.from_numpy(np.concatenate(targets))


def hit_rate(model, sequences, mask_token, k):
    """How often the item after each sequence (its last, hidden) is among the k best scored."""
    model.eval()
    with ember.no_grad():
        queries = [np.append(s[:-1][-(MAX_LEN - 1):], mask_token) for s in sequences]
        scores = model(as_kjt(queries))
        last = scores[ember.arange(len(queries)), ember.tensor([len(q) - 1 for q in queries])]
        top = ember.topk(last[:, 1:mask_token], k).indices.numpy() + 1  # real items only
    model.train()
    return np.mean([s[-1] in row for s, row in zip(sequences, top)])


MAX_LEN = 16


def main(args):
    rng = np.random.default_rng(0)
    train = [s[:-1] for s in synthetic_sequences(args.users, args.items, MAX_LEN, rng)]  # hold out the last item
    test = synthetic_sequences(args.users // 4, args.items, MAX_LEN, rng)
    mask_token = args.items + 1
    model = BERT4Rec(args.items, MAX_LEN, args.embedding_dim)
    optimizer = ember.optim.Adam(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        losses = []
        for start in range(0, len(train), args.batch_size):
            kjt, positions, targets = masked_batch(train[start:start + args.batch_size], mask_token, 0.2, rng)
            optimizer.zero_grad()
            scores = model(kjt).reshape(-1, mask_token + 1)[positions]
            loss = F.cross_entropy(scores, targets)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        if epoch % 5 == 4 or epoch == args.epochs - 1:
            print(f"epoch {epoch}: loss {np.mean(losses):.4f}")
    hits = hit_rate(model, test, mask_token, 10)
    print(f"hit@10 of the next item on unseen users: {hits:.2%} (chance: {10 / args.items:.2%})")
    return hits


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=50)
    parser.add_argument("--users", type=int, default=256)
    parser.add_argument("--embedding-dim", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--lr", type=float, default=0.01)
    return parser.parse_args(argv)


if __name__ == "__main__":
    ember.manual_seed(0)
    main(parse_args())
