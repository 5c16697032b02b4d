"""Compaction of real tables: COMPACT snapshots, conflicts, writer compaction, merged content."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stratalake
from stratalake.catalog.schema_change import SchemaChange
from stratalake.exceptions import CommitConflictError
from stratalake.lsm.data_file import bucket_dir
from stratalake.spec.manifest import FileKind, FileSource
from stratalake.spec.snapshot import CommitKind
from stratalake.table.compaction import compact

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def make(tmp: Path, name: str = "t", **options: str) -> stratalake.Table:
    cat = stratalake.Catalog(str(tmp / "wh"))
    if "db" not in cat.list_databases():
        cat.create_database("db")
    opts = {"bucket": "2", **options}
    return cat.create_table(f"db.{name}", schema=SCHEMA, primary_key=["k"], options=opts)


def rows(t: stratalake.Table, **kw: int) -> list[tuple[int, str]]:
    return sorted((r["k"], r["v"]) for r in t.read(**kw).to_pylist())


def delta_entries(t: stratalake.Table, snapshot_id: int) -> list:  # type: ignore[type-arg]
    snap, mio = t.snapshot(snapshot_id), t.manifest_io
    return [e for m in mio.read_list(snap.delta_manifest_list) for e in mio.read_entries(m.file_name)]


def file_exists(t: stratalake.Table, partition: bytes, bucket: int, name: str) -> bool:
    codec = t.partition_codec
    return os.path.exists(f"{bucket_dir(t.location, codec.path(codec.from_bytes(partition)), bucket)}/{name}")


def write_rounds(t: stratalake.Table, rounds: int, keys: int = 20) -> None:
    for i in range(rounds):
        t.write(pa.table({"k": list(range(keys)), "v": [f"r{i}"] * keys}))


def test_full_compaction_commits_compact_snapshot(tmp_path: Path) -> None:
    t = make(tmp_path, **{"write-only": "true"})
    write_rounds(t, 3)
    t.write(pa.table({"k": [3], "v": ["x"], "op": ["-D"]}), row_kind="op")
    before = rows(t)
    live_before = {e.file.file_name for e in t.live_entries(t.latest_snapshot())}
    sid = t.compact(full=True)
    assert sid is not None
    snap = t.snapshot(sid)
    assert snap.commit_kind is CommitKind.COMPACT
    entries = delta_entries(t, sid)
    deleted = {e.file.file_name for e in entries if e.kind is FileKind.DELETE}
    added = [e.file for e in entries if e.kind is FileKind.ADD]
    assert deleted == live_before
    assert added and all(f.file_source == FileSource.COMPACT for f in added)
    assert all(f.level == 5 for f in added)  # num-levels = trigger (5) + 1: max level 5
    assert all(f.delete_row_count == 0 for f in added)  # deletes dropped at the max level
    assert rows(t) == before
    assert snap.total_record_count == len(before)
    assert t.compact(full=True) is None  # nothing left to do


def test_losing_compaction_fails_cleanly(tmp_path: Path) -> None:
    t = make(tmp_path, **{"write-only": "true"})
    write_rounds(t, 3)
    expected = rows(t)
    first, second = compact(t, full=True), compact(t, full=True)
    t.new_commit().commit(first)
    with pytest.raises(CommitConflictError, match="already removed"):
        t.new_commit().commit(second)
    t.delete_uncommitted(second)
    assert rows(t) == expected
    for m in first:
        assert all(file_exists(t, m.partition, m.bucket, f.file_name) for f in m.compact_after)
    for m in second:
        assert not any(file_exists(t, m.partition, m.bucket, f.file_name) for f in m.compact_after)


def test_concurrent_append_does_not_conflict(tmp_path: Path) -> None:
    t = make(tmp_path, **{"write-only": "true"})
    write_rounds(t, 3)
    msgs = compact(t, full=True)
    t.write(pa.table({"k": [1, 100], "v": ["late", "new"]}))
    t.new_commit().commit(msgs)
    got = dict(rows(t))
    assert got[1] == "late" and got[100] == "new" and got[5] == "r2"
    assert [s.commit_kind for s in t.snapshots()][-2:] == [CommitKind.APPEND, CommitKind.COMPACT]


def test_writer_compacts_after_trigger_and_write_only_does_not(tmp_path: Path) -> None:
    t = make(tmp_path, "a", **{"num-sorted-run.compaction-trigger": "3"})
    write_rounds(t, 6)
    kinds = [s.commit_kind for s in t.snapshots()]
    assert CommitKind.COMPACT in kinds
    files = t.live_entries(t.latest_snapshot())
    assert max(len([e for e in files if e.bucket == b]) for b in (0, 1)) <= 3
    assert rows(t) == [(k, "r5") for k in range(20)]
    w = make(tmp_path, "b", **{"num-sorted-run.compaction-trigger": "3", "write-only": "true"})
    write_rounds(w, 6)
    assert {s.commit_kind for s in w.snapshots()} == {CommitKind.APPEND}


def test_writer_compaction_losing_race_keeps_the_data(tmp_path: Path) -> None:
    t = make(tmp_path, bucket="1", **{"num-sorted-run.compaction-trigger": "2"})
    t.write(pa.table({"k": [1, 2], "v": ["a", "b"]}))
    t.write(pa.table({"k": [1, 3], "v": ["c", "d"]}))
    # This writer restores the bucket's files now; another writer's compaction then replaces them.
    w = t.new_write()
    w.write(pa.table({"k": [4, 2], "v": ["e", "f"]}))
    t.write(pa.table({"k": [5], "v": ["g"]}))
    assert t.latest_snapshot().commit_kind is CommitKind.COMPACT
    sid = w.commit()
    assert t.snapshot(sid).commit_kind is CommitKind.APPEND  # its compaction was abandoned
    assert rows(t) == [(1, "c"), (2, "f"), (3, "d"), (4, "e"), (5, "g")]


def test_old_snapshot_still_reads_after_compaction(tmp_path: Path) -> None:
    t = make(tmp_path, **{"write-only": "true"})
    write_rounds(t, 2)
    t.compact(full=True)
    assert rows(t, snapshot_id=1) == [(k, "r0") for k in range(20)]


# -- model test ----------------------------------------------------------------------------------
ops = st.lists(
    st.tuples(st.sampled_from(["+I", "+U", "-D", "+I"]), st.integers(0, 25), st.integers(0, 99)),
    min_size=1,
    max_size=50,
)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    history=ops,
    cuts=st.lists(st.integers(1, 50), max_size=6),
    compactions=st.lists(st.tuples(st.integers(0, 7), st.booleans()), max_size=4),
    trigger=st.sampled_from(["2", "3"]),
    producer=st.sampled_from(["none", "input", "lookup", "full-compaction"]),
    engine=st.sampled_from(["deduplicate", "aggregation"]),
    write_only=st.booleans(),
)
def test_compaction_keeps_merged_content(
    tmp_path_factory: pytest.TempPathFactory,
    history: list[tuple[str, int, int]],
    cuts: list[int],
    compactions: list[tuple[int, bool]],
    trigger: str,
    producer: str,
    engine: str,
    write_only: bool,
) -> None:
    tmp = tmp_path_factory.mktemp("model")
    cat = stratalake.Catalog(str(tmp))
    cat.create_database("db")
    options = {
        "bucket": "2",
        "num-sorted-run.compaction-trigger": trigger,
        "changelog-producer": producer,
        "merge-engine": engine,
        "write-only": str(write_only).lower(),
    }
    if engine == "aggregation":
        options["fields.n.aggregate-function"] = "sum"
        history = [("+I", k, v) for _, k, v in history]  # sums: inserts only
    t = cat.create_table(
        "db.t", schema=pa.schema([("k", pa.int64()), ("n", pa.int64())]), primary_key=["k"], options=options
    )
    model: dict[int, int] = {}
    bounds = sorted({c for c in cuts if c < len(history)} | {0, len(history)})
    for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        part = history[lo:hi]
        t.write(
            pa.table({"k": [o[1] for o in part], "n": [o[2] for o in part], "op": [o[0] for o in part]}),
            row_kind="op",
        )
        for kind, k, v in part:
            if engine == "aggregation":
                model[k] = model.get(k, 0) + v
            elif kind == "-D":
                model.pop(k, None)
            else:
                model[k] = v
        for when, full in compactions:
            if when == i:
                t.compact(full=full)
        got = {r["k"]: r["n"] for r in t.read().to_pylist()}
        assert got == model


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    history=st.lists(
        st.tuples(st.integers(0, 10), st.none() | st.integers(0, 9), st.none() | st.integers(0, 9)),
        min_size=1,
        max_size=40,
    ),
    cuts=st.lists(st.integers(1, 40), max_size=6),
    compactions=st.lists(st.tuples(st.integers(0, 7), st.booleans()), max_size=3),
    producer=st.sampled_from(["none", "lookup", "full-compaction"]),
)
def test_partial_update_survives_compaction(
    tmp_path_factory: pytest.TempPathFactory,
    history: list[tuple[int, int | None, int | None]],
    cuts: list[int],
    compactions: list[tuple[int, bool]],
    producer: str,
) -> None:
    cat = stratalake.Catalog(str(tmp_path_factory.mktemp("pu")))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=pa.schema([("k", pa.int64()), ("a", pa.int64()), ("b", pa.int64())]),
        primary_key=["k"],
        options={
            "bucket": "2",
            "merge-engine": "partial-update",
            "changelog-producer": producer,
            "num-sorted-run.compaction-trigger": "2",
        },
    )
    model: dict[int, dict[str, int | None]] = {}
    bounds = sorted({c for c in cuts if c < len(history)} | {0, len(history)})
    for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        part = history[lo:hi]
        t.write(pa.table({"k": [o[0] for o in part], "a": [o[1] for o in part], "b": [o[2] for o in part]}))
        for k, a, b in part:
            row = model.setdefault(k, {"a": None, "b": None})
            row["a"] = a if a is not None else row["a"]
            row["b"] = b if b is not None else row["b"]
        for when, full in compactions:
            if when == i:
                t.compact(full=full)
        got = {r["k"]: {"a": r["a"], "b": r["b"]} for r in t.read().to_pylist()}
        assert got == model


def test_first_row_keeps_each_key_once_above_level0_and_reads_without_merge(tmp_path: Path) -> None:
    """first-row compacts level 0 with a lookup that drops keys already stored (Paimon's
    FirstRowMergeFunctionWrapper), so batch reads skip level 0 and read files unmerged."""
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.fr",
        schema=pa.schema([("k", pa.int64()), ("v", pa.string())]),
        primary_key=["k"],
        options={"bucket": "1", "merge-engine": "first-row", "num-sorted-run.compaction-trigger": "3"},
    )
    expected: dict[int, str] = {}
    for c in range(6):
        keys = list(range(c * 5, c * 5 + 20))
        t.write(pa.table({"k": keys, "v": [f"c{c}" for _ in keys]}))
        for k in keys:
            expected.setdefault(k, f"c{c}")
    live = [e.file for e in t.live_entries(t.latest_snapshot())]
    assert all(f.level > 0 for f in live) and len({f.level for f in live}) > 1
    splits = t.new_scan().plan()
    assert splits and not any(s.merge for s in splits)
    assert {r["k"]: r["v"] for r in t.read().to_pylist()} == expected
    assert t.read().num_rows == len(expected)  # no key twice across levels
    # Level 0 is invisible to batch reads until compacted, as in Paimon.
    w = cat.alter_table("db.fr", [SchemaChange.set_option("write-only", "true")])
    w.write(pa.table({"k": [1000], "v": ["new"]}))
    assert 1000 not in w.read().column("k").to_pylist()
    w.compact()
    assert 1000 in w.read().column("k").to_pylist()
