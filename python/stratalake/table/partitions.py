"""Partition management: list a table's partitions and drop them, as Paimon's Spark table does
(``SHOW PARTITIONS``, ``ALTER TABLE ... DROP PARTITION``, ``TRUNCATE TABLE ... PARTITION``).

A partition exists while some live data file belongs to it; there is no partition metadata
apart from the files, so dropping a partition is one OVERWRITE commit that deletes its files
from the snapshot and adds nothing (Paimon's ``FileStoreCommit.dropPartitions``; the same
commit ``INSERT OVERWRITE`` and a partition-only ``DELETE`` make). Data files stay on storage
until expiration removes the snapshots that still reference them.

Example::

    t.partitions()                                   # [{'dt': '2024-01-01', 'hr': 0}, ...]
    t.drop_partitions([{"dt": "2024-01-01"}])        # every hr of that day, one snapshot
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from stratalake.exceptions import InvalidOptionError
from stratalake.read import fallback
from stratalake.types import to_arrow

if TYPE_CHECKING:
    from stratalake.table.table import Table


def _spec_text(spec: Mapping[str, Any]) -> str:
    return "(" + ", ".join(f"{k}={v!r}" for k, v in spec.items()) + ")"


def list_partitions(table: Table) -> list[tuple[Any, ...]]:
    """The partitions holding live files in the latest snapshot, as typed values in partition-key
    order, sorted (nulls first); ``[]`` for an empty or unpartitioned table."""
    codec = table.partition_codec
    snap = table.latest_snapshot()
    if snap is None or not codec.is_partitioned:
        return []
    seen = {e.partition for e in table.live_entries(snap)}
    values = [codec.from_bytes(p) for p in seen]
    return sorted(values, key=lambda v: tuple((x is not None, x) for x in v))


def scanned_partitions(table: Table) -> list[tuple[Any, ...]]:
    """:func:`list_partitions`, plus those of the table's ``scan.fallback-branch`` that it lacks:
    the partitions a batch read sees (Paimon's ``SHOW PARTITIONS`` lists its scan's partitions)."""
    own = list_partitions(table)
    if fallback.fallback_branch(table) is None or not table.partition_codec.is_partitioned:
        return own
    scan = fallback.FallbackScan(table)
    other = scan.fallback_snapshot(scan.snapshot())
    if other is None:
        return own
    fallback.check_compatible(table, scan.other)
    extra = fallback.listed_partitions(scan.other, other, []) - set(own)
    return sorted([*own, *extra], key=lambda v: tuple((x is not None, x) for x in v))


def typed_spec(table: Table, spec: Mapping[str, Any]) -> dict[str, Any]:
    """``spec`` (some or all partition columns -> value) with each value cast to its column's
    type; refuses columns that are not partition columns, naming the table and the spec."""
    codec = table.partition_codec
    keys = list(codec.keys)
    if not keys:
        raise InvalidOptionError(
            f"table {table.identifier} is not partitioned, so partition spec {_spec_text(spec)} "
            "matches nothing; use TRUNCATE TABLE or DELETE to remove rows"
        )
    unknown = [k for k in spec if k not in keys]
    if unknown or not spec:
        raise InvalidOptionError(
            f"table {table.identifier}: partition spec {_spec_text(spec)} names "
            f"{', '.join(unknown) or 'no column'}, which is not a partition column; the partition "
            f"columns are {keys}. Name only partition columns"
        )
    out: dict[str, Any] = {}
    for key in keys:
        if key not in spec:
            continue
        value = spec[key]
        if value is not None:
            dt = codec.types[keys.index(key)]
            try:
                value = pa.array([value]).cast(to_arrow(dt))[0].as_py()
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise InvalidOptionError(
                    f"table {table.identifier}: partition spec {_spec_text(spec)}: value {value!r} "
                    f"is not a {dt} (the type of partition column {key}): {e}"
                ) from None
        out[key] = value
    return out


def matching_partitions(table: Table, specs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The live partitions (as full specs) that match any of ``specs``; a spec naming only some
    partition columns matches every partition with those values."""
    typed = [typed_spec(table, s) for s in specs]
    keys = list(table.partition_codec.keys)
    out = []
    for values in list_partitions(table):
        row = dict(zip(keys, values, strict=True))
        if any(all(row[k] == v for k, v in spec.items()) for spec in typed):
            out.append(row)
    return out


def drop_partitions(
    table: Table, specs: Sequence[Mapping[str, Any]], commit_user: str | None = None
) -> int | None:
    """Drop the data of every live partition matching ``specs`` in one OVERWRITE commit; returns
    the new snapshot id, or None when no partition matched (nothing is committed)."""
    table.check_supported("drop partitions of")
    if not specs:
        raise InvalidOptionError(
            f"table {table.identifier}: drop_partitions needs at least one partition spec"
        )
    doomed = matching_partitions(table, specs)
    if not doomed:
        return None
    handler = table.partition_handler
    if handler is not None:
        # The metastore first, as Paimon's HiveCatalog.dropPartitions: if it refuses, the data stays.
        keys = table.partition_codec.keys
        strings = [table.partition_codec.strings([row[k] for k in keys]) for row in doomed]
        handler.partitions_dropped(table, strings)
    # Metadata only: DELETE entries for the partitions' files, no data file is read or written.
    return table.new_commit(commit_user).commit([], overwrite=True, overwrite_partitions=doomed)
