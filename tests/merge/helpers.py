"""Building merge contexts and KV tables for merge-level tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from stratalake.merge import (
    SEQUENCE_NUMBER,
    VALUE_KIND,
    MergeContext,
    RowKind,
    create_merge_function,
    drop_retracted,
    merge_kv,
)
from stratalake.options import CoreOptions
from stratalake.spec.schema import TableSchema
from stratalake.types import DataField, DataType, to_arrow

TABLE = "db.t"
KINDS = {"+I": RowKind.INSERT, "-U": RowKind.UPDATE_BEFORE, "+U": RowKind.UPDATE_AFTER, "-D": RowKind.DELETE}


def make_ctx(
    columns: Sequence[tuple[str, str]], primary_key: Sequence[str], options: Mapping[str, str] | None = None
) -> MergeContext:
    opts = dict(options or {})
    fields = tuple(DataField(i, name, DataType.parse(t)) for i, (name, t) in enumerate(columns))
    schema = TableSchema(
        id=0, fields=fields, highest_field_id=len(fields) - 1, primary_keys=tuple(primary_key), options=opts
    )
    return MergeContext.of(schema, CoreOptions(opts, TABLE), table_name=TABLE)


def kv_table(
    ctx: MergeContext,
    rows: Sequence[Mapping[str, Any]],
    kinds: Sequence[str] | None = None,
    first_seq: int = 0,
) -> pa.Table:
    """A KV table of ``rows`` (dicts by column name) with sequence numbers in input order."""
    data: dict[str, pa.Array] = {}
    for f in ctx.schema.fields:
        data[f.name] = pa.array([r.get(f.name) for r in rows], to_arrow(f.type))
    data[SEQUENCE_NUMBER] = pa.array(range(first_seq, first_seq + len(rows)), pa.int64())
    ks = kinds or ["+I"] * len(rows)
    data[VALUE_KIND] = pa.array([int(KINDS[k]) for k in ks], pa.int8())
    return pa.table(data)


def merged(ctx: MergeContext, kv: pa.Table) -> pa.Table:
    return merge_kv(kv, ctx, create_merge_function(ctx))


def rows_of(table: pa.Table, with_kind: bool = False) -> list[dict[str, Any]]:
    out = []
    for r in table.to_pylist():
        r.pop(SEQUENCE_NUMBER)
        kind = r.pop(VALUE_KIND)
        if with_kind:
            r["_kind"] = RowKind(kind).short_string
        out.append(r)
    return out


def merge_rows(
    ctx: MergeContext, rows: Sequence[Mapping[str, Any]], kinds: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Merge ``rows`` and return the live results as dicts."""
    return rows_of(drop_retracted(merged(ctx, kv_table(ctx, rows, kinds))))
