"""A DELETE the table evaluates itself (column-vs-literal conditions on append tables and on
primary-key tables that remove stored rows) runs as a distributed Spark job: one task per unit of
candidate files, each finding and rewriting its rows, one commit on the driver."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import stratalake
from stratalake.expressions import field
from stratalake.spark.delete_job import condition
from stratalake.table.row_delete import delete_units
from tests.spark.unit_jobs import ATTEMPT_POINTS, end_the_job_at, run_in_group, unit_job_tasks

pytestmark = pytest.mark.spark


def _ids(spark: Any, t: str) -> list[int]:
    return [r[0] for r in spark.sql(f"SELECT id FROM {t} ORDER BY id").collect()]


@pytest.mark.parametrize(
    ("options", "units"),
    [
        # copy-on-write: each partition's files packed by the (tiny) split size, one file a unit
        ("'source.split.target-size' = '1'", 12),
        # deletion vectors: one unit per bucket (its vectors have one writer)
        ("'deletion-vectors.enabled' = 'true', 'source.split.target-size' = '1'", 4),
    ],
)
def test_a_pushed_down_delete_runs_in_spark_tasks(
    spark: Any, db: str, warehouse: Path, options: str, units: int
) -> None:
    t = f"{db}.events"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, p INT, v BIGINT) PARTITIONED BY (p) TBLPROPERTIES ({options})")
    for step in range(3):  # three files in each of the four partitions
        spark.sql(
            f"INSERT INTO {t} SELECT id, CAST(id % 4 AS INT), id FROM range({step * 1000}, {step * 1000 + 1000}, 1, 1)"
        )
    table = stratalake.Catalog(str(warehouse)).get_table(f"{db.split('.', 1)[1]}.events")
    snap = table.latest_snapshot()
    assert snap is not None and len(table.live_entries(snap)) == 12
    expected = [i for i in range(3000) if not (i % 7 == 0 or i < 10)]
    # The units the job's driver side plans: every file may hold a matching row.
    assert len(delete_units(table, field("id").isin(list(range(0, 3000, 7))) | (field("id") < 10))) == units
    # A condition the statistics prune: only the first insert's files.
    json_predicates = [{"name": "<", "children": [{"ref": "id"}, {"literal": "10", "type": "long"}]}]
    assert len(delete_units(table, condition(table, json_predicates))) == 4
    group = f"delete-{db}-{units}"
    # A condition the table evaluates: IN and OR of column-vs-literal comparisons.
    sevens = ", ".join(str(i) for i in range(0, 3000, 7))
    run_in_group(spark, group, f"DELETE FROM {t} WHERE id IN ({sevens}) OR id < 10")
    tasks = unit_job_tasks(spark, group)
    assert tasks == [units], f"a Spark stage of one task per unit ({units}), got stages of {tasks}"
    assert _ids(spark, t) == expected
    after = table.refresh().latest_snapshot()
    assert after is not None and after.id == snap.id + 1 and after.commit_kind == "OVERWRITE"
    assert not list((Path(table.location) / ".stratalake-staging").glob("*"))  # the job's staging is gone


def test_an_update_rewrites_copy_on_write_files_in_spark_tasks(spark: Any, db: str, warehouse: Path) -> None:
    """Spark's row-level plan finds the rows; the touched files are then rewritten by a second
    job, one task per unit, and committed with the updated rows as one snapshot."""
    t = f"{db}.cow"
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, p INT, v BIGINT) PARTITIONED BY (p) TBLPROPERTIES ('source.split.target-size' = '1')"
    )
    for step in range(2):
        spark.sql(
            f"INSERT INTO {t} SELECT id, CAST(id % 3 AS INT), id FROM range({step * 900}, {step * 900 + 900}, 1, 1)"
        )
    table = stratalake.Catalog(str(warehouse)).get_table(f"{db.split('.', 1)[1]}.cow")
    snap = table.latest_snapshot()
    assert snap is not None and len(table.live_entries(snap)) == 6
    group = f"update-{db}"
    run_in_group(
        spark, group, f"UPDATE {t} SET v = -v WHERE v % 10 = 3"
    )  # not a condition the table evaluates
    assert unit_job_tasks(spark, group) == [6]  # the rewrite job: one task per touched file
    rows = spark.sql(f"SELECT id, v FROM {t} ORDER BY id").collect()
    assert [(r[0], r[1]) for r in rows] == [(i, -i if i % 10 == 3 else i) for i in range(1800)]
    after = table.refresh().latest_snapshot()
    assert after is not None and after.id == snap.id + 1
    assert not list((Path(table.location) / ".stratalake-staging").glob("*"))


def test_a_delete_of_one_splits_worth_runs_where_it_commits(spark: Any, db: str) -> None:
    """Files that fit one split ('source.split.target-size', default 128 MB) are one task's work:
    the bridge does it, without a job's start-up."""
    t = f"{db}.small"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, p INT) PARTITIONED BY (p)")
    spark.sql(f"INSERT INTO {t} SELECT id, CAST(id % 4 AS INT) FROM range(0, 1000)")
    group = f"small-{db}"
    run_in_group(
        spark,
        group,
        f"DELETE FROM {t} WHERE id IN (1, 2, 3, 500)",
        f"UPDATE {t} SET id = -id WHERE id % 100 = 7",
    )
    assert unit_job_tasks(spark, group) == []  # no job of units
    ids = sorted(-i if i < 0 else i for i in _ids(spark, t))
    assert ids == [i for i in range(1000) if i not in (1, 2, 3, 500)]


def test_a_pushed_down_delete_matching_nothing_commits_nothing(spark: Any, db: str, warehouse: Path) -> None:
    t = f"{db}.e"
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    table = stratalake.Catalog(str(warehouse)).get_table(f"{db.split('.', 1)[1]}.e")
    before = table.latest_snapshot()
    spark.sql(f"DELETE FROM {t} WHERE v = 'zzz'")  # statistics may not prune: the task finds no row
    spark.sql(f"DELETE FROM {t} WHERE id > 100")  # statistics prune every file: no unit at all
    assert table.refresh().latest_snapshot() == before
    assert _ids(spark, t) == [1, 2]


def test_a_first_row_delete_runs_in_spark_tasks(spark: Any, db: str) -> None:
    """Primary-key tables whose DELETE removes stored rows ('rows' plan) use the same job."""
    t = f"{db}.fr"
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, v STRING) TBLPROPERTIES ('primary-key' = 'id', 'bucket' = '3', "
        "'merge-engine' = 'first-row', 'source.split.target-size' = '1')"
    )
    spark.sql(f"INSERT INTO {t} SELECT id, CAST(id AS STRING) FROM range(0, 300)")
    spark.sql(f"INSERT INTO {t} SELECT id, 'late' FROM range(0, 400)")  # first row wins for 0..299
    spark.sql(f"CALL lake.sys.compact(table => '{t.removeprefix('lake.')}')")
    group = f"delete-{db}-fr"
    run_in_group(spark, group, f"DELETE FROM {t} WHERE v = 'late' OR id < 5")
    assert unit_job_tasks(spark, group) == [3]  # one unit per bucket
    rows = spark.sql(f"SELECT id, v FROM {t} ORDER BY id").collect()
    assert [(r[0], r[1]) for r in rows] == [(i, str(i)) for i in range(5, 300)]


# ---- the commit protocol of Spark's row-level plan (the shim's three calls), in this process ----


def _messages(t: stratalake.Table, deletes: Any, inserts: list[Any]) -> list[str]:
    """What the shim sends: the write tasks' pickled messages, base64."""
    import base64
    import pickle

    from stratalake.spark.source import StrataLakeCommitMessage

    return [base64.b64encode(pickle.dumps(StrataLakeCommitMessage(inserts, deletes))).decode()]


def _cow_statement(tmp_path: Path) -> tuple[stratalake.Table, list[str], set[str]]:
    """An UPDATE of a copy-on-write append table as its write tasks leave it: the positions of
    the updated rows (in six files) and the new rows, written."""
    import pyarrow as pa

    from stratalake.append.dml import matching_positions

    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    t = cat.create_table(
        "db.t", schema=schema, partition_keys=["p"], options={"source.split.target-size": "1"}
    )
    for step in range(3):
        t.write(pa.table({"id": list(range(step * 10, step * 10 + 10)), "p": ["a", "b"] * 5}, schema=schema))
    t = t.refresh()
    before = {str(f) for f in Path(t.location).rglob("*") if f.is_file()}
    deletes = matching_positions(t, field("id") < 25)
    writer = t.new_write()
    writer.compact = False  # type: ignore[attr-defined]
    writer.write(pa.table({"id": list(range(100, 125)), "p": ["a"] * 25}, schema=schema))
    return t, _messages(t, deletes, writer.prepare_commit()), before


def _run_job(options: dict[str, str]) -> list[str]:
    import base64

    from stratalake.spark.delete_job import StagedUnitsReader

    reader = StagedUnitsReader(options)
    out = []
    for part in reader.partitions():
        for batch in reader.read(part):
            out += [base64.b64encode(b).decode() for b in batch.column(0).to_pylist()]
    return out


def test_row_level_copy_on_write_commits_after_its_job(tmp_path: Path) -> None:
    """The first call stages one unit per touched file and asks for the job; a task attempt
    that lost (a retry) leaves files that the final call deletes with the staging directory."""
    from stratalake.spark.delete_job import row_level_commit

    t, messages, before = _cow_statement(tmp_path)
    options = {"warehouse": str(tmp_path / "wh"), "table": "db.t"}
    snap, job, state = row_level_commit(t, messages, None, None, False, options)
    assert snap is None and job is not None and state is not None
    assert len([p for p in Path(state).iterdir() if p.name.startswith("unit-")]) == 6  # six touched files
    lost = _run_job(job)  # an attempt whose results Spark dropped (a failed or speculative twin)
    results = _run_job(job)
    assert len(results) == len(lost) == 6
    snap, job2, _ = row_level_commit(t, messages, results, state, False, {})
    assert snap is not None and job2 is None
    assert not Path(state).exists()
    got = sorted(t.refresh().read().column("id").to_pylist())
    assert got == list(range(25, 30)) + list(range(100, 125))
    new = {str(f) for f in Path(t.location).rglob("*") if f.is_file() and f.suffix == ".parquet"} - before
    # The kept attempt's copies (of the two files that keep rows, ids 25..29) and the inserted
    # rows' file: the lost attempt's two copies are gone.
    assert len(new) == 2 + 1


def test_a_failed_rewrite_job_leaves_the_table_and_its_directory_unchanged(tmp_path: Path) -> None:
    """The shim's abort call after a failed job: nothing was committed, so the staged units, the
    files of the tasks that ran and the statement's inserted files go; the table is as before."""
    from stratalake.spark.delete_job import row_level_commit

    t, messages, before = _cow_statement(tmp_path)
    snap = t.latest_snapshot()
    _, job, state = row_level_commit(
        t, messages, None, None, False, {"warehouse": str(tmp_path / "wh"), "table": "db.t"}
    )
    assert job is not None and state is not None
    _run_job(job)  # the tasks ran and wrote copies; the job then failed as a whole
    assert row_level_commit(t, messages, None, state, True, {}) == (None, None, None)
    assert t.refresh().latest_snapshot() == snap
    assert {str(f) for f in Path(t.location).rglob("*") if f.is_file()} == before


@pytest.mark.parametrize("point", ATTEMPT_POINTS)
@pytest.mark.parametrize("outcome", ["abort", "commit"])
def test_an_attempt_still_running_when_the_job_ends_deletes_its_own_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str, outcome: str
) -> None:
    """Spark fails a job when one task fails and kills the others without waiting for them: a
    killed task's Python worker finishes its unit after the driver's abort (or a speculative
    twin after the commit) has cleaned up. Whenever the job ends, the late attempt leaves no
    file: the table's directory is as the job's outcome left it."""
    import stratalake.spark.delete_job as dj

    t, messages, before = _cow_statement(tmp_path)
    snap = t.latest_snapshot()
    _, job, state = dj.row_level_commit(
        t, messages, None, None, False, {"warehouse": str(tmp_path / "wh"), "table": "db.t"}
    )
    assert job is not None and state is not None
    reader = dj.StagedUnitsReader(job)
    late = reader.partitions()[0]
    results = _run_job(job) if outcome == "commit" else []

    def end_the_job() -> None:
        if outcome == "abort":
            assert dj.row_level_commit(t, messages, None, state, True, {}) == (None, None, None)
        else:
            committed, _, _ = dj.row_level_commit(t, messages, results, state, False, {})
            assert committed is not None

    end_the_job_at(monkeypatch, dj, "_run_staged", point, end_the_job)
    with pytest.raises(RuntimeError, match="ended before this task attempt finished"):
        list(reader.read(late))
    monkeypatch.undo()
    after = {str(f) for f in Path(t.location).rglob("*") if f.is_file()}
    assert not Path(state).exists()
    if outcome == "abort":
        assert t.refresh().latest_snapshot() == snap
        assert after == before
    else:  # the new files are exactly the committed ones: the late twin's copy is gone
        t = t.refresh()
        snap = t.latest_snapshot()
        assert snap is not None
        live = {e.file.file_name for e in t.live_entries(snap)}
        new = {Path(f).name for f in after - before if f.endswith(".parquet")}
        assert new == live - {Path(f).name for f in before}
        assert len(new) == 2 + 1  # the copies of the two files that keep rows, the inserted rows


@pytest.mark.parametrize("outcome", ["abort", "commit"])
@pytest.mark.parametrize("seed", range(12))
def test_attempts_racing_the_end_of_their_job_leave_no_file(tmp_path: Path, seed: int, outcome: str) -> None:
    """The same protocol under real concurrency: every unit's attempt runs in a thread (each
    starting after a random pause) while the abort, or the commit of an earlier round of
    attempts, runs after another. Once all have returned, the new files are exactly the
    committed ones (none after an abort), whichever attempts finished first."""
    import random
    import threading

    import stratalake.spark.delete_job as dj

    t, messages, before = _cow_statement(tmp_path)
    snap = t.latest_snapshot()
    _, job, state = dj.row_level_commit(
        t, messages, None, None, False, {"warehouse": str(tmp_path / "wh"), "table": "db.t"}
    )
    assert job is not None and state is not None
    results = _run_job(job) if outcome == "commit" else None  # the round Spark kept
    reader = dj.StagedUnitsReader(job)
    parts = reader.partitions()
    rng = random.Random(seed)
    # Around the time an attempt takes here (a few ms), so the job ends before, inside and after
    # attempts.
    pauses = [rng.uniform(0, 0.02) for _ in parts] + [rng.uniform(0.002, 0.012)]
    outcomes: list[str] = []

    def attempt(part: Any, pause: float) -> None:
        time.sleep(pause)
        try:
            outcomes.append("wrote" if list(reader.read(part)) else "empty")
        except RuntimeError as e:
            outcomes.append("ended" if "ended before this task attempt finished" in str(e) else repr(e))
        except OSError:  # its unit, or the directory for its record, went as it began
            outcomes.append("too late")

    threads = [threading.Thread(target=attempt, args=(p, w)) for p, w in zip(parts, pauses[:-1], strict=True)]
    for th in threads:
        th.start()
    time.sleep(pauses[-1])
    committed, _, _ = dj.row_level_commit(t, messages, results, state, outcome == "abort", {})
    for th in threads:
        th.join()
    assert len(outcomes) == len(parts) and set(outcomes) <= {"wrote", "empty", "ended", "too late"}, outcomes
    after = {str(f) for f in Path(t.location).rglob("*") if f.is_file()}
    assert not Path(state).exists()
    t = t.refresh()
    if outcome == "abort":
        assert committed is None and t.latest_snapshot() == snap
        assert after == before
    else:
        latest = t.latest_snapshot()
        assert committed is not None and latest is not None
        live = {e.file.file_name for e in t.live_entries(latest)}
        new = {Path(f).name for f in after - before if f.endswith(".parquet")}
        assert new == live - {Path(f).name for f in before}


def test_a_staging_directory_from_the_shim_must_be_the_tables(tmp_path: Path) -> None:
    from stratalake.spark.delete_job import row_level_commit

    t, messages, _ = _cow_statement(tmp_path)
    with pytest.raises(ValueError, match="not one of its staging directories"):
        row_level_commit(t, messages, None, str(tmp_path), True, {})
    assert tmp_path.exists()


def test_a_failed_job_commits_nothing_and_leaves_no_file(spark: Any, db: str, warehouse: Path) -> None:
    """One unit's task fails (a data file of the table went missing from the store) while another
    is still rewriting a large file: Spark fails the job at once and kills that task without
    waiting. The statement fails only once the killed task has ended, and the shim then tells the
    bridge, which deletes the files the tasks wrote and the staging directory. The table is as
    before."""
    t = f"{db}.broken"
    spark.sql(
        f"CREATE TABLE {t} (id BIGINT, p INT) PARTITIONED BY (p) TBLPROPERTIES ('source.split.target-size' = '1')"
    )
    # Partition 2 holds 296,000 rows: its unit runs beside partition 3's, which fails at once.
    spark.sql(
        f"INSERT INTO {t} SELECT id, CASE WHEN id < 4000 THEN CAST(id % 4 AS INT) ELSE 2 END "
        "FROM range(0, 300000, 1, 1)"
    )
    table = stratalake.Catalog(str(warehouse)).get_table(f"{db.split('.', 1)[1]}.broken")
    snap = table.latest_snapshot()
    assert snap is not None
    entries = sorted(table.live_entries(snap), key=lambda e: e.partition)
    assert len(entries) == 4
    root = Path(table.location)
    lost = next(root.glob(f"p=3/bucket-0/{entries[-1].file.file_name}"))
    lost.unlink()
    before = {str(f) for f in root.rglob("*") if f.is_file()}
    group = f"broken-{db}"
    with pytest.raises(Exception, match="is missing"):
        run_in_group(spark, group, f"DELETE FROM {t} WHERE id < 2000 OR id > 5000")
    tracker = spark.sparkContext.statusTracker()
    running = [
        (stage, info.numActiveTasks)
        for job in tracker.getJobIdsForGroup(group)
        for stage in (tracker.getJobInfo(job).stageIds or [])
        if (info := tracker.getStageInfo(stage)) is not None and info.numActiveTasks
    ]
    assert running == [], "the statement failed while tasks of its job still ran"
    assert table.refresh().latest_snapshot() == snap
    assert {str(f) for f in root.rglob("*") if f.is_file()} == before
    time.sleep(1)  # nothing of the job still writes
    assert {str(f) for f in root.rglob("*") if f.is_file()} == before


def test_orphan_removal_takes_a_dead_jobs_staging(tmp_path: Path) -> None:
    """A driver that died between staging and commit leaves the staged units: orphans, removed
    once older than the threshold; a running job's (newer) stay."""
    from stratalake.spark.delete_job import row_level_commit

    t, messages, _ = _cow_statement(tmp_path)
    _, job, state = row_level_commit(
        t, messages, None, None, False, {"warehouse": str(tmp_path / "wh"), "table": "db.t"}
    )
    assert job is not None and state is not None
    staged = sorted(str(p) for p in Path(state).iterdir())
    assert staged
    assert not set(staged) & set(t.remove_orphan_files(older_than_ms=int(time.time() * 1000) - 60_000))
    removed = t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)
    assert set(staged) <= set(removed)
    assert not list(Path(state).iterdir())
