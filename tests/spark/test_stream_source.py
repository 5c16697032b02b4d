"""The streaming reader and writer driven the way Spark drives them, without a SparkSession:
initialOffset -> latestOffset -> partitions -> read -> commit, and write -> commit(batchId)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxFiles

import stratalake
from stratalake.exceptions import InvalidOptionError, SnapshotNotFoundError, UnsupportedError
from stratalake.spark.source import infer_schema
from stratalake.spark.streaming import StrataLakeStreamReader, StrataLakeStreamWriter, StreamOffset
from stratalake.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def make(tmp_path: Path, **options: str) -> Table:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "2", **options})


def write(t: Table, ids: list[int], v: str, kinds: list[str] | None = None) -> None:
    cols: dict[str, Any] = {"id": ids, "v": [f"{v}{i}" for i in ids]}
    if kinds is not None:
        cols["k"] = kinds
    t.write(pa.table(cols), row_kind="k" if kinds is not None else None)


class Driver:
    """Plays Spark's micro-batch loop against one reader instance (one query run)."""

    def __init__(
        self, t: Table, offset: dict[str, Any] | None = None, audit: bool = False, **options: str
    ) -> None:
        table = "db.t$audit_log" if audit else "db.t"
        self.options = {"warehouse": str(Path(t.location).parents[1]), "table": table, **options}
        self.reader = StrataLakeStreamReader(self.options, infer_schema(self.options))
        self.offset = offset if offset is not None else self.reader.initialOffset()

    def batch(self, limit: ReadLimit | None = None) -> list[tuple[Any, ...]] | None:
        """The next batch's rows (sorted), or None when there is no new data."""
        reader = self.reader
        end = reader.latestOffset(self.offset, limit or reader.getDefaultReadLimit())
        if end == self.offset:
            return None
        out: list[tuple[Any, ...]] = []
        for part in reader.partitions(self.offset, end):
            # Tasks get a pickled copy, as in Spark.
            task = StrataLakeStreamReader(self.options, infer_schema(self.options))
            for b in task.read(part):
                out += [tuple(r.values()) for r in b.to_pylist()]
        reader.commit(end)
        self.offset = end
        return sorted(out, key=repr)

    def drain(self, limit: ReadLimit | None = None) -> list[list[tuple[Any, ...]]]:
        batches = []
        while (rows := self.batch(limit)) is not None:
            batches.append(rows)
        return batches


def test_latest_full_then_changes_plain_stream_drops_retractions(tmp_path: Path) -> None:
    t = make(tmp_path, **{"changelog-producer": "lookup"})
    write(t, [1, 2, 3], "a")
    d = Driver(t)
    assert d.batch() == [(1, "a1"), (2, "a2"), (3, "a3")]
    assert d.batch() is None
    write(t, [1, 2], "b", kinds=["+U", "-D"])
    assert d.batch() == [(1, "b1")]  # -U and -D are dropped from a plain table stream
    write(t, [4], "c")
    assert d.batch() == [(4, "c4")]
    assert d.batch() is None


def test_audit_log_stream_keeps_row_kinds(tmp_path: Path) -> None:
    t = make(tmp_path, **{"changelog-producer": "lookup"})
    write(t, [1, 2], "a")
    d = Driver(t, audit=True)
    assert d.batch() == [("+I", 1, "a1"), ("+I", 2, "a2")]
    write(t, [1, 2], "b", kinds=["+U", "-D"])
    assert d.batch() == [("+U", 1, "b1"), ("-D", 2, "a2"), ("-U", 1, "a1")]


def test_lookup_full_phase_skips_level0_whose_changelog_is_pending(tmp_path: Path) -> None:
    # Level-0 files get their changelog from a later compaction: the full phase must not read
    # them, or that compaction's changelog would repeat their rows.
    t = make(tmp_path, **{"changelog-producer": "lookup", "write-only": "true"})
    write(t, [1], "a")
    t.compact()
    write(t, [2], "b")  # stays in level 0
    d = Driver(t, audit=True)
    assert d.batch() == [("+I", 1, "a1")]
    t.compact()
    assert d.drain() == [[("+I", 2, "b2")]]


@pytest.mark.parametrize("producer", ["none", "input", "full-compaction"])
def test_changes_per_changelog_producer(tmp_path: Path, producer: str) -> None:
    t = make(tmp_path, **{"changelog-producer": producer})
    write(t, [1, 2], "a")
    d = Driver(t, audit=True, **{"scan.mode": "latest"})
    assert d.batch() is None
    write(t, [1], "b", kinds=["+U"])
    rows = [r for b in d.drain() for r in b]
    if producer == "input":
        assert rows == [("+U", 1, "b1")]  # the input records as written
    else:
        assert ("+U", 1, "b1") in rows or ("+I", 1, "b1") in rows
        assert all(r[1] == 1 for r in rows)


def test_scan_modes(tmp_path: Path) -> None:
    t = make(tmp_path)
    write(t, [1], "a")  # snapshot 1
    time.sleep(0.01)
    ts = int(time.time() * 1000)
    time.sleep(0.01)
    write(t, [2], "b")  # snapshot 2
    write(t, [3], "c")  # snapshot 3
    flat = lambda d: sorted(r for b in d.drain() for r in b)  # noqa: E731
    assert flat(Driver(t)) == [(1, "a1"), (2, "b2"), (3, "c3")]
    assert flat(Driver(t, **{"scan.mode": "latest"})) == []
    assert flat(Driver(t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": "2"})) == [
        (2, "b2"),
        (3, "c3"),
    ]
    assert flat(Driver(t, **{"scan.snapshot-id": "3"})) == [(3, "c3")]  # default mode: from-snapshot
    assert flat(Driver(t, **{"scan.mode": "from-snapshot-full", "scan.snapshot-id": "2"})) == [
        (1, "a1"),
        (2, "b2"),
        (3, "c3"),
    ]
    assert flat(Driver(t, **{"scan.timestamp-millis": str(ts)})) == [(2, "b2"), (3, "c3")]
    with pytest.raises(InvalidOptionError, match=r"scan\.snapshot-id"):
        Driver(t, **{"scan.mode": "from-snapshot"})
    with pytest.raises(InvalidOptionError, match="compacted-full"):
        Driver(t, **{"scan.mode": "compacted-full"})


def test_read_limits_cut_batches_at_files(tmp_path: Path) -> None:
    t = make(tmp_path, bucket="1")
    for i in range(4):
        write(t, [10 * i, 10 * i + 1], "x")
    d = Driver(
        t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1", "read.stream.maxFilesPerTrigger": "1"}
    )
    assert [len(b) for b in d.drain()] == [2, 2, 2, 2]
    d = Driver(
        t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1", "read.stream.maxRowsPerTrigger": "5"}
    )
    assert [len(b) for b in d.drain()] == [4, 4]  # whole files; never more than 5 rows
    # Spark's ReadAllAvailable (e.g. Trigger.Once) overrides the configured limits.
    d = Driver(
        t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1", "read.stream.maxFilesPerTrigger": "1"}
    )
    assert [len(b) for b in d.drain(ReadAllAvailable())] == [8]
    assert isinstance(d.reader.getDefaultReadLimit(), ReadMaxFiles)


def test_available_now_stops_at_the_snapshot_seen_at_start(tmp_path: Path) -> None:
    t = make(tmp_path)
    write(t, [1], "a")
    d = Driver(t, **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    d.reader.prepareForTriggerAvailableNow()
    write(t, [2], "b")
    assert d.drain() == [[(1, "a1")]]


def test_restart_from_offset_after_expiration_and_falling_behind(tmp_path: Path) -> None:
    t = make(tmp_path, **{"snapshot.num-retained.min": "1", "snapshot.time-retained": "1 ms"})
    write(t, [1], "a")
    d = Driver(t)
    assert d.batch() == [(1, "a1")]
    write(t, [2], "b")
    saved = d.offset  # as in the checkpoint after the first batch
    assert StreamOffset.from_json(saved) == StreamOffset(2, 1, 0)
    # A new run of the query continues from the checkpointed offset: nothing lost or repeated.
    assert Driver(t, offset=saved).drain() == [[(2, "b2")]]
    # Consumed snapshots expire; the query still continues from where it stopped.
    d = Driver(t, offset=saved)
    assert d.drain() == [[(2, "b2")]]
    write(t, [3], "c")
    t.expire_snapshots(retain_max=1, retain_min=1)
    assert d.drain() == [[(3, "c3")]]
    # A consumer that fell behind expiration gets a clear error rather than silently skipping.
    for i in range(4, 7):
        write(t, [i], "d")
    t.expire_snapshots(retain_max=1, retain_min=1)
    with pytest.raises(SnapshotNotFoundError, match="fell behind snapshot expiration"):
        d.drain()


# ---- writer ------------------------------------------------------------------------------------


def _writer(t: Table, **options: str) -> StrataLakeStreamWriter:
    opts = {"warehouse": str(Path(t.location).parents[1]), "table": "db.t", **options}
    return StrataLakeStreamWriter(opts, infer_schema(opts), overwrite=False)


def _micro_batch(t: Table, batch_id: int, ids: list[int], v: str, **options: str) -> None:
    """One micro-batch as Spark runs it: a task writes (in a fresh writer), the driver commits."""
    data = pa.table({"id": ids, "v": [f"{v}{i}" for i in ids]})
    message = _writer(t, **options).write(iter(data.to_batches()))
    _writer(t, **options).commit([message], batch_id)


def test_stream_writer_commits_each_batch_once(tmp_path: Path) -> None:
    t = make(tmp_path)
    ck = {"checkpointLocation": str(tmp_path / "ck")}
    _micro_batch(t, 0, [1, 2], "a", **ck)
    _micro_batch(t, 1, [3], "b", **ck)
    _micro_batch(t, 1, [3], "REPLAY", **ck)  # Spark replays batch 1 after a crash
    assert [(s.commit_identifier, s.commit_kind.name) for s in t.snapshots()] == [
        (0, "APPEND"),
        (1, "APPEND"),
    ]
    assert sorted(tuple(r.values()) for r in t.read().to_pylist()) == [(1, "a1"), (2, "a2"), (3, "b3")]
    assert t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000, dry_run=True) == []
    # A different query (another checkpoint, hence commit user) starts its own batch ids.
    _micro_batch(t, 0, [4], "c", checkpointLocation=str(tmp_path / "other"))
    assert len({s.commit_user for s in t.snapshots()}) == 2
    assert len(t.read()) == 4


def test_stream_writer_commit_user(tmp_path: Path) -> None:
    t = make(tmp_path)
    by_query = _writer(t, **{"stratalake.write.query-id": "q1"}).commit_user
    assert by_query == _writer(t, **{"stratalake.write.query-id": "q1"}).commit_user
    assert by_query != _writer(t, **{"stratalake.write.query-id": "q2"}).commit_user
    assert _writer(t, **{"commit.user": "me"}).commit_user == "me"
    with pytest.raises(InvalidOptionError, match="checkpointLocation"):
        _writer(t)
    opts = {"warehouse": str(Path(t.location).parents[1]), "table": "db.t", "commit.user": "me"}
    with pytest.raises(UnsupportedError, match="complete"):
        StrataLakeStreamWriter(opts, infer_schema(opts), overwrite=True)


def test_full_compaction_delta_commits_count_micro_batches(tmp_path: Path) -> None:
    # One bucket: a micro-batch's writers fully compact only the buckets that batch writes to.
    t = make(
        tmp_path,
        bucket="1",
        **{"changelog-producer": "full-compaction", "full-compaction.delta-commits": "2"},
    )
    for batch_id in range(4):
        _micro_batch(t, batch_id, [batch_id], "x", **{"commit.user": "q"})
    kinds = [(s.commit_identifier, s.commit_kind.name) for s in t.snapshots()]
    assert kinds == [
        (0, "APPEND"),
        (1, "APPEND"),
        (1, "COMPACT"),
        (2, "APPEND"),
        (3, "APPEND"),
        (3, "COMPACT"),
    ]
    # The full compactions' changelog is what a stream of the table reads.
    d = Driver(t, audit=True, **{"scan.mode": "from-snapshot", "scan.snapshot-id": "1"})
    assert sorted(r for b in d.drain() for r in b) == [("+I", i, f"x{i}") for i in range(4)]


def test_streaming_full_state_is_read_batch_by_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 33: the initial full state of a bucket streams out of the merge batch by batch; it is
    not first gathered into one table (a bucket can hold more than a worker's memory)."""
    from stratalake.read.merge_read import DEFAULT_BATCH_ROWS, TableRead

    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    t = cat.create_table("db.t", schema, primary_key=["k"], options={"bucket": "1", "write-only": "true"})
    n = 3 * DEFAULT_BATCH_ROWS
    t.write(pa.table({"k": pa.array(range(n), pa.int64()), "v": pa.array([0] * n, pa.int64())}))
    t.write(pa.table({"k": pa.array(range(0, n, 2), pa.int64()), "v": pa.array([1] * (n // 2), pa.int64())}))
    produced: list[int] = []
    real = TableRead.read_split

    def counted(self: TableRead, split: Any) -> Any:
        for batch in real(self, split):
            produced.append(batch.num_rows)
            yield batch

    monkeypatch.setattr(TableRead, "read_split", counted)
    options = {"warehouse": str(tmp_path / "wh"), "table": "db.t"}
    reader = StrataLakeStreamReader(options, infer_schema(options))
    start = reader.initialOffset()
    end = reader.latestOffset(start, reader.getDefaultReadLimit())
    (part,) = reader.partitions(start, end)
    batches = reader.read(part)
    first = next(iter(batches))
    assert len(produced) == 1  # handed on before the rest of the bucket is merged
    rest = list(batches)
    assert len(produced) >= 3
    got = {r["k"]: r["v"] for b in [first, *rest] for r in b.to_pylist()}
    assert got == {k: 1 - k % 2 for k in range(n)}
