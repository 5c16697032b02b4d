"""Pruning data files by their value statistics (append tables; Spark's aggregate push-down)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from stratalake.expressions import ColumnStats, Predicate
from stratalake.spec.manifest import DataFileMeta
from stratalake.spec.stats import stats_to_values

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore


def value_column_stats(table: TableStore, f: DataFileMeta, names: Iterable[str]) -> dict[str, ColumnStats]:
    """The value statistics of data file ``f`` for the table's current columns ``names`` (mapped
    to the file's schema by field id; a column added after the file was written is all nulls).
    Columns whose statistics are unknown (not kept, unreadable, or of a widened type) are left
    out. Min/max may be bounds only (string statistics are truncated by default)."""
    current = table.schema()
    try:
        file_schema = table.file_schema(f.schema_id)
        by_id = {fld.id: fld for fld in file_schema.fields}
        stats_cols = list(f.value_stats_cols) if f.value_stats_cols is not None else file_schema.field_names
        if not stats_cols:
            return {}
        types = [file_schema.field(c).type for c in stats_cols]
        mins, maxs, nulls = stats_to_values(f.value_stats, types)
    except Exception:
        return {}
    position = {c: i for i, c in enumerate(stats_cols)}
    stats: dict[str, ColumnStats] = {}
    for name in names:
        fld = current.field(name)
        old = by_id.get(fld.id)
        if old is None:  # added after the file was written: all nulls
            stats[name] = ColumnStats(None, None, f.row_count, f.row_count)
            continue
        i = position.get(old.name)
        if i is None or old.type.copy(True) != fld.type.copy(True):
            continue  # no statistics, or a widened type
        stats[name] = ColumnStats(mins[i], maxs[i], nulls[i], f.row_count)
    return stats


def file_may_match(table: TableStore, f: DataFileMeta, preds: Sequence[Predicate]) -> bool:
    """Whether file ``f`` may hold rows matching every one of ``preds``, by its value statistics
    (:func:`value_column_stats`; unknown statistics never prune)."""
    if not preds:
        return True
    stats = value_column_stats(table, f, {c for p in preds for c in p.columns()})
    try:
        return all(p.may_match(stats) for p in preds if p.columns() <= set(stats))
    except Exception:
        return True
