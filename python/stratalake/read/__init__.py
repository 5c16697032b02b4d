"""Reads: scan planning (:class:`~stratalake.read.scan.TableScan`), merge-on-read of primary-key
tables, reads of append tables and of change records."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from stratalake.expressions import FilterLike
from stratalake.read import fallback
from stratalake.read.append_read import AppendTableRead
from stratalake.read.fallback import FallbackScan
from stratalake.read.merge_read import TableRead
from stratalake.read.scan import Split, TableScan

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore

__all__ = ["AppendTableRead", "FallbackScan", "Split", "TableRead", "TableScan", "new_read", "new_scan"]


def new_scan(
    table: TableStore,
    filter: FilterLike = None,
    snapshot_id: int | None = None,
    timestamp_ms: int | None = None,
) -> TableScan | FallbackScan:
    """A batch scan of ``table`` (refused for tables with unsupported features): of its branch
    alone, or with the partitions it lacks from its ``scan.fallback-branch``
    (:mod:`~stratalake.read.fallback`)."""
    table.check_supported("read")
    if fallback.fallback_branch(table) is not None:
        return FallbackScan(table, filter, snapshot_id, timestamp_ms)
    return TableScan(table, filter, snapshot_id, timestamp_ms)


def new_branch_scan(
    table: TableStore,
    filter: FilterLike = None,
    snapshot_id: int | None = None,
    timestamp_ms: int | None = None,
) -> TableScan:
    """A scan of ``table``'s own branch, whatever its ``scan.fallback-branch``: what writers,
    compaction, streaming reads and maintenance see (Paimon's ``newSnapshotReader``)."""
    table.check_supported("read")
    return TableScan(table, filter, snapshot_id, timestamp_ms)


def new_read(
    table: TableStore, columns: Sequence[str] | None = None, filter: FilterLike = None
) -> TableRead | AppendTableRead:
    """The reader of ``table``'s splits: merge-on-read for primary-key tables, plain for append ones."""
    table.check_supported("read")
    if table.is_append:
        return AppendTableRead(table, columns, filter)
    return TableRead(table, columns, filter)


fallback.register_reader_factory(new_read)
