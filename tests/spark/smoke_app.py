"""A Spark smoke test of stratalake as a user runs it: one small application, every kind of statement.

Usage: ``python smoke_app.py <workdir> [--master M] [--remote URL] [--steps a,b,...]``

It starts its own session with :func:`stratalake.spark.session` (classic, or Spark Connect with
``--remote``), runs the steps below on a warehouse under ``<workdir>`` and checks each result
itself; it prints one JSON line ``{"ok": [...], "failed": {step: error}, "pyspark": version}`` and
exits 1 when a step failed. It imports nothing from the checkout's tests, so it also runs from an
installed wheel (tests/test_wheel.py), on other Spark versions (``make test-spark-versions``), on a
multi-process cluster whose executors lack stratalake (tests/spark/test_cluster.py) and through
Spark Connect (tests/spark/test_connect.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

STEPS = (
    "ddl",
    "insert",
    "merged_select",
    "merge_into",
    "time_travel",
    "write_to",
    "padded_write",
    "key_list_delete",
    "stream",
    "compact",
    "join",
)


def rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in df.collect())


def check(got: Any, want: Any, what: str) -> None:
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


def run(spark: Any, workdir: Path, steps: list[str]) -> dict[str, Any]:
    sql = spark.sql
    t = "lake.smoke.t"

    def ddl() -> None:
        sql("CREATE DATABASE IF NOT EXISTS lake.smoke")
        sql(
            f"CREATE TABLE {t} (id BIGINT, v STRING, n INT, PRIMARY KEY (id) NOT ENFORCED) "
            "WITH ('merge-engine' = 'deduplicate', 'bucket' = '2', 'changelog-producer' = 'lookup')"
        )
        check([r[1] for r in sql("SHOW TABLES IN lake.smoke").collect()], ["t"], "SHOW TABLES")

    def insert() -> None:
        sql(f"INSERT INTO {t} VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)")
        sql(f"INSERT INTO {t} VALUES (2, 'B', 20), (4, 'd', 4)")  # an upsert of id 2: a second snapshot

    def merged_select() -> None:
        check(
            rows(sql(f"SELECT * FROM {t}")),
            [(1, "a", 1), (2, "B", 20), (3, "c", 3), (4, "d", 4)],
            "merged SELECT",
        )
        check(rows(sql(f"SELECT id FROM {t} WHERE id = 3")), [(3,)], "key filter")

    def merge_into() -> None:
        sql(
            "CREATE OR REPLACE TEMPORARY VIEW src AS SELECT * FROM VALUES "
            "(1, 'A', true), (3, 'x', false), (5, 'e', true) AS s(id, v, keep)"
        )
        sql(
            f"MERGE INTO {t} tgt USING src ON tgt.id = src.id "
            "WHEN MATCHED AND NOT src.keep THEN DELETE "
            "WHEN MATCHED THEN UPDATE SET v = src.v "
            "WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES (src.id, src.v, 0)"
        )
        check(
            rows(sql(f"SELECT * FROM {t}")),
            [(1, "A", 1), (2, "B", 20), (4, "d", 4), (5, "e", 0)],
            "after MERGE INTO",
        )

    def time_travel() -> None:
        check(
            rows(sql(f"SELECT id, v FROM {t} VERSION AS OF 1")),
            [(1, "a"), (2, "b"), (3, "c")],
            "VERSION AS OF 1",
        )
        snaps = [r[0] for r in sql("SELECT snapshot_id FROM lake.smoke.`t$snapshots`").collect()]
        check(len(snaps) >= 3, True, f"snapshots {snaps}")
        # (answered on the driver; the aggregate too, as one row)
        newest = sql("SELECT max(snapshot_id) FROM lake.smoke.`t$snapshots`").collect()[0][0]
        check(newest, max(snaps), "max(snapshot_id) of t$snapshots")

    def write_to() -> None:
        df = spark.createDataFrame([(6, "f", 6), (7, "g", 7)], "id BIGINT, v STRING, n INT")
        df.writeTo(t).append()
        check(rows(sql(f"SELECT id, v FROM {t} WHERE id >= 6")), [(6, "f"), (7, "g")], "writeTo")

    def padded_write() -> None:
        # Strings of 1-12 KB in batches of at most 256 KiB: the shim ends a batch early with rows of
        # nulls, which the writers drop (jvm-shim write/ArrowBatchBound.java).
        w = "lake.smoke.wide"
        sql(f"CREATE TABLE {w} (id BIGINT, s STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
        rows_sql = "SELECT id, repeat(char(65 + id % 26), 1000 + (id * 7919) % 11000) AS s FROM range(0, 2000, 1, 2)"
        caps = {
            "spark.sql.execution.arrow.maxRecordsPerBatch": "1000",
            "spark.sql.execution.arrow.maxBytesPerBatch": str(256 * 1024),
        }
        saved = {k: spark.conf.get(k) for k in caps}
        jvm = getattr(spark, "_jvm", None)  # None on Spark Connect
        bound = jvm.org.stratalake.spark.write.ArrowBatchBound if jvm is not None else None
        before = bound.paddingRows() if bound is not None else 0
        for k, v in caps.items():
            spark.conf.set(k, v)
        try:
            sql(f"INSERT INTO {w} {rows_sql}")
        finally:
            for k, v in saved.items():
                spark.conf.set(k, v)
        if bound is not None:
            check(bound.paddingRows() > before, True, "padding rows sent")
        summary = "SELECT count(*), sum(length(s)), sum(crc32(s)) FROM "
        want = sql(f"{summary} ({rows_sql})").collect()[0]
        check(tuple(sql(f"{summary} {w}").collect()[0]), tuple(want), "padded write")

    def key_list_delete() -> None:
        # A key list the table checks itself: the plan reads the list, not the table
        # (jvm-shim sql/RowLevelRewrite.java, table/key_delete.py).
        k = "lake.smoke.keyed"
        sql(
            f"CREATE TABLE {k} (id BIGINT, p STRING, n INT, PRIMARY KEY (id, p) NOT ENFORCED) "
            "PARTITIONED BY (p) WITH ('bucket' = '2', 'deletion-vectors.enabled' = 'true')"
        )
        sql(f"INSERT INTO {k} SELECT id, concat('p', id % 2), CAST(id AS INT) FROM range(100)")
        delete = f"DELETE FROM {k} WHERE id IN (SELECT id * 3 FROM range(50))"
        plan = sql(f"EXPLAIN {delete}").collect()[0][0]
        check("BatchScan" in plan, False, f"key list delete plan {plan}")
        sql(delete)
        check(rows(sql(f"SELECT id FROM {k}")), [(i,) for i in range(100) if i % 3], "key list delete")

    def stream() -> None:
        # Read the table's changes as a stream into a memory sink, and stream rows into the table.
        q = (
            spark.readStream.table(t)
            .writeStream.format("memory")
            .queryName("smoke_changes")
            .option("checkpointLocation", str(workdir / "ckpt-read"))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination(180)
        check(
            sorted(r[0] for r in sql("SELECT id FROM smoke_changes").collect()),
            [1, 2, 4, 5, 6, 7],
            "readStream",
        )
        src = workdir / "stream-src"
        src.mkdir(exist_ok=True)
        (src / "part-0.json").write_text('{"id": 8, "v": "h", "n": 8}\n{"id": 9, "v": "i", "n": 9}\n')
        w = (
            spark.readStream.schema("id BIGINT, v STRING, n INT")
            .json(str(src))
            .writeStream.option("checkpointLocation", str(workdir / "ckpt-write"))
            .trigger(availableNow=True)
            .toTable(t)
        )
        w.awaitTermination(180)
        check(rows(sql(f"SELECT id, v FROM {t} WHERE id >= 8")), [(8, "h"), (9, "i")], "writeStream")

    def compact() -> None:
        before = rows(sql(f"SELECT * FROM {t}"))
        check(
            [
                tuple(r)
                for r in sql(
                    "CALL lake.sys.compact(table => 'smoke.t', compact_strategy => 'full')"
                ).collect()
            ],
            [(True,)],
            "CALL compact",
        )
        kinds = [
            r[0]
            for r in sql("SELECT commit_kind FROM lake.smoke.`t$snapshots` ORDER BY snapshot_id").collect()
        ]
        check(kinds[-1], "COMPACT", "last snapshot kind")
        check(rows(sql(f"SELECT * FROM {t}")), before, "rows after compaction")
        # A point lookup of the compacted (native) table: read on the driver, no job.
        lookup = sql(f"SELECT v FROM {t} WHERE id IN (4, 5)")
        plan = lookup._jdf.queryExecution().executedPlan().toString()
        check("DriverLookup" in plan, True, f"lookup on the driver: {plan}")
        # (which keys exist depends on the steps run before: MERGE INTO adds 5)
        check(rows(lookup), sorted((r[1],) for r in before if r[0] in (4, 5)), "point lookup on the driver")

    def avro() -> None:
        # Avro data files written and read in the executors' Python; in test_cluster.py it has
        # no polars (nor zstandard: deflate), so they decode through fastavro's records there.
        av = "lake.smoke.av"
        sql(
            f"CREATE TABLE {av} (id BIGINT, v STRING, tags ARRAY<INT>, PRIMARY KEY (id) NOT ENFORCED) "
            "WITH ('bucket' = '2', 'file.format' = 'avro', 'file.compression' = 'deflate')"
        )
        sql(f"INSERT INTO {av} VALUES (1, 'a', array(1, 2)), (2, 'b', NULL), (3, NULL, array())")
        sql(f"INSERT INTO {av} VALUES (2, 'B', array(20)), (4, 'd', array(4))")
        check(
            rows(sql(f"SELECT id, v, tags FROM {av}")),
            [(1, "a", [1, 2]), (2, "B", [20]), (3, None, []), (4, "d", [4])],
            "Avro table",
        )

    def join() -> None:
        for name in ("j1", "j2"):
            sql(
                f"CREATE TABLE lake.smoke.{name} (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
                "WITH ('bucket' = '4')"
            )
            sql(f"INSERT INTO lake.smoke.{name} SELECT id, concat('{name}-', id) FROM range(0, 200)")
        for key, value in (
            ("spark.sql.sources.v2.bucketing.enabled", "true"),
            ("spark.sql.autoBroadcastJoinThreshold", "-1"),
            ("spark.sql.adaptive.enabled", "false"),
        ):
            spark.conf.set(key, value)
        df = sql("SELECT a.id, b.v FROM lake.smoke.j1 a JOIN lake.smoke.j2 b ON a.id = b.id")
        plan = _plan(df)
        check("Exchange" not in plan, True, f"bucketed join without a shuffle:\n{plan}")
        check(df.count(), 200, "join rows")

    def magics() -> None:  # the notebook magics on this session (needs IPython)
        from IPython.core.interactiveshell import InteractiveShell

        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "stratalake.magics")
        cell = shell.run_cell(
            "%%lake --limit 2 --out top\n"
            "CREATE TABLE lake.smoke.m (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED);\n"
            "INSERT INTO lake.smoke.m VALUES (1, 'a'), (2, 'b'), (3, 'c');\n"
            "SELECT * FROM lake.smoke.m ORDER BY id\n"
        )
        cell.raise_error()
        check(cell.result.rows, [(1, "a"), (2, "b")], "%%lake rows")
        check(shell.user_ns["top"].count(), 3, "%%lake --out")
        check(shell.run_line_magic("lake", "SELECT count(*) AS n FROM lake.smoke.m").rows, [(3,)], "%lake")
        fig = shell.run_line_magic("lake_lsm", "lake.smoke.m")
        check("snapshot 1" in fig.axes[0].get_title(), True, "%lake_lsm title")
        # The progress display the magics show in notebooks, fed by this session (classic or Connect).
        from stratalake.magics import Progress

        shown: list[Any] = []

        class Handle:
            def update(self, obj: Any) -> None:
                shown.append(obj)

        def display(obj: Any) -> Handle:
            shown.append(obj)
            return Handle()

        slow = (
            "SELECT count(*) FROM range(0, 4, 1, 4) WHERE reflect('java.lang.Thread', 'sleep', 1500L) IS NULL"
        )
        with Progress(spark, enabled=True, delay=0.2, interval=0.1, display=display):
            spark.sql(slow).collect()
        check(any(p.stages for p in shown) and not shown[-1].stages, True, f"progress updates {shown}")

    def executor_env() -> None:  # where executors' Python finds stratalake (see test_cluster.py)
        def probe(_: Any) -> list[dict[str, Any]]:
            import importlib.util
            import os
            import subprocess
            import sys

            import stratalake

            bare = subprocess.run(
                [sys.executable, "-c", "import stratalake"],
                env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
                capture_output=True,
            )
            return [
                {
                    "stratalake": stratalake.__file__,
                    "interpreter_has_stratalake": bare.returncode == 0,
                    "zstandard": importlib.util.find_spec("zstandard") is not None,
                    "polars": importlib.util.find_spec("polars") is not None,
                    "pid": os.getpid(),
                }
            ]

        found = spark.sparkContext.parallelize(range(2), 2).mapPartitions(probe).collect()
        print(json.dumps({"executors": found}))
        for f in found:
            check(".zip" in f["stratalake"] and not f["interpreter_has_stratalake"], True, f"executor {f}")

    available: dict[str, Callable[[], None]] = {
        "executor_env": executor_env,
        "avro": avro,
        "magics": magics,
        "ddl": ddl,
        "insert": insert,
        "merged_select": merged_select,
        "merge_into": merge_into,
        "time_travel": time_travel,
        "write_to": write_to,
        "padded_write": padded_write,
        "key_list_delete": key_list_delete,
        "stream": stream,
        "compact": compact,
        "join": join,
    }
    ok: list[str] = []
    failed: dict[str, str] = {}
    seconds: dict[str, float] = {}
    for step in steps:
        started = time.monotonic()
        try:
            available[step]()
            ok.append(step)
        except Exception as e:  # the error's head (a JVM stack trace follows the message)
            text = f"{type(e).__name__}: {e}"  # the cause of a Python worker error is at its end
            failed[step] = text if len(text) <= 4000 else f"{text[:1000]} ... {text[-3000:]}"
        seconds[step] = round(time.monotonic() - started, 1)
    return {"ok": ok, "failed": failed, "seconds": seconds}


def _plan(df: Any) -> str:
    try:  # classic: the executed plan; Spark Connect: explain's text
        return str(df._jdf.queryExecution().executedPlan().toString())
    except Exception:
        import contextlib
        import io

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            df.explain()
        return out.getvalue()


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("workdir")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--remote", default=None)
    p.add_argument("--steps", default=",".join(STEPS))
    p.add_argument("--conf", action="append", default=[], help="key=value Spark settings")
    p.add_argument("--ship", action="store_true", help="ship stratalake to the executors")
    args = p.parse_args(argv)
    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)

    import pyspark

    import stratalake
    from stratalake.spark import session

    conf = dict(kv.split("=", 1) for kv in args.conf)
    started = time.monotonic()
    if args.remote is not None:
        spark = session(str(workdir / "warehouse"), remote=args.remote, **conf)
    else:
        spark = session(
            str(workdir / "warehouse"), master=args.master, ship_packages=args.ship or None, **conf
        )
    startup = time.monotonic() - started
    result = run(spark, workdir, args.steps.split(","))
    result.update(
        pyspark=pyspark.__version__,
        stratalake=str(Path(stratalake.__file__).parent),
        startup_s=round(startup, 1),
    )
    spark.stop()
    print(json.dumps(result))
    return 1 if result["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
