"""System tables (Paimon's column names, values from metadata) and rollback, without Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stratalake.exceptions import SnapshotNotFoundError, TableNotFoundError
from stratalake.table.system_tables import NAMES, arrow_schema
from tests.lifecycle.helpers import batch, make_table, rows


def test_every_system_table_has_paimon_columns(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.write(batch([1, 2, 3], "a", dt="d1"))
    t.write(batch([4], "b", dt="d2"))
    t.create_tag("v1")
    for name in NAMES:
        out = t.system_table(name)
        assert out.schema == arrow_schema(t, name), name
    snaps = t.system_table("snapshots")
    assert snaps.column_names[:6] == [
        "snapshot_id",
        "schema_id",
        "commit_user",
        "commit_identifier",
        "commit_kind",
        "commit_time",
    ]
    assert snaps.column("snapshot_id").to_pylist() == [1, 2]
    assert snaps.column("commit_kind").to_pylist() == ["APPEND", "APPEND"]
    schemas = t.system_table("schemas")
    assert json.loads(schemas.column("primary_keys")[0].as_py()) == ["id", "dt"]
    assert json.loads(schemas.column("partition_keys")[0].as_py()) == ["dt"]
    opts = dict(
        zip(*(t.system_table("options").column(c).to_pylist() for c in ("key", "value")), strict=True)
    )
    assert opts["bucket"] == "2"
    files = t.system_table("files")
    assert files.num_rows == len(t.live_entries(t.latest_snapshot()))  # type: ignore[arg-type]
    assert set(files.column("partition").to_pylist()) == {"{d1}", "{d2}"}
    assert sum(files.column("record_count").to_pylist()) == 4
    assert all(p.startswith(t.location) for p in files.column("file_path").to_pylist())
    parts = t.system_table("partitions")
    assert parts.column("partition").to_pylist() == ["dt=d1", "dt=d2"]
    assert parts.column("record_count").to_pylist() == [3, 1]
    buckets = t.system_table("buckets")
    assert sum(buckets.column("record_count").to_pylist()) == 4
    assert t.system_table("manifests").num_rows >= 2
    tags = t.system_table("tags")
    assert tags.column("tag_name").to_pylist() == ["v1"]
    assert tags.column("snapshot_id").to_pylist() == [2]
    audit = t.system_table("audit_log")
    assert audit.column_names == ["rowkind", "id", "v", "dt"]
    assert set(audit.column("rowkind").to_pylist()) == {"+I"}


def test_unknown_system_table(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    with pytest.raises(TableNotFoundError, match="no system table 'nope'"):
        t.system_table("nope")


def test_read_optimized_shows_only_top_level(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.write(batch([1, 2], "a"))
    assert t.system_table("ro").num_rows == 0  # level 0 only
    t.compact(full=True)
    t.write(batch([2, 3], "b"))
    ro = t.system_table("ro")
    assert sorted(rows(ro)) == [(1, "a1", "d1"), (2, "a2", "d1")]
    assert ro.schema == t.arrow_schema()


def test_rollback_to_snapshot_and_tag(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.write(batch([1], "a"))
    t.create_tag("one")
    t.write(batch([2], "b"))
    t.write(batch([3], "c"))
    t.create_tag("three")
    before = {p.name for p in Path(t.location).rglob("*.parquet")}
    assert t.rollback_to(2).id == 2
    assert [s.id for s in t.snapshots()] == [1, 2]
    assert sorted(rows(t.read())) == [(1, "a1", "d1"), (2, "b2", "d1")]
    assert set(t.tags()) == {"one"}  # the tag past the rollback point is gone
    after = {p.name for p in Path(t.location).rglob("*.parquet")}
    assert len(after) == len(before) - 1  # the file only snapshot 3 had
    t.write(batch([4], "d"))
    assert t.latest_snapshot().id == 3  # type: ignore[union-attr]
    t.rollback_to("one")
    assert sorted(rows(t.read())) == [(1, "a1", "d1")]
    with pytest.raises(SnapshotNotFoundError):
        t.rollback_to(7)


def test_rollback_to_tag_whose_snapshot_expired(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.write(batch([1], "a"))
    t.create_tag("old")
    t.write(batch([2], "b"))
    t.write(batch([3], "c"))
    t.expire_snapshots(retain_max=1, retain_min=1)
    assert [s.id for s in t.snapshots()] == [3]
    t.rollback_to("old")
    assert [s.id for s in t.snapshots()] == [1]
    assert rows(t.read()) == [(1, "a1", "d1")]
    assert t.system_table("snapshots").column("snapshot_id").to_pylist() == [1]
