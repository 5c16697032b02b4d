"""store/support.py: which tables stratalake refuses, by name, and which it accepts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake.exceptions import UnsupportedError
from stratalake.spec.schema import TableSchema
from stratalake.store.support import unsupported_features
from stratalake.table import Table
from stratalake.types import DataField, DataType


def schema(options: dict[str, str], primary_keys: tuple[str, ...] = ("id",)) -> TableSchema:
    fields = (
        DataField(0, "id", DataType.parse("BIGINT NOT NULL")),
        DataField(1, "v", DataType.parse("STRING")),
    )
    return TableSchema(id=0, fields=fields, highest_field_id=1, primary_keys=primary_keys, options=options)


def problems(options: dict[str, str], primary_keys: tuple[str, ...] = ("id",)) -> list[str]:
    s = schema(options, primary_keys)
    return unsupported_features(s, s.options)


def test_supported_tables_have_no_problems() -> None:
    assert problems({"bucket": "4"}) == []
    assert problems({"bucket": "2", "file.format": "ORC", "file.format.per.level": "0:avro"}) == []
    assert problems({"bucket": "1", "merge-engine": "partial-update", "changelog-producer": "lookup"}) == []
    # Dynamic bucket mode is implemented separately: never refused here.
    assert problems({"bucket": "-1"}) == []
    assert problems({}) == []


@pytest.mark.parametrize(
    ("options", "primary_keys", "named"),
    [
        ({"bucket": "-2"}, ("id",), "'bucket'='-2'"),
        ({"file.format": "lance"}, ("id",), "'lance' ('file.format')"),
        ({"file.format.per.level": "0:vortex"}, ("id",), "'vortex' ('file.format.per.level')"),
        ({"changelog-file.format": "json"}, ("id",), "'json' ('changelog-file.format')"),
        ({"merge-engine": "last-non-null"}, ("id",), "'merge-engine'='last-non-null'"),
        ({"changelog-producer": "magic"}, ("id",), "'changelog-producer'='magic'"),
        ({"data-file.external-paths": "s3://b/x"}, ("id",), "'data-file.external-paths'"),
        ({"data-file.path-directory": "data"}, ("id",), "'data-file.path-directory'"),
        ({"deletion-vectors.bitmap64": "true"}, ("id",), "'deletion-vectors.bitmap64'='true'"),
        ({"row-tracking.enabled": "true"}, ("id",), "'row-tracking.enabled'='true'"),
        ({"data-evolution.enabled": "true"}, ("id",), "'data-evolution.enabled'='true'"),
        ({"type": "format-table"}, ("id",), "'format-table'"),
        ({"bucket-function.type": "mod"}, ("id",), "'bucket-function.type'='mod'"),
    ],
)
def test_unsupported_features_are_named(
    options: dict[str, str], primary_keys: tuple[str, ...], named: str
) -> None:
    found = problems(options, primary_keys)
    assert len(found) == 1 and named in found[0], found


def test_table_refuses_at_scan_read_write_and_commit_but_lists_and_describes(tmp_path: Path) -> None:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    created = cat.create_table(
        "db.t",
        schema=pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())]),
        primary_key=["id"],
    )
    created.write(pa.table({"id": [1], "v": ["a"]}))
    # A newer Paimon set options stratalake does not implement (written straight into a new schema).
    s = created.schema()
    changed = TableSchema(
        id=1,
        fields=s.fields,
        highest_field_id=s.highest_field_id,
        primary_keys=s.primary_keys,
        options={**s.options, "merge-engine": "last-non-null", "row-tracking.enabled": "true"},
    )
    assert created.schema_manager.try_commit(changed)
    assert cat.list_tables("db") == ["t"]
    t = cat.get_table("db.t")
    assert t.schema().id == 1 and t.options()["merge-engine"] == "last-non-null"
    assert len(t.unsupported_features) == 2
    pattern = r"table db\.t \(1\) uses 'merge-engine'='last-non-null'.*\(2\) tracks row ids.*cannot {}"
    calls: list[tuple[str, Callable[[Table], object]]] = [
        ("read", lambda tb: tb.new_scan()),
        ("read", lambda tb: tb.new_read()),
        ("read", lambda tb: tb.read()),
        ("write", lambda tb: tb.new_write()),
        ("write", lambda tb: tb.new_commit()),
        ("compact", lambda tb: tb.compact()),
        ("read", lambda tb: tb.changelog()),
        ("read", lambda tb: tb.audit_log()),
        ("expire snapshots of", lambda tb: tb.expire_snapshots()),
        ("remove orphan files of", lambda tb: tb.remove_orphan_files()),
        ("roll back", lambda tb: tb.rollback_to(1)),
        ("delete tags of", lambda tb: tb.delete_tag("x")),
        ("replace tags of", lambda tb: tb.replace_tag("x")),
        ("roll back", lambda tb: tb.rollback_to_timestamp(0)),
        ("drop partitions of", lambda tb: tb.drop_partitions([{"dt": "x"}])),
    ]
    for action, call in calls:
        with pytest.raises(UnsupportedError, match=pattern.format(action)):
            call(t)
    # Metadata stays reachable.
    assert t.latest_snapshot() is not None and t.snapshots()
    assert isinstance(t, Table)


def test_refused_options_are_refused_at_create_too(tmp_path: Path) -> None:
    """A table stratalake could neither read nor write is never created (nothing on disk)."""
    cat = stratalake.Catalog(str(tmp_path))
    cat.create_database("db")
    s = pa.schema([("id", pa.int64()), ("v", pa.string())])
    with pytest.raises(UnsupportedError, match=r"db\.t .*row-tracking\.enabled"):
        cat.create_table("db.t", s, primary_key=["id"], options={"row-tracking.enabled": "true"})
    assert cat.list_tables("db") == []


def test_cross_partition_tables_can_be_created_with_dynamic_buckets(tmp_path: Path) -> None:
    cat = stratalake.Catalog(str(tmp_path))
    cat.create_database("db")
    s = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])
    with pytest.raises(stratalake.exceptions.SchemaError, match="'bucket' = '-1'"):
        cat.create_table("db.fixed", s, primary_key=["id"], partition_keys=["p"], options={"bucket": "4"})
    t = cat.create_table("db.t", s, primary_key=["id"], partition_keys=["p"], options={"bucket": "-1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"], "p": ["x", "x"]}))
    t.write(pa.table({"id": [1], "v": ["moved"], "p": ["y"]}))  # the key moves to partition y
    assert sorted(t.read().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "moved", "p": "y"},
        {"id": 2, "v": "b", "p": "x"},
    ]
