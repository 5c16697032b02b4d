"""Row-level DML of append tables in the core (``append/dml.py``): deleted positions plus new
rows as one snapshot, with deletion vectors or copy-on-write, concurrent statements, compaction."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import stratalake
from stratalake import field
from stratalake.append import dml
from stratalake.append.dml import RowDeletes, apply_changes, matching_positions
from stratalake.exceptions import CommitConflictError
from stratalake.expressions import Predicate, to_predicate
from stratalake.spec.snapshot import CommitKind
from stratalake.store.index_manifest import live_index_entries

SCHEMA = pa.schema([("id", pa.int64()), ("g", pa.int64()), ("dt", pa.string())])
Row = tuple[int, int, str]
LAYOUTS = [
    {"deletion-vectors.enabled": "true"},
    {"deletion-vectors.enabled": "true", "bucket": "3", "bucket-key": "id"},
    {},
    {"bucket": "2", "bucket-key": "g"},
]


def _table(rows: list[Row]) -> pa.Table:
    return pa.table({n: [r[i] for r in rows] for i, n in enumerate(SCHEMA.names)}, schema=SCHEMA)


def _sorted(t: pa.Table) -> list[Row]:
    return sorted(zip(*(t.column(n).to_pylist() for n in SCHEMA.names), strict=True))  # type: ignore[arg-type]


def _pred(p: object) -> Predicate:
    out = to_predicate(p)  # type: ignore[arg-type]
    assert out is not None
    return out


@pytest.fixture
def cat(tmp_path: Path) -> stratalake.Catalog:
    c = stratalake.Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


def _update(t: stratalake.Table, predicate: Predicate, new_rows: list[Row]) -> int | None:
    """An UPDATE as Spark's plan sends it: the matching positions, plus the new rows written by the
    append writer (no writer compaction), committed together."""
    deletes = matching_positions(t, predicate)
    writer = t.new_write()
    writer.compact = False  # type: ignore[attr-defined]
    if new_rows:
        writer.write(_table(new_rows))
    return apply_changes(t, deletes, writer.prepare_commit())


@pytest.mark.parametrize("options", LAYOUTS)
def test_random_deletes_and_updates_follow_a_list_model(
    cat: stratalake.Catalog, options: dict[str, str]
) -> None:
    t = cat.create_table("db.e", schema=SCHEMA, partition_keys=["dt"], options=options)
    rng = random.Random(5)
    model: list[Row] = []
    next_id = 0
    for step in range(14):
        action = rng.choice(["insert", "delete", "update"]) if step > 1 else "insert"
        if action == "insert":
            batch = [
                (next_id + i, rng.randrange(10), rng.choice(["a", "b"]))
                for i in range(rng.randrange(50, 400))
            ]
            next_id += len(batch)
            t.write(_table(batch))
            model += batch
            continue
        g = rng.randrange(10)
        m = rng.randrange(2, 6)
        some = [r[0] for r in model if r[0] % m == 0]
        predicate = _pred((field("g") == g) | field("id").isin(some))
        hit = [r for r in model if r[1] == g or r[0] % m == 0]
        before = len(t.snapshots())
        if action == "delete":
            sid = apply_changes(t, matching_positions(t, predicate))
            model = [r for r in model if r not in hit]
        else:  # SET g = g + 10 (moves rows to other files, and buckets when g is the bucket key)
            new = [(r[0], r[1] + 10, r[2]) for r in hit]
            sid = _update(t, predicate, new)
            model = [r for r in model if r not in hit] + new
        if hit:
            assert sid is not None and len(t.snapshots()) == before + 1  # one snapshot per statement
            snap = t.latest_snapshot()
            assert snap is not None and snap.commit_kind is CommitKind.OVERWRITE
        assert _sorted(t.read()) == sorted(model), f"step {step} ({action})"
    snap = t.latest_snapshot()
    assert snap is not None
    has_dv = bool(live_index_entries(t, snap))
    assert has_dv == (options.get("deletion-vectors.enabled") == "true")
    # Compaction applies the vectors and drops them; the rows stay.
    t.compact(full=True)
    t = t.refresh()
    snap = t.latest_snapshot()
    assert snap is not None and not live_index_entries(t, snap)
    assert _sorted(t.read()) == sorted(model)


def _bucket_order(t: stratalake.Table) -> dict[tuple[object, int], list[int]]:
    """Each (partition, bucket)'s ids in read order (files in sequence order, rows in file order)."""
    out: dict[tuple[object, int], list[int]] = {}
    read = t.new_read()
    for split in t.new_scan().plan():
        ids = [i for b in read.read_split(split) for i in b.column("id").to_pylist()]
        out.setdefault((split.partition_values, split.bucket), []).extend(ids)
    return out


@pytest.mark.parametrize("dv", ["true", "false"])
def test_compaction_after_dml_keeps_rows_and_their_order_within_a_bucket(
    cat: stratalake.Catalog, dv: str
) -> None:
    options = {
        "deletion-vectors.enabled": dv,
        "bucket": "2",
        "bucket-key": "g",
        "compaction.min.file-num": "100",
    }
    t = cat.create_table("db.o", schema=SCHEMA, partition_keys=["dt"], options=options)
    rng = random.Random(3)
    for k in range(6):
        ids = rng.sample(range(k * 10_000, (k + 1) * 10_000), 5_000)  # not sorted: order is the writer's
        t.write(_table([(i, i % 7, "ab"[i % 2]) for i in ids]))
    before = _bucket_order(t)
    predicate = _pred(field("id").isin([i for ids in before.values() for i in ids if i % 3 == 0]))
    assert apply_changes(t, matching_positions(t, predicate)) is not None
    expected = {k: [i for i in ids if i % 3 != 0] for k, ids in before.items()}
    assert _bucket_order(t) == expected
    t.compact(full=True)
    t = t.refresh()
    snap = t.latest_snapshot()
    assert snap is not None and len(t.live_entries(snap)) == len(expected)  # one file per bucket
    assert _bucket_order(t) == expected


@pytest.mark.parametrize("dv", ["true", "false"])
def test_concurrent_statements_on_the_same_files_conflict_and_lose_no_rows(
    cat: stratalake.Catalog, dv: str
) -> None:
    t = cat.create_table("db.c", schema=SCHEMA, options={"deletion-vectors.enabled": dv})
    model = [(i, i % 10, "a") for i in range(2_000)]
    # Three files, so that a full compaction (three small files at least) rewrites them below.
    for part in (model[:700], model[700:1_400], model[1_400:]):
        t.write(_table(part))
    # Both statements read the same snapshot; the first to commit wins.
    first = matching_positions(t, _pred(field("g") == 1))
    second = matching_positions(t, _pred(field("g") == 2))
    assert apply_changes(t, first) is not None
    files_before = {p.name for p in Path(t.location).rglob("*") if p.is_file()}
    with pytest.raises(CommitConflictError):
        apply_changes(t, second)
    model = [r for r in model if r[1] != 1]
    assert _sorted(t.read()) == sorted(model)  # the first statement's effect only
    # The loser left no files behind.
    assert {p.name for p in Path(t.location).rglob("*") if p.is_file()} == files_before
    # Re-run on the new snapshot: applies.
    assert apply_changes(t, matching_positions(t, _pred(field("g") == 2))) is not None
    model = [r for r in model if r[1] != 2]
    assert _sorted(t.read()) == sorted(model)
    # A compaction that removed the files makes a statement planned before it conflict too.
    stale = matching_positions(t, _pred(field("g") == 3))
    assert t.compact(full=True) is not None
    with pytest.raises(CommitConflictError):
        apply_changes(t.refresh(), stale)
    assert _sorted(t.refresh().read()) == sorted(model)


def test_deletes_from_several_tasks_merge_per_file(cat: stratalake.Catalog) -> None:
    t = cat.create_table("db.m", schema=SCHEMA, options={"deletion-vectors.enabled": "true"})
    t.write(_table([(i, 0, "a") for i in range(100)]))
    snap = t.latest_snapshot()
    assert snap is not None
    name = t.live_entries(snap)[0].file.file_name
    a, b = RowDeletes(), RowDeletes()
    a.add_batch(pa.array([name] * 3), pa.array([1, 5, 9], pa.int64()), pa.array([snap.id] * 3, pa.int64()))
    b.add_batch(pa.array([name] * 2), pa.array([5, 7], pa.int64()), pa.array([snap.id] * 2, pa.int64()))
    a.merge(b)
    assert np.array_equal(a.by_file()[name], [1, 5, 7, 9])
    apply_changes(t, a)
    assert sorted(t.read().column("id").to_pylist()) == [i for i in range(100) if i not in (1, 5, 7, 9)]
    c = RowDeletes()
    c.add_batch(pa.array([name]), pa.array([2], pa.int64()), pa.array([snap.id + 5], pa.int64()))
    with pytest.raises(CommitConflictError, match="snapshots"):
        a.merge(c)


def test_system_tables_honour_deletion_vectors(cat: stratalake.Catalog) -> None:
    from stratalake.table.system_tables import system_table

    t = cat.create_table(
        "db.s", schema=SCHEMA, partition_keys=["dt"], options={"deletion-vectors.enabled": "true"}
    )
    t.write(_table([(i, i % 3, "x") for i in range(100)]))
    apply_changes(t, matching_positions(t, _pred(field("id") < 30)))
    audit = system_table(t, "audit_log")
    assert audit.num_rows == 70 and set(audit.column("rowkind").to_pylist()) == {"+I"}
    assert sorted(system_table(t, "ro").column("id").to_pylist()) == list(range(30, 100))
    partitions = system_table(t, "partitions").to_pylist()
    assert [(p["record_count"], p["deleted_record_count"]) for p in partitions] == [(100, 30)]


# ---- a DELETE as units (the distributed job's tasks, run here) ---------------------------------


def _disk(t: stratalake.Table) -> set[str]:
    """Data and deletion-vector index files on disk."""
    return {str(p) for p in Path(t.location).rglob("*") if p.is_file() and ("/bucket-" in str(p) or "/index/" in str(p))}


def _three_files_per_partition(cat: stratalake.Catalog, **options: str) -> stratalake.Table:
    t = cat.create_table(
        "db.u", schema=SCHEMA, partition_keys=["dt"], options={"source.split.target-size": "1", **options}
    )
    for step in range(3):
        t.write(_table([(step * 100 + i, i % 5, "ab"[i % 2]) for i in range(100)]))
    return t.refresh()


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}])
def test_units_pack_files_unless_vectors_change_and_commit_once(
    cat: stratalake.Catalog, options: dict[str, str]
) -> None:
    """Copy-on-write: one unit per file here (a tiny split size), several of one bucket, committed
    as one message per bucket; deletion vectors: one unit per bucket."""
    t = _three_files_per_partition(cat, **options)
    predicate = _pred(field("g") == 3)
    units = dml.delete_units(t, predicate)
    assert len(units) == (2 if options else 6)
    expected = [r for r in _sorted(t.read()) if r[1] != 3]
    before = t.latest_snapshot()
    assert before is not None
    assert dml.delete_rows(t, predicate) is not None
    assert _sorted(t.refresh().read()) == expected
    after = t.latest_snapshot()
    assert after is not None and after.id == before.id + 1 and after.commit_kind is CommitKind.OVERWRITE


def test_a_failing_unit_removes_the_files_of_the_others(cat: stratalake.Catalog) -> None:
    t = _three_files_per_partition(cat)
    predicate = _pred(field("g") == 3)
    units = dml.delete_units(t, predicate)
    files, data, snap = _disk(t), _sorted(t.read()), t.latest_snapshot()

    def run(unit: dml.DeleteUnit) -> dml.DeleteResult | None:
        if unit is units[-1]:
            raise OSError("disk full")
        return dml.run_unit(t, unit, dml.unit_positions(t, unit, predicate))

    with pytest.raises(OSError, match="disk full"):
        dml.run_units(t, units, run)
    assert _disk(t) == files and _sorted(t.refresh().read()) == data and t.latest_snapshot() == snap


def test_results_of_two_snapshots_are_refused(cat: stratalake.Catalog) -> None:
    t = _three_files_per_partition(cat)
    predicate = _pred(field("g") == 3)
    files = _disk(t)
    first = dml.delete_units(t, predicate)[0]
    t.write(_table([(1000, 3, "a")]))
    t = t.refresh()
    second = dml.delete_units(t, predicate)[-1]
    results = [dml.run_unit(t, u, dml.unit_positions(t, u, predicate)) for u in (first, second)]
    assert all(r is not None for r in results)
    with pytest.raises(CommitConflictError, match="read snapshots"):
        dml.commit_results(t, [r for r in results if r is not None])
    # Only the new row's file is new on disk: the units' copies are gone.
    assert len(_disk(t) - files) == 1


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}])
def test_a_compaction_between_the_units_and_the_commit_conflicts(
    cat: stratalake.Catalog, options: dict[str, str]
) -> None:
    t = _three_files_per_partition(cat, **options)
    predicate = _pred(field("g") == 3)
    units = dml.delete_units(t, predicate)
    results = dml.run_units(t, units, lambda u: dml.run_unit(t, u, dml.unit_positions(t, u, predicate)))
    assert results
    t.compact(full=True)  # replaces every file the units read
    t = t.refresh()
    files, data, snap = _disk(t), _sorted(t.read()), t.latest_snapshot()
    outputs = {f.file_name for r in results for f in r.message.compact_after}
    outputs |= {e.file_name for r in results for e in r.message.index_files_added}
    assert outputs and outputs <= {Path(p).name for p in files}
    with pytest.raises(CommitConflictError):
        dml.commit_results(t, results)
    # The units' files are known not committed: removed; everything else stays.
    assert _disk(t) == {p for p in files if Path(p).name not in outputs}
    assert _sorted(t.refresh().read()) == data and t.latest_snapshot() == snap
