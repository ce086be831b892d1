"""Datasets of TorchText 0.13 (`torchtext.datasets`), as emberdata DataPipes.

GLUE: `CoLA`, `SST2`, `MRPC`, `QQP`, `STSB`, `MNLI`, `QNLI`, `RTE`, `WNLI`. `RESOURCES` maps each
downloaded file's name to its URL and MD5 (edit it to use a mirror); `NUM_LINES` holds the rows
per split that `len()` reports.
"""
from embertext.datasets._core import Resource
from embertext.datasets._glue import CoLA, MNLI, MRPC, NUM_LINES, QNLI, QQP, RESOURCES, RTE, SST2, STSB, WNLI

__all__ = ["CoLA", "MNLI", "MRPC", "NUM_LINES", "QNLI", "QQP", "RESOURCES", "RTE", "Resource", "SST2", "STSB", "WNLI"]
