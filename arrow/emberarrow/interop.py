"""Arrow and pandas in, Parquet and CSV files in (through pyarrow)."""
from __future__ import annotations

import pyarrow as pa

from emberarrow import _arrow
from emberarrow import dtypes as dt
from emberarrow.icolumn import _check_device, _wrap


def from_arrow(data, dtype=None, device=""):
    """A column from an Arrow Array or ChunkedArray, a frame from a Table, RecordBatch or StructArray.

    Zero-copy for one chunk of a type emberarrow keeps (slices included); large, view and
    dictionary types are cast to the plain type. An array's dtype is nullable when it holds nulls,
    a table column's when its schema field is nullable (as in TorchArrow). With ``dtype``, the
    data is cast to it.
    """
    _check_device(device)
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        return _frame_from_table(data, dtype)
    if isinstance(data, (pa.Array, pa.ChunkedArray)):
        array = _arrow.normalise(_arrow.single_chunk(data))
        natural = dt.dtype_of_arrow_array(array)
        if dt.is_void(natural):
            raise TypeError("from_arrow: an Arrow array of type null has no values to infer a dtype from; pass dtype")
        return _as_dtype(array, natural, dtype)
    raise TypeError(f"from_arrow: expected a pyarrow Array, ChunkedArray, Table or RecordBatch, got {type(data).__name__}")


def _as_dtype(array, natural, dtype):
    if dtype is None or dtype == natural:
        return _wrap(array, natural)
    if not isinstance(dtype, dt.DType):
        raise TypeError(f"from_arrow: dtype must be an emberarrow dtype, got {type(dtype).__name__}")
    return _wrap(array, natural).cast(dtype)


def _frame_from_table(table, dtype=None, nullable_from_data=False):
    from emberarrow.idataframe import _frame_from_columns

    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    if dtype is not None and (not dt.is_struct(dtype) or [f.name for f in dtype.fields] != table.column_names):
        raise TypeError(f"from_arrow: dtype {dtype} does not match the table's columns {table.column_names}")
    cols = {}
    for i, field in enumerate(table.schema):
        array = _arrow.normalise(_arrow.single_chunk(table.column(i)))
        nullable = array.null_count > 0 if nullable_from_data else field.nullable
        natural = dt.dtype_of_arrow_array(array, nullable)
        cols[field.name] = _as_dtype(array, natural, None if dtype is None else dtype.fields[i].dtype)
    frame = _frame_from_columns(cols)
    if not cols:
        from emberarrow.idataframe import _frame_from_arrays
        frame = _frame_from_arrays({}, {}, table.num_rows)
    return frame


def from_pysequence(data, dtype, device=""):
    """A column of ``dtype`` from a Python sequence (TorchArrow's name for ``ta.column(data, dtype)``)."""
    from emberarrow.icolumn import column

    return column(list(data), dtype, device)


def from_pandas(data, dtype=None):
    """A frame from a pandas DataFrame or a column from a Series (nullable where there are nulls;
    NaN in a float column counts as null, as pandas treats it)."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        table = pa.Table.from_pandas(data, preserve_index=False)
        frame = _frame_from_table(table, nullable_from_data=True)
        return frame if dtype is None else frame.cast(dtype)
    if isinstance(data, pd.Series):
        return from_arrow(pa.Array.from_pandas(data), dtype)
    raise TypeError(f"from_pandas: expected a pandas DataFrame or Series, got {type(data).__name__}")


def read_parquet(path, columns=None, dtype=None, use_threads=True):
    """A frame of a whole Parquet file (``columns`` to read a subset)."""
    import pyarrow.parquet as pq

    return from_arrow(pq.read_table(path, columns=columns, use_threads=use_threads), dtype)


def iter_parquet_row_groups(path, dtype=None, columns=None, device="", use_threads=False):
    """One frame per row group of a Parquet file (what emberdata's load_parquet_as_df yields)."""
    import pyarrow.parquet as pq

    _check_device(device)
    parquet_file = pq.ParquetFile(path)
    for i in range(parquet_file.num_row_groups):
        yield from_arrow(parquet_file.read_row_group(i, columns=columns, use_threads=use_threads), dtype)


def read_csv(path, columns=None, dtype=None, delimiter=",", header=True):
    """A frame of a CSV file, types inferred by pyarrow's reader (or taken from ``dtype``)."""
    import pyarrow.csv as csv

    names = None if header or dtype is None else [f.name for f in dtype.fields]
    read_options = csv.ReadOptions(autogenerate_column_names=not header and names is None, column_names=names)
    convert = csv.ConvertOptions(
        include_columns=columns,
        column_types=None if dtype is None else {f.name: dt.dtype_to_arrowtype(f.dtype) for f in dtype.fields},
    )
    table = csv.read_csv(path, read_options=read_options, parse_options=csv.ParseOptions(delimiter=delimiter), convert_options=convert)
    return from_arrow(table, dtype) if dtype is None else _frame_from_table(table).cast(dtype)
