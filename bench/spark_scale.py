"""Workload 7 - Spark at scale (issue 14): a user's load, upsert, compaction and scans at millions of rows.

20M rows (``--quick``: 2M) of ``id BIGINT, a BIGINT, b STRING, c DOUBLE, d BIGINT, p STRING`` (4 value
columns, ``p`` a partition column with 4 values) written with ``df.writeTo(...).append()`` into a
table with ``'bucket' = '8'`` through a session from ``stratalake.spark.session`` (default shuffle
partitions, AQE on: several tasks per statement). In the same session and run:

- ``insert``: the load vs ``df.write.parquet`` of the same DataFrame;
- ``insert append table`` (issue 16): the same load into a table without a primary key, and its
  full-scan aggregate vs the Parquet copy of the load;
- ``upsert``: 5M rows (quick: 500k; a quarter of the keys of every bucket, new values) vs writing
  them as Parquet;
- ``insert floor`` / ``upsert floor``: what any Python writer behind Spark pays before writing a
  byte: the same rows shuffled by the table's bucket function (as the write is) and handed to a
  no-op Python function through Arrow (``mapInArrow``, the machinery of Spark's Python data source
  writer). The ratio of stratalake to this floor is stratalake's own share of the statement;
- ``count`` / ``scan aggregate`` (``sum(length(b)), sum(c), max(a)``) before compaction (2 sorted
  runs per bucket), vs Spark's Parquet scan of the merged rows (written once with the same layout);
- ``full compaction``: ``CALL sys.compact(compact_strategy => 'full')``, then ``count`` and
  ``scan aggregate`` again, and ``value filter`` (``count(*) WHERE a % 7 = 0``, issue 17).

Peak resident memory of the Python workers (summed over processes) and of the JVM is sampled every
0.2 s per statement. Each statement also records the CPU time of its Spark tasks (median over its
runs; Spark's status store), reported as a ratio next to the wall-time one: steadier than wall time
on a shared machine, and a way to tell the work in tasks from the rest (driver, scheduling, waits).
It counts the JVM's task threads only, not the Python workers they wait for: compare it only
between statements that run in the JVM alone (native scans and Spark's Parquet). The session is warmed first (Python workers started by a merged and a native
read). Each load (INSERT into fresh tables, Parquet writes, transfer floors) and each read runs 3
times and its median is reported; the upsert and the compaction change the table, so they run
once. One run, ratios: compare figures of the same run only.
- ``scan aggregate before compaction, python merge`` / ``..., row path`` (issue 17): the aggregate
  before compaction again with every column of the merged splits merged in Python
  (``stratalake.read.native-merge.enabled=false``) and handed to Spark as Arrow batches, and the
  same row by row (``stratalake.read.columnar.enabled=false`` too): the earlier read paths;
- ``scan aggregate deletion vectors``: a deletion-vector table loaded with the same rows, then 10%
  of its keys updated, vs a Parquet copy of its rows;
- ``select 10-row table``: ``SELECT *`` of a 10-row table vs a 10-row Parquet file (medians of 7).

Goals: insert <= 1.5x Parquet; upsert <= 2x Parquet; every Python worker <= 1.5 GiB during the
insert; reads (issue 17): count(*) <= 2x and full-scan aggregate <= 1.8x with 2 sorted runs,
<= 1x and <= 1.2x after full compaction; deletion-vector scan <= 1.3x; 10-row SELECT <= 1.6x.

Run alone: ``.venv/bin/python -m bench.spark_scale [--quick]``
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import Goal, cli, save_workload
from bench.config import Config
from bench.harness import REPO_DIR, WORK_DIR

NAME = "spark_scale"
#: runs of each write statement (fresh tables) and of each read; figures are their medians
WRITE_REPS = 3
READ_REPS = 3
WORKER_RSS_LIMIT_MIB = 1536


def _drop(batches: Any) -> Any:
    for batch in batches:
        yield batch.slice(0, 0)


def _transfer_floor(df: Any) -> None:
    """Shuffle ``df`` as the write to ``lake.db.t`` does (partition column, then Paimon's bucket of
    the bucket key ``id``) and pass every row to Python through Arrow, writing nothing."""
    from pyspark.sql import functions as F

    bucket = F.expr("lake.sys.stratalake_bucket(8, 0, id)")
    df.repartition("p", bucket).mapInArrow(_drop, df.schema).write.format("noop").mode("overwrite").save()


def rows_for(cfg: Config) -> int:
    return 2_000_000 if cfg.quick else 20_000_000


class RssSampler:
    """Peak RSS (MiB) of this machine's Python workers (summed, and the largest single one) and
    of the JVM, sampled from ``ps`` while a statement runs."""

    def __init__(self, driver_pid: int) -> None:
        self.driver_pid = driver_pid
        self.peak = {"python_total": 0.0, "python_max": 0.0, "jvm": 0.0}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        out = subprocess.run(["ps", "-eo", "pid,rss,comm,args"], capture_output=True, text=True).stdout
        py_total = py_max = jvm = 0.0
        for line in out.splitlines()[1:]:
            parts = line.split(None, 3)
            if len(parts) < 4:
                continue
            pid, rss, comm, args = int(parts[0]), float(parts[1]) / 1024, parts[2], parts[3]
            if comm == "java" and "pyspark" in args:
                jvm += rss
            elif "python" in comm and pid != self.driver_pid and "pyspark" in args:
                # Spark's daemon and the workers it forks (same command line)
                py_total += rss
                py_max = max(py_max, rss)
        self.peak["python_total"] = max(self.peak["python_total"], py_total)
        self.peak["python_max"] = max(self.peak["python_max"], py_max)
        self.peak["jvm"] = max(self.peak["jvm"], jvm)

    def __enter__(self) -> RssSampler:
        def loop() -> None:
            while not self._stop.is_set():
                self._sample()
                self._stop.wait(0.2)

        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def _worker(rows: int, work: Path) -> dict[str, Any]:
    """Runs in its own process: one Spark session, every statement once."""
    from stratalake.spark import session

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    spark = session(str(work / "wh"), spark_driver_memory="4g", spark_ui_showConsoleProgress="false")
    spark.sparkContext.setLogLevel("ERROR")
    results: dict[str, Any] = {"rows": rows, "statements": {}}

    def task_cpu() -> float:
        """CPU seconds of the JVM task threads of the session's completed stages so far (Spark's
        status store; not the Python workers'): a statement's share is the difference around it."""
        store = spark.sparkContext._jsc.sc().statusStore()
        no_quantiles = spark.sparkContext._gateway.new_array(spark.sparkContext._jvm.double, 0)  # type: ignore[union-attr]
        stages = store.stageList(None, False, False, no_quantiles, None).iterator()
        total = 0
        while stages.hasNext():
            total += stages.next().executorCpuTime()
        return total / 1e9

    def timed(label: str, fn: Callable[[int], Any], reps: int = 1) -> Any:
        """Runs ``fn(rep)`` ``reps`` times; records the median time (and every time), the median
        task CPU and the peak RSS over all of them; returns the first run's value."""
        times: list[float] = []
        cpus: list[float] = []
        value: Any = None
        with RssSampler(os.getpid()) as rss:
            for rep in range(reps):
                cpu = task_cpu()
                start = time.perf_counter()
                out = fn(rep)
                times.append(time.perf_counter() - start)
                time.sleep(0.2)  # (the status store hears of finished stages asynchronously)
                cpus.append(task_cpu() - cpu)
                value = out if rep == 0 else value
        elapsed = sorted(times)[len(times) // 2]
        cpu_median = sorted(cpus)[len(cpus) // 2]
        results["statements"][label] = {
            "seconds": elapsed,
            "runs": times,
            "task_cpu_seconds": cpu_median,
            "peak_mib": dict(rss.peak),
        }
        print(
            f"  {label}: {elapsed:.1f}s (runs {', '.join(f'{t:.1f}' for t in times)}; task CPU "
            f"{cpu_median:.2f}s)  peak MiB {json.dumps({k: round(v) for k, v in rss.peak.items()})}",
            flush=True,
        )
        return value

    upserts = rows // 4
    spark.sql("CREATE DATABASE lake.db")
    # Warm-up: the session's first statements start the Python workers (and their imports) and
    # load classes; a merged read and a native read, so no measured statement pays for that.
    spark.sql(
        "CREATE TABLE lake.db.warm (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '8')"
    )
    for _ in range(2):
        spark.range(100_000).selectExpr("id", "'w' AS v").writeTo("lake.db.warm").append()
    spark.range(100_000).selectExpr("id", "'w' AS v").write.parquet(str(work / "warm.parquet"))
    for _ in range(2):
        spark.sql("SELECT count(*), sum(length(v)) FROM lake.db.warm").collect()
        spark.sql("SELECT count(*) FROM lake.db.warm").collect()
    ddl = (
        "CREATE TABLE lake.db.{} (id BIGINT, a BIGINT, b STRING, c DOUBLE, d BIGINT, p STRING, "
        "PRIMARY KEY (id, p) NOT ENFORCED) PARTITIONED BY (p) WITH ('bucket' = '8')"
    )
    # Issue 16: the same rows into an append table (no primary key, bucket-unaware: no shuffle).
    append_ddl = (
        "CREATE TABLE lake.db.{} (id BIGINT, a BIGINT, b STRING, c DOUBLE, d BIGINT, p STRING) PARTITIONED BY (p)"
    )
    cols = ["id", "id * 3 AS a", "concat('v', cast(id AS string)) AS b", "CAST(id * 0.5 AS DOUBLE) AS c", "id % 1000 AS d"]
    src = spark.range(rows).selectExpr(*cols, "concat('p', cast(id % 4 AS string)) AS p")
    # Every fourth key of every partition (id 4i + i % 4 keeps its partition 'p' || id % 4), so
    # each of the 32 buckets gets a second sorted run holding a quarter of its keys.
    upd = spark.range(upserts).selectExpr(
        "id * 4 + id % 4 AS id", "id AS a", "'u' AS b", "CAST(id * 0.25 AS DOUBLE) AS c", "id % 7 AS d",
        "concat('p', cast(id % 4 AS string)) AS p",
    )  # fmt: skip

    def insert_into(ddl_text: str, base: str) -> Callable[[int], Any]:
        # The first run loads the table the later statements use; the others load fresh copies.
        def run_once(rep: int) -> None:
            name = base if rep == 0 else f"{base}_rep{rep}"
            spark.sql(ddl_text.format(name))
            src.writeTo(f"lake.db.{name}").append()

        return run_once

    parquet_load = lambda rep: src.write.mode("overwrite").partitionBy("p").parquet(str(work / "load.parquet"))  # noqa: E731
    timed("insert: stratalake", insert_into(ddl, "t"), WRITE_REPS)
    timed("insert: parquet", parquet_load, WRITE_REPS)
    timed("insert append table: stratalake", insert_into(append_ddl, "events"), WRITE_REPS)
    results["statements"]["insert append table: parquet"] = results["statements"]["insert: parquet"]
    for rep in range(1, WRITE_REPS):
        spark.sql(f"DROP TABLE lake.db.t_rep{rep}")
        spark.sql(f"DROP TABLE lake.db.events_rep{rep}")
    timed("upsert: stratalake", lambda rep: upd.writeTo("lake.db.t").append())
    timed("upsert: parquet", lambda rep: upd.write.partitionBy("p").parquet(str(work / "upsert.parquet")))
    for label, df in (("insert", src), ("upsert", upd)):
        timed(f"{label} floor: shuffle + Arrow to Python", lambda rep, d=df: _transfer_floor(d), WRITE_REPS)
    # The Parquet floor of the reads: the merged rows, written once with Spark's Parquet writer.
    spark.table("lake.db.t").write.partitionBy("p").parquet(str(work / "merged.parquet"))
    spark.read.parquet(str(work / "merged.parquet")).createOrReplaceTempView("merged")
    agg = "SELECT sum(length(b)), sum(c), max(a) FROM {}"
    answers: dict[str, Any] = {}
    spark.read.parquet(str(work / "load.parquet")).createOrReplaceTempView("loaded")
    for label, sql in (("scan aggregate append table", agg.format("lake.db.events")),):
        ours = timed(f"{label}: stratalake", lambda rep, q=sql: spark.sql(q).collect(), READ_REPS)
        floor = timed(f"{label}: parquet", lambda rep: spark.sql(agg.format("loaded")).collect(), READ_REPS)
        answers[label] = [list(ours[0]), list(floor[0])]
    for phase in ("before compaction", "after compaction"):
        if phase == "after compaction":
            timed(
                "full compaction: stratalake",
                lambda rep: spark.sql(
                    "CALL lake.sys.compact(table => 'db.t', compact_strategy => 'full')"
                ).collect(),
            )
        stmts = [("count", "SELECT count(*) FROM {}"), ("scan aggregate", agg)]
        if phase == "after compaction":
            stmts.append(("value filter", "SELECT count(*) FROM {} WHERE a % 7 = 0"))
        for stmt, sql in stmts:
            ours = timed(
                f"{stmt} {phase}: stratalake",
                lambda rep, s=sql: spark.sql(s.format("lake.db.t")).collect(),
                READ_REPS,
            )
            floor = timed(
                f"{stmt} {phase}: parquet", lambda rep, s=sql: spark.sql(s.format("merged")).collect(), READ_REPS
            )
            answers[f"{stmt} {phase}"] = [list(ours[0]), list(floor[0])]
        if phase == "before compaction":
            # Issue 17: the aggregate with merged splits merged in Python (every column, handed to
            # Spark as Arrow batches) instead of read natively after a merge of their keys, and
            # row by row (Spark's Python reader), for comparisons in one run.
            variants = (
                ("python merge", {"stratalake.read.native-merge.enabled": "false"}),
                (
                    "row path",
                    {"stratalake.read.native-merge.enabled": "false", "stratalake.read.columnar.enabled": "false"},
                ),
            )
            for variant, conf in variants:
                for k, v in conf.items():
                    spark.conf.set(k, v)
                timed(
                    f"scan aggregate before compaction, {variant}: stratalake",
                    lambda rep: spark.sql(agg.format("lake.db.t")).collect(),
                    READ_REPS,
                )
                for k in conf:
                    spark.conf.unset(k)
    # Issue 17: a deletion-vector table after updates of 10% of its keys (read natively, the
    # vectors applied in the JVM) vs a Parquet copy of its rows.
    spark.sql(
        "CREATE TABLE lake.db.dv (id BIGINT, a BIGINT, b STRING, c DOUBLE, d BIGINT, p STRING, "
        "PRIMARY KEY (id, p) NOT ENFORCED) PARTITIONED BY (p) "
        "WITH ('bucket' = '8', 'deletion-vectors.enabled' = 'true')"
    )
    src.writeTo("lake.db.dv").append()
    spark.range(0, rows, 10).selectExpr(
        "id", "-id AS a", "'dv' AS b", "CAST(id AS DOUBLE) AS c", "id % 3 AS d", "concat('p', cast(id % 4 AS string)) AS p"
    ).writeTo("lake.db.dv").append()
    spark.table("lake.db.dv").write.partitionBy("p").parquet(str(work / "dv.parquet"))
    spark.read.parquet(str(work / "dv.parquet")).createOrReplaceTempView("dv_parquet")
    ours = timed(
        "scan aggregate deletion vectors: stratalake", lambda rep: spark.sql(agg.format("lake.db.dv")).collect(), READ_REPS
    )
    floor = timed(
        "scan aggregate deletion vectors: parquet", lambda rep: spark.sql(agg.format("dv_parquet")).collect(), READ_REPS
    )
    answers["scan aggregate deletion vectors"] = [list(ours[0]), list(floor[0])]
    results["dv_plan"] = spark.sql(agg.format("lake.db.dv"))._jdf.queryExecution().executedPlan().toString()
    # Issue 17: statement overhead: SELECT of a 10-row table, median of 7 runs each.
    spark.sql("CREATE TABLE lake.db.tiny (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
    tiny = spark.range(10).selectExpr("id", "concat('v', cast(id AS string)) AS v")
    tiny.writeTo("lake.db.tiny").append()
    tiny.coalesce(1).write.parquet(str(work / "tiny.parquet"))
    spark.read.parquet(str(work / "tiny.parquet")).createOrReplaceTempView("tiny_parquet")
    for label, table in (("stratalake", "lake.db.tiny"), ("parquet", "tiny_parquet")):
        times = []
        for _ in range(7):
            start = time.perf_counter()
            spark.sql(f"SELECT * FROM {table}").collect()
            times.append(time.perf_counter() - start)
        results["statements"][f"select 10-row table: {label}"] = {
            "seconds": sorted(times)[len(times) // 2],
            "peak_mib": {"python_max": 0, "python_total": 0, "jvm": 0},
        }
        print(f"  select 10-row table: {label}: median {sorted(times)[3] * 1000:.0f} ms", flush=True)
    results["answers"] = answers
    results["files"] = [
        list(r)
        for r in spark.sql(
            "SELECT level, count(*), sum(record_count) FROM lake.db.`t$files` GROUP BY level ORDER BY level"
        ).collect()
    ]
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    return results


def run(cfg: Config) -> dict[str, Any]:
    rows = rows_for(cfg)
    print(f"== {NAME}: {rows:,} rows into 8 buckets x 4 partitions through Spark", flush=True)
    out = WORK_DIR / f"{NAME}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run(
        [sys.executable, "-m", "bench.spark_scale", "--worker", str(rows), str(out)],
        cwd=REPO_DIR,
        env=env,
    )
    if proc.returncode != 0 or not out.exists():
        payload: dict[str, Any] = {"error": f"worker exited {proc.returncode}"}
    else:
        payload = {"result": json.loads(out.read_text())}
    save_workload(NAME, cfg, payload)
    return payload


def _seconds(res: dict[str, Any], label: str) -> float:
    return float(res["statements"][label]["seconds"])


#: (goal, statement, target ratio or None to report)
RATIOS: list[tuple[str, str, float | None]] = [
    ("INSERT vs df.write.parquet", "insert", 1.5),
    ("upsert of a quarter of the keys vs writing it as Parquet", "upsert", 2.0),
    ("INSERT into an append table (no primary key) vs df.write.parquet", "insert append table", 1.2),
    ("append table: full-scan aggregate vs Parquet", "scan aggregate append table", 1.2),
    ("count(*), 2 sorted runs per bucket, vs Parquet", "count before compaction", 2.0),
    ("full-scan aggregate, 2 sorted runs per bucket, vs Parquet", "scan aggregate before compaction", 1.8),
    (
        "full-scan aggregate, 2 sorted runs per bucket, every column merged in Python (native-merge off), vs Parquet",
        "scan aggregate before compaction, python merge",
        None,
    ),
    (
        "full-scan aggregate, 2 sorted runs per bucket, merged in Python row by row (columnar off), vs Parquet",
        "scan aggregate before compaction, row path",
        None,
    ),
    ("count(*) after full compaction vs Parquet", "count after compaction", 1.0),
    ("full-scan aggregate after full compaction vs Parquet", "scan aggregate after compaction", 1.2),
    ("value-column filter (count(*) WHERE a % 7 = 0) after full compaction vs Parquet", "value filter after compaction", 1.2),
    ("deletion-vector table after updates of 10% of the keys: scan vs Parquet", "scan aggregate deletion vectors", 1.3),
    ("SELECT on a 10-row table vs Parquet (medians of 7)", "select 10-row table", 1.6),
]

#: statements without a Parquet run of their own: compared with another statement's floor
FLOORS = {
    "scan aggregate before compaction, python merge": "scan aggregate before compaction",
    "scan aggregate before compaction, row path": "scan aggregate before compaction",
}


def goals(payload: dict[str, Any]) -> list[Goal]:
    res = payload.get("result")
    if res is None:
        return [Goal("14 spark scale", "spark_scale", "-", "-", "n/a", payload.get("error", ""))]
    out = []
    for label, stmt, target in RATIOS:
        if f"{stmt}: stratalake" not in res["statements"]:  # a run from before the statement existed
            continue
        s, p = _seconds(res, f"{stmt}: stratalake"), _seconds(res, f"{FLOORS.get(stmt, stmt)}: parquet")
        ratio = s / p
        cpu_s = res["statements"][f"{stmt}: stratalake"].get("task_cpu_seconds")
        cpu_p = res["statements"][f"{FLOORS.get(stmt, stmt)}: parquet"].get("task_cpu_seconds")
        cpu = f"; task CPU {cpu_s / cpu_p:.2f}x" if cpu_s and cpu_p else ""
        out.append(
            Goal(
                "14 spark scale",
                f"{label} ({res['rows']:,} rows)",
                f"{ratio:.2f}x ({s:.1f}s vs {p:.1f}s{cpu})",
                f"<= {target}x" if target else "(report)",
                ("met" if ratio <= target else "MISSED") if target else "report",
            )
        )
    for stmt in ("insert", "upsert"):
        floor_label = f"{stmt} floor: shuffle + Arrow to Python"
        if floor_label not in res["statements"]:
            continue
        s, f, p = _seconds(res, f"{stmt}: stratalake"), _seconds(res, floor_label), _seconds(res, f"{stmt}: parquet")
        out.append(
            Goal(
                "14 spark scale",
                f"{stmt}: stratalake vs the transfer floor (shuffle + Arrow to a no-op Python writer)",
                f"{s / f:.2f}x ({s:.1f}s vs {f:.1f}s; the floor alone is {f / p:.2f}x Parquet)",
                "(report)",
                "report",
            )
        )
    compact = res["statements"]["full compaction: stratalake"]
    out.append(Goal("14 spark scale", "full compaction", f"{compact['seconds']:.1f}s", "(report)", "report"))
    insert_peak = res["statements"]["insert: stratalake"]["peak_mib"]
    worst = max(v["peak_mib"]["python_max"] for v in res["statements"].values())
    out.append(
        Goal(
            "14 spark scale",
            "peak RSS of one Python worker (any statement)",
            f"{worst:.0f} MiB (insert: {insert_peak['python_max']:.0f} MiB, all workers "
            f"{insert_peak['python_total']:.0f} MiB, JVM {insert_peak['jvm']:.0f} MiB)",
            f"<= {WORKER_RSS_LIMIT_MIB} MiB",
            "met" if worst <= WORKER_RSS_LIMIT_MIB else "MISSED",
        )
    )
    agree = all(_close(a, b) for a, b in res.get("answers", {}).values())
    out.append(
        Goal(
            "14 spark scale",
            "stratalake and Parquet answers agree",
            str(agree),
            "True",
            "met" if agree else "MISSED",
        )
    )
    return out


def _close(a: list[Any], b: list[Any]) -> bool:
    """Equal answers; float sums may differ in their last digits (summation order)."""
    return len(a) == len(b) and all(
        x == y or (isinstance(x, float) and isinstance(y, float) and abs(x - y) <= 1e-9 * max(abs(x), abs(y)))
        for x, y in zip(a, b, strict=True)
    )


def figures(payload: dict[str, Any]) -> list[tuple[str, str, dict[str, Any] | None]]:
    return []


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        result = _worker(int(sys.argv[2]), WORK_DIR / "spark_scale")
        Path(sys.argv[3]).write_text(json.dumps(result, default=str))
    else:
        cfg, _ = cli(__doc__ or NAME)
        payload = run(cfg)
        for g in goals(payload):
            print(f"  {g.status:7} {g.goal}: {g.measured} {g.note}")
