"""`EmbeddingComputeKernel` (how a shard's lookups run) and `BaseEmbeddingSharder`, the sharding
types and kernels embedding collections offer, as TorchRec's
`torchrec.distributed.embedding_types`."""
import copy
from enum import Enum, unique

from emberrec.distributed.types import ModuleSharder, ParameterStorage, ShardingType, get_tensor_size_bytes

__all__ = ["EmbeddingComputeKernel", "BaseEmbeddingSharder", "COMPUTE_KERNEL_VALUES"]


@unique
class EmbeddingComputeKernel(Enum):
    DENSE = "dense"                                # plain embedding tables, optimizer outside
    FUSED = "fused"                                # FBGEMM TBE, optimizer fused into backward
    FUSED_UVM = "fused_uvm"                        # ... with the rows in host memory (UVM)
    FUSED_UVM_CACHING = "fused_uvm_caching"        # ... with a cache of hot rows in HBM
    QUANT = "quant"                                # quantized inference TBE
    QUANT_UVM = "quant_uvm"
    QUANT_UVM_CACHING = "quant_uvm_caching"


COMPUTE_KERNEL_VALUES = frozenset(k.value for k in EmbeddingComputeKernel)

_HOST_MEMORY_KERNELS = {EmbeddingComputeKernel.FUSED_UVM.value, EmbeddingComputeKernel.FUSED_UVM_CACHING.value}


class BaseEmbeddingSharder(ModuleSharder):
    """The choices of an embedding collection's tables. `fused_params` go to the fused kernels
    (the planner reads `cache_load_factor` and `prefetch_pipeline`)."""

    def __init__(self, fused_params=None, qcomm_codecs_registry=None):
        super().__init__(qcomm_codecs_registry)
        if fused_params is not None and not isinstance(fused_params, dict):
            raise TypeError(f"fused_params must be a dict, got {fused_params!r}")
        self._fused_params = copy.deepcopy(fused_params) if fused_params is not None else None

    @property
    def fused_params(self):
        return self._fused_params

    def sharding_types(self, compute_device_type):
        types = [ShardingType.DATA_PARALLEL.value, ShardingType.TABLE_WISE.value, ShardingType.COLUMN_WISE.value,
                 ShardingType.TABLE_COLUMN_WISE.value]
        if compute_device_type == "cuda":
            types += [ShardingType.ROW_WISE.value, ShardingType.TABLE_ROW_WISE.value]
        return types

    def compute_kernels(self, sharding_type, compute_device_type):
        if sharding_type == ShardingType.DATA_PARALLEL.value:
            return [EmbeddingComputeKernel.DENSE.value]
        kernels = [EmbeddingComputeKernel.FUSED.value]
        if compute_device_type == "cuda":
            kernels += [EmbeddingComputeKernel.FUSED_UVM.value, EmbeddingComputeKernel.FUSED_UVM_CACHING.value]
        return kernels

    def storage_usage(self, tensor, compute_device_type, compute_kernel):
        if compute_kernel in _HOST_MEMORY_KERNELS:
            return {ParameterStorage.DDR.value: get_tensor_size_bytes(tensor)}
        return super().storage_usage(tensor, compute_device_type, compute_kernel)
