"""The planner's hardware defaults and empirical factors, with the values of TorchRec 1.9
(bandwidths in bytes per millisecond, so perf estimates come out in ms)."""
from emberrec.distributed.embedding_types import EmbeddingComputeKernel

MAX_SIZE = (1 << 63) - 1

INTRA_NODE_BANDWIDTH = 600 * 1024 * 1024 * 1024 / 1000   # NVLink-class, bytes/ms
CROSS_NODE_BANDWIDTH = 12.5 * 1024 * 1024 * 1024 / 1000  # network, bytes/ms

MIN_CW_DIM = 128        # smallest column-wise block the enumerator looks for
POOLING_FACTOR = 1.0    # ids per sample and feature, unless constraints say otherwise
NUM_POOLINGS = 1.0
BIGINT_DTYPE = 8        # bytes of one input id

HBM_CAP = 32 * 1024 * 1024 * 1024
DDR_CAP = 128 * 1024 * 1024 * 1024
DDR_MEM_BW = 51 * 1024 * 1024 * 1024 / 1000
HBM_MEM_BW = 897 * 1024 * 1024 * 1024 / 1000
HBM_TO_DDR_MEM_BW = 32 * 1024 * 1024 * 1024 / 1000
UVM_CACHING_RATIO = 0.2
BATCH_SIZE = 512

BATCHED_COPY_PERF_FACTOR = 2.455
FULL_BLOCK_EMB_DIM = 128
HALF_BLOCK_PENALTY = 1.15
QUARTER_BLOCK_PENALTY = 1.75
BWD_COMPUTE_MULTIPLIER = 2
WEIGHTED_FEATURE_BWD_COMPUTE_MULTIPLIER = 1
WEIGHTED_KERNEL_MULTIPLIER = 1.1
DP_ELEMENTWISE_KERNELS_PERF_FACTOR = 9.22


def kernel_bw_lookup(compute_device, compute_kernel, hbm_mem_bw, ddr_mem_bw, hbm_to_ddr_mem_bw,
                     caching_ratio=None, prefetch_pipeline=False):
    """The memory bandwidth (bytes/ms) a kernel reads rows at on a device, or None where the
    kernel does not run there. UVM rows cross PCIe (a tenth of its bandwidth, for the random
    access); a UVM cache reads `caching_ratio` of them from HBM."""
    ratio = UVM_CACHING_RATIO if caching_ratio is None else caching_ratio
    kernel = EmbeddingComputeKernel
    cached = (ratio * hbm_mem_bw + (1 - ratio) * hbm_to_ddr_mem_bw) / 10
    table = {
        ("cpu", kernel.DENSE.value): 0.5 * ddr_mem_bw,
        ("cpu", kernel.FUSED.value): ddr_mem_bw,
        ("cpu", kernel.QUANT.value): ddr_mem_bw,
        ("cuda", kernel.DENSE.value): 0.5 * hbm_mem_bw,
        ("cuda", kernel.FUSED.value): hbm_mem_bw,
        ("cuda", kernel.FUSED_UVM.value): hbm_to_ddr_mem_bw / 10,
        ("cuda", kernel.FUSED_UVM_CACHING.value): cached,
        ("cuda", kernel.QUANT.value): hbm_mem_bw,
        ("cuda", kernel.QUANT_UVM.value): hbm_to_ddr_mem_bw / 10,
        ("cuda", kernel.QUANT_UVM_CACHING.value): cached,
    }
    if prefetch_pipeline and compute_device == "cuda" and compute_kernel == kernel.FUSED_UVM_CACHING.value:
        # prefetching hides the cache misses: the cache runs at HBM speed
        return table[("cuda", kernel.FUSED.value)]
    return table.get((compute_device, compute_kernel))
