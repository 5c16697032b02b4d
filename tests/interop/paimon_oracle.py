"""A small typed facade over pypaimon 2.1.0, the interoperability oracle.

pypaimon's own API is shaped for production use (catalog, builders, commit users, scan plans and
splits). The interop tests need a handful of verbs: create a table, write one commit, read the merged
table, list snapshots, and see which files a snapshot holds. Every function opens a fresh catalog,
so each call sees the table exactly as it is on disk, as a separate process would.

pypaimon facts this module relies on (read from its source, and checked by the tests):

* ``CatalogFactory.create({"warehouse": path})`` gives a ``FileSystemCatalog`` with the same
  ``<warehouse>/<db>.db/<table>`` layout as stratalake.
* ``Schema.from_pyarrow_schema(schema, partition_keys, primary_keys, options)``; primary-key columns
  are forced NOT NULL.
* A commit is ``wb = table.new_batch_write_builder()`` (``wb.overwrite(spec)`` for INSERT OVERWRITE,
  ``{}`` = whole table), ``w = wb.new_write(); w.write_arrow(t); msgs = w.prepare_commit();
  wb.new_commit().commit(msgs)``. The input's Arrow schema must match the table's (top-level
  nullability aside), so :func:`paimon_write` casts to it.
* Deletes exist only through the ``rowkind.field`` table option: that column is a *stored* table
  column of type STRING whose values ('+I', '-U', '+U', '-D') become ``_VALUE_KIND``.
* A read is ``rb = table.new_read_builder(); rb.new_read().to_arrow(rb.new_scan().plan().splits())``;
  time travel goes through ``table.copy({"scan.snapshot-id": "<id>"})``.
* Known reader bug (docs/format.md section 11): a split marked ``raw_convertible`` is returned without a
  merge, so retract rows (-U/-D) in it come back as live rows. pypaimon marks a split raw-convertible
  when it is a single file whose ``_DELETE_ROW_COUNT`` is 0 (pypaimon's own writer always writes 0),
  or when all files are above level 0 without retracts counted. :func:`untrusted_splits` finds the
  splits where that bug bites, so tests compare with pypaimon only where pypaimon is right.

pypaimon-rust 0.4.0 (Paimon's Rust implementation) is the second reader: :func:`rust_read` plans
and reads with its own catalog (``pypaimon_rust.datafusion.PaimonCatalog``), without pypaimon's
Python planner, so a table both read the same way was understood by two independent implementations.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pypaimon import CatalogFactory, Schema
from pypaimon.schema.data_types import PyarrowFieldParser

__all__ = [
    "RETRACT_KINDS",
    "PaimonFile",
    "PaimonSplit",
    "paimon_create_table",
    "paimon_latest_snapshot_id",
    "paimon_read",
    "paimon_snapshot",
    "paimon_snapshot_ids",
    "paimon_splits",
    "paimon_table",
    "paimon_write",
    "rust_read",
    "sorted_rows",
    "untrusted_keys",
    "untrusted_splits",
]

#: ``_VALUE_KIND`` codes of retract rows: -U (1) and -D (3).
RETRACT_KINDS: tuple[int, int] = (1, 3)


def _catalog(warehouse: str | os.PathLike[str]) -> Any:
    return CatalogFactory.create({"warehouse": os.fspath(warehouse)})


def paimon_table(warehouse: str | os.PathLike[str], identifier: str) -> Any:
    """The pypaimon ``FileStoreTable`` for ``"db.table"``, freshly loaded from disk."""
    return _catalog(warehouse).get_table(identifier)


def paimon_create_table(
    warehouse: str | os.PathLike[str],
    identifier: str,
    pa_schema: pa.Schema,
    primary_keys: Sequence[str],
    partition_keys: Sequence[str] = (),
    options: Mapping[str, str] | None = None,
    row_kind_field: str | None = None,
) -> None:
    """Create ``identifier`` (and its database) with pypaimon.

    ``row_kind_field`` names a STRING column of ``pa_schema`` that carries each row's kind; it is
    stored as pypaimon's ``rowkind.field`` option (the column stays a table column).
    """
    all_options = dict(options or {})
    if row_kind_field is not None:
        if row_kind_field not in pa_schema.names:
            raise ValueError(f"row-kind column {row_kind_field!r} is not in the schema {pa_schema.names}")
        all_options["rowkind.field"] = row_kind_field
    catalog = _catalog(warehouse)
    catalog.create_database(identifier.split(".", 1)[0], True)
    schema = Schema.from_pyarrow_schema(
        pa_schema,
        partition_keys=list(partition_keys),
        primary_keys=list(primary_keys),
        options=all_options,
    )
    catalog.create_table(identifier, schema, False)


def _arrow_schema(table: Any) -> pa.Schema:
    return PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)


def paimon_write(
    warehouse: str | os.PathLike[str],
    identifier: str,
    data: pa.Table,
    row_kind_field: str | None = None,
    overwrite: Mapping[str, Any] | None = None,
) -> int:
    """Write ``data`` in one pypaimon batch commit and return the new snapshot id.

    ``row_kind_field`` must equal the table's ``rowkind.field`` option (pypaimon takes row kinds
    from the option only; the argument makes the intent explicit at the call site).
    ``overwrite`` = a partition spec such as ``{"dt": "2024-01-01"}`` to overwrite that partition,
    ``{}`` to overwrite the whole table, None to append.
    """
    table = paimon_table(warehouse, identifier)
    configured = table.table_schema.options.get("rowkind.field")
    if configured != row_kind_field:
        raise ValueError(
            f"table {identifier} has rowkind.field={configured!r} but the write names {row_kind_field!r}"
        )
    schema = _arrow_schema(table)
    data = data.select(schema.names).cast(schema)
    builder = table.new_batch_write_builder()
    if overwrite is not None:
        builder = builder.overwrite(dict(overwrite))
    write = builder.new_write()
    commit = builder.new_commit()
    try:
        write.write_arrow(data)
        commit.commit(write.prepare_commit())
    finally:
        write.close()
        commit.close()
    latest = paimon_latest_snapshot_id(warehouse, identifier)
    if latest is None:
        raise AssertionError(f"pypaimon committed to {identifier} but no snapshot exists")
    return latest


def _read_builder(warehouse: str | os.PathLike[str], identifier: str, snapshot_id: int | None) -> Any:
    table = paimon_table(warehouse, identifier)
    if snapshot_id is not None:
        table = table.copy({"scan.snapshot-id": str(snapshot_id)})
    return table.new_read_builder()


def paimon_read(
    warehouse: str | os.PathLike[str],
    identifier: str,
    snapshot_id: int | None = None,
) -> pa.Table:
    """The merged rows of the table (latest snapshot, or ``snapshot_id``) as pypaimon reads them."""
    builder = _read_builder(warehouse, identifier, snapshot_id)
    splits = builder.new_scan().plan().splits()
    result = builder.new_read().to_arrow(splits) if splits else None
    if result is None:
        return _arrow_schema(paimon_table(warehouse, identifier)).empty_table()
    assert isinstance(result, pa.Table)
    return result


def rust_read(warehouse: str | os.PathLike[str], identifier: str, snapshot_id: int | None = None) -> pa.Table:
    """The merged rows of the table (latest snapshot, or ``snapshot_id``) as pypaimon-rust plans
    and reads them."""
    from pypaimon_rust.datafusion import PaimonCatalog

    table = PaimonCatalog({"warehouse": str(warehouse)}).get_table(identifier)
    options = None if snapshot_id is None else {"scan.snapshot-id": str(snapshot_id)}
    builder = table.new_read_builder(options)
    splits = builder.new_scan().plan().splits()
    batches = builder.new_read().read(splits) if splits else []
    if not batches:
        return _arrow_schema(paimon_table(warehouse, identifier)).empty_table()
    return pa.Table.from_batches(batches)


def paimon_snapshot_ids(warehouse: str | os.PathLike[str], identifier: str) -> list[int]:
    """Ids of every snapshot pypaimon can list, ascending."""
    manager = paimon_table(warehouse, identifier).snapshot_manager()
    return sorted(int(s.id) for s in manager.list_snapshots())


def paimon_latest_snapshot_id(warehouse: str | os.PathLike[str], identifier: str) -> int | None:
    snapshot = paimon_table(warehouse, identifier).snapshot_manager().get_latest_snapshot()
    return None if snapshot is None else int(snapshot.id)


def paimon_snapshot(warehouse: str | os.PathLike[str], identifier: str, snapshot_id: int) -> Any:
    """pypaimon's parsed ``Snapshot`` object for ``snapshot_id`` (raises if it cannot be read)."""
    snapshot = paimon_table(warehouse, identifier).snapshot_manager().get_snapshot_by_id(snapshot_id)
    if snapshot is None:
        raise LookupError(f"pypaimon finds no snapshot {snapshot_id} in {identifier}")
    return snapshot


@dataclass(frozen=True)
class PaimonFile:
    """One data file of a pypaimon scan plan, with the metadata the reader decides on."""

    path: str
    level: int
    row_count: int
    delete_row_count: int | None

    def retract_rows(self) -> int:
        """Number of -U/-D rows physically in the file (read from its ``_VALUE_KIND`` column)."""
        kinds = pq.ParquetFile(_local_path(self.path)).read(columns=["_VALUE_KIND"]).column("_VALUE_KIND")
        return int(pc.sum(pc.is_in(kinds, pa.array(RETRACT_KINDS, pa.int8()))).as_py() or 0)


@dataclass(frozen=True)
class PaimonSplit:
    """A split of pypaimon's scan plan: one (partition, bucket) group of files."""

    partition: tuple[Any, ...]
    bucket: int
    raw_convertible: bool
    files: tuple[PaimonFile, ...]


def _local_path(path: str) -> str:
    return path.removeprefix("file://")


def paimon_splits(
    warehouse: str | os.PathLike[str], identifier: str, snapshot_id: int | None = None
) -> list[PaimonSplit]:
    """pypaimon's scan plan of the table, reduced to plain values."""
    builder = _read_builder(warehouse, identifier, snapshot_id)
    return [
        PaimonSplit(
            partition=tuple(split.partition.values),
            bucket=int(split.bucket),
            raw_convertible=bool(split.raw_convertible),
            files=tuple(
                PaimonFile(
                    path=str(f.file_path),
                    level=int(f.level),
                    row_count=int(f.row_count),
                    delete_row_count=None if f.delete_row_count is None else int(f.delete_row_count),
                )
                for f in split.files
            ),
        )
        for split in builder.new_scan().plan().splits()
    ]


def untrusted_splits(
    warehouse: str | os.PathLike[str], identifier: str, snapshot_id: int | None = None
) -> list[PaimonSplit]:
    """Splits whose pypaimon read is wrong: read without a merge although they hold retract rows.

    An empty list means pypaimon's merged read of this snapshot is trustworthy.
    """
    return [
        split
        for split in paimon_splits(warehouse, identifier, snapshot_id)
        if split.raw_convertible and any(f.retract_rows() > 0 for f in split.files)
    ]


def untrusted_keys(
    warehouse: str | os.PathLike[str],
    identifier: str,
    key_columns: Sequence[str],
    snapshot_id: int | None = None,
) -> set[tuple[Any, ...]]:
    """Primary-key values (partition columns included) stored in :func:`untrusted_splits`' files.

    pypaimon's answer for any other key is trustworthy, so a test can compare on the rest.
    """
    keys: set[tuple[Any, ...]] = set()
    for split in untrusted_splits(warehouse, identifier, snapshot_id):
        for f in split.files:
            data = pq.ParquetFile(_local_path(f.path)).read(columns=list(key_columns))
            keys.update(zip(*(data.column(k).to_pylist() for k in key_columns), strict=True))
    return keys


def sorted_rows(
    table: pa.Table, keys: Sequence[str], columns: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Rows as dicts, ordered by ``keys``, restricted to ``columns`` (default: all, in table order).

    Comparing Python values makes the comparison independent of Arrow-level differences that do not
    change the data (nullability flags, chunking, timestamp units of equal instants).
    """
    names = list(columns) if columns is not None else table.column_names
    ordered = table.select(names).sort_by([(k, "ascending") for k in keys])
    rows: list[dict[str, Any]] = ordered.to_pylist()
    return rows
