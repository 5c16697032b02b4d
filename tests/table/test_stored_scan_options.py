"""Paimon's scan options stored as table options choose what Table.read() returns, as in Paimon
(a read naming its own version overrides them)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake.catalog import SchemaChange
from stratalake.exceptions import InvalidOptionError

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def _rows(t: pa.Table) -> list[tuple[object, ...]]:
    return sorted(zip(*(t.column(n).to_pylist() for n in t.column_names), strict=True))


def _table(tmp_path: Path) -> tuple[stratalake.Catalog, stratalake.Table]:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))  # snapshot 1
    t.create_tag("v1")
    t.write(pa.table({"id": [2, 3], "v": ["B", "c"]}, schema=SCHEMA))  # snapshot 2
    return cat, t


def _with(cat: stratalake.Catalog, **options: str) -> stratalake.Table:
    cat.alter_table("db.t", [SchemaChange.set_option(k, v) for k, v in options.items()])
    return cat.get_table("db.t")


def test_stored_snapshot_tag_and_time_choose_the_read(tmp_path: Path) -> None:
    cat, t = _table(tmp_path)
    first, latest = [(1, "a"), (2, "b")], [(1, "a"), (2, "B"), (3, "c")]
    assert _rows(t.read()) == latest
    millis = t.snapshot(1).time_millis
    for key, value in (("scan.snapshot-id", "1"), ("scan.tag-name", "v1"), ("scan.timestamp-millis", str(millis))):
        pinned = _with(cat, **{key: value})
        assert _rows(pinned.read()) == first, key
        assert _rows(pinned.read(snapshot_id=2)) == latest, key  # the call's own version wins
        cat.alter_table("db.t", [SchemaChange.remove_option(key)])
    assert _rows(cat.get_table("db.t").read()) == latest


def test_stored_incremental_between_reads_the_changes(tmp_path: Path) -> None:
    cat, _ = _table(tmp_path)
    t = _with(cat, **{"incremental-between": "1,2"})
    assert _rows(t.read()) == [(2, "B"), (3, "c")]
    assert _rows(t.read(snapshot_id=1)) == [(1, "a"), (2, "b")]


def test_conflicting_stored_choices_are_refused_by_name(tmp_path: Path) -> None:
    cat, _ = _table(tmp_path)
    t = _with(cat, **{"scan.snapshot-id": "1", "scan.tag-name": "v1"})
    with pytest.raises(InvalidOptionError, match=r"'scan.snapshot-id', 'scan.tag-name' each choose the snapshot"):
        t.read()
