"""FBGEMM-GPU's Python modules for what emberrec rebuilds of it, under FBGEMM's module names
(`fbgemm_gpu.X` is `emberrec.fbgemm.X`): the training table-batched embedding bags with fused
optimizers (`split_table_batched_embeddings_ops_training`), the inference one over quantized
rows (`split_table_batched_embeddings_ops_inference`), their enums
(`split_table_batched_embeddings_ops_common`, `split_embedding_configs`) and the quantizers
(`tbe.utils.quantize`; the row-format operators themselves are in `emberrec.ops` under their
`torch.ops.fbgemm` names). The kernels are Rust (`ember._C.rec`, crate `ember-rec`)."""
