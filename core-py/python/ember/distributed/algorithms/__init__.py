"""`ember.distributed.algorithms`: DistributedDataParallel's communication hooks."""
