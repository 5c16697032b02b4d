"""System tables (Paimon's column names, values from metadata) and rollback, without Spark."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from stratalake.exceptions import SnapshotNotFoundError, TableNotFoundError
from stratalake.table.system_tables import NAMES, arrow_schema, paimon_columns
from tests.lifecycle.helpers import batch, fresh, make_table, rows


def test_every_system_table_has_paimon_columns(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.write(batch([1, 2, 3], "a", dt="d1"))
    t.write(batch([4], "b", dt="d2"))
    t.create_tag("v1")
    for name in NAMES:
        out = t.system_table(name)
        assert out.schema == arrow_schema(t, name), name
    for name, columns in PAIMON_COLUMNS.items():  # Paimon's current column lists, in order
        assert t.system_table(name).column_names == columns, name
    snaps = t.system_table("snapshots")
    assert snaps.column("operation").to_pylist() == [None, None]  # Java-only fields
    assert snaps.column("writer_version").to_pylist() == [None, None]
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
    assert parts.column("done").to_pylist() == [False, False]
    assert parts.column("deleted_record_count").to_pylist() == [0, 0]
    assert parts.column("created_at").to_pylist() == [None, None]  # catalog partition metadata
    assert files.column("first_row_id").to_pylist() == [None] * files.num_rows  # no row tracking
    assert files.column("write_cols").to_pylist() == [None] * files.num_rows
    buckets = t.system_table("buckets")
    assert sum(buckets.column("record_count").to_pylist()) == 4
    assert t.system_table("manifests").num_rows >= 2
    tags = t.system_table("tags")
    assert tags.column("tag_name").to_pylist() == ["v1"]
    assert tags.column("snapshot_id").to_pylist() == [2]
    created = tags.column("create_time")[0].as_py()
    assert abs((created - datetime.datetime.now()).total_seconds()) < 60  # local wall-clock time
    assert tags.column("time_retained").to_pylist() == [None]
    audit = t.system_table("audit_log")
    assert audit.column_names == ["rowkind", "id", "v", "dt"]
    assert set(audit.column("rowkind").to_pylist()) == {"+I"}
    binlog = t.system_table("binlog")  # a batch read: each audit_log row, values as 1-element arrays
    assert [(r["rowkind"], r["id"], r["v"], r["dt"]) for r in binlog.to_pylist()] == [
        (r["rowkind"], [r["id"]], [r["v"]], [r["dt"]]) for r in audit.to_pylist()
    ]
    assert paimon_columns(t, "binlog")[1] == ("id", "ARRAY<BIGINT>")  # nullable elements, as Paimon


PAIMON_COLUMNS = {
    "snapshots": [
        "snapshot_id",
        "schema_id",
        "commit_user",
        "commit_identifier",
        "commit_kind",
        "commit_time",
        "base_manifest_list",
        "delta_manifest_list",
        "changelog_manifest_list",
        "total_record_count",
        "delta_record_count",
        "changelog_record_count",
        "watermark",
        "next_row_id",
        "operation",
        "writer_version",
    ],
    "files": [
        "partition",
        "bucket",
        "file_path",
        "file_format",
        "schema_id",
        "level",
        "record_count",
        "file_size_in_bytes",
        "min_key",
        "max_key",
        "null_value_counts",
        "min_value_stats",
        "max_value_stats",
        "min_sequence_number",
        "max_sequence_number",
        "creation_time",
        "deleteRowCount",
        "file_source",
        "first_row_id",
        "write_cols",
    ],
    "manifests": [
        "file_name",
        "file_size",
        "num_added_files",
        "num_deleted_files",
        "schema_id",
        "min_partition_stats",
        "max_partition_stats",
        "min_row_id",
        "max_row_id",
    ],
    "partitions": [
        "partition",
        "record_count",
        "file_size_in_bytes",
        "file_count",
        "last_update_time",
        "created_at",
        "created_by",
        "updated_by",
        "options",
        "total_buckets",
        "done",
        "deleted_record_count",
    ],
    "tags": [
        "tag_name",
        "snapshot_id",
        "schema_id",
        "commit_time",
        "record_count",
        "create_time",
        "time_retained",
    ],
    "aggregation_fields": ["field_name", "field_type", "function", "function_options", "comment"],
    "table_indexes": [
        "partition",
        "bucket",
        "index_type",
        "file_name",
        "file_size",
        "row_count",
        "dv_ranges",
        "row_range_start",
        "row_range_end",
        "index_field_id",
        "index_field_name",
    ],
    "file_key_ranges": [
        "partition",
        "bucket",
        "file_path",
        "file_format",
        "schema_id",
        "level",
        "record_count",
        "file_size_in_bytes",
        "min_key",
        "max_key",
        "first_row_id",
    ],
    "consumers": ["consumer_id", "next_snapshot_id"],
}


def test_system_table_types_follow_paimon(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    types = {name: dict(paimon_columns(t, name)) for name in PAIMON_COLUMNS}
    assert types["snapshots"]["operation"] == "STRING"
    assert types["snapshots"]["writer_version"] == "STRING"
    assert types["files"]["first_row_id"] == "BIGINT"
    assert types["files"]["write_cols"] == "ARRAY<STRING>"
    assert types["manifests"]["min_row_id"] == types["manifests"]["max_row_id"] == "BIGINT"
    assert types["partitions"]["created_at"] == "TIMESTAMP(3)"
    assert types["partitions"]["done"] == "BOOLEAN NOT NULL"
    assert types["partitions"]["deleted_record_count"] == "BIGINT"
    assert types["tags"]["create_time"] == "TIMESTAMP(3)"
    assert types["tags"]["time_retained"] == "STRING"
    assert types["consumers"] == {"consumer_id": "STRING NOT NULL", "next_snapshot_id": "BIGINT NOT NULL"}


def test_java_written_tag_and_snapshot_fields(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.write(batch([1], "a"))
    t.create_tag("j")
    path = Path(t.tag_manager.tag_path("j"))
    raw = json.loads(path.read_text())
    # As Java's Jackson writes a Tag: LocalDateTime as an array, Duration as decimal seconds.
    raw["tagCreateTime"] = [2024, 3, 5, 7, 8, 9, 123456789]
    raw["tagTimeRetained"] = 90061.500000000
    raw["writerVersion"] = "1.3-SNAPSHOT"
    raw["operation"] = "WRITE"
    path.write_text(json.dumps(raw))
    tags = t.system_table("tags").to_pylist()[0]
    assert tags["create_time"] == datetime.datetime(2024, 3, 5, 7, 8, 9, 123000)
    assert tags["time_retained"] == "PT25H1M1.5S"  # Java's Duration.toString()
    snap = t.tag_manager.tag("j")
    assert (snap.writer_version, snap.operation) == ("1.3-SNAPSHOT", "WRITE")
    snap_path = Path(t.snapshot_manager.snapshot_path(1))
    raw = json.loads(snap_path.read_text())
    raw["writerVersion"], raw["operation"] = "1.3-SNAPSHOT", "OVERWRITE"
    snap_path.write_text(json.dumps(raw))
    snaps = fresh(t).system_table("snapshots").to_pylist()[0]  # snapshots are cached
    assert (snaps["writer_version"], snaps["operation"]) == ("1.3-SNAPSHOT", "OVERWRITE")


def test_tag_time_retained_rendering() -> None:
    from decimal import Decimal

    from stratalake.store.tag_manager import _duration_string

    assert _duration_string(Decimal("5.000000000")) == "PT5S"
    assert _duration_string(Decimal("86400.000000000")) == "PT24H"
    assert _duration_string(Decimal("90.000000001")) == "PT1M30.000000001S"
    assert _duration_string(0) == "PT0S"
    assert _duration_string("PT1H") == "PT1H"
    assert _duration_string(None) is None


def test_partitions_deleted_record_count_with_deletion_vectors(tmp_path: Path) -> None:
    from tests.deletion_vectors.helpers import dv_entries, with_vectors

    t = with_vectors(tmp_path)
    expected = sum(r.cardinality or 0 for e in dv_entries(t) for r in e.dv_ranges or ())
    assert expected > 0
    parts = t.system_table("partitions")
    assert parts.column("deleted_record_count").to_pylist() == [expected]


def test_table_indexes_list_deletion_vector_files_with_their_ranges(tmp_path: Path) -> None:
    from tests.deletion_vectors.helpers import dv_entries, with_vectors

    t = with_vectors(tmp_path)
    entries = dv_entries(t)
    out = t.system_table("table_indexes")
    assert sorted(out.column("file_name").to_pylist()) == sorted(e.file_name for e in entries)
    assert set(out.column("index_type").to_pylist()) == {"DELETION_VECTORS"}
    by_name = {e.file_name: e for e in entries}
    for row in out.to_pylist():
        e = by_name[row["file_name"]]
        assert (row["bucket"], row["file_size"], row["row_count"]) == (e.bucket, e.file_size, e.row_count)
        assert [(r["f0"], r["f1"], r["f2"], r["_CARDINALITY"]) for r in row["dv_ranges"]] == [
            (r.data_file, r.offset, r.length, r.cardinality) for r in e.dv_ranges or ()
        ]
        assert row["row_range_start"] is None and row["index_field_name"] is None  # no global index
    assert make_table(tmp_path, "plain").system_table("table_indexes").num_rows == 0


def test_file_key_ranges_are_the_files_key_columns(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.write(batch([3, 1, 2], "a", dt="d1"))
    files = t.system_table("files").to_pylist()
    ranges = t.system_table("file_key_ranges").to_pylist()
    assert [r["file_path"] for r in ranges] == [f["file_path"] for f in files]
    assert [(r["min_key"], r["max_key"]) for r in ranges] == [(f["min_key"], f["max_key"]) for f in files]
    # trimmed primary keys (the partition column dropped), as Java's Arrays.toString shows them
    bounds = {int(k.strip("[]")) for r in ranges for k in (r["min_key"], r["max_key"])}
    assert bounds <= {1, 2, 3} and min(bounds) == 1 and max(bounds) == 3
    assert sum(r["record_count"] for r in ranges) == 3


def test_aggregation_fields_show_each_columns_field_options(tmp_path: Path) -> None:
    import pyarrow as pa

    import stratalake

    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema(
        [pa.field("k", pa.int64(), nullable=False), ("total", pa.int64()), ("note", pa.string())]
    )
    t = cat.create_table(
        "db.agg",
        schema=schema,
        primary_key=["k"],
        options={
            "bucket": "1",
            "merge-engine": "aggregation",
            "fields.total.aggregate-function": "sum",
            "fields.total.ignore-retract": "true",
            "fields.note.aggregate-function": "last_non_null_value",
        },
    )
    rows_by_name = {r["field_name"]: r for r in t.system_table("aggregation_fields").to_pylist()}
    assert list(rows_by_name) == ["k", "total", "note"]
    assert rows_by_name["k"]["field_type"] == "BIGINT NOT NULL"
    assert (rows_by_name["k"]["function"], rows_by_name["k"]["function_options"]) == ("[]", "[]")
    total = rows_by_name["total"]
    assert sorted(total["function"].strip("[]").split(", ")) == ["sum", "true"]
    assert sorted(total["function_options"].strip("[]").split(", ")) == [
        "fields.total.aggregate-function",
        "fields.total.ignore-retract",
    ]
    assert rows_by_name["note"]["function"] == "[last_non_null_value]"
    assert rows_by_name["note"]["comment"] is None


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
