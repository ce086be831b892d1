"""emberarrow: TorchArrow's DataFrame on Apache Arrow, with a hand-off to ember tensors.

``import emberarrow as ta`` then ``ta.dataframe``, ``ta.column``, ``ta.from_arrow`` ... as in
TorchArrow; recsys and text ops in ``emberarrow.functional`` (GPT-2's BPE encoder in
``emberarrow.text``), tensor conversions in ``emberarrow.tensor_conversion``. See README.md for
what works and what is not built yet.
"""
from emberarrow import dtypes, functional, text
from emberarrow.icolumn import (
    Column,
    ListColumn,
    MapColumn,
    NumericalColumn,
    StringColumn,
    column,
    concat,
    if_else,
)
from emberarrow.idataframe import DataFrame, dataframe
from emberarrow.expression import me
from emberarrow.interop import from_arrow, from_pandas, from_pysequence, read_csv, read_parquet

__version__ = "0.1.0"

__all__ = [
    "Column", "DataFrame", "ListColumn", "MapColumn", "NumericalColumn", "StringColumn",
    "column", "concat", "dataframe", "dtypes", "from_arrow", "from_pandas", "from_pysequence",
    "functional", "if_else", "me",
    "read_csv", "read_parquet", "text",
]
