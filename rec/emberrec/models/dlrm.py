"""TorchRec's DLRM (https://arxiv.org/abs/1906.00091): `SparseArch`, `DenseArch`,
`InteractionArch`, `OverArch`, `DLRM` and `DLRMTrain`, with TorchRec's state-dict keys
(`sparse_arch.embedding_bag_collection.embedding_bags.<table>.weight`,
`dense_arch.model._mlp.<i>._linear.weight`, `over_arch.model.0._mlp.<i>._linear.weight`,
`over_arch.model.1.weight`). Where TorchRec asserts, these raise ValueError."""
import math

import numpy as np

import ember
import ember.nn as nn

from emberrec.modules.embedding_modules import EmbeddingBagCollectionInterface
from emberrec.modules.mlp import MLP

__all__ = ["choose", "SparseArch", "DenseArch", "InteractionArch", "OverArch", "DLRM", "DLRMTrain"]


def choose(n, k):
    return math.comb(n, k) if 0 <= k <= n else 0


def _single_embedding_dim(ebc):
    # a float or a quantized (emberrec.quant) EmbeddingBagCollection
    if not isinstance(ebc, EmbeddingBagCollectionInterface):
        raise TypeError(f"embedding_bag_collection must be an EmbeddingBagCollection, got {type(ebc).__name__}")
    configs = ebc.embedding_bag_configs
    if not configs:
        raise ValueError("embedding_bag_collection must hold at least one table")
    dims = {c.embedding_dim for c in configs}
    if len(dims) != 1:
        raise ValueError(f"every table of a DLRM must have the same embedding_dim, got {sorted(dims)}")
    return dims.pop()


class SparseArch(nn.Module):
    """The pooled embeddings of every sparse feature: (B, F, D)."""

    def __init__(self, embedding_bag_collection):
        super().__init__()
        self.D = _single_embedding_dim(embedding_bag_collection)
        self.embedding_bag_collection = embedding_bag_collection
        self._sparse_feature_names = [name for c in embedding_bag_collection.embedding_bag_configs
                                      for name in c.feature_names]
        self.F = len(self._sparse_feature_names)

    def forward(self, features):
        # the EBC's output columns are already the features in table order, D each
        pooled = self.embedding_bag_collection(features).values()
        return pooled.reshape(features.stride(), self.F, self.D)

    @property
    def sparse_feature_names(self):
        return self._sparse_feature_names


class DenseArch(nn.Module):
    """An MLP (ReLU after every layer) over the dense features: (B, layer_sizes[-1])."""

    def __init__(self, in_features, layer_sizes, device=None):
        super().__init__()
        self.model = MLP(in_features, layer_sizes, bias=True, activation="relu", device=device)

    def forward(self, features):
        return self.model(features)


class InteractionArch(nn.Module):
    """The dense embedding, then the dot products of every pair among it and the F sparse
    embeddings: (B, D + F + F choose 2)."""

    def __init__(self, num_sparse_features):
        super().__init__()
        if not isinstance(num_sparse_features, int) or num_sparse_features < 0:
            raise ValueError(f"num_sparse_features must be a non-negative int, got {num_sparse_features!r}")
        self.F = num_sparse_features
        rows, columns = np.triu_indices(self.F + 1, k=1)
        self.register_buffer("triu_indices", ember.from_numpy(np.stack([rows, columns]).astype(np.int64)),
                             persistent=False)

    def forward(self, dense_features, sparse_features):
        if self.F <= 0:
            return dense_features
        batch, dim = dense_features.shape
        if tuple(sparse_features.shape) != (batch, self.F, dim):
            raise ValueError(f"sparse_features must be ({batch}, {self.F}, {dim}) to match dense_features "
                             f"{tuple(dense_features.shape)}, got {tuple(sparse_features.shape)}")
        combined = ember.cat([dense_features.unsqueeze(1), sparse_features], 1)  # (B, F + 1, D)
        interactions = ember.bmm(combined, combined.transpose(1, 2))            # (B, F + 1, F + 1)
        flat_index = self.triu_indices[0] * (self.F + 1) + self.triu_indices[1]
        pairs = interactions.reshape(batch, -1).index_select(1, flat_index)
        return ember.cat([dense_features, pairs], 1)


class OverArch(nn.Module):
    """An MLP (ReLU after all but the last layer) to the logits: (B, layer_sizes[-1])."""

    def __init__(self, in_features, layer_sizes, device=None):
        super().__init__()
        if not isinstance(layer_sizes, (list, tuple)) or len(layer_sizes) <= 1:
            raise ValueError(f"OverArch must have multiple layers, got layer_sizes {layer_sizes!r}")
        self.model = nn.Sequential(
            MLP(in_features, list(layer_sizes[:-1]), bias=True, activation="relu", device=device),
            nn.Linear(layer_sizes[-2], layer_sizes[-1], bias=True, device=device))

    def forward(self, features):
        return self.model(features)


class DLRM(nn.Module):
    """Logits from dense features (B, dense_in_features) and sparse features (a KJT): dense
    and sparse embeddings (all of one dimension D = dense_arch_layer_sizes[-1]), their pairwise
    interactions, and an over-arch MLP."""

    def __init__(self, embedding_bag_collection, dense_in_features, dense_arch_layer_sizes, over_arch_layer_sizes,
                 dense_device=None):
        super().__init__()
        embedding_dim = _single_embedding_dim(embedding_bag_collection)
        if not dense_arch_layer_sizes or dense_arch_layer_sizes[-1] != embedding_dim:
            raise ValueError(f"embedding_bag_collection dimension ({embedding_dim}) and final dense arch layer size "
                             f"({dense_arch_layer_sizes[-1] if dense_arch_layer_sizes else None}) must match")
        self.sparse_arch = SparseArch(embedding_bag_collection)
        num_sparse_features = len(self.sparse_arch.sparse_feature_names)
        self.dense_arch = DenseArch(dense_in_features, dense_arch_layer_sizes, device=dense_device)
        self.inter_arch = InteractionArch(num_sparse_features)
        over_in_features = embedding_dim + choose(num_sparse_features, 2) + num_sparse_features
        self.over_arch = OverArch(over_in_features, over_arch_layer_sizes, device=dense_device)

    def forward(self, dense_features, sparse_features):
        if dense_features.dim() != 2 or dense_features.shape[0] != sparse_features.stride():
            raise ValueError(f"dense_features must be (batch, features) with the sparse features' batch "
                             f"{sparse_features.stride()}, got {tuple(dense_features.shape)}")
        embedded_dense = self.dense_arch(dense_features)
        embedded_sparse = self.sparse_arch(sparse_features)
        return self.over_arch(self.inter_arch(embedded_dense, embedded_sparse))


class DLRMTrain(nn.Module):
    """A DLRM and its loss: forward(batch) returns (loss, (loss, logits, labels) detached),
    the loss being binary cross-entropy of the logits against batch.labels."""

    def __init__(self, dlrm_module):
        super().__init__()
        if not isinstance(dlrm_module, DLRM):
            raise TypeError(f"dlrm_module must be a DLRM, got {type(dlrm_module).__name__}")
        self.model = dlrm_module
        self.loss_fn = nn.BCEWithLogitsLoss()

    def forward(self, batch):
        logits = self.model(batch.dense_features, batch.sparse_features).squeeze(-1)
        loss = self.loss_fn(logits, batch.labels.float())
        return loss, (loss.detach(), logits.detach(), batch.labels.detach())
