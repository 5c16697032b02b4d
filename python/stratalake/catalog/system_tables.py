"""Paimon's global system tables, in the ``sys`` database: ``sys.tables`` (also
``sys.all_tables``), ``sys.all_table_options`` and ``sys.catalog_options``.

Columns and values as Paimon's ``AllTablesTable``, ``AllTableOptionsTable`` and
``CatalogOptionsTable``; credentials (catalog or table options) are shown redacted.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from stratalake.catalog.filesystem import Catalog
from stratalake.exceptions import TableNotFoundError
from stratalake.identifiers import SYSTEM_DATABASE, redact_options
from stratalake.types import DataType, to_arrow

TABLES = "tables"
ALL_TABLE_OPTIONS = "all_table_options"
CATALOG_OPTIONS = "catalog_options"
#: Other names of the same tables (``all_tables``: what some Paimon documentation calls ``tables``).
ALIASES = {"all_tables": TABLES}

_COLUMNS: dict[str, list[tuple[str, str]]] = {
    TABLES: [
        ("database_name", "STRING"),
        ("table_name", "STRING"),
        ("table_type", "STRING"),
        ("partitioned", "BOOLEAN"),
        ("primary_key", "BOOLEAN"),
        ("owner", "STRING"),
        ("created_at", "BIGINT"),
        ("created_by", "STRING"),
        ("updated_at", "BIGINT"),
        ("updated_by", "STRING"),
        ("record_count", "BIGINT"),
        ("file_size_in_bytes", "BIGINT"),
        ("file_count", "BIGINT"),
        ("last_file_creation_time", "BIGINT"),
    ],
    ALL_TABLE_OPTIONS: [
        ("database_name", "STRING"),
        ("table_name", "STRING"),
        ("key", "STRING"),
        ("value", "STRING"),
    ],
    CATALOG_OPTIONS: [("key", "STRING"), ("value", "STRING")],
}


def names() -> list[str]:
    """Every global system table name (aliases included)."""
    return sorted([*_COLUMNS, *ALIASES])


def canonical(name: str) -> str:
    """The table ``name`` (any case, or an alias) stands for; TableNotFoundError if none."""
    lowered = name.lower()
    lowered = ALIASES.get(lowered, lowered)
    if lowered not in _COLUMNS:
        raise TableNotFoundError(
            f"table {SYSTEM_DATABASE}.{name} does not exist; the system database holds {names()}"
        )
    return lowered


def columns(name: str) -> list[tuple[str, str]]:
    """``(column, Paimon type)`` of global system table ``name``."""
    return list(_COLUMNS[canonical(name)])


def arrow_schema(name: str) -> pa.Schema:
    return pa.schema([pa.field(c, to_arrow(DataType.parse(t))) for c, t in columns(name)])


def global_table(catalog: Catalog, name: str) -> pa.Table:
    """The rows of global system table ``name`` of ``catalog``."""
    table = canonical(name)
    if table == CATALOG_OPTIONS:
        shown = redact_options({"warehouse": catalog.warehouse, **catalog.options})
        rows: list[dict[str, Any]] = [{"key": k, "value": str(v)} for k, v in sorted(shown.items())]
    elif table == ALL_TABLE_OPTIONS:
        rows = [
            {"database_name": db, "table_name": t, "key": k, "value": str(v)}
            for db, t, options in _tables_options(catalog)
            for k, v in sorted(redact_options(options).items())
        ]
    else:
        rows = list(_table_rows(catalog))
    return pa.Table.from_pylist(rows, schema=arrow_schema(table))


def _identifiers(catalog: Catalog) -> Iterator[tuple[str, str]]:
    for db in catalog.list_databases():
        for t in catalog.list_tables(db):
            yield db, t


def _tables_options(catalog: Catalog) -> Iterator[tuple[str, str, dict[str, str]]]:
    for db, t in _identifiers(catalog):
        yield db, t, dict(catalog.get_table(f"{db}.{t}").options())


def _long(value: str | None) -> int | None:
    return int(value) if value is not None and value.strip().lstrip("-").isdigit() else None


def _table_rows(catalog: Catalog) -> Iterator[dict[str, Any]]:
    for db, t in _identifiers(catalog):
        table = catalog.get_table(f"{db}.{t}")
        schema = table.schema()
        options = schema.options
        snapshot = table.latest_snapshot()
        files = list(table.live_files(snapshot).values()) if snapshot is not None else []
        creation = [f.file.creation_time for f in files if f.file.creation_time is not None]
        yield {
            "database_name": db,
            "table_name": t,
            # Paimon's 'type' option (table, format-table, ...), defaulting to a data table.
            "table_type": options.get("type", "table"),
            "partitioned": bool(schema.partition_keys),
            "primary_key": bool(schema.primary_keys),
            # Audit fields a REST catalog keeps in the options; absent elsewhere, as in Paimon.
            "owner": options.get("owner"),
            "created_at": _long(options.get("createdAt")),
            "created_by": options.get("createdBy"),
            "updated_at": _long(options.get("updatedAt")),
            "updated_by": options.get("updatedBy"),
            "record_count": None if snapshot is None else sum(f.file.row_count for f in files),
            "file_size_in_bytes": None if snapshot is None else sum(f.file.file_size for f in files),
            "file_count": None if snapshot is None else len(files),
            "last_file_creation_time": max(creation) if creation else None,
        }
