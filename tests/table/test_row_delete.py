"""DELETE of stored rows on first-row, partial-update and aggregation tables (table/row_delete.py):
the files it writes, deletion vectors, the refusal before compaction, conflicts; read back by
pypaimon 2.1.0 too."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratalake.append.dml import RowDeletes, apply_changes
from stratalake.exceptions import CommitConflictError, UnsupportedError
from stratalake.expressions import field, to_predicate
from stratalake.read.append_read import FILE_COLUMN, POS_COLUMN, SNAPSHOT_COLUMN
from stratalake.spec.manifest import DataFileMeta
from stratalake.table import row_delete
from stratalake.table.table import Table
from tests.interop.paimon_oracle import paimon_read
from tests.lifecycle.helpers import batch, disk_files, make_table, rows

_AGG = {"merge-engine": "aggregation", "fields.v.aggregate-function": "max"}


def _live(t: Table) -> dict[str, tuple[tuple[bytes, int], int, int, int]]:
    """Live data files: name -> ((partition, bucket), level, min sequence, max sequence)."""
    snap = t.latest_snapshot()
    assert snap is not None
    return {
        e.file.file_name: (
            (e.partition, e.bucket),
            e.file.level,
            e.file.min_sequence_number,
            e.file.max_sequence_number,
        )
        for e in t.live_entries(snap)
    }


def _filled(t: Table) -> Table:
    t.write(batch(range(0, 20), "a"))
    t.write(batch(range(10, 30), "b"))
    t.write(batch(range(0, 6), "c", dt="d2"))
    return t


def _delete(t: Table, predicate: object) -> int | None:
    p = to_predicate(predicate)  # type: ignore[arg-type]
    assert p is not None
    return row_delete.delete_stored_rows(t.refresh(), p)


def _paimon_rows(tmp_path: Path, name: str = "t") -> list[tuple[object, ...]]:
    return rows(paimon_read(tmp_path / "wh", f"db.{name}"))


@pytest.mark.parametrize("engine", ["partial-update", "aggregation"])
def test_copies_are_level0_files_keeping_their_sequence(tmp_path: Path, engine: str) -> None:
    options = {"merge-engine": engine} if engine == "partial-update" else _AGG
    t = _filled(make_table(tmp_path, **options))
    t.compact(full=True)
    before = _live(t)
    expected = [
        r for r in rows(t.read()) if not (r[1] == "b12" or r[1] == "b25" or (r[2] == "d2" and r[0] == 3))
    ]
    snap = _delete(
        t, (field("v") == "b12") | (field("v") == "b25") | ((field("dt") == "d2") & (field("id") == 3))
    )
    assert snap is not None and t.refresh().latest_snapshot().commit_kind.value == "OVERWRITE"  # type: ignore[union-attr]
    after = _live(t)
    gone, added = set(before) - set(after), set(after) - set(before)
    assert gone and len(added) == len(gone)  # each touched file has one copy
    replaced = [before[n] for n in gone]
    for name in added:  # level 0 (Paimon's write-only writer), within a replaced file's sequence range
        bucket, level, lo, hi = after[name]
        assert level == 0 and any(o[0] == bucket and o[2] <= lo and hi <= o[3] for o in replaced)
    assert rows(t.read()) == expected
    assert _paimon_rows(tmp_path) == expected


def test_first_row_copies_keep_level_and_sequence(tmp_path: Path) -> None:
    t = _filled(make_table(tmp_path, **{"merge-engine": "first-row"}))
    before = _live(t)
    expected = [r for r in rows(t.read()) if r[0] % 4 != 1]
    assert _delete(t, field("id").isin([i for i in range(30) if i % 4 == 1])) is not None
    after = _live(t)
    old = [v for n, v in before.items() if n not in after]
    new = [v for n, v in after.items() if n not in before]
    assert old and len(new) == len(old)
    for bucket, level, lo, hi in new:  # within a replaced file of its bucket, at its level
        assert level > 0 and any(o[:2] == (bucket, level) and o[2] <= lo and hi <= o[3] for o in old)
    assert rows(t.read()) == expected
    assert _paimon_rows(tmp_path) == expected


@pytest.mark.parametrize("engine", ["partial-update", "aggregation"])
def test_deletion_vectors_mark_rows_without_rewriting(tmp_path: Path, engine: str) -> None:
    options = {"merge-engine": engine} if engine == "partial-update" else _AGG
    t = _filled(make_table(tmp_path, **options, **{"deletion-vectors.enabled": "true"}))
    data_before = set(_live(t))
    expected = [r for r in rows(t.read()) if not (r[0] >= 15 and r[2] == "d1")]
    assert _delete(t, (field("id") >= 15) & (field("dt") == "d1")) is not None
    assert set(_live(t)) == data_before  # no data file written or removed
    snap = t.refresh().latest_snapshot()
    assert snap is not None and snap.commit_kind.value == "OVERWRITE"
    assert rows(t.read()) == expected
    assert _paimon_rows(tmp_path) == expected
    # Rows the vectors removed are not matched again: the same DELETE finds nothing to commit.
    assert _delete(t, (field("id") >= 15) & (field("dt") == "d1")) is None
    assert t.refresh().latest_snapshot() == snap


def test_position_scan_spreads_a_bucket_over_splits(tmp_path: Path) -> None:
    """Files read without a merge are packed by 'source.split.target-size', as Paimon packs
    raw-convertible files: a bucket of several files gives several splits (Spark tasks)."""
    t = make_table(tmp_path, **{"merge-engine": "first-row", "bucket": "1", "source.split.target-size": "1"})
    for i in range(3):
        t.write(batch(range(i * 10, i * 10 + 10), "a"))
    table = t.refresh()
    snap = table.latest_snapshot()
    assert snap is not None
    _, splits = row_delete.position_splits(table, None)
    assert len(splits) == len(table.live_entries(snap)) == 3
    assert all(len(s.files) == 1 and not s.merge for s in splits)
    expected = [r for r in rows(t.read()) if r[0] % 4 != 0]
    assert _delete(t, field("id").isin(list(range(0, 30, 4)))) is not None
    assert rows(t.refresh().read()) == expected
    assert _paimon_rows(tmp_path) == expected


def test_rows_whose_condition_is_null_are_kept(tmp_path: Path) -> None:
    t = make_table(tmp_path, **{"merge-engine": "first-row"})
    t.write(pa.table({"id": [1, 2, 3, 4], "v": ["x", None, "y", None], "dt": ["d1"] * 4}))
    assert _delete(t, field("v") != "x") is not None
    assert rows(t.read()) == [(1, "x", "d1"), (2, None, "d1"), (4, None, "d1")]
    assert _delete(t, field("v") == "nothing") is None  # nothing matched: no snapshot


def test_refused_until_compacted_and_unchanged(tmp_path: Path) -> None:
    t = _filled(make_table(tmp_path, **{"merge-engine": "partial-update"}))
    snap, files, data = t.latest_snapshot(), disk_files(t), rows(t.read())
    with pytest.raises(UnsupportedError) as refused:
        _delete(t, field("v") == "b12")
    message = str(refused.value)
    assert "table db.t" in message and "please use 'COMPACT' procedure first" in message
    assert "CALL sys.compact(table => 'db.t')" in message
    assert t.refresh().latest_snapshot() == snap and disk_files(t) == files and rows(t.read()) == data
    t.compact(full=True)
    assert _delete(t, field("v") == "b12") is not None
    assert rows(t.read()) == [r for r in data if r[1] != "b12"]


def test_first_row_ignore_delete_still_deletes_stored_rows(tmp_path: Path) -> None:
    t = _filled(make_table(tmp_path, **{"merge-engine": "first-row", "ignore-delete": "true"}))
    assert row_delete.deletes_by_rewrite(t)
    assert _delete(t, field("id") < 3) is not None
    assert [r[0] for r in rows(t.read()) if r[0] < 3] == []


def test_a_concurrent_compaction_fails_the_delete(tmp_path: Path) -> None:
    t = _filled(make_table(tmp_path, **{"merge-engine": "partial-update"}))
    t.compact(full=True)
    predicate = to_predicate(field("v") == "b12")
    assert predicate is not None
    # The DELETE reads the latest snapshot and finds its rows...
    deletes = row_delete.matching_positions(t, predicate)
    touched = set(deletes.positions)
    assert len(touched) == 1
    # ...while another writer upserts the row and compacts its bucket, replacing the touched file.
    t.write(batch([12], "z"))
    t.compact(full=True)
    assert not touched & set(_live(t))
    files = disk_files(t)
    with pytest.raises(CommitConflictError, match="removed by a concurrent commit"):
        apply_changes(t.refresh(), deletes, rewrite=row_delete._rewriter(t))
    assert (12, "z12", "d1") in rows(t.read())  # the newer row stays
    assert disk_files(t) == files  # the copy written for the failed commit is gone


def test_change_readers_skip_the_delete_snapshot(tmp_path: Path) -> None:
    """A DELETE's snapshot is an OVERWRITE: Paimon's incremental delta reads (and streaming
    reads) skip it (IncrementalDeltaStartingScanner, DeltaFollowUpScanner); the audit log shows
    the remaining rows."""
    t = _filled(make_table(tmp_path, **_AGG, **{"deletion-vectors.enabled": "true"}))
    before = t.latest_snapshot()
    assert before is not None
    after = _delete(t, field("id") < 5)
    assert after is not None
    assert t.refresh().read_incremental(before.id, after, mode="delta").num_rows == 0
    audit = t.audit_log()
    assert set(audit.column("rowkind").to_pylist()) == {"+I"}
    assert sorted(audit.drop_columns(["rowkind"]).column("id").to_pylist()) == sorted(
        t.read().column("id").to_pylist()
    )


_VALUES = st.one_of(st.none(), st.sampled_from(["x", "y", "z"]))
_UPSERTS = st.lists(
    st.tuples(st.integers(0, 15), _VALUES, st.sampled_from(["d1", "d2"])), min_size=1, max_size=20
)
_CONDITIONS = st.one_of(
    st.sampled_from(["x", "y"]).map(lambda v: ("v =", v)),
    st.frozensets(st.integers(0, 15), max_size=4).map(lambda ids: ("id in", ids)),
    st.integers(0, 15).map(lambda i: ("id <", i)),
    st.just(("v is null", None)),
)


def _predicate(kind: str, arg: object) -> object:
    if kind == "v =":
        return field("v") == arg
    if kind == "id in":
        return field("id").isin(sorted(arg))  # type: ignore[call-overload]
    if kind == "id <":
        return field("id") < arg
    return field("v").is_null()


def _matches(kind: str, arg: object, key: tuple[int, str], v: str | None) -> bool:
    if kind == "v =":
        return v == arg  # NULL is not a match
    if kind == "id in":
        return key[0] in arg  # type: ignore[operator]
    if kind == "id <":
        return key[0] < arg  # type: ignore[operator]
    return v is None


def _delete_by_position(t: Table, predicate: object) -> int | None:
    """The DELETE of Spark's row-level plan (tests/spark/test_delete_merge_engines.py runs it
    through Spark): the position scan of every candidate bucket, the condition evaluated on the
    rows it emits, the matching rows' ids handed back to the commit."""
    p = to_predicate(predicate)  # type: ignore[arg-type]
    assert p is not None
    table = t.refresh()
    deletes = RowDeletes()
    for split in row_delete.position_splits(table, None)[1]:
        for found in row_delete.rows_with_positions(table, split, ["id", "v", "dt"], None):
            hit = found.filter(p.to_arrow())
            deletes.add_batch(hit.column(FILE_COLUMN), hit.column(POS_COLUMN), hit.column(SNAPSHOT_COLUMN))
    return row_delete.delete_positions(table, deletes)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    engine=st.sampled_from(["first-row", "partial-update", "partial-update-dv"]),
    writes=st.lists(_UPSERTS, min_size=1, max_size=3),
    deletes=st.lists(_CONDITIONS, min_size=1, max_size=3),
    by_position=st.booleans(),
)
def test_deletes_follow_a_model(
    tmp_path_factory: pytest.TempPathFactory,
    engine: str,
    writes: list[list[tuple[int, str | None, str]]],
    deletes: list[tuple[str, object]],
    by_position: bool,
) -> None:
    """Upserts, then DELETEs (compacting when refused), by predicates or by position: the table
    reads as a model of the merge engine without the rows each condition was true for, in
    stratalake and in pypaimon; a DELETE matching no live row commits nothing."""
    delete = _delete_by_position if by_position else _delete
    tmp_path = tmp_path_factory.mktemp("model")
    options = {"merge-engine": engine.removesuffix("-dv")}
    if engine.endswith("-dv"):
        options["deletion-vectors.enabled"] = "true"
    t = make_table(tmp_path, **options)
    model: dict[tuple[int, str], str | None] = {}
    for rows_ in writes:
        t.write(
            pa.table({"id": [r[0] for r in rows_], "v": [r[1] for r in rows_], "dt": [r[2] for r in rows_]})
        )
        for i, v, dt in rows_:
            key = (i, dt)
            if engine == "first-row":
                model.setdefault(key, v)
            else:
                model[key] = v if v is not None else model.get(key)
    for kind, arg in deletes:
        try:
            snap = delete(t, _predicate(kind, arg))
        except UnsupportedError as e:
            assert "please use 'COMPACT' procedure first" in str(e) and engine == "partial-update"
            t.refresh().compact(full=True)
            snap = delete(t, _predicate(kind, arg))
        kept = {k: v for k, v in model.items() if not _matches(kind, arg, k, v)}
        assert (snap is None) == (kept == model)
        model = kept

    def by_key(table: pa.Table) -> list[tuple[object, ...]]:  # v may be NULL: sort by the key alone
        return sorted((tuple(r.values()) for r in table.to_pylist()), key=lambda r: (r[0], r[2]))

    expected = sorted(((k[0], v, k[1]) for k, v in model.items()), key=lambda r: (r[0], r[2]))
    assert by_key(t.refresh().read()) == expected
    assert by_key(paimon_read(tmp_path / "wh", "db.t")) == expected


@pytest.mark.parametrize("engine", ["partial-update", "aggregation"])
def test_a_concurrent_upsert_wins_over_the_copy(tmp_path: Path, engine: str) -> None:
    """Rows copied by a DELETE keep their sequence numbers: an upsert committed while the DELETE
    ran (into the file it rewrites) stays newer than the copy of the row it replaced."""
    options = {"merge-engine": engine} if engine == "partial-update" else _AGG
    t = _filled(make_table(tmp_path, **options))
    t.compact(full=True)
    predicate = to_predicate(field("v") == "b12")
    assert predicate is not None
    deletes = row_delete.matching_positions(t, predicate)
    t.write(batch([i for i in range(30) if i != 12], "zz"))  # keys of the rewritten file among them
    assert apply_changes(t.refresh(), deletes, rewrite=row_delete._rewriter(t)) is not None
    got = {r[0]: r[1] for r in rows(t.refresh().read()) if r[2] == "d1"}
    assert got == {i: f"zz{i}" for i in range(30) if i != 12}


def test_which_buckets_need_no_merge() -> None:
    """Paimon's MergeTreeSplitGenerator.splitForBatch, as the DELETE applies it to a bucket's
    candidate files."""

    def f(level: int, deletes: int | None = 0) -> DataFileMeta:
        return DataFileMeta(
            file_name=f"f{level}",
            file_size=1,
            row_count=1,
            min_key=b"",
            max_key=b"",
            key_stats=None,  # type: ignore[arg-type]
            value_stats=None,  # type: ignore[arg-type]
            min_sequence_number=0,
            max_sequence_number=0,
            schema_id=0,
            level=level,
            delete_row_count=deletes,
        )

    assert row_delete.needs_no_merge([f(5), f(5)], always_raw=False)  # one level, no retraction
    assert not row_delete.needs_no_merge([f(3), f(5)], always_raw=False)  # two levels must merge
    assert row_delete.needs_no_merge([f(3), f(5)], always_raw=True)  # deletion vectors, first-row
    assert not row_delete.needs_no_merge([f(0), f(5)], always_raw=True)  # level 0 always merges
    assert row_delete.needs_no_merge([f(0)], always_raw=False)  # a single file reads as it is
    assert not row_delete.needs_no_merge([f(0, deletes=1)], always_raw=True)  # ...unless it retracts
    assert not row_delete.needs_no_merge([f(5, deletes=None)], always_raw=True)  # unknown: Paimon merges
