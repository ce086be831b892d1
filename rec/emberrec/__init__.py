"""emberrec: TorchRec rebuilt on Ember tensors (CPU): jagged tensors, embedding collections,
DLRM and its building blocks, RecMetrics. Module paths mirror TorchRec's (`emberrec.sparse.
jagged_tensor`, `emberrec.modules.embedding_modules`, `emberrec.models.dlrm`, ...), so code ports
by renaming the package (or unchanged under `python -m ember.compat`). See README.md for what
is not here yet."""
from emberrec.modules.embedding_configs import DataType, EmbeddingBagConfig, EmbeddingConfig, PoolingType
from emberrec.modules.embedding_modules import (
    EmbeddingBagCollection, EmbeddingBagCollectionInterface, EmbeddingCollection, EmbeddingCollectionInterface)
from emberrec.sparse.jagged_tensor import JaggedTensor, KeyedJaggedTensor, KeyedTensor
import emberrec.quant  # noqa: E402,F401  (`emberrec.quant.X` after `import emberrec`, as TorchRec)

__version__ = "0.1.0"

__all__ = [
    "DataType", "EmbeddingBagConfig", "EmbeddingConfig", "PoolingType", "EmbeddingBagCollection",
    "EmbeddingBagCollectionInterface", "EmbeddingCollection", "EmbeddingCollectionInterface", "JaggedTensor",
    "KeyedJaggedTensor", "KeyedTensor",
]
