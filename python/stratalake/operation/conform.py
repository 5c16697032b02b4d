"""Incoming rows as a table stores them: the one input check of both writers.

The primary-key writer (``operation/write.py``) and the append writer (``append/write.py``) take
the caller's Arrow data through :func:`input_table` and :func:`conform`, so the two table kinds
accept and refuse the same inputs: columns by name (any order, none missing, none unknown, none
twice), values safely cast to the table's types, no null where the table says NOT NULL.

NOT NULL holds for every row, retractions (``-U``, ``-D``) included: the data files declare such
a column non-nullable, and none of the three formats' writers stores a null there, so a null
would otherwise fail the flush (at the commit, with the library's error). Primary-key columns
have their own message.

>>> import pyarrow as pa
>>> target = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
>>> conform(pa.table({"v": ["a"], "id": pa.array([1], pa.int32())}), target, "db.t").to_pydict()
{'id': [1], 'v': ['a']}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from stratalake.exceptions import InvalidDataError, SchemaError
from stratalake.spec.default_value import fill_defaults


def input_table(data: object, table: str) -> pa.Table:
    """``data`` (an Arrow table or record batch) as an Arrow table; :class:`SchemaError` naming
    ``table`` for anything else or for a column given twice."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if not isinstance(data, pa.Table):
        raise SchemaError(
            f"table {table}: expected an Arrow table or record batch, got "
            f"{type(data).__name__}; convert it first, e.g. pyarrow.Table.from_pylist(rows)"
        )
    names = data.column_names
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SchemaError(f"table {table}: input has column(s) {dupes} more than once")
    return data


def conform(
    data: pa.Table,
    target: pa.Schema,
    table: str,
    *,
    row_kind: str | None = None,
    primary_keys: Sequence[str] = (),
    defaults: Mapping[str, pa.Scalar] | None = None,
) -> pa.Table:
    """``data``'s columns of ``target`` in its order, cast to its types, under a schema of nullable
    fields (the writers' buffers); ``row_kind`` names an input column that is not stored.
    ``defaults`` (``spec.default_value.column_defaults``) fill the nulls of their columns after the
    NOT NULL check, as Paimon's writer does.

    Raises :class:`SchemaError` for missing,
    unknown or uncastable columns and :class:`InvalidDataError` for a null where none may be, each
    naming ``table`` and the column.
    """
    names = set(data.column_names)
    missing = [f.name for f in target if f.name not in names]
    if missing:
        raise SchemaError(f"table {table}: input lacks column(s) {missing}; expected columns {target.names}")
    extra = [n for n in data.column_names if n not in target.names and n != row_kind]
    if extra:
        raise SchemaError(
            f"table {table}: input has unknown column(s) {extra}; expected columns {target.names}"
        )
    keys = set(primary_keys)
    arrays = []
    for f in target:
        col = data.column(f.name)
        if col.type != f.type:
            try:
                col = col.cast(f.type, safe=True)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise SchemaError(
                    f"table {table}: column '{f.name}' has type {col.type} "
                    f"which cannot be safely cast to the table's {f.type}: {e}"
                ) from None
        if f.name in keys:
            if col.null_count:
                raise InvalidDataError(
                    f"table {table}: primary-key column '{f.name}' has {col.null_count} null value(s); "
                    "primary-key values must not be null"
                )
        elif not f.nullable and col.null_count:
            raise InvalidDataError(
                f"table {table}: column '{f.name}' is NOT NULL but has {col.null_count} null value(s)"
            )
        arrays.append(col)
    out = pa.Table.from_arrays(arrays, schema=pa.schema([f.with_nullable(True) for f in target]))
    return fill_defaults(out, defaults) if defaults else out


__all__ = ["conform", "input_table"]
