"""Conversions between Python values, Arrow arrays and dtypes, shared by every column class."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from emberarrow import dtypes as dt


def to_arrow_array(values, dtype):
    """An Arrow array of ``dtype`` holding the Python ``values``; TypeError when they do not fit."""
    values = list(values)
    if not dtype.nullable and any(v is None for v in values):
        raise ValueError(f"None found in the list for non-nullable type: {dtype}")
    try:
        return pa.array(_for_arrow(values, dtype), type=dt.dtype_to_arrowtype(dtype))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as error:
        raise TypeError(f"values do not fit dtype {dtype}: {error}") from None


def _for_arrow(values, dtype):
    """Rewrite Python values into the shapes pa.array takes for ``dtype`` (rows as dicts, bools as ints)."""
    if dt.is_struct(dtype):
        names = [f.name for f in dtype.fields]
        rows = []
        for v in values:
            if v is None or isinstance(v, dict):
                rows.append(v)
            else:
                if len(v) != len(names):
                    raise TypeError(f"row {v!r} has {len(v)} values for the {len(names)} fields of {dtype}")
                rows.append(dict(zip(names, v)))
        for f in dtype.fields:
            column = _for_arrow([None if r is None else r.get(f.name) for r in rows], f.dtype)
            for r, c in zip(rows, column):
                if r is not None:
                    r[f.name] = c
        return rows
    if dt.is_list(dtype) and not dt.is_primitive(dtype.item_dtype):
        return [None if v is None else _for_arrow(list(v), dtype.item_dtype) for v in values]
    if dt.is_map(dtype):
        return [None if v is None else list(zip(v.keys(), _for_arrow(list(v.values()), dtype.item_dtype))) for v in values]
    if (dt.is_integer(dtype) or dt.is_boolean(dtype)) and any(isinstance(v, (float, np.floating)) for v in values):
        raise TypeError(f"floats are not converted to {dtype}; cast the column instead")
    if dt.is_numerical(dtype) and any(isinstance(v, (bool, np.bool_)) for v in values):
        return [None if v is None else int(v) for v in values]  # TorchArrow promotes bool into numbers
    if dt.is_boolean(dtype) and any(not isinstance(v, (bool, np.bool_)) for v in values if v is not None):
        return [None if v is None else bool(v) for v in values]  # numbers convert to booleans
    return values


def to_pylist(array, dtype):
    """Python values of ``array`` in TorchArrow's shapes: maps as dicts, structs as named tuples."""
    if dt.is_primitive(dtype):
        return array.to_pylist()
    valid = array.is_valid().to_numpy(zero_copy_only=False)
    if dt.is_list(dtype):
        offsets, values = list_parts(array)
        items = to_pylist(values, dtype.item_dtype)
        return [items[offsets[i]:offsets[i + 1]] if valid[i] else None for i in range(len(array))]
    if dt.is_map(dtype):
        offsets, keys, items = map_parts(array)
        keys, items = to_pylist(keys, dtype.key_dtype), to_pylist(items, dtype.item_dtype)
        return [dict(zip(keys[offsets[i]:offsets[i + 1]], items[offsets[i]:offsets[i + 1]])) if valid[i] else None for i in range(len(array))]
    if dt.is_struct(dtype):
        row = dtype.py_type
        fields = [to_pylist(array.field(i), f.dtype) for i, f in enumerate(dtype.fields)]
        return [row(*values) if valid[i] else None for i, values in enumerate(zip(*fields))] if fields else [row() if v else None for v in valid]
    raise TypeError(f"no Python values for dtype {dtype}")


def list_parts(array):
    """(offsets as NumPy starting at 0, the values those offsets index) of a list array; zero-copy
    for an array that starts at the beginning of its values."""
    offsets = array.offsets.to_numpy()
    start, stop = int(offsets[0]), int(offsets[-1])
    if start:
        offsets = offsets - offsets.dtype.type(start)
    return offsets, array.values.slice(start, stop - start)


def map_parts(array):
    """(offsets from 0, keys, items) of a map array, sliced to the rows the array holds."""
    offsets = array.offsets.to_numpy()
    start, stop = int(offsets[0]), int(offsets[-1])
    if start:
        offsets = offsets - offsets.dtype.type(start)
    return offsets, array.keys.slice(start, stop - start), array.items.slice(start, stop - start)


def numpy_values(array, fill=0):
    """The values of a primitive array as NumPy, null slots set to ``fill`` (zero-copy when no nulls)."""
    if array.null_count:
        array = pc.fill_null(array, fill)
    return array.to_numpy(zero_copy_only=False)


def validity(array):
    """A NumPy bool mask, True where ``array`` holds a value."""
    if array.null_count == 0:
        return np.ones(len(array), dtype=bool)
    return array.is_valid().to_numpy(zero_copy_only=False)


def from_numpy(values, valid=None):
    """An Arrow array of NumPy ``values``, null where ``valid`` is False."""
    mask = None if valid is None or valid.all() else ~valid
    return pa.array(values, mask=mask)


def single_chunk(data):
    """One Array from an Array or a ChunkedArray (chunks combined; zero-copy for one chunk)."""
    if isinstance(data, pa.ChunkedArray):
        if data.num_chunks == 1:
            return data.chunk(0)
        if data.num_chunks == 0:
            return pa.array([], type=data.type)
        return pa.concat_arrays(data.chunks)
    return data


def normalise(array):
    """Arrow variants emberarrow does not keep (dictionary, large, view types) cast to the plain type."""
    target = dt.dtype_to_arrowtype(dt.arrowtype_to_dtype(array.type, True))
    return array if array.type == target else array.cast(target)


def kernels():
    """ember's Rust kernels over Arrow buffers (``ember._C.arrow``), imported on first use."""
    from ember._C import arrow

    return arrow


def raw_values(array):
    """The value buffer of a primitive (non-boolean) array as a NumPy view of its items, null slots
    holding whatever they hold: what the kernels read, without a copy."""
    np_type = array.type.to_pandas_dtype()
    buffer = array.buffers()[1]
    if buffer is None:  # an empty array may come without one
        return np.empty(0, dtype=np_type)
    item = np.dtype(np_type).itemsize
    return np.frombuffer(buffer, dtype=np_type, count=len(array), offset=array.offset * item)


def int64_values(array):
    """An integer array's values as int64 NumPy, null slots unspecified (no copy for int64)."""
    return raw_values(array if array.type == pa.int64() else array.cast(pa.int64()))


def validity_bits(array):
    """(the validity bitmap as NumPy bytes, or None without nulls; the array's bit offset)."""
    if array.null_count == 0:
        return None, array.offset
    return np.frombuffer(array.buffers()[0], dtype=np.uint8), array.offset


def sharing_validity(array, np_type, write):
    """An Arrow array of ``np_type`` with ``array``'s validity bitmap, shared without a copy, and
    values that ``write(out)`` fills (``out`` has one slot per item of ``array``). The value buffer
    starts ``array.offset`` slots early so that one offset serves both buffers."""
    out = np.empty(array.offset + len(array), dtype=np_type)
    write(out[array.offset:])
    validity = array.buffers()[0] if array.null_count else None
    return pa.Array.from_buffers(pa.from_numpy_dtype(np_type), len(array), [validity, pa.py_buffer(out)],
                                 null_count=array.null_count, offset=array.offset)
