"""Structured Streaming through the catalog: change streams out of tables, exactly-once writes in."""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import stratalake

pytestmark = pytest.mark.spark

Rows = list[tuple[Any, ...]]


def _collector() -> tuple[dict[int, Rows], Callable[[Any, int], None]]:
    batches: dict[int, Rows] = {}

    def sink(df: Any, batch_id: int) -> None:
        batches[batch_id] = sorted(tuple(r) for r in df.collect())

    return batches, sink


def test_stream_read_through_catalog_restarts_where_it_stopped(
    spark: Any, db: str, warehouse: Path, tmp_path: Path
) -> None:
    spark.sql(
        f"CREATE TABLE {db}.t (id BIGINT NOT NULL, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
        "TBLPROPERTIES ('bucket' = '2', 'changelog-producer' = 'lookup')"
    )
    spark.sql(f"INSERT INTO {db}.t VALUES (1, 'a'), (2, 'b')")

    def run(table: str, checkpoint: str, **options: str) -> dict[int, Rows]:
        batches, sink = _collector()
        reader = spark.readStream
        for k, v in options.items():
            reader = reader.option(k, v)
        q = (
            reader.table(table)
            .writeStream.foreachBatch(sink)
            .option("checkpointLocation", str(tmp_path / checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination(120)
        return batches

    assert run(f"{db}.t", "plain") == {0: [(1, "a"), (2, "b")]}
    assert run(f"{db}.`t$audit_log`", "audit") == {0: [("+I", 1, "a"), ("+I", 2, "b")]}
    table = stratalake.Catalog(str(warehouse)).get_table(f"{db.split('.')[1]}.t")
    table.write(pa.table({"id": [1, 2, 3], "v": ["a2", "b", "c"], "k": ["+U", "-D", "+I"]}), row_kind="k")
    # Restarts continue from the checkpoint; a plain stream drops -U/-D, $audit_log keeps them.
    plain = run(f"{db}.t", "plain")
    assert sorted(r for b in plain.values() for r in b) == [(1, "a2"), (3, "c")]
    audit = run(f"{db}.`t$audit_log`", "audit", **{"read.stream.maxFilesPerTrigger": "1"})
    assert len(audit) >= 2  # the limit reaches the source through the catalog's options
    assert sorted(r for b in audit.values() for r in b) == [
        ("+I", 3, "c"),
        ("+U", 1, "a2"),
        ("-D", 2, "b"),
        ("-U", 1, "a"),
    ]


def _cdc_events(seed: int, files: int, per_file: int) -> tuple[list[list[dict[str, Any]]], dict[int, str]]:
    """Files of +I/+U/-D events over a few keys, and the state they leave."""
    rnd = random.Random(seed)
    state: dict[int, str] = {}
    out = []
    n = 0
    for _ in range(files):
        events = []
        for _ in range(per_file):
            key, n = rnd.randrange(12), n + 1
            op = "+I" if key not in state else rnd.choice(["+U", "+U", "-D"])
            value = f"v{n}"
            events.append({"op": op, "id": key, "v": value if op != "-D" else state[key]})
            if op == "-D":
                del state[key]
            else:
                state[key] = value
        out.append(events)
    return out, state


def _drop_last_commit(checkpoint: Path) -> None:
    """As if the query died after the sink committed but before Spark logged the batch done."""
    commits = sorted((checkpoint / "commits").glob("[0-9]*"), key=lambda p: int(p.name))
    if commits:
        commits[-1].unlink()
        crc = commits[-1].parent / f".{commits[-1].name}.crc"
        if crc.exists():
            crc.unlink()


def _identifiers_committed_once(t: stratalake.Table, user_prefix: str = "stream-") -> int:
    seen: dict[str, list[int]] = {}
    for s in t.snapshots():
        if s.commit_user.startswith(user_prefix) and s.commit_kind.name == "APPEND":
            seen.setdefault(s.commit_user, []).append(s.commit_identifier)
    assert len(seen) == 1, seen  # one commit user across the query's restarts
    ids = next(iter(seen.values()))
    assert len(ids) == len(set(ids)), f"a micro-batch was committed twice: {ids}"
    return len(ids)


def test_cdc_pipeline_exactly_once_across_kill_and_restart(
    spark: Any, db: str, warehouse: Path, tmp_path: Path
) -> None:
    """JSON CDC files -> (stream) table with lookup changelog -> (stream of its $audit_log) mirror.

    Both queries are killed mid-way and, to force a replay, lose their last commit-log entry; after
    restarting, both tables hold exactly the source's final state, and no batch was committed twice.
    """
    files, expected = _cdc_events(seed=7, files=5, per_file=12)
    src, ck = tmp_path / "src", tmp_path / "ck"
    src.mkdir()

    def add_file(i: int) -> None:
        path = src / f"{i:03d}.json"
        path.write_text("\n".join(json.dumps(e) for e in files[i]) + "\n")
        os.utime(path, (1_000_000 + i, 1_000_000 + i))  # the file source reads in mtime order

    spark.sql(
        f"CREATE TABLE {db}.cdc (id BIGINT NOT NULL, v STRING, op STRING, PRIMARY KEY (id) NOT ENFORCED) "
        "TBLPROPERTIES ('bucket' = '2', 'changelog-producer' = 'lookup', 'rowkind.field' = 'op')"
    )
    spark.sql(
        f"CREATE TABLE {db}.mirror (rowkind STRING NOT NULL, id BIGINT NOT NULL, v STRING, op STRING, "
        "PRIMARY KEY (id) NOT ENFORCED) TBLPROPERTIES ('bucket' = '3', 'rowkind.field' = 'rowkind')"
    )

    def ingest(**trigger: Any) -> Any:
        source = spark.readStream.schema("op STRING, id BIGINT, v STRING").option("maxFilesPerTrigger", 1)
        return (
            source.json(str(src))
            .select("id", "v", "op")
            .writeStream.option("checkpointLocation", str(ck / "ingest"))
            .trigger(**trigger)
            .toTable(f"{db}.cdc")
        )

    def mirror(**trigger: Any) -> Any:
        return (
            spark.readStream.table(f"{db}.`cdc$audit_log`")
            .writeStream.option("checkpointLocation", str(ck / "mirror"))
            .trigger(**trigger)
            .toTable(f"{db}.mirror")
        )

    cat = stratalake.Catalog(str(warehouse))
    name = db.split(".", 1)[1]
    for i in range(3):
        add_file(i)
    a, b = ingest(processingTime="1 second"), mirror(processingTime="1 second")
    deadline = time.time() + 120
    while time.time() < deadline:  # both make progress, then both die mid-way
        done = {s.commit_identifier for s in cat.get_table(f"{name}.cdc").snapshots()}
        if len(done) >= 2 and cat.get_table(f"{name}.mirror").latest_snapshot() is not None:
            break
        time.sleep(0.5)
    a.stop()
    b.stop()
    _drop_last_commit(ck / "ingest")
    _drop_last_commit(ck / "mirror")

    for i in range(3, len(files)):
        add_file(i)
    again = ingest(availableNow=True)
    again.awaitTermination(180)
    mirror(availableNow=True).awaitTermination(180)

    cdc, mirrored = cat.get_table(f"{name}.cdc"), cat.get_table(f"{name}.mirror")
    assert {r["id"]: r["v"] for r in cdc.read().to_pylist()} == expected
    assert {r["id"]: r["v"] for r in mirrored.read().to_pylist()} == expected
    _identifiers_committed_once(cdc)
    _identifiers_committed_once(mirrored)
    # Every micro-batch that read rows (first run or replay) is committed, under its batch id;
    # no other commit exists. (How Spark splits the files into batches is its business.)
    with_rows = {p["batchId"] for q in (a, again) for p in q.recentProgress if p["numInputRows"] > 0}
    committed = {s.commit_identifier for s in cdc.snapshots() if s.commit_user.startswith("stream-")}
    assert with_rows == committed, [(s.id, s.commit_kind.name, s.commit_identifier) for s in cdc.snapshots()]


def test_rows_written_right_after_start_arrive_as_changes(
    spark: Any, db: str, warehouse: Path, tmp_path: Path
) -> None:
    """The start snapshot is fixed when the query is defined, not seconds after start() when
    Spark's Python reader first asks: an update written right after start() is a change of the
    stream (the old row from the initial full scan, then the new one), not folded into the full
    scan (which would show the new row only)."""
    spark.sql(f"CREATE TABLE {db}.s (id BIGINT NOT NULL, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
    spark.sql(f"INSERT INTO {db}.s VALUES (1, 'a')")
    table = stratalake.Catalog(str(warehouse)).get_table(f"{db.split('.')[1]}.s")
    batches, sink = _collector()
    q = (
        spark.readStream.table(f"{db}.s")
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(tmp_path / "start"))
        .start()
    )
    try:
        table.write(pa.table({"id": [1, 2], "v": ["a2", "b"]}))
        q.processAllAvailable()
    finally:
        q.stop()
    assert sorted(r for rs in batches.values() for r in rs) == [(1, "a"), (1, "a2"), (2, "b")]
