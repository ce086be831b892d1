"""TorchRec's quantized inference modules (`emberrec.quant.embedding_modules`): embedding
collections over quantized tables, made from trained float ones by `from_float` or by
`emberrec.inference.modules.quantize_embeddings`.

    from emberrec.inference.modules import quantize_embeddings
    from emberrec.modules.embedding_configs import DataType
    quantized = quantize_embeddings(model, dtype=DataType.INT4, inplace=False)
"""
from emberrec.quant.embedding_modules import EmbeddingBagCollection, EmbeddingCollection

__all__ = ["EmbeddingBagCollection", "EmbeddingCollection"]
