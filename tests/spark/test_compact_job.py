"""``CALL sys.compact`` runs one Spark task per bucket; the procedure commits the results it
received. The files of every task attempt whose result is not committed (a retried or speculative
attempt, every attempt of a failed job, an attempt still running when its job ended) are deleted
when the job ends (``spark/job_attempts.py``)."""

from __future__ import annotations

import base64
import pickle
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import stratalake
from tests.spark.unit_jobs import ATTEMPT_POINTS, end_the_job_at, run_in_group

pytestmark = pytest.mark.spark

# Table kinds whose compaction writes different files: data files only; data, changelog and
# deletion-vector index files; an append table's merged small files.
KINDS = {
    "primary key": {"primary_keys": ["id", "p"], "options": {"num-sorted-run.compaction-trigger": "100"}},
    "lookup, deletion vectors": {
        "primary_keys": ["id", "p"],
        "options": {"changelog-producer": "lookup", "deletion-vectors.enabled": "true"},
        "strategy": "minor",
    },
    "append": {"primary_keys": [], "options": {"bucket": "-1"}},
}
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string()), pa.field("p", pa.string(), nullable=False)])


def _files(root: str) -> set[str]:
    return {str(f) for f in Path(root).rglob("*") if f.is_file()}


def _table(tmp_path: Path, kind: str) -> stratalake.Table:
    """Two partitions of one bucket each, three files per bucket, the later ones updating keys."""
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    spec = KINDS[kind]
    options = {"bucket": "1", **spec["options"]}
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=spec["primary_keys"] or None, partition_keys=["p"], options=options)
    for step in range(3):
        ids = list(range(step * 5, step * 5 + 20))
        # The last write leaves its level-0 files to the compaction (a lookup table's moves them
        # up, writing changelog files and deletion vectors of the rows they replace).
        writer = (t if step < 2 else t.copy({"write-only": "true"})).new_write()
        writer.write(pa.table({"id": ids, "v": [f"v{step}"] * len(ids), "p": ["a", "b"] * (len(ids) // 2)}, schema=SCHEMA))
        t.new_commit().commit(writer.prepare_commit())
    return t.refresh()


def _rows(kind: str) -> list[dict[str, Any]]:
    """What the table holds once compacted (a deletion-vector table's reads skip level 0 before)."""
    written = [
        {"id": i, "v": f"v{step}", "p": "ab"[n % 2]} for step in range(3) for n, i in enumerate(range(step * 5, step * 5 + 20))
    ]
    if KINDS[kind]["primary_keys"]:
        written = list({(r["id"], r["p"]): r for r in written}.values())  # the last write of a key wins
    return sorted(written, key=lambda r: (r["p"], r["id"], r["v"]))


def _first_call(tmp_path: Path, kind: str) -> tuple[dict[str, str], str]:
    from stratalake.spark import procedures

    source = {"warehouse": str(tmp_path / "wh"), "table": "db.t"}
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    answer = procedures._compact(cat, _args(kind), {"source_options_of": lambda _: dict(source)})
    return answer["job"]["options"], answer["state"]["staging"]


def _args(kind: str) -> dict[str, Any]:
    return {"table": "db.t", "compact_strategy": KINDS[kind].get("strategy", "full")}


def _attempts(options: dict[str, str]) -> list[str]:
    """One attempt of every task, as Spark's collect returns their results (base64)."""
    from stratalake.spark.procedures import CompactJobReader

    reader = CompactJobReader(options)
    out = []
    for part in reader.partitions():
        for batch in reader.read(part):
            out += [base64.b64encode(b).decode() for b in batch.column(0).to_pylist()]
    return out


def _second_call(tmp_path: Path, kind: str, state: dict[str, Any]) -> Any:
    from stratalake.spark import procedures

    return procedures._compact(stratalake.Catalog(str(tmp_path / "wh")), _args(kind), state)


def _committed_files(t: stratalake.Table, results: list[str]) -> set[str]:
    """The names of every file the committed results added (data, changelog, index; an upgraded
    level-0 file keeps its name)."""
    names = set()
    for r in results:
        _, m = pickle.loads(base64.b64decode(r))
        names |= {f.file_name for f in (*m.compact_after, *m.compact_changelog_files)}
        names |= {e.file_name for e in m.index_files_added}
    return names


@pytest.mark.parametrize("kind", list(KINDS))
def test_attempts_whose_results_are_not_committed_leave_no_file(tmp_path: Path, kind: str) -> None:
    """Every task ran twice (a retry after a lost result, a speculative twin): the procedure
    commits one result per bucket and deletes the other attempts' files and the staging
    directory. The files the compaction added are exactly the committed ones."""
    t = _table(tmp_path, kind)
    before = _files(t.location)
    options, staging = _first_call(tmp_path, kind)
    lost = _attempts(options)
    results = _attempts(options)
    assert len(results) == len(lost) == 2  # one bucket in each of the two partitions
    # Both attempts wrote every kind of file the table's compaction writes.
    written = {Path(f).name.split("-")[0] for f in _files(t.location) - before if ".stratalake-staging" not in f}
    assert written == {"primary key": {"data"}, "lookup, deletion vectors": {"changelog", "index"}, "append": {"data"}}[kind]
    assert _second_call(tmp_path, kind, {"job_results": results, "staging": staging})["rows"] == [[True]]
    t = t.refresh()
    assert sorted(t.read().to_pylist(), key=lambda r: (r["p"], r["id"], r["v"])) == _rows(kind)
    new = {Path(f).name for f in _files(t.location) - before}
    # Besides the committed files, only the commit's own metadata (snapshot, manifests, hints).
    metadata = {n for n in new if n.startswith(("snapshot-", "manifest", "index-manifest-", "EARLIEST", "LATEST"))}
    assert new - metadata == _committed_files(t, results) - {Path(f).name for f in before}
    assert not Path(staging).exists()


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_failed_job_is_aborted_and_its_attempts_files_deleted(tmp_path: Path, kind: str) -> None:
    """The job failed after some tasks wrote: the shim calls again with ``abort``; nothing is
    committed and every attempt's file and the staging directory go."""
    t = _table(tmp_path, kind)
    snap = t.latest_snapshot()
    before = _files(t.location)
    options, staging = _first_call(tmp_path, kind)
    assert len(_attempts(options)) == 2
    _second_call(tmp_path, kind, {"staging": staging, "job_aborted": True})  # as the bridge passes it
    assert t.refresh().latest_snapshot() == snap
    assert _files(t.location) == before


@pytest.mark.parametrize("point", ATTEMPT_POINTS)
@pytest.mark.parametrize("outcome", ["abort", "commit"])
def test_an_attempt_still_running_when_the_job_ends_deletes_its_own_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str, outcome: str
) -> None:
    """A killed task's Python worker may finish its bucket after the job ended (or a
    speculative twin after the commit): it deletes its own files and fails."""
    from stratalake.spark import procedures

    kind = "lookup, deletion vectors"
    t = _table(tmp_path, kind)
    snap = t.latest_snapshot()
    before = _files(t.location)
    options, staging = _first_call(tmp_path, kind)
    reader = procedures.CompactJobReader(options)
    late = reader.partitions()[0]
    results = _attempts(options) if outcome == "commit" else None

    def end_the_job() -> None:
        if outcome == "abort":
            _second_call(tmp_path, kind, {"staging": staging, "job_aborted": True})
        else:
            _second_call(tmp_path, kind, {"job_results": results, "staging": staging})

    end_the_job_at(monkeypatch, procedures, "run_task", point, end_the_job)
    with pytest.raises(RuntimeError, match="ended before this task attempt finished"):
        list(reader.read(late))
    monkeypatch.undo()
    assert not Path(staging).exists()
    t = t.refresh()
    if outcome == "abort":
        assert t.latest_snapshot() == snap
        assert _files(t.location) == before
    else:
        assert results is not None
        new = {Path(f).name for f in _files(t.location) - before}
        metadata = {n for n in new if n.startswith(("snapshot-", "manifest", "index-manifest-", "EARLIEST", "LATEST"))}
        assert new - metadata == _committed_files(t, results) - {Path(f).name for f in before}


@pytest.mark.parametrize("outcome", ["abort", "commit"])
def test_compact_database_cleans_up_after_each_tables_job(tmp_path: Path, outcome: str) -> None:
    """compact_database runs one job per table, the procedure called again after each: the
    staging directory of the table whose job ran travels in the procedure's state, so a commit
    deletes its lost attempts' files and an abort (the shim then raises the job's error) every
    attempt's files."""
    from stratalake.spark import procedures

    kind = "lookup, deletion vectors"
    t = _table(tmp_path, kind)
    snap = t.latest_snapshot()
    before = _files(t.location)
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    source = {"warehouse": str(tmp_path / "wh"), "table": "db.t"}
    first = procedures._compact_database(cat, {}, {"source_options_of": lambda _: dict(source)})
    state = dict(first["state"])
    lost = _attempts(first["job"]["options"])
    results = _attempts(first["job"]["options"])
    assert len(results) == len(lost) == 2
    if outcome == "abort":
        answer = procedures._compact_database(cat, {}, {**state, "job_aborted": True})
        assert answer["rows"] == [["aborted"]]
        assert t.refresh().latest_snapshot() == snap
        assert _files(t.location) == before
    else:
        answer = procedures._compact_database(cat, {}, {**state, "job_results": results})
        assert answer["rows"] == [["Compact database finished. Success: 1, Failed: 0"]]
        new = {Path(f).name for f in _files(t.location) - before}
        metadata = {n for n in new if n.startswith(("snapshot-", "manifest", "index-manifest-", "EARLIEST", "LATEST"))}
        assert new - metadata == _committed_files(t, results) - {Path(f).name for f in before}
    assert not (Path(t.location) / ".stratalake-staging").exists() or not any(
        (Path(t.location) / ".stratalake-staging").iterdir()
    )


def test_a_staging_directory_from_the_shim_must_be_the_tables(tmp_path: Path) -> None:
    kind = "primary key"
    t = _table(tmp_path, kind)
    with pytest.raises(ValueError, match="not one of its staging directories"):
        _second_call(tmp_path, kind, {"staging": str(tmp_path), "job_aborted": True})
    assert tmp_path.exists() and t.refresh().latest_snapshot() is not None


@pytest.mark.parametrize("kind", ["primary key", "lookup, deletion vectors"])
def test_a_failed_compaction_job_leaves_no_file(spark: Any, db: str, warehouse: Path, kind: str) -> None:
    """One bucket's task fails (a data file of the table went missing from the store) after the
    other buckets' tasks wrote their files: the procedure fails, nothing is committed, and the
    table's directory is as before (before, the finished tasks' files stayed as orphans)."""
    name = "broken_lookup" if "lookup" in kind else "broken_pk"
    t = f"{db}.{name}"
    # Writers leave their files at level 0: the compaction job reads every bucket's files.
    options = {"bucket": "1", "write-only": "true", **KINDS[kind]["options"]}
    props = ", ".join(f"'{k}' = '{v}'" for k, v in options.items())
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT NOT NULL, v STRING, p INT NOT NULL, PRIMARY KEY (id, p) NOT ENFORCED) "
        f"PARTITIONED BY (p) TBLPROPERTIES ({props})"
    )
    for step in range(3):  # three files in each of the four partitions
        spark.sql(f"INSERT INTO {t} SELECT id, 'v{step}', CAST(id % 4 AS INT) FROM range({step * 500}, {step * 500 + 2000}, 1, 1)")
    table = stratalake.Catalog(str(warehouse)).get_table(f"{db.split('.', 1)[1]}.{name}")
    snap = table.latest_snapshot()
    assert snap is not None
    root = Path(table.location)
    # The last partition's task fails; the other three tasks run before it or beside it.
    live = sorted(e.file.file_name for e in table.live_entries(snap) if e.partition == table.partition_codec.to_bytes((3,)))
    lost = root / "p=3" / "bucket-0" / live[0]
    lost.unlink()
    before = _files(table.location)
    group = f"compact-{db}-{name}"
    with pytest.raises(Exception, match=lost.name):
        run_in_group(spark, group, f"CALL lake.sys.compact(table => '{db.split('.', 1)[1]}.{name}')")
    assert table.refresh().latest_snapshot() == snap
    assert _files(table.location) == before
    time.sleep(1)  # nothing of the job still writes
    assert _files(table.location) == before


@pytest.mark.parametrize("fault", ["after the snapshot is published", "outcome unknown"])
def test_a_commit_that_may_have_landed_keeps_the_committed_attempts_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    """The procedure's commit fails after the COMPACT snapshot was published, or with an unknown
    outcome: the committed attempts' files stay (the snapshot may reference them), and only the
    lost attempts' files go."""
    from stratalake.exceptions import CommitStateUnknownError
    from stratalake.operation.commit.protocol import TableCommit

    kind = "lookup, deletion vectors"
    t = _table(tmp_path, kind)
    snap = t.latest_snapshot()
    assert snap is not None
    before = _files(t.location)
    options, staging = _first_call(tmp_path, kind)
    lost = _attempts(options)
    results = _attempts(options)
    if fault == "after the snapshot is published":

        def report(self: Any, msgs: Any) -> None:
            raise OSError("a step after the commit failed")

        monkeypatch.setattr(TableCommit, "_report_partitions", report)
    else:

        def unknown(self: Any, *args: Any) -> Any:
            raise CommitStateUnknownError("the snapshot's create was not answered")

        monkeypatch.setattr(TableCommit, "_commit", unknown)
    with pytest.raises((OSError, CommitStateUnknownError)):
        _second_call(tmp_path, kind, {"job_results": results, "staging": staging})
    monkeypatch.undo()
    names = {Path(f).name for f in _files(t.location)}
    committed = _committed_files(t, results)
    assert committed <= names  # kept: a published (or maybe published) snapshot references them
    old = {Path(f).name for f in before}
    assert _committed_files(t, lost) - old  # the lost attempts wrote files of their own ...
    assert not (_committed_files(t, lost) - old) & names  # ... which went
    assert not Path(staging).exists()
    latest = t.refresh().latest_snapshot()
    assert latest is not None
    if fault == "after the snapshot is published":
        assert latest.id == snap.id + 1
        assert sorted(t.refresh().read().to_pylist(), key=lambda r: (r["p"], r["id"], r["v"])) == _rows(kind)
    else:
        assert latest == snap and old <= names
