"""A DELETE by a list of keys that the table checks itself, without a scan of the whole table.

``DELETE FROM t WHERE id IN (SELECT id FROM staged)`` is, in Spark's row-level plan, a scan of
every stored key joined with the list, and then the ``-D`` records of the keys found. The table
can answer the same question from less: a listed key's bucket follows from the key, so only the
buckets the list touches are read, and only their key columns. The shim hands such a DELETE the
listed keys as ``-D`` candidates (``sql/RowLevelRewrite.java``); each writer task keeps those
whose key is live in the latest snapshot (:func:`live_listed_keys`) and writes their ``-D``
records, which is what Spark's plan would have written.

A partition column the list does not name matches every partition (the condition does not
constrain it), so each listed key is looked for in its bucket of every partition. A key that is
not live gets no record: a ``-D`` of nothing would show in the changelog of tables that write
their input as changelog, and Spark's plan would not have written it either.

Which tables qualify (fixed buckets, records that take a key-only ``-D``) is decided in
``spark/dml.py``'s :func:`~stratalake.spark.dml.delete_key_columns`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.exceptions import InvalidDataError
from stratalake.read.merge_read import TableRead
from stratalake.read.scan import TableScan
from stratalake.spec.bucket import bucket_ids

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore

SPLIT_BATCH_ROWS = 1 << 20
"""Rows per batch of the key columns read (8 MiB of a BIGINT key): few batches per file."""


def live_listed_keys(table: TableStore, listed: pa.Table) -> pa.Table:
    """The primary keys (partition columns included, in the table's primary-key order) of the
    live rows of ``table``'s latest snapshot whose key is listed in ``listed``.

    ``listed`` holds the trimmed primary key, the bucket key and any of the partition columns that
    are primary-key columns; one it lacks matches every partition. Rows with a null key match
    nothing (SQL's ``IN``); duplicates count once. Reads the key columns of the listed keys'
    buckets only, a batch at a time; holds the listed keys.
    """
    schema = table.schema()
    arrow = table.arrow_schema()
    key_names = list(schema.primary_keys)
    trimmed = list(schema.trimmed_primary_keys)
    given_parts = [k for k in schema.partition_keys if k in listed.column_names and k in key_names]
    columns = trimmed + given_parts
    missing = [k for k in dict.fromkeys((*trimmed, *schema.bucket_keys)) if k not in listed.column_names]
    if missing:
        raise ValueError(f"table {table.identifier}: a key list needs the columns {missing}")
    empty = pa.schema([arrow.field(k) for k in key_names]).empty_table()
    listed = _distinct(_conformed(table, listed, columns))
    if listed.num_rows == 0:
        return empty
    num_buckets = table.core_options.bucket
    bucket_types = [schema.field(k).type for k in schema.bucket_keys]
    codes = bucket_ids([listed.column(k) for k in schema.bucket_keys], bucket_types, num_buckets)
    order = np.argsort(codes, kind="stable")
    listed, codes = listed.take(pa.array(order)), codes[order]
    buckets, starts = np.unique(codes, return_index=True)
    ends = [*starts[1:], len(codes)]
    by_bucket = {int(b): listed.slice(s, e - s) for b, s, e in zip(buckets, starts, ends, strict=True)}
    read = TableRead(table, columns=trimmed)
    read.batch_rows = SPLIT_BATCH_ROWS
    found: list[pa.Table] = []
    for split in TableScan(table).plan_buckets(by_bucket):
        candidates = by_bucket[split.bucket]
        values = dict(zip(table.partition_codec.keys, split.partition_values, strict=True))
        for k in given_parts:
            candidates = candidates.filter(pc.equal(candidates.column(k), pa.scalar(values[k], arrow.field(k).type)))
        if candidates.num_rows == 0:
            continue
        candidates = candidates.select(trimmed).combine_chunks()
        match = _matcher(candidates, trimmed)
        for keys in read.read_split_keys(split):
            live = match(keys)
            n = live.num_rows
            if n:
                found.append(
                    pa.table(
                        {
                            k: live.column(k)
                            if k in trimmed
                            else pa.repeat(pa.scalar(values[k], arrow.field(k).type), n)
                            for k in key_names
                        }
                    )
                )
    if not found:
        return empty
    return pa.concat_tables(found).cast(empty.schema)


def _conformed(table: TableStore, listed: pa.Table, columns: Sequence[str]) -> pa.Table:
    """``listed``'s key columns in the table's types, rows with a null key dropped."""
    arrow = table.arrow_schema()
    out = {}
    for k in columns:
        column = listed.column(k)
        try:
            out[k] = pc.cast(column, arrow.field(k).type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise InvalidDataError(
                f"table {table.identifier}: the key list's column '{k}' ({column.type}) does not fit "
                f"the table's {arrow.field(k).type}: {e}"
            ) from e
    conformed = pa.table(out)
    return conformed.drop_null() if any(conformed.column(k).null_count for k in columns) else conformed


def _distinct(keys: pa.Table) -> pa.Table:
    if keys.num_rows <= 1:
        return keys
    return keys.group_by(keys.column_names, use_threads=False).aggregate([])


def _matcher(candidates: pa.Table, names: Sequence[str]) -> Callable[[pa.Table], pa.Table]:
    """The rows of a batch of live keys whose key is one of ``candidates``' rows.

    A split's batches come in key order (a file's rows, or the merge's output), so a single
    integer key is matched by binary search of the candidates in the batch: O(candidates x log
    batch) per batch, where a hash of the candidates would cost a probe per live row.
    """
    if len(names) == 1 and pa.types.is_integer(candidates.schema.field(names[0]).type):
        name = names[0]
        wanted = np.sort(candidates.column(name).to_numpy())
        value_set = candidates.column(name).chunk(0)

        def sorted_match(live: pa.Table) -> pa.Table:
            keys = live.column(name).to_numpy()
            if len(keys) == 0:
                return live
            if not (keys[1:] >= keys[:-1]).all():  # not in key order after all: probe a hash
                return live.filter(pc.is_in(live.column(name), value_set=value_set))
            at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
            hit = keys[at] == wanted
            return pa.table({name: pa.array(wanted[hit], type=live.schema.field(name).type)})

        return sorted_match

    def joined(live: pa.Table) -> pa.Table:
        return live.join(candidates, keys=list(names), join_type="left semi", use_threads=False)

    return joined
