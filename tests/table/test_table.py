"""Table API: writes, merged reads, overwrite, time travel, schema evolution, bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake import SchemaChange, field
from stratalake.exceptions import (
    CorruptFileError,
    InvalidDataError,
    InvalidOptionError,
    SchemaError,
    SnapshotNotFoundError,
    TableNotFoundError,
)

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int64()), ("dt", pa.string())])


@pytest.fixture
def cat(tmp_path: Path) -> stratalake.Catalog:
    c = stratalake.Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def _rows(t: pa.Table) -> list[dict[str, object]]:
    return sorted(t.to_pylist(), key=lambda r: tuple(str(v) for v in r.values()))


def test_upsert_and_delete_partitioned(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"], options={"bucket": "4"})
    s1 = t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "n": [1, 2, 3], "dt": ["d1", "d1", "d2"]}))
    s2 = t.write(
        pa.table({"id": [1, 3, 4], "v": ["A", None, "d"], "n": [10, 30, 4], "dt": ["d1", "d2", "d2"], "k": ["+U", "-D", "+I"]}),
        row_kind="k",
    )
    assert (s1, s2) == (1, 2)
    assert _rows(t.read()) == _rows(
        pa.table({"id": [1, 2, 4], "v": ["A", "b", "d"], "n": [10, 2, 4], "dt": ["d1", "d1", "d2"]})
    )
    # Time travel, by id and by time.
    assert len(t.read(snapshot_id=1)) == 3
    snap1 = t.snapshot(1)
    assert len(t.read(timestamp_ms=snap1.time_millis)) == 3
    assert t.latest_snapshot().id == 2
    assert [s.commit_kind.value for s in t.snapshots()] == ["APPEND", "APPEND"]


def test_duplicate_keys_in_one_batch_last_wins(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "2"})
    t.write(pa.table({"id": [7, 7, 7], "v": ["x", "y", "z"], "n": [1, 2, 3], "dt": ["a", "b", "c"]}))
    assert t.read().to_pylist() == [{"id": 7, "v": "z", "n": 3, "dt": "c"}]


def test_several_batches_one_commit(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "2"})
    with t.new_write() as w:
        w.write(pa.table({"id": [1, 2], "v": ["a", "b"], "n": [1, 2], "dt": ["x", "x"]}))
        w.write(pa.record_batch({"id": [2, 3], "v": ["B", "c"], "n": [20, 3], "dt": ["x", "x"]}))
        assert w.commit() == 1
    assert len(t.snapshots()) == 1
    assert _rows(t.read(columns=["id", "v"])) == [{"id": 1, "v": "a"}, {"id": 2, "v": "B"}, {"id": 3, "v": "c"}]


def test_overwrite_table_and_partitions(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    t.write(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"], "n": [1, 2, 3], "dt": ["d1", "d1", "d2"]}))
    t.write(
        pa.table({"id": [9], "v": ["z"], "n": [9], "dt": ["d1"]}),
        overwrite=True,
        overwrite_partitions=[{"dt": "d1"}],
    )
    assert _rows(t.read(columns=["id", "dt"])) == [{"id": 3, "dt": "d2"}, {"id": 9, "dt": "d1"}]
    t.write(pa.table({"id": [5], "v": ["e"], "n": [5], "dt": ["d3"]}), overwrite=True)
    assert t.read(columns=["id"]).to_pylist() == [{"id": 5}]
    assert t.latest_snapshot().commit_kind.value == "OVERWRITE"
    assert t.latest_snapshot().total_record_count == 1


def test_filters_prune_and_apply_after_merge(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"], options={"bucket": "4"})
    t.write(pa.table({"id": list(range(100)), "v": ["a"] * 100, "n": list(range(100)), "dt": ["d1"] * 50 + ["d2"] * 50}))
    # The newer version of key 5 no longer matches n < 10: the filter must see merged rows.
    t.write(pa.table({"id": [5], "v": ["b"], "n": [500], "dt": ["d1"]}))
    got = t.read(filter=field("n") < 10)
    assert sorted(got.column("id").to_pylist()) == [0, 1, 2, 3, 4, 6, 7, 8, 9]
    assert t.read(filter=[("id", "=", 5), ("dt", "=", "d1")]).column("n").to_pylist() == [500]
    splits = t.new_scan(filter=(field("id") == 5) & (field("dt") == "d1")).plan()
    assert len(splits) == 1  # partition and bucket pruning
    assert len(t.new_scan(filter=field("dt") == "d2").plan()) <= 4
    assert t.read(filter=field("id").isin([1, 2]) | field("v").is_null()).num_rows == 2
    assert t.read(filter=field("id") > 1000).num_rows == 0


def test_schema_evolution_reads_old_files_by_field_id(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64()), ("a", pa.int32()), ("b", pa.string())]), primary_key=["id"])
    t.write(pa.table({"id": [1, 2], "a": pa.array([1, 2], pa.int32()), "b": ["x", "y"]}))
    t = cat.alter_table(
        "db.t",
        [
            SchemaChange.rename_column("b", "bb"),
            SchemaChange.update_column_type("a", "BIGINT"),
            SchemaChange.add_column("c", "DOUBLE"),
            SchemaChange.set_option("snapshot.num-retained.min", "20"),
        ],
    )
    assert t.schema().id == 1
    t.write(pa.table({"id": [2, 3], "a": [20, 30], "bb": ["Y", "z"], "c": [2.0, 3.0]}))
    got = cat.get_table("db.t").read()
    assert got.schema.field("a").type == pa.int64()
    assert _rows(got) == _rows(
        pa.table({"id": [1, 2, 3], "a": [1, 20, 30], "bb": ["x", "Y", "z"], "c": [None, 2.0, 3.0]})
    )
    t = cat.alter_table("db.t", [SchemaChange.drop_column("c")])
    assert t.read().column_names == ["id", "a", "bb"]
    with pytest.raises(SchemaError, match="cannot change column 'bb'"):
        cat.alter_table("db.t", [SchemaChange.update_column_type("bb", "INT")])
    with pytest.raises(SchemaError, match="primary-key"):
        cat.alter_table("db.t", [SchemaChange.drop_column("id")])


def test_column_positions_move_and_refuse_what_cannot_be(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.m", schema=pa.schema([("id", pa.int64()), ("a", pa.int32()), ("b", pa.string())]), primary_key=["id"])
    t.write(pa.table({"id": [1], "a": pa.array([5], pa.int32()), "b": ["x"]}))
    t = cat.alter_table(
        "db.m",
        [
            SchemaChange.update_column_position("b", first=True),
            SchemaChange.add_column("c", "INT", after="b"),
            SchemaChange.update_column_position("id", after="a"),
        ],
    )
    assert t.schema().field_names == ("b", "c", "a", "id")
    assert [f.id for f in t.schema().fields] == [2, 3, 1, 0]  # ids stay, only the order changes
    assert t.read().to_pylist() == [{"b": "x", "c": None, "a": 5, "id": 1}]
    before = t.schema()
    with pytest.raises(SchemaError, match="'nosuch' does not exist"):
        cat.alter_table("db.m", [SchemaChange.update_column_position("a", after="nosuch")])
    with pytest.raises(SchemaError, match="after itself"):
        cat.alter_table("db.m", [SchemaChange.update_column_position("a", after="a")])
    with pytest.raises(SchemaError, match="say where"):
        SchemaChange.update_column_position("a")
    with pytest.raises(SchemaError, match="not both"):
        SchemaChange.update_column_position("a", first=True, after="b")
    assert cat.get_table("db.m").schema() == before


def test_time_travel_reads_the_columns_of_its_snapshot(cat: stratalake.Catalog) -> None:
    """Paimon reads a past snapshot with the schema it was written with: a column added later is
    absent and a renamed one keeps its old name (by snapshot id, timestamp and tag)."""
    from stratalake.maintenance.tags import read_tag

    t = cat.create_table("db.t", schema=pa.schema([("id", pa.int64()), ("b", pa.string())]), primary_key=["id"])
    t.write(pa.table({"id": [1], "b": ["x"]}))
    t.create_tag("v1", 1)
    t = cat.alter_table("db.t", [SchemaChange.add_column("dt", "STRING"), SchemaChange.rename_column("b", "bb")])
    t.write(pa.table({"id": [2], "bb": ["y"], "dt": ["d"]}))
    when = t.snapshot(1).time_millis
    for old in (t.read(snapshot_id=1), t.read(timestamp_ms=when), read_tag(t, "v1")):
        assert old.column_names == ["id", "b"]
        assert old.to_pylist() == [{"id": 1, "b": "x"}]
    assert t.read(snapshot_id=2).column_names == ["id", "bb", "dt"]
    assert t.read(columns=["b"], snapshot_id=1).to_pylist() == [{"b": "x"}]


def test_compact_of_a_partition_that_does_not_exist_says_so(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"])
    t.write(pa.table({"id": [1], "v": ["a"], "n": [1], "dt": ["d1"]}))
    with pytest.raises(InvalidOptionError, match=r"table db.t: compact partitions \{'dt': 'd9'\} match no partition"):
        t.compact(partitions=[{"dt": "d9"}])
    assert t.latest_snapshot().id == 1


def test_bad_input_leaves_table_unchanged(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"])
    t.write(pa.table({"id": [1], "v": ["a"], "n": [1], "dt": ["x"]}))
    before = t.read()
    with pytest.raises(InvalidDataError, match="primary-key column 'id'"):
        t.write(pa.table({"id": [2, None], "v": ["a", "b"], "n": [1, 2], "dt": ["x", "x"]}))
    with pytest.raises(SchemaError, match="lacks column"):
        t.write(pa.table({"id": [2], "v": ["a"], "n": [1]}))
    with pytest.raises(SchemaError, match="column 'n'"):
        t.write(pa.table({"id": [2], "v": ["a"], "n": ["not a number"], "dt": ["x"]}))
    with pytest.raises(SchemaError, match="unknown column"):
        t.write(pa.table({"id": [2], "v": ["a"], "n": [1], "dt": ["x"], "zzz": [1]}))
    with pytest.raises(InvalidDataError, match="row kind"):
        t.write(pa.table({"id": [2], "v": ["a"], "n": [1], "dt": ["x"], "k": ["+X"]}), row_kind="k")
    assert len(t.snapshots()) == 1
    assert t.read().equals(before)
    # No stray data files from the failed writes either.
    files = [p for p in Path(t.location).rglob("data-*.parquet")]
    assert len(files) == 1


def test_bad_options_and_keys(cat: stratalake.Catalog) -> None:
    with pytest.raises(InvalidOptionError, match="'bucket'"):
        cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "x"})
    with pytest.raises(InvalidOptionError, match="merge-engine"):
        cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"merge-engine": "nope"})
    with pytest.raises(InvalidOptionError, match="'bucket'"):  # -1 is dynamic, -2 postpone, 0 nothing
        cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "0"})
    with pytest.raises(SchemaError, match="must include every partition column"):
        cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], partition_keys=["dt"])
    # Without a primary key: an append table; fixed buckets need a bucket key.
    with pytest.raises(SchemaError, match="needs the option 'bucket-key'"):
        cat.create_table("db.t", schema=SCHEMA, options={"bucket": "2"})
    assert not cat.table_exists("db.t")
    with pytest.raises(TableNotFoundError):
        cat.get_table("db.missing")


def test_primary_key_from_option_and_nullability(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.t", schema=SCHEMA, options={"primary-key": "id"})
    assert t.schema().primary_keys == ("id",)
    assert str(t.schema().field("id").type) == "BIGINT NOT NULL"
    assert "primary-key" not in t.options()


def test_time_travel_errors(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"])
    assert t.read().num_rows == 0
    t.write(pa.table({"id": [1], "v": ["a"], "n": [1], "dt": ["x"]}))
    with pytest.raises(SnapshotNotFoundError, match="snapshot 5 does not exist"):
        t.read(snapshot_id=5)
    with pytest.raises(SnapshotNotFoundError, match="no snapshot at or before"):
        t.read(timestamp_ms=1000)


def test_stale_or_missing_latest_hint(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"])
    for i in range(3):
        t.write(pa.table({"id": [i], "v": ["a"], "n": [1], "dt": ["x"]}))
    latest = Path(t.location) / "snapshot" / "LATEST"
    latest.write_text("1")
    assert t.snapshot_manager.latest_snapshot_id() == 3
    latest.unlink()
    assert t.snapshot_manager.latest_snapshot_id() == 3
    assert t.read().num_rows == 3


def test_corrupt_metadata_is_reported(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"])
    t.write(pa.table({"id": [1], "v": ["a"], "n": [1], "dt": ["x"]}))
    snap = Path(t.location) / "snapshot" / "snapshot-1"
    manifest = Path(t.location) / "manifest" / json.loads(snap.read_text())["deltaManifestList"]
    manifest.write_bytes(manifest.read_bytes()[:20])
    from stratalake.store import manifests

    manifests._CACHE._data.clear()
    with pytest.raises(CorruptFileError, match="manifest-list"):
        cat.get_table("db.t").read()
    snap.write_text('{"id": 1, "trunc')
    with pytest.raises(CorruptFileError, match="snapshot-1"):
        stratalake.Catalog(str(Path(t.location).parent.parent)).get_table("db.t").read()


def test_missing_data_file_is_reported(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"])
    t.write(pa.table({"id": [1], "v": ["a"], "n": [1], "dt": ["x"]}))
    for p in Path(t.location).rglob("data-*.parquet"):
        os.remove(p)
    with pytest.raises(CorruptFileError, match="missing"):
        t.read()


def test_sequence_numbers_continue_per_bucket(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"], "n": [1, 2], "dt": ["x", "x"]}))
    t.write(pa.table({"id": [1], "v": ["c"], "n": [3], "dt": ["x"]}))
    files = sorted((e.file for e in t.live_entries(t.latest_snapshot())), key=lambda f: f.min_sequence_number)
    assert [(f.min_sequence_number, f.max_sequence_number) for f in files] == [(0, 1), (2, 2)]


def test_rolling_files_at_target_size(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"target-file-size": "1 kb"})
    n = 5000
    t.write(pa.table({"id": list(range(n)), "v": ["x" * 20] * n, "n": list(range(n)), "dt": ["d"] * n}))
    files = [e.file for e in t.live_entries(t.latest_snapshot())]
    assert len(files) > 1
    assert sum(f.row_count for f in files) == n
    assert t.read().num_rows == n


def test_ignore_delete(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"ignore-delete": "true"})
    t.write(pa.table({"id": [1, 2], "v": ["a", "b"], "n": [1, 2], "dt": ["x", "x"]}))
    t.write(pa.table({"id": [1], "v": ["a"], "n": [1], "dt": ["x"], "k": ["-D"]}), row_kind="k")
    assert sorted(t.read().column("id").to_pylist()) == [1, 2]


def test_catalog_databases_and_tables(cat: stratalake.Catalog) -> None:
    cat.create_database("db", ignore_if_exists=True)
    cat.create_database("other")
    assert cat.list_databases() == ["db", "other"]
    cat.create_table("db.a", schema=SCHEMA, primary_key=["id"])
    cat.create_table("db.b", schema=SCHEMA, primary_key=["id"])
    assert cat.list_tables("db") == ["a", "b"]
    cat.drop_table("db.a")
    assert cat.list_tables("db") == ["b"]
    from stratalake.exceptions import DatabaseNotEmptyError

    with pytest.raises(DatabaseNotEmptyError):
        cat.drop_database("db")
    cat.drop_database("db", cascade=True)
    assert cat.list_databases() == ["other"]
