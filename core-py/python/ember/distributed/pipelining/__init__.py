"""`ember.distributed.pipelining`: pipeline parallelism (torch.distributed.pipelining's API):
an nn.Sequential split into stages, one per rank (`pipeline(...).build_stage(rank)`, or a
`PipelineStage` made by hand), run on micro-batches by `ScheduleGPipe` or `Schedule1F1B`."""
from ember.distributed.pipelining._split import Pipe, SplitPoint, pipeline
from ember.distributed.pipelining.schedules import PipelineScheduleSingle, Schedule1F1B, ScheduleGPipe
from ember.distributed.pipelining.stage import PipelineStage

__all__ = ["Pipe", "PipelineScheduleSingle", "PipelineStage", "Schedule1F1B", "ScheduleGPipe", "SplitPoint", "pipeline"]
