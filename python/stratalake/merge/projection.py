"""Which columns a merge needs to produce some of the table's columns (read-side projection).

A reader that is asked for a few columns still has to merge rows correctly. Every engine needs the
trimmed primary key and the ``sequence.field`` columns (they order the merge). A partition column of
the primary key is not needed: it is constant within a bucket, so no engine merges it into anything,
and decoding it from every row of every file would cost as much as a value column. Beyond that,
engines merge value columns independently of each other, except partial-update's sequence groups: a
group's columns follow the group's own sequence columns, a group that removes the whole record
(``partial-update.remove-record-on-sequence-group``) decides whether the key is live at all, and
declaring groups at all changes how -U/-D records are treated. So a partial-update read always
reads every group's sequence columns, and a group's other columns only when they are wanted.
This mirrors Paimon's ``MergeFunctionFactory.adjustProjection``.

>>> from stratalake.spec.schema import DataField, TableSchema
>>> from stratalake.types import DataType
>>> fields = tuple(
...     DataField(i, n, DataType.parse("INT NOT NULL" if n == "k" else "INT"))
...     for i, n in enumerate(["k", "a", "b", "g", "s"])
... )
>>> schema = TableSchema(
...     0, fields, 4, primary_keys=("k",),
...     options={"merge-engine": "partial-update", "fields.g.sequence-group": "s"},
... )
>>> ctx = MergeContext.of(schema)
>>> merge_columns(ctx, ["a"])
['a', 'k', 'g']
>>> merge_columns(ctx, ["b"])
['b', 'k', 'g']
>>> project(ctx, merge_columns(ctx, ["a"])).value_names
('k', 'a', 'g')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from stratalake.merge.context import MergeContext
from stratalake.merge.field_options import sequence_groups
from stratalake.options import CoreOptions, MergeEngine


def merge_columns(ctx: MergeContext, wanted: Iterable[str]) -> list[str]:
    """``wanted`` plus every column the table's merge needs to compute them, in request order
    followed by the added columns (keys, sequence fields, sequence-group members)."""
    out = list(dict.fromkeys(wanted))
    needed = set(out)

    def add(names: Iterable[str]) -> None:
        for n in names:
            if n not in needed:
                needed.add(n)
                out.append(n)

    add(ctx.key_names)
    add(ctx.sequence_fields)
    if ctx.options.merge_engine is MergeEngine.PARTIAL_UPDATE:
        # Every group's sequence columns: they decide which records update the group's columns
        # and, for a removing group, whether the key is live; and merely having groups changes
        # how retractions are treated, so no group may disappear from a projection.
        for g in sequence_groups(ctx):
            add(g.sequence)
    return out


def project(ctx: MergeContext, columns: Iterable[str]) -> MergeContext:
    """``ctx`` for a KV table holding only ``columns`` (as returned by :func:`merge_columns`).

    Sequence groups keep only their projected columns (possibly none: the group still orders
    and retracts, it just has nothing else to update).
    """
    keep = set(columns)
    if keep >= set(ctx.value_names):
        return ctx
    fields = tuple(f for f in ctx.schema.fields if f.name in keep)
    options = ctx.options.to_dict()
    for g in sequence_groups(ctx):
        options[g.option] = ",".join(f for f in g.fields if f in keep)
    # Partition columns may be projected away, in the primary key or not (cross-partition upsert):
    # neither is a merge key. Dropping them from both key lists leaves the trimmed key unchanged.
    partition_keys = tuple(k for k in ctx.schema.partition_keys if k in keep)
    primary_keys = tuple(k for k in ctx.schema.primary_keys if k in keep)
    schema = dataclasses.replace(
        ctx.schema, fields=fields, options=options, partition_keys=partition_keys, primary_keys=primary_keys
    )
    return dataclasses.replace(ctx, schema=schema, options=CoreOptions(options, ctx.table_name))
