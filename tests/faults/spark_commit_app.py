"""A Spark application whose statements' commits meet injected file-system faults.

Usage: ``python -m tests.faults.spark_commit_app <workdir>``, with ``tests/faults/spark_site``
first on ``PYTHONPATH`` and ``STRATALAKE_COMMIT_FAULT_FILE`` set (``test_spark_commit_faults.py``
does both). Each case creates a fresh table, runs one statement whose commit (in the driver's
Python worker) fails where ``<workdir>/control.json`` says, and records in
``<workdir>/results.json`` what the statement said and what the table holds; the test asserts.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROWS = 2_000


def main(workdir: Path) -> None:
    control = Path(os.environ["STRATALAKE_COMMIT_FAULT_FILE"])
    warehouse = workdir / "warehouse"
    from pyspark.sql import SparkSession

    from stratalake.catalog import Catalog
    from stratalake.spark import configure
    from tests.faults.sweep import disk_files, referenced_files

    builder = configure(SparkSession.builder.master("local[2]").appName("stratalake-commit-faults"), str(warehouse))
    builder = builder.config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("OFF")
    spark.sql("CREATE DATABASE IF NOT EXISTS lake.f")
    catalog = Catalog(str(warehouse))
    results: dict[str, Any] = {}

    def state(name: str) -> dict[str, Any]:
        t = catalog.get_table(f"f.{name}")
        root = Path(t.location)
        mentioned: set[str] = set()
        refs = referenced_files(t, mentioned)
        rows = t.read()
        ks = rows.column("k").to_pylist()
        vs = rows.column("v").to_pylist()
        return {
            "snapshots": [(s.id, s.commit_kind.name) for s in t.snapshots()],
            "rows": len(ks),
            "distinct": len(set(ks)),
            "checksum": sum(k * (1 + len(v)) for k, v in zip(ks, vs, strict=True)),
            "missing": sorted(p for p in refs if not (root / p).exists()),
            "unreferenced": sorted(disk_files(t) - refs - mentioned),
        }

    def run(
        name: str, ddl: str, setup: list[str], statement: str, fault: dict[str, Any], rerun: bool = False
    ) -> None:
        t = f"lake.f.{name}"
        spark.sql(ddl.format(t=t))
        for sql in setup:
            spark.sql(sql.format(t=t))
        before = state(name)
        log = Path(f"{control}.log")
        log.unlink(missing_ok=True)
        control.write_text(json.dumps(fault))
        error = None
        try:
            spark.sql(statement.format(t=t))
        except Exception as e:  # recorded; the test decides
            error = f"{type(e).__name__}: {e}"[:3000]
        finally:
            control.unlink(missing_ok=True)
        fired = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        out: dict[str, Any] = {"before": before, "after": state(name), "error": error, "fired": fired}
        if rerun:  # what a user does after an unknown outcome on a primary-key table
            spark.sql(statement.format(t=t))
            out["rerun"] = state(name)
        catalog.get_table(f"f.{name}").remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)
        out["after_cleanup"] = state(name)
        results[name] = out

    # Four buckets: several Spark tasks write each statement, into a table that holds data.
    pk = "CREATE TABLE {t} (k BIGINT, v STRING, PRIMARY KEY (k) NOT ENFORCED) WITH ('bucket' = '4'%s)"
    append = "CREATE TABLE {t} (k BIGINT, v STRING) WITH ('bucket' = '-1'%s)"
    load = f"INSERT INTO {{t}} SELECT id, concat('a', id) FROM range({ROWS})"
    upsert = f"INSERT INTO {{t}} SELECT id, concat('bb', id) FROM range({ROWS // 2}, {ROWS + ROWS // 2})"
    dv = ", 'deletion-vectors.enabled' = 'true'"
    cow_job = ", 'source.split.target-size' = '1'"  # every statement's files exceed one split: a job
    after_publish = {"publish": 0, "offset": 1, "mode": "before"}  # the read-back confirming it
    compact_refused = {"publish": 1, "offset": 0, "mode": "before"}  # the writer's COMPACT snapshot
    lost_answer = {"publish": 0, "offset": 0, "mode": "after"}
    unknown = {"publish": 0, "offset": 0, "mode": "after", "span": 80}
    not_published = {"publish": 0, "offset": 0, "mode": "before"}

    cases = [
        # The writer's COMPACT snapshot fails after its APPEND snapshot was published.
        ("compact_fails_after_append", pk % dv, [load], upsert, compact_refused, False),
        ("confirm_read_fails", pk % "", [load], upsert, after_publish, False),
        ("publish_answer_lost", pk % "", [load], upsert, lost_answer, False),
        ("publish_unknown", pk % dv, [load], upsert, unknown, True),
        ("publish_refused", pk % "", [load], upsert, not_published, False),
        (
            "overwrite_unknown",
            pk % "",
            [load],
            f"INSERT OVERWRITE {{t}} SELECT id, concat('o', id) FROM range({ROWS // 4})",
            unknown,
            True,
        ),
        ("delete_pk_answer_lost", pk % dv, [load], "DELETE FROM {t} WHERE k < 100", lost_answer, False),
        ("delete_append_unknown", append % "", [load], "DELETE FROM {t} WHERE k < 100", unknown, False),
        # An append table's INSERT is written by Spark's own Parquet writer (the native path).
        (
            "append_insert_unknown",
            append % "",
            [load],
            f"INSERT INTO {{t}} SELECT id, concat('n', id) FROM range({ROWS}, {ROWS + 500})",
            unknown,
            False,
        ),
        (
            "update_append_after_publish",
            append % dv,
            [load],
            "UPDATE {t} SET v = 'u' WHERE k % 10 = 0",
            after_publish,
            False,
        ),
        # Copy-on-write: the touched files are rewritten by a job of Spark tasks, then committed
        # on the driver with the statement's inserted rows.
        ("update_cow_unknown", append % cow_job, [load], "UPDATE {t} SET v = 'u' WHERE k % 10 = 0", unknown, False),
        ("update_cow_refused", append % cow_job, [load], "UPDATE {t} SET v = 'u' WHERE k % 10 = 0", not_published, False),
        ("delete_cow_job_refused", append % cow_job, [load], "DELETE FROM {t} WHERE k < 100", not_published, False),
    ]
    for case in cases:
        try:
            run(*case)
        except Exception:
            results[case[0]] = {"crash": traceback.format_exc()[-4000:]}

    # A streaming micro-batch whose commit outcome is unknown: the query fails; restarted from
    # its checkpoint, Spark replays the batch, which must not be applied twice.
    try:
        src = workdir / "stream-src"
        src.mkdir()
        spark.range(0, 500).selectExpr("id AS k", "concat('s', id) AS v").write.parquet(str(src / "a"))
        spark.sql(append.format(t="lake.f.stream") % "")
        ckpt = str(workdir / "stream-ckpt")

        def start() -> Any:
            return (
                spark.readStream.schema("k BIGINT, v STRING")
                .parquet(str(src / "*"))
                .writeStream.option("checkpointLocation", ckpt)
                .trigger(availableNow=True)
                .toTable("lake.f.stream")
            )

        Path(f"{control}.log").unlink(missing_ok=True)
        control.write_text(json.dumps(unknown))
        error = None
        try:
            start().awaitTermination(300)
        except Exception as e:
            error = f"{type(e).__name__}: {e}"[:3000]
        control.unlink(missing_ok=True)
        log = Path(f"{control}.log")
        fired = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        first = state("stream")
        start().awaitTermination(300)  # the replay of the batch
        replayed = state("stream")
        spark.range(500, 800).selectExpr("id AS k", "concat('s', id) AS v").write.parquet(str(src / "b"))
        start().awaitTermination(300)
        results["stream"] = {"error": error, "fired": fired, "first": first, "replayed": replayed, "next": state("stream")}
    except Exception:
        results["stream"] = {"crash": traceback.format_exc()[-4000:]}

    (workdir / "results.json").write_text(json.dumps(results, indent=1))
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
