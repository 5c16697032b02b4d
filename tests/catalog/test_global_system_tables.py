"""Paimon's global system tables of a catalog: sys.tables, sys.all_table_options, sys.catalog_options."""

from __future__ import annotations

import pyarrow as pa
import pytest

import stratalake
from stratalake.catalog import system_tables
from stratalake.exceptions import TableNotFoundError


def test_rows_match_the_tables(tmp_path):
    cat = stratalake.Catalog(str(tmp_path), {"s3.access-key": "AKIA", "s3.secret-key": "hunter2"})
    cat.create_database("a")
    cat.create_database("b")
    t = cat.create_table("a.pk", pa.schema([("id", pa.int64()), ("v", pa.string())]), primary_key=["id"])
    t.write(pa.table({"id": [1, 2], "v": ["x", "y"]}))
    t.write(pa.table({"id": [2], "v": ["z"]}))
    cat.create_table("b.log", pa.schema([("x", pa.int32())]), options={"file.format": "parquet"})

    tables = {(r["database_name"], r["table_name"]): r for r in system_tables.global_table(cat, "tables").to_pylist()}
    assert set(tables) == {("a", "pk"), ("b", "log")}
    pk = tables[("a", "pk")]
    files = t.system_table("files")
    assert pk["file_count"] == files.num_rows == 2
    assert pk["record_count"] == 3  # rows in live files, before the merge (as Paimon's TableSnapshot)
    assert pk["file_size_in_bytes"] == sum(files.column("file_size_in_bytes").to_pylist())
    assert (pk["primary_key"], pk["partitioned"], pk["table_type"]) == (True, False, "table")
    assert tables[("b", "log")]["file_count"] is None  # no snapshot yet
    assert system_tables.global_table(cat, "ALL_TABLES").num_rows == 2

    options = system_tables.global_table(cat, "all_table_options").to_pylist()
    assert {"database_name": "b", "table_name": "log", "key": "file.format", "value": "parquet"} in options

    catalog_options = dict(
        (r["key"], r["value"]) for r in system_tables.global_table(cat, "catalog_options").to_pylist()
    )
    assert catalog_options["warehouse"] == str(tmp_path)
    assert "hunter2" not in catalog_options.values() and "AKIA" not in catalog_options.values()


def test_unknown_name_lists_what_there_is(tmp_path):
    with pytest.raises(TableNotFoundError, match="catalog_options"):
        system_tables.global_table(stratalake.Catalog(str(tmp_path)), "nosuch")
