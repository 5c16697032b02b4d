"""purge_files, mark_partition_done and rollback_to_watermark, as Paimon's procedures of those names."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake.exceptions import (
    CorruptFileError,
    InvalidIdentifierError,
    InvalidOptionError,
    SchemaError,
    SnapshotNotFoundError,
    UnsupportedError,
)
from tests.interop.paimon_oracle import paimon_read


@pytest.fixture
def cat(tmp_path: Path) -> stratalake.Catalog:
    c = stratalake.Catalog(str(tmp_path))
    c.create_database("db")
    return c


def _table(cat: stratalake.Catalog, name: str = "db.t") -> stratalake.Table:
    return cat.create_table(
        name,
        pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())]),
        primary_key=["id", "dt"],
        partition_keys=["dt"],
        options={"bucket": "2", "changelog-producer": "input"},
    )


def _data_files(table: stratalake.Table) -> list[Path]:
    return [p for p in Path(table.location).rglob("data-*") if "bucket-" in str(p.parent)]


def test_purge_files_empties_the_table_and_keeps_its_schema(cat: stratalake.Catalog, tmp_path: Path) -> None:
    t = _table(cat)
    for i in range(3):
        t.write(pa.table({"id": [i, i + 10], "dt": ["a", "b"], "v": [f"v{i}", "w"]}))
    t.create_tag("keep", 2)
    assert _data_files(t)
    t.purge_files()
    t = cat.get_table("db.t")
    assert t.read().num_rows == 0
    assert t.tags() == {}
    assert [s.id for s in t.snapshots()] == [4]  # the truncating snapshot is the only one left
    assert _data_files(t) == []
    changelogs = Path(t.location) / "changelog"
    assert not changelogs.exists() or not any(changelogs.iterdir())
    assert paimon_read(str(tmp_path), "db.t").num_rows == 0  # pypaimon reads the emptied table
    t.write(pa.table({"id": [1], "dt": ["a"], "v": ["again"]}))  # and it stays writable
    assert t.read().to_pylist() == [{"id": 1, "dt": "a", "v": "again"}]


def test_mark_partition_done_writes_paimons_success_file(cat: stratalake.Catalog) -> None:
    t = _table(cat)
    t.write(pa.table({"id": [1], "dt": ["a"], "v": ["x"]}))
    assert t.mark_partitions_done([{"dt": "a"}, {"dt": "2024/01"}]) == ["dt=a", "dt=2024%2F01"]
    first = json.loads((Path(t.location) / "dt=a" / "_SUCCESS").read_text())
    assert set(first) == {"creationTime", "modificationTime"}
    t.mark_partitions_done([{"dt": "a"}])
    second = json.loads((Path(t.location) / "dt=a" / "_SUCCESS").read_text())
    assert second["creationTime"] == first["creationTime"]
    assert second["modificationTime"] >= first["modificationTime"]
    # The marker is no data: reads, and orphan removal, leave it alone.
    assert t.read().num_rows == 1
    t.remove_orphan_files(older_than_ms=2**62)
    assert (Path(t.location) / "dt=a" / "_SUCCESS").exists()

    with pytest.raises(SchemaError, match="partition columns"):
        t.mark_partitions_done([{"nosuch": "a"}])
    cat.alter_table("db.t", [stratalake.SchemaChange.set_option("partition.mark-done-action", "success-file,done-partition")])
    with pytest.raises(UnsupportedError, match="done-partition"):
        cat.get_table("db.t").mark_partitions_done([{"dt": "a"}])
    plain = cat.create_table("db.p", pa.schema([("id", pa.int64())]), primary_key=["id"])
    with pytest.raises(InvalidOptionError, match="not partitioned"):
        plain.mark_partitions_done([{"dt": "a"}])


def _set_watermark(table: stratalake.Table, snapshot_id: int, watermark: int | None) -> None:
    """Record a watermark in a snapshot, as a streaming writer (Paimon's Flink sink) does."""
    path = Path(table.snapshot_manager.snapshot_path(snapshot_id))
    raw = json.loads(path.read_text())
    if watermark is None:
        raw.pop("watermark", None)
    else:
        raw["watermark"] = watermark
    path.write_text(json.dumps(raw, indent=2))


def test_rollback_to_watermark(cat: stratalake.Catalog) -> None:
    t = _table(cat)
    with pytest.raises(SnapshotNotFoundError, match="no snapshot"):
        t.rollback_to_watermark(10)
    for i in range(5):
        t.write(pa.table({"id": [i], "dt": ["a"], "v": [f"v{i}"]}))
    with pytest.raises(SnapshotNotFoundError, match="records a watermark"):
        t.rollback_to_watermark(10)
    for sid, mark in ((1, None), (2, 100), (3, 200), (4, 300), (5, 400)):
        _set_watermark(t, sid, mark)
    t = cat.get_table("db.t")
    with pytest.raises(SnapshotNotFoundError, match="at or before 99"):
        t.rollback_to_watermark(99)
    assert t.rollback_to_watermark(250).id == 3
    assert sorted(r["id"] for r in cat.get_table("db.t").read().to_pylist()) == [0, 1, 2]


def test_remove_unexisting_files(cat: stratalake.Catalog, tmp_path: Path) -> None:
    t = _table(cat)
    t.write(pa.table({"id": [1, 2], "dt": ["a", "b"], "v": ["x", "y"]}))
    t.write(pa.table({"id": [3], "dt": ["a"], "v": ["z"]}))
    assert t.remove_unexisting_files() == []
    files = t.system_table("files").to_pylist()
    lost = next(f for f in files if f["min_value_stats"].startswith("{id=3,"))  # the second write's file
    lost_path = Path(lost["file_path"])
    lost_path.unlink()
    with pytest.raises(CorruptFileError, match="remove_unexisting_files"):
        t.read()  # the snapshot lists a file storage lacks
    assert t.remove_unexisting_files(dry_run=True) == [str(lost_path)]
    assert t.latest_snapshot().id == 2  # a dry run commits nothing
    assert t.remove_unexisting_files() == [str(lost_path)]
    t = cat.get_table("db.t")
    assert t.latest_snapshot().id == 3
    rows = sorted((r["id"], r["v"]) for r in t.read().to_pylist())
    assert rows == [(1, "x"), (2, "y")]  # the lost file's row is gone, the others read again
    assert sorted(r["id"] for r in paimon_read(str(tmp_path), "db.t").to_pylist()) == [r[0] for r in rows]
    assert t.remove_unexisting_files() == []


def _with_actions(cat: stratalake.Catalog, actions: str, name: str = "db.t") -> stratalake.Table:
    cat.alter_table(name, [stratalake.SchemaChange.set_option("partition.mark-done-action", actions)])
    return cat.get_table(name)


@pytest.mark.parametrize(
    ("actions", "error", "named"),
    [
        # Paimon's metastore actions without a metastore (its createActions: "without metastore").
        ("success-file,done-partition", UnsupportedError, "'done-partition' needs a metastore"),
        ("mark-event", UnsupportedError, "'mark-event' needs a metastore"),
        # Paimon's other actions: refused by name, with what to do instead.
        ("http-report", UnsupportedError, "'http-report' is not supported.*http.url"),
        ("success-file,custom", UnsupportedError, "'custom' is not supported.*custom.class"),
        ("success-file,nosuch", InvalidOptionError, "unknown action 'nosuch'"),
    ],
)
def test_mark_done_actions_a_catalog_cannot_run_are_refused_before_any_mark(
    cat: stratalake.Catalog, actions: str, error: type[Exception], named: str
) -> None:
    t = _with_actions(cat, actions, _table(cat).identifier)
    with pytest.raises(error, match=named):
        t.mark_partitions_done([{"dt": "a"}, {"dt": "b"}])
    # Nothing is marked, not even by an action that could run ('success-file' comes first).
    assert list(Path(t.location).rglob("_SUCCESS")) == []


@pytest.mark.parametrize("arg", [None, "", "db", "db.t", "db,db.t"])
def test_repair_is_refused_by_catalogs_without_a_metastore(cat: stratalake.Catalog, arg: str | None) -> None:
    _table(cat)
    with pytest.raises(UnsupportedError, match="repair is not supported by the 'filesystem' catalog"):
        cat.repair(arg)


def test_repair_names_an_argument_that_is_no_database_or_table(cat: stratalake.Catalog) -> None:
    with pytest.raises(InvalidIdentifierError, match=r"cannot get a database and table from 'a\.b\.c'"):
        cat.repair("db, a.b.c")


def test_repair_is_refused_by_the_jdbc_catalog(tmp_path: Path) -> None:
    jdbc = stratalake.Catalog(str(tmp_path / "wh"), {"metastore": "jdbc", "uri": f"jdbc:sqlite:{tmp_path}/c.db"})
    with pytest.raises(UnsupportedError, match=r"'jdbc' catalog.*Paimon's JdbcCatalog does"):
        jdbc.repair("db")
