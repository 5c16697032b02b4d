"""Incremental reads of ``$audit_log`` by Spark's own Parquet reader.

An incremental read in ``delta`` or ``changelog`` mode (``incremental-between``...) returns the
records of change files as they are stored, nothing merged, each with its row kind: the JVM can
read those files itself, as it reads data splits that need no merge (``planning.native_files``),
and map the stored ``_VALUE_KIND`` byte to the ``rowkind`` string. Python only plans: which
files, in which input partitions. The change records of a million-row upsert then reach Spark
without passing through Python workers (the columnar Python path cost ~2 s for 1M records on
two cores, most of it per-task Python work).

A read stays with the Python reader (null plan) when any file is not Parquet, not local, stored
outside the table (external paths), or of a schema Spark's reader cannot match by name
(``planning.readable_by_name``); when a column's type is not read natively; for append tables
(no ``_VALUE_KIND``: every record is an insert); for ``diff`` mode (a merge of two states) and
for ``$binlog`` (its rows pair records).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stratalake.lsm.file_format import PARQUET, format_of_file
from stratalake.read.incremental import ROW_KIND_COLUMN, IncrementalMode
from stratalake.spark import planning
from stratalake.spark.system_tables import SystemTableReader
from stratalake.store.references import ReferenceCollector
from stratalake.table import system_tables

#: The change-record column the shim reads for ``rowkind`` (Paimon's KeyValue file layout).
KIND_FILE_COLUMN = "_VALUE_KIND"


def plan(options: Mapping[str, str], columns: Sequence[str], parallelism: int) -> dict[str, Any] | None:
    """The input partitions (lists of Parquet files, read whole and in order) of a native read of
    ``$audit_log``'s ``columns`` (``rowkind`` among them or not), or None when Python must read."""
    reader = SystemTableReader(options, None)
    if reader.name != system_tables.AUDIT_LOG:
        return None
    rng = reader.incremental_range()
    if rng is None or rng.mode not in (IncrementalMode.DELTA, IncrementalMode.CHANGELOG):
        return None
    table = reader.table()
    if not table.schema().primary_keys:
        return None
    value_columns = [c for c in columns if c != ROW_KIND_COLUMN]
    if planning.native_columns(table, value_columns) is None:
        return None
    readable: dict[int, bool] = {}
    refs = ReferenceCollector(table)
    entries: list[dict[str, Any]] = []
    for unit in reader.incremental_units(rng):
        files = []
        for e in unit.entries:
            f = e.file
            if f.external_path or format_of_file(f.file_name) != PARQUET:
                return None
            if f.schema_id not in readable:
                readable[f.schema_id] = planning.readable_by_name(table, f.schema_id, value_columns)
            if not readable[f.schema_id]:
                return None
            uri = planning.local_uri(next(refs.entry_paths(e)))
            if uri is None:
                return None
            files.append({"path": uri, "format": PARQUET, "size": f.file_size, "rows": f.row_count})
        entries.append(
            {
                "units_": [unit],
                "bucket": unit.bucket,
                "files": len(files),
                "bytes": unit.file_size,
                "rows": unit.row_count,
                "runs": 1,
                "native_files": files,
            }
        )
    packed = planning.pack_native_splits(table, entries, by_bucket=False, parallelism=parallelism)
    return {"partitions": [e["native_files"] for e in packed]}


__all__ = ["KIND_FILE_COLUMN", "plan"]
