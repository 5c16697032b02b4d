"""Append tables (no primary key) through the Python API, checked against a list model."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake import field
from stratalake.exceptions import InvalidDataError, SchemaError
from stratalake.lsm.file_format import open_data_file
from stratalake.spec.binary_row import EMPTY_ROW
from stratalake.spec.snapshot import CommitKind

SCHEMA = pa.schema([("ts", pa.int64()), ("user", pa.string()), ("dt", pa.string())])


def _rows(model: list[tuple[int, str, str]]) -> pa.Table:
    return pa.table(
        {"ts": [r[0] for r in model], "user": [r[1] for r in model], "dt": [r[2] for r in model]},
        schema=SCHEMA,
    )


def _sorted(t: pa.Table) -> list[tuple[object, ...]]:
    return sorted(zip(*(t.column(n).to_pylist() for n in t.column_names), strict=True), key=repr)


@pytest.fixture
def cat(tmp_path: Path) -> stratalake.Catalog:
    c = stratalake.Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


@pytest.mark.parametrize("options", [{}, {"bucket": "3", "bucket-key": "user"}])
def test_writes_overwrites_and_filters_follow_a_list_model(
    cat: stratalake.Catalog, options: dict[str, str]
) -> None:
    t = cat.create_table("db.e", schema=SCHEMA, partition_keys=["dt"], options=options)
    assert t.options()["bucket"] == options.get("bucket", "-1")
    rng = random.Random(7)
    model: list[tuple[int, str, str]] = []
    for step in range(12):
        batch = [
            (step * 100 + i, rng.choice("abcde"), rng.choice(["d1", "d2", "d3"]))
            for i in range(rng.randrange(1, 30))
        ]
        if step % 5 == 4:  # overwrite one partition (dynamic: the partitions the batch holds)
            part = batch[0][2]
            batch = [r for r in batch if r[2] == part]
            t.write(_rows(batch), overwrite=True, overwrite_partitions=[{"dt": part}])
            model = [r for r in model if r[2] != part] + batch
        else:
            t.write(_rows(batch))
            model += batch
        assert _sorted(t.read()) == sorted(model, key=repr)
        if step == 0:
            first = list(model)
    # Duplicates are kept: an append table stores every row written.
    t.write(_rows(model[:3]))
    model += model[:3]
    assert _sorted(t.read()) == sorted(model, key=repr)
    for flt, keep in (
        (field("ts") >= 900, lambda r: r[0] >= 900),
        ((field("dt") == "d2") & (field("user") == "a"), lambda r: r[2] == "d2" and r[1] == "a"),
        (field("user").isin(["b", "c"]), lambda r: r[1] in ("b", "c")),
    ):
        got = t.read(filter=flt)
        assert _sorted(got) == sorted([r for r in model if keep(r)], key=repr)
    assert t.read(columns=["user"], filter=field("ts") < 5).column_names == ["user"]
    # Value statistics prune files: a range no file holds plans nothing.
    assert t.new_scan(filter=field("ts") > 10_000).plan() == []
    # Time travel: the first snapshot still reads as written.
    assert _sorted(t.read(snapshot_id=1)) == sorted(first, key=repr)


def test_files_have_the_append_layout_and_metadata(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.e", schema=SCHEMA, options={"bucket": "2", "bucket-key": "ts"})
    t.write(_rows([(i, "u", "d") for i in range(10)]))
    t.write(_rows([(i, "v", "d") for i in range(10, 15)]))
    snap = t.latest_snapshot()
    assert snap is not None
    entries = t.live_entries(snap)
    for e in entries:
        f = e.file
        assert e.total_buckets == 2 and f.level == 0
        assert f.min_key == EMPTY_ROW and f.max_key == EMPTY_ROW
        assert f.delete_row_count == 0 and f.first_row_id is None
        assert f.max_sequence_number - f.min_sequence_number + 1 == f.row_count
        reader = open_data_file(t.file_io, f"{t.location}/bucket-{e.bucket}/{f.file_name}")
        assert reader.schema.names == ["ts", "user", "dt"]
    # A fixed bucket's writer numbers its rows after the bucket's live files.
    for b in (0, 1):
        files = sorted((e.file for e in entries if e.bucket == b), key=lambda f: f.min_sequence_number)
        assert all(a.max_sequence_number < c.min_sequence_number for a, c in itertools.pairwise(files))
    unaware = cat.create_table("db.u", schema=SCHEMA)
    unaware.write(_rows([(1, "u", "d")]))
    (e,) = unaware.live_entries(unaware.latest_snapshot())  # type: ignore[arg-type]
    assert (e.bucket, e.total_buckets) == (0, -1)


def test_small_input_batches_make_large_row_groups(cat: stratalake.Catalog) -> None:
    """A writer fed many small batches (as Spark's Arrow batches are) writes row groups of many
    of them, not one row group per batch; rows and their order are kept."""
    import pyarrow.parquet as pq

    t = cat.create_table("db.rg", schema=SCHEMA)
    w = t.new_write()
    for start in range(0, 200_000, 2_000):
        w.write(_rows([(i, "u", "d") for i in range(start, start + 2_000)]))
    t.new_commit().commit(w.prepare_commit())
    (e,) = t.live_entries(t.latest_snapshot())  # type: ignore[arg-type]
    meta = pq.ParquetFile(f"{t.location}/bucket-0/{e.file.file_name}").metadata
    assert meta.num_rows == 200_000 and meta.num_row_groups == 1
    assert t.read().column("ts").to_pylist() == list(range(200_000))


def test_only_inserts_and_not_null_are_enforced(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.e", schema=[("ts", "BIGINT NOT NULL"), ("user", "STRING")])
    with pytest.raises(InvalidDataError, match="only takes inserts"):
        t.write(pa.table({"ts": [1], "user": ["a"], "op": ["-D"]}), row_kind="op")
    t.write(pa.table({"ts": [1], "user": ["a"], "op": ["+I"]}), row_kind="op")
    with pytest.raises(InvalidDataError, match="NOT NULL"):
        t.write(pa.table({"ts": pa.array([None], pa.int64()), "user": ["a"]}))
    with pytest.raises(SchemaError, match="'merge-engine' needs a primary key"):
        cat.create_table("db.x", schema=SCHEMA, options={"merge-engine": "first-row"})
    assert t.read().to_pylist() == [{"ts": 1, "user": "a"}]


def test_compaction_of_small_files(cat: stratalake.Catalog) -> None:
    t = cat.create_table(
        "db.e",
        schema=SCHEMA,
        options={
            "bucket": "1",
            "bucket-key": "ts",
            "compaction.min.file-num": "3",
            "target-file-size": "3 kb",
        },
    )
    model: list[tuple[int, str, str]] = []
    for step in range(8):
        batch = [(step * 10 + i, "u" * 30, "d") for i in range(10)]
        t.write(_rows(batch))
        model += batch
    kinds = [s.commit_kind for s in t.snapshots()]
    assert CommitKind.COMPACT in kinds  # writers merged small files on their own
    assert _sorted(t.read()) == sorted(model, key=repr)
    # Rows keep their order: sequence numbers never overlap between files.
    files = sorted((e.file for e in t.live_entries(t.latest_snapshot())), key=lambda f: f.min_sequence_number)  # type: ignore[arg-type]
    assert all(a.max_sequence_number < b.min_sequence_number for a, b in itertools.pairwise(files))
    assert t.compact(full=True) is not None
    assert _sorted(t.read()) == sorted(model, key=repr)
    assert t.read().column("ts").to_pylist() == [r[0] for r in model]  # sequence order preserved


@pytest.mark.parametrize(
    "options",
    [{}, {"bucket": "1", "bucket-key": "ts"}, {"deletion-vectors.enabled": "true"}],
)
def test_full_compaction_of_compacted_buckets_commits_nothing(
    cat: stratalake.Catalog, options: dict[str, str]
) -> None:
    """A bucket of one file (or of a few big ones) is already compacted: a full compaction must
    not rewrite it into a new COMPACT snapshot on every call (Paimon needs three mostly small
    files, or a deletion vector to apply)."""
    t = cat.create_table("db.once", schema=SCHEMA, partition_keys=["dt"], options=options)
    t.write(_rows([(1, "a", "d1"), (2, "b", "d2")]))  # one file in each partition
    assert t.compact(full=True) is None
    assert t.latest_snapshot().id == 1  # type: ignore[union-attr]
    for i in range(3):  # three small files in d1: worth merging once
        t.write(_rows([(10 + i, "c", "d1")]))
    compacted = t.compact(full=True)
    assert compacted is not None and t.latest_snapshot().commit_kind is CommitKind.COMPACT  # type: ignore[union-attr]
    assert t.compact(full=True) is None
    assert t.latest_snapshot().id == compacted  # type: ignore[union-attr]
    assert sorted(t.read().column("ts").to_pylist()) == [1, 2, 10, 11, 12]


def test_full_compaction_applies_a_deletion_vector_once(cat: stratalake.Catalog) -> None:
    from stratalake.append.dml import delete_rows

    t = cat.create_table("db.dv", schema=SCHEMA, options={"deletion-vectors.enabled": "true"})
    t.write(_rows([(1, "a", "d"), (2, "b", "d")]))
    assert delete_rows(t, field("ts") == 1) is not None  # a vector on the table's only file
    assert t.compact(full=True) is not None  # a file with deleted rows is rewritten without them
    assert t.compact(full=True) is None
    assert t.read().column("ts").to_pylist() == [2]


def test_lifecycle_snapshots_tags_rollback_expire_orphans(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.e", schema=SCHEMA, partition_keys=["dt"])
    for i in range(5):
        t.write(_rows([(i, "u", f"d{i % 2}")]))
    assert len(t.snapshots()) == 5
    t.create_tag("v3", 3)
    assert t.rollback_to("v3").id == 3
    assert sorted(t.read().column("ts").to_pylist()) == [0, 1, 2]
    t.write(_rows([(9, "u", "d1")]))
    assert t.expire_snapshots(retain_max=1, retain_min=1) >= 1
    assert sorted(t.read().column("ts").to_pylist()) == [0, 1, 2, 9]
    t.remove_orphan_files(older_than_ms=2**62)  # every live file is referenced: none removed
    assert sorted(t.read().column("ts").to_pylist()) == [0, 1, 2, 9]
    audit = t.audit_log()
    assert set(audit.column("rowkind").to_pylist()) == {"+I"}
    files = t.system_table("files")
    assert files.num_rows >= 1


def test_schema_evolution_reads_old_files(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.e", schema=SCHEMA)
    t.write(_rows([(1, "a", "d")]))
    t = cat.alter_table(
        "db.e",
        [
            stratalake.SchemaChange.add_column("n", "INT"),
            stratalake.SchemaChange.rename_column("user", "who"),
        ],
    )
    t.write(pa.table({"ts": [2], "who": ["b"], "dt": ["d"], "n": pa.array([5], pa.int32())}))
    assert sorted(t.read().to_pylist(), key=lambda r: r["ts"]) == [
        {"ts": 1, "who": "a", "dt": "d", "n": None},
        {"ts": 2, "who": "b", "dt": "d", "n": 5},
    ]
    assert t.read(filter=field("n") == 5).num_rows == 1


def test_copy_on_write_delete(cat: stratalake.Catalog) -> None:
    from stratalake.append.dml import delete_rows
    from stratalake.exceptions import CommitConflictError
    from stratalake.expressions import to_predicate

    t = cat.create_table("db.e", schema=SCHEMA, partition_keys=["dt"])
    model = [(i, None if i % 4 == 0 else "abc"[i % 3], "d1" if i < 10 else "d2") for i in range(20)]
    t.write(_rows(model[:10]))
    t.write(_rows(model[10:]))
    before = len(t.snapshots())
    p = to_predicate(field("user") == "a")
    assert p is not None
    sid = delete_rows(t, p)
    assert sid is not None and len(t.snapshots()) == before + 1  # one snapshot per statement
    model = [r for r in model if r[1] != "a"]  # null users are kept
    assert _sorted(t.read()) == sorted(model, key=repr)
    q = to_predicate((field("ts") >= 15) & (field("dt") == "d2"))
    assert q is not None
    delete_rows(t, q)
    model = [r for r in model if not (r[0] >= 15 and r[2] == "d2")]
    assert _sorted(t.read()) == sorted(model, key=repr)
    r = to_predicate(field("ts") > 1000)
    assert r is not None and delete_rows(t, r) is None  # nothing matched: no snapshot
    # Two deletes of the same file: the second to commit conflicts and changes nothing.
    stale = t.refresh()
    s = to_predicate(field("ts") == 1)
    assert s is not None
    delete_rows(t, s)
    snap = t.latest_snapshot()
    u = to_predicate(field("ts") == 2)
    assert u is not None
    real_latest = stale.latest_snapshot
    older = t.snapshot(snap.id - 1)  # type: ignore[union-attr]
    stale.latest_snapshot = lambda: older  # type: ignore[method-assign]
    try:
        with pytest.raises(CommitConflictError):
            delete_rows(stale, u)  # planned before the first delete committed
    finally:
        stale.latest_snapshot = real_latest  # type: ignore[method-assign]
    model = [r for r in model if r[0] != 1]
    assert _sorted(t.read()) == sorted(model, key=repr)
