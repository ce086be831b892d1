"""The training script's process group, when it has initialised one (ember.distributed): ranks
then come from it, and DistributedReadingService agrees through its collectives. Without one,
ranks come from RANK/WORLD_SIZE and the reading service uses a store."""
import sys


def process_group():
    """`ember.distributed` when its default process group is initialised, else None. It is never
    imported from here (importing it loads the MPI library, ~0.1 s): a script that initialised a
    group imported it."""
    dist = sys.modules.get("ember.distributed")
    return dist if dist is not None and dist.is_initialized() else None
