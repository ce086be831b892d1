"""The basic communication hooks: `hook(process_group, bucket) -> Future[Tensor]`. Register
one with `ddp.register_comm_hook(process_group_or_None, hook)`."""
import ember
import ember.distributed as dist

__all__ = ["allreduce_hook", "bf16_compress_hook", "fp16_compress_hook"]


def _group(process_group):
    return process_group if process_group is not None else dist.GroupMember.WORLD


def allreduce_hook(process_group, bucket):
    """Averages the bucket across ranks (what DDP does without a hook)."""
    group = _group(process_group)
    buffer = bucket.buffer()
    work = dist.all_reduce(buffer, dist.ReduceOp.AVG if buffer.dtype.is_floating_point else dist.ReduceOp.SUM,
                           group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def _compress_hook(dtype, process_group, bucket):
    group = _group(process_group)
    buffer = bucket.buffer()
    compressed = buffer.to(dtype)
    with ember.no_grad():
        compressed.div_(dist.get_world_size(group))
    work = dist.all_reduce(compressed, group=group, async_op=True)

    def decompress(fut):
        with ember.no_grad():
            buffer.copy_(fut.value()[0])
        return buffer
    return work.get_future().then(decompress)


def fp16_compress_hook(process_group, bucket):
    """Averages the bucket in float16 (half the traffic), then writes it back in its own dtype."""
    return _compress_hook(ember.float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """Averages the bucket in bfloat16, then writes it back in its own dtype."""
    return _compress_hook(ember.bfloat16, process_group, bucket)
