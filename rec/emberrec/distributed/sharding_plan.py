"""How a table splits into shards (`calculate_shard_sizes_and_offsets`) and the default
sharders, as TorchRec's `torchrec.distributed.sharding_plan`."""
import math

from emberrec.distributed.types import ShardingType

__all__ = ["calculate_shard_sizes_and_offsets", "get_default_sharders"]

MIN_CW_DIM = 128


def get_default_sharders():
    """The sharders the planner uses when given none: EmbeddingBagCollection's and
    EmbeddingCollection's."""
    from emberrec.distributed.embedding import EmbeddingCollectionSharder
    from emberrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    return [EmbeddingBagCollectionSharder(), EmbeddingCollectionSharder()]


def calculate_shard_sizes_and_offsets(tensor, world_size, local_world_size, sharding_type, col_wise_shard_dim=None):
    """([rows, cols] of each shard, [row, col] offset of each shard) of a (rows, cols) table."""
    rows, columns = tensor.shape
    if sharding_type == ShardingType.DATA_PARALLEL.value:
        return [[rows, columns]] * world_size, [[0, 0]] * world_size
    if sharding_type == ShardingType.TABLE_WISE.value:
        return [[rows, columns]], [[0, 0]]
    if sharding_type == ShardingType.ROW_WISE.value:
        return _row_blocks(rows, world_size, columns)
    if sharding_type == ShardingType.TABLE_ROW_WISE.value:
        return _row_blocks(rows, local_world_size, columns)
    if sharding_type in (ShardingType.COLUMN_WISE.value, ShardingType.TABLE_COLUMN_WISE.value):
        return _column_blocks(columns, rows, col_wise_shard_dim)
    raise ValueError(f"Unrecognized or unsupported sharding type provided: {sharding_type}")


def _row_blocks(rows, num_devices, columns):
    """Blocks of ceil(rows / num_devices) rows, the last one shorter and any after it empty
    (10 rows on 4 devices: 3, 3, 3, 1), as the row-wise kernels index them."""
    block = math.ceil(rows / num_devices)
    full_blocks = rows // block
    sizes = []
    for rank in range(num_devices):
        local_rows = block if rank < full_blocks else (rows - block * full_blocks if rank == full_blocks else 0)
        sizes.append([local_rows, columns])
    offsets = [[0, 0]]
    for size, offset in zip(sizes[:-1], offsets):
        offsets.append([offset[0] + size[0], 0])
    return sizes, offsets


def _column_block_size(columns, min_dim):
    """The smallest multiple of 4 from `min_dim` (default 128) up that divides `columns`, else
    all of them."""
    lower = min_dim if min_dim else MIN_CW_DIM
    return next((d for d in range(lower, columns) if columns % d == 0 and d % 4 == 0), columns)


def _column_blocks(columns, rows, min_dim):
    block = _column_block_size(columns, min_dim)
    count = columns // block
    return [[rows, block]] * count, [[0, block * i] for i in range(count)]
