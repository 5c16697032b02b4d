"""Streaming reads with ``consumer-id``: where a new query starts, what each commit records, and the
consumer procedures and ``$consumers`` through a real Spark session."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadMaxFiles

import stratalake
from stratalake.exceptions import InvalidOptionError
from stratalake.spark.source import infer_schema
from stratalake.spark.streaming import StrataLakeStreamReader
from tests.spark.test_stream_source import Driver, make, write


def test_a_new_query_resumes_from_its_consumer(tmp_path: Path) -> None:
    t = make(tmp_path)
    write(t, [1, 2], "a")  # snapshot 1
    d = Driver(t, **{"consumer-id": "job"})
    assert d.batch() == [(1, "a1"), (2, "a2")]  # the full scan of snapshot 1
    assert t.consumers() == {"job": 2}  # snapshot 1 wholly read
    write(t, [3], "b")  # snapshot 2
    assert d.batch() == [(3, "b3")]
    assert t.consumers() == {"job": 3}
    write(t, [4], "c")  # snapshot 3, not read by the first query
    # A new query (no checkpoint): the consumer's snapshot 3 on, no full scan.
    again = Driver(t, **{"consumer-id": "job"})
    assert again.offset == {"snapshot": 3, "full": False, "index": 0}
    assert again.drain() == [[(4, "c4")]]
    assert t.consumers() == {"job": 4}
    # consumer.ignore-progress: a new query starts per scan.mode, and then records again.
    fresh_start = Driver(t, **{"consumer-id": "job", "consumer.ignore-progress": "true"})
    assert fresh_start.batch() == [(1, "a1"), (2, "a2"), (3, "b3"), (4, "c4")]
    # Another id has no file: it starts per scan.mode too.
    other = Driver(t, **{"consumer-id": "other", "scan.mode": "latest"})
    assert other.batch() is None
    assert "other" not in t.consumers()  # nothing committed, nothing recorded


def test_a_part_read_snapshot_is_not_recorded_as_read(tmp_path: Path) -> None:
    t = make(tmp_path)
    write(t, [1], "a")
    d = Driver(t, **{"consumer-id": "job", "scan.mode": "latest"})
    write(t, [2, 3, 4, 5, 6, 7], "b")  # snapshot 2, files in both buckets
    assert d.batch(ReadMaxFiles(1)) is not None  # one file of snapshot 2's changes
    assert d.offset["snapshot"] == 2 and d.offset["index"] == 1
    assert t.consumers() == {"job": 2}  # snapshot 2 is still the next one to read
    d.drain()
    assert t.consumers() == {"job": 3}


def test_the_full_phase_records_nothing_until_done(tmp_path: Path) -> None:
    t = make(tmp_path)
    write(t, [1, 2, 3, 4, 5, 6], "a")
    d = Driver(t, **{"consumer-id": "job"})
    assert d.batch(ReadMaxFiles(1)) is not None  # one bucket of snapshot 1's full scan
    assert d.offset["full"] is True
    assert t.consumers() == {}
    d.drain(ReadMaxFiles(1))
    assert t.consumers() == {"job": 2}


def test_the_consumer_keeps_what_the_query_reads_next(tmp_path: Path) -> None:
    t = make(tmp_path, **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    write(t, [1], "a")
    d = Driver(t, **{"consumer-id": "job"})
    d.drain()
    write(t, [2], "b")
    write(t, [3], "c")  # expiry after each commit keeps snapshots 2.. for the consumer
    assert [s.id for s in t.refresh().snapshots()] == [2, 3]
    assert Driver(t, **{"consumer-id": "job"}).drain() == [[(2, "b2"), (3, "c3")]]


def test_consumer_options_are_checked_by_name(tmp_path: Path) -> None:
    t = make(tmp_path)
    write(t, [1], "a")
    for options, match in (
        ({"consumer-id": "job", "consumer.mode": "at-most-once"}, "consumer.mode"),
        ({"consumer-id": "a/b"}, "not a valid consumer id"),
        ({"consumer-id": "job", "consumer.ignore-progress": "maybe"}, "consumer.ignore-progress"),
    ):
        opts = {"warehouse": str(Path(t.location).parents[1]), "table": "db.t", **options}
        with pytest.raises(InvalidOptionError, match=match):
            StrataLakeStreamReader(opts, infer_schema(opts)).initialOffset()
    # Both of Paimon's modes are met (one driver plans and commits every batch).
    for mode in ("exactly-once", "at-least-once"):
        assert Driver(t, **{"consumer-id": f"m-{mode}", "consumer.mode": mode}).drain()


def test_an_expired_start_begins_at_the_earliest_snapshot(tmp_path: Path) -> None:
    t = make(tmp_path)
    for i in range(4):
        write(t, [i], "a")
    t.consumer_manager.reset_consumer("late", 1)
    t.clear_consumers()
    t.expire_snapshots(retain_max=2, retain_min=2)
    t.consumer_manager.reset_consumer("late", 1)  # as if written by a reader that fell behind
    d = Driver(t, **{"consumer-id": "late"})
    assert d.offset == {"snapshot": 3, "full": False, "index": 0}


# -- through Spark -----------------------------------------------------------------------------------
@pytest.mark.spark
def test_consumer_through_spark(spark: Any, db: str, warehouse: Path, tmp_path: Path) -> None:
    spark.sql(
        f"CREATE TABLE {db}.c (id BIGINT NOT NULL, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
        "TBLPROPERTIES ('bucket' = '1')"
    )
    spark.sql(f"INSERT INTO {db}.c VALUES (1, 'a'), (2, 'b')")  # snapshot 1
    table = stratalake.Catalog(str(warehouse)).get_table(f"{db.split('.')[1]}.c")
    seen: list[tuple[Any, ...]] = []

    def sink(df: Any, _batch_id: int) -> None:
        seen.extend(sorted(tuple(r) for r in df.collect()))

    def start(checkpoint: str) -> Any:
        return (
            spark.readStream.option("consumer-id", "job")
            .table(f"{db}.c")
            .writeStream.foreachBatch(sink)
            .option("checkpointLocation", str(tmp_path / checkpoint))
            .start()
        )

    q = start("first")
    try:
        q.processAllAvailable()
        assert seen == [(1, "a"), (2, "b")]
        spark.sql(f"INSERT INTO {db}.c VALUES (3, 'c')")  # snapshot 2
        q.processAllAvailable()
        deadline = time.time() + 60  # Spark commits a batch's offsets when it plans the next one
        while table.consumers().get("job") != 3 and time.time() < deadline:
            spark.sql(f"INSERT INTO {db}.c VALUES (99, 'tick')")
            q.processAllAvailable()
        assert table.consumers().get("job", 0) >= 3
    finally:
        q.stop()
    recorded = table.consumers()["job"]
    assert spark.sql(f"SELECT * FROM {db}.`c$consumers`").collect() == [("job", recorded)]
    spark.sql(f"INSERT INTO {db}.c VALUES (4, 'd')")
    latest = table.refresh().latest_snapshot()
    assert latest is not None
    expected = sorted(
        r
        for sid in range(recorded, latest.id + 1)
        for r in (tuple(x.values()) for x in _added(table, sid))
    )
    seen.clear()
    q = start("second")  # a new checkpoint: the consumer's position, not the full state
    try:
        q.processAllAvailable()
    finally:
        q.stop()
    assert sorted(seen) == expected
    assert (1, "a") not in seen and (4, "d") in seen

    # A batch read refuses consumer options by name (Paimon's batch scan would ignore them).
    with pytest.raises(Exception, match=r"read option 'consumer-id': consumers are for streaming reads"):
        spark.read.option("consumer-id", "job").table(f"{db}.c").collect()

    assert spark.sql(f"CALL lake.sys.reset_consumer(table => '{db[5:]}.c', consumerId => 'job', nextSnapshotId => 1)").collect() == [(True,)]
    assert table.consumers() == {"job": 1}
    with pytest.raises(Exception, match="does not exist"):
        spark.sql(f"CALL lake.sys.reset_consumer(table => '{db[5:]}.c', consumerId => 'job', nextSnapshotId => 999)").collect()
    spark.sql(f"CALL lake.sys.reset_consumer(table => '{db[5:]}.c', consumerId => 'other', nextSnapshotId => 2)")
    spark.sql(f"CALL lake.sys.reset_consumer(table => '{db[5:]}.c', consumerId => 'gone', nextSnapshotId => 2)")
    spark.sql(f"CALL lake.sys.reset_consumer(table => '{db[5:]}.c', consumerId => 'gone')")  # deletes
    assert sorted(r[0] for r in spark.sql(f"SELECT consumer_id FROM {db}.`c$consumers`").collect()) == ["job", "other"]
    assert spark.sql(
        f"CALL lake.sys.clear_consumers(table => '{db[5:]}.c', includingConsumers => '.*', excludingConsumers => 'oth.*')"
    ).collect() == [(True,)]
    assert table.consumers() == {"other": 2}
    spark.sql(f"CALL lake.sys.clear_consumers(table => '{db[5:]}.c')")
    assert spark.sql(f"SELECT * FROM {db}.`c$consumers`").collect() == []


def _added(table: stratalake.Table, snapshot_id: int) -> list[dict[str, Any]]:
    """The rows snapshot ``snapshot_id`` added (a primary-key table without changelog producer)."""
    before = {r["id"]: r for r in table.read(snapshot_id=snapshot_id - 1).to_pylist()} if snapshot_id > 1 else {}
    after = table.read(snapshot_id=snapshot_id).to_pylist()
    return [r for r in after if before.get(r["id"]) != r]

