"""Batch reads of system tables (``SELECT * FROM lake.db.`t$snapshots```) through the data source.

The catalog serves ``t$<name>`` as a read-only table whose data source options name the base table
and :data:`SYSTEM_TABLE`; :class:`SystemTableReader` reads it with
:func:`stratalake.table.system_tables.system_table`. ``$ro`` reads one Spark partition per bucket;
the metadata tables and ``$audit_log`` are one partition.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from stratalake import identifiers
from stratalake.catalog import Catalog
from stratalake.catalog import system_tables as catalog_system_tables
from stratalake.exceptions import InvalidOptionError
from stratalake.read import changelog_read, incremental
from stratalake.spark import planning, read_options
from stratalake.spark import source_options as keys
from stratalake.spark.source import conform, load_table
from stratalake.spark.types import paimon_to_spark_field
from stratalake.table import system_tables

if TYPE_CHECKING:
    from stratalake.read.incremental import IncrementalRange
    from stratalake.table.table import Table

SYSTEM_TABLE = keys.SYSTEM_TABLE
SEPARATOR = "$"


def split_name(name: str) -> tuple[str, str | None]:
    """``t$snapshots`` -> (``t``, ``snapshots``); a plain name -> (name, None). A branch stays
    with the table (Paimon's ``Identifier``): ``t$branch_b`` -> (``t$branch_b``, None),
    ``t$branch_b$snapshots`` -> (``t$branch_b``, ``snapshots``)."""
    base, branch, system = identifiers.split_object_name(name)
    if branch is not None:
        base = f"{base}{SEPARATOR}{identifiers.SYSTEM_BRANCH_PREFIX}{branch}"
    return base, None if system is None else system.lower()


def spark_fields(table: Table, name: str) -> list[dict[str, Any]]:
    """The Spark schema fields of system table ``name`` of ``table``."""
    out = []
    for column, type_string in system_tables.paimon_columns(table, name):
        spark_type, nullable = paimon_to_spark_field(type_string)
        out.append({"name": column, "type": spark_type, "nullable": nullable, "metadata": {}})
    return out


class SystemTableReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str], schema: StructType | None) -> None:
        self.options = dict(options)
        # (None: a reader that only plans, see native_changes)
        self.schema_json = schema.json() if schema is not None else "{}"
        self.name = self.options[SYSTEM_TABLE]

    def table(self) -> Table:
        # At a past version: in that snapshot's columns, as the catalog described it.
        return planning.read_table(load_table(self.options), self.options)

    def _snapshot_id(self) -> int | None:
        """The snapshot a ``VERSION AS OF`` / ``TIMESTAMP AS OF`` names (a tag: its snapshot);
        None for the latest."""
        if self.options.get(keys.TAG):
            return self.table().tag_manager.tag(self.options[keys.TAG]).id
        value = self.options.get(keys.SNAPSHOT_ID)
        if value:
            return int(value)
        # Paimon's scan options as read options (scan.snapshot-id...); unknown ones are refused.
        snapshot, _tag = read_options.scan_snapshot(self.table(), self.options)
        return snapshot.id if snapshot is not None else None

    def incremental_range(self) -> IncrementalRange | None:
        """An incremental read (``incremental-between``...): of ``$audit_log`` (and ``$binlog``)
        only, which then return every change record with its row kind, as Paimon."""
        if not read_options.is_incremental(self.options):
            return None
        if self.name not in (system_tables.AUDIT_LOG, system_tables.BINLOG):
            table = self.table()
            raise InvalidOptionError(
                f"table {table.identifier}${self.name}: incremental read options apply to the table, its "
                "$audit_log and $binlog, not to this system table"
            )
        return planning.incremental_range(self.table(), self.options)

    def incremental_units(self, rng: IncrementalRange) -> list[incremental.IncrementalSplit]:
        """The units of the incremental read ``rng``, one input partition each."""
        return incremental.plan(self.table(), rng)

    def partitions(self) -> list[InputPartition]:
        rng = self.incremental_range()
        if rng is not None:
            return [InputPartition(pickle.dumps(u)) for u in self.incremental_units(rng)]
        if self.name == system_tables.READ_OPTIMIZED:
            splits = system_tables.read_optimized_splits(self.table(), self._snapshot_id())
            return [InputPartition(pickle.dumps(s)) for s in splits]
        if self.name in (system_tables.AUDIT_LOG, system_tables.BINLOG):
            # One task per split, each holding only its own rows (not the whole table on one).
            splits = changelog_read.audit_log_splits(self.table(), self._snapshot_id())
            return [InputPartition(pickle.dumps(s)) for s in splits] or [InputPartition(b"")]
        return [InputPartition(b"")]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition.value is None:
            return
        table = self.table()
        target = to_arrow_schema(StructType.fromJson(json.loads(self.schema_json)), timezone="UTC")
        unit: Any = pickle.loads(partition.value) if partition.value else None
        if isinstance(unit, incremental.IncrementalSplit):
            records = incremental.with_row_kind(table, incremental.read_split_kv(table, unit))
            if self.name == system_tables.BINLOG:
                records = system_tables.binlog(records).cast(
                    system_tables.arrow_schema(table, system_tables.BINLOG)
                )
            batches = iter(records.to_batches())
        elif self.name == system_tables.READ_OPTIMIZED:
            batches = table.new_read().read_split(unit)
        elif unit is not None and self.name in (system_tables.AUDIT_LOG, system_tables.BINLOG):
            records = changelog_read.read_audit_log_split(table, unit)
            if self.name == system_tables.BINLOG:
                records = system_tables.binlog(records).cast(system_tables.arrow_schema(table, system_tables.BINLOG))
            batches = iter(records.to_batches())
        else:
            batches = iter(system_tables.system_table(table, self.name, self._snapshot_id()).to_batches())
        for batch in batches:
            yield conform(batch, target)


class GlobalSystemTableReader(DataSourceReader):
    """``sys.tables``, ``sys.all_table_options``, ``sys.catalog_options``: one partition."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.options = dict(options)
        self.schema_json = schema.json()

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(b"")]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        cat = Catalog(self.options[keys.WAREHOUSE], json.loads(self.options.get(keys.CATALOG_OPTIONS) or "{}"))
        rows = catalog_system_tables.global_table(cat, self.options[keys.GLOBAL_SYSTEM_TABLE])
        target = to_arrow_schema(StructType.fromJson(json.loads(self.schema_json)), timezone="UTC")
        for batch in rows.to_batches():
            yield conform(batch, target)
