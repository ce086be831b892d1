"""TorchRec's `quantize_embeddings`: a model with its embedding collections swapped for
quantized ones (`emberrec.quant`), ready for inference.

TorchRec builds this on `torch.quantization.quantize_dynamic`; Ember has no quantization
package (nor PyTorch's quantized dtypes), so the swap is done here, the same way: every module
whose type is a key of the mapping is replaced by `mapping[type].from_float(module)` with
`module.qconfig` set, recursively, the model itself included."""
import copy

import ember
import ember.nn as nn

import emberrec.modules.embedding_modules as float_modules
import emberrec.quant.embedding_modules as quant_modules
from emberrec.modules.embedding_configs import QuantConfig, dtype_to_data_type

__all__ = ["quantize_embeddings", "DEFAULT_QUANTIZATION_DTYPE"]

DEFAULT_QUANTIZATION_DTYPE = ember.int8


def quantize_embeddings(module, dtype, inplace, additional_qconfig_spec_keys=None, additional_mapping=None,
                        output_dtype=ember.float32, per_table_weight_dtype=None):
    """`module` (or, unless `inplace`, a deep copy of it) with every EmbeddingBagCollection
    replaced by emberrec.quant's, its tables stored as `dtype` (ember.int8 / uint8 for INT8,
    ember.float16, ember.float32, or a DataType: DataType.INT4, DataType.INT2, ...), looked up
    into `output_dtype` (float32 or float16); `per_table_weight_dtype` overrides `dtype` per
    table name. `additional_qconfig_spec_keys` lists more module types to quantize (e.g.
    `emberrec.EmbeddingCollection`) and `additional_mapping` their quantized types. The swapped
    modules keep their attribute names, so state-dict keys stay TorchRec's."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be an ember.nn.Module, got {type(module).__name__}")
    # every argument is checked before any module changes
    for table_dtype in (dtype, *(per_table_weight_dtype or {}).values()):
        data_type = dtype_to_data_type(table_dtype)
        if data_type not in quant_modules.STORED_DATA_TYPES:
            raise NotImplementedError(f"quantized tables of {data_type} are not supported "
                                      f"({', '.join(t.name for t in quant_modules.STORED_DATA_TYPES)})")
    if output_dtype not in quant_modules.OUTPUT_SPARSE_TYPES:
        raise ValueError(f"output_dtype must be ember.float32 or ember.float16, got {output_dtype!r}")
    qconfig = QuantConfig(activation=output_dtype, weight=dtype, per_table_weight_dtype=per_table_weight_dtype)
    mapping = {float_modules.EmbeddingBagCollection: quant_modules.EmbeddingBagCollection,
               float_modules.EmbeddingCollection: quant_modules.EmbeddingCollection}
    mapping.update(additional_mapping or {})
    spec_types = [float_modules.EmbeddingBagCollection, *(additional_qconfig_spec_keys or [])]
    missing = [t.__name__ for t in spec_types if t not in mapping]
    if missing:
        raise ValueError(f"no quantized module for {missing}: give one in additional_mapping")
    mapping = {t: mapping[t] for t in spec_types}
    _check_table_names(module, mapping, per_table_weight_dtype or {})
    if not inplace:
        module = copy.deepcopy(module)
    return _swap(module, mapping, qconfig)


def _check_table_names(module, mapping, per_table_weight_dtype):
    """per_table_weight_dtype may only name tables of the modules to quantize (a typo would
    otherwise go unnoticed)."""
    names = set()
    for child in module.modules():
        if type(child) in mapping:
            configs = getattr(child, "embedding_bag_configs", None) or getattr(child, "embedding_configs", None) or []
            names.update(config.name for config in configs)
    unknown = sorted(set(per_table_weight_dtype) - names)
    if unknown:
        raise ValueError(f"per_table_weight_dtype names tables that no module to quantize has: {unknown}")


def _swap(module, mapping, qconfig):
    quantized_type = mapping.get(type(module))
    if quantized_type is not None:
        module.qconfig = qconfig
        return quantized_type.from_float(module)
    for name, child in list(module.named_children()):
        swapped = _swap(child, mapping, qconfig)
        if swapped is not child:
            setattr(module, name, swapped)
    return module
