"""Why a fully compacted table's native scan can trail Spark's Parquet scan of the same rows.

    PYTHONPATH=python .venv/bin/python bench/native_scan_profile.py   # ROWS=8000000 REPS=7 by default

Builds the table of ``bench/spark_scale.py`` (``id, a, b, c, d`` and partition ``p``, 8 buckets x 4
partitions), upserts a quarter of its keys, fully compacts it (every split then read natively by
Spark's vectorized Parquet reader) and writes a Parquet copy of its rows with Spark. It then runs
``sum(length(b)), sum(c), max(a)`` on three scans, interleaved, in one session:

- ``native``: the table (32 native splits);
- ``files``: ``spark.read.parquet`` of the table's own 32 data files (Spark's file source: layout
  of our files without our planning);
- ``copy``: ``spark.read.parquet`` of the Parquet copy (the spark_scale floor).

Twice: in a clean session, then after the same query ran on a small table of the same columns
whose scan feeds Spark other column-vector kinds (``POLLUTE=merged``: Arrow vectors of merged
splits, the default; ``POLLUTE=dictionary``: natively read files whose ``b`` is dictionary
encoded; ``POLLUTE=plain``: natively read plain files, the control). Reported: medians of wall
time and of the scan stage's executor CPU time (Spark's monitoring API on a loopback port), and
their ratios to ``copy``.

Spark compiles a query's whole-stage code once and reuses the class for every plan of the same
shape; a DSv2 scan's code reads batches through the abstract ``ColumnVector`` (``BatchScanExec``
reports no vector types), so its JIT profile is shared by every table read with that query. The
file source's code casts to ``OnHeapColumnVector`` and does not share it. ``KEEP=1`` reuses an
earlier run's tables (same ROWS).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import time
import urllib.request
from typing import Any

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))

from stratalake.spark import session

ROWS = int(os.environ.get("ROWS", 8_000_000))
REPS = int(os.environ.get("REPS", 7))
POLLUTE = os.environ.get("POLLUTE", "merged")
PORT = int(os.environ.get("UI_PORT", 4077))
WORK = os.environ.get("WORK", f"/tmp/stratalake-native-scan-profile-{ROWS}")
AGG = "SELECT sum(length(b)), sum(c), max(a) FROM {}"
DDL = (
    "CREATE TABLE lake.db.{} (id BIGINT, a BIGINT, b STRING, c DOUBLE, d BIGINT, p STRING, "
    "PRIMARY KEY (id, p) NOT ENFORCED) PARTITIONED BY (p) WITH ('bucket' = '{}')"
)

keep = os.environ.get("KEEP") == "1" and os.path.exists(os.path.join(WORK, "built"))
if not keep:
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
spark = session(
    os.path.join(WORK, "wh"),
    spark_driver_memory="4g",
    spark_ui_showConsoleProgress="false",
    spark_ui_enabled="true",
    spark_ui_port=str(PORT),
)
spark.sparkContext.setLogLevel("ERROR")
sc = spark.sparkContext
copy_path = os.path.join(WORK, "copy.parquet")
if not keep:
    spark.sql("CREATE DATABASE lake.db")
    spark.sql(DDL.format("t", 8))
    value_cols = ["id * 3 AS a", "concat('v', cast(id AS string)) AS b", "CAST(id * 0.5 AS DOUBLE) AS c"]
    spark.range(ROWS).selectExpr(
        "id", *value_cols, "id % 1000 AS d", "concat('p', cast(id % 4 AS string)) AS p"
    ).writeTo("lake.db.t").append()
    spark.range(ROWS // 4).selectExpr(
        "id * 4 + id % 4 AS id", "id AS a", "'u' AS b", "CAST(id * 0.25 AS DOUBLE) AS c", "id % 7 AS d",
        "concat('p', cast(id % 4 AS string)) AS p",
    ).writeTo("lake.db.t").append()  # fmt: skip
    spark.sql("CALL lake.sys.compact(table => 'db.t', compact_strategy => 'full')").collect()
    spark.table("lake.db.t").write.partitionBy("p").parquet(copy_path)
    open(os.path.join(WORK, "built"), "w").close()
files = [r[0] for r in spark.sql("SELECT file_path FROM lake.db.`t$files`").collect()]
spark.read.parquet(*[f if "://" in f else "file:" + f for f in files]).createOrReplaceTempView("files")
spark.read.parquet(copy_path).createOrReplaceTempView("copy")
SCANS = {"native": "lake.db.t", "files": "files", "copy": "copy"}
API = f"http://127.0.0.1:{PORT}/api/v1/applications/{sc.applicationId}"


def _get(path: str) -> Any:
    with urllib.request.urlopen(API + path) as r:
        return json.loads(r.read())


_runs = 0


def run(table: str) -> tuple[float, float, int]:
    """Wall seconds of the query on ``table``, executor CPU seconds and tasks of its scan stage."""
    global _runs
    _runs += 1
    group = f"run{_runs}"
    sc.setJobGroup(group, group)
    start = time.perf_counter()
    spark.sql(AGG.format(table)).collect()
    wall = time.perf_counter() - start
    time.sleep(0.2)  # the monitoring API catches up with the finished stages
    stages = [
        _get(f"/stages/{s}/0")
        for j in sc.statusTracker().getJobIdsForGroup(group)
        for s in _get(f"/jobs/{j}")["stageIds"]
    ]
    scan = max(stages, key=lambda s: s["executorCpuTime"])
    return wall, scan["executorCpuTime"] / 1e9, scan["numTasks"]


def measure(label: str) -> None:
    for _ in range(2):
        for table in SCANS.values():
            run(table)
    out: dict[str, list[tuple[float, float, int]]] = {k: [] for k in SCANS}
    for rep in range(REPS):  # alternating order: load from other work hits every scan alike
        for name in list(SCANS) if rep % 2 == 0 else list(SCANS)[::-1]:
            out[name].append(run(SCANS[name]))
    med = {
        k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v), v[0][2])
        for k, v in out.items()
    }
    for name, (wall, cpu, tasks) in med.items():
        print(
            f"{label:24s} {name:7s} wall {wall:.3f}s ({wall / med['copy'][0]:.2f}x)  "
            f"scan CPU {cpu:.3f}s ({cpu / med['copy'][1]:.2f}x)  {tasks} tasks",
            flush=True,
        )


measure("clean session")
spark.sql("DROP TABLE IF EXISTS lake.db.other")
if POLLUTE == "merged":  # two sorted runs per bucket: merged splits, Arrow vectors
    spark.sql(DDL.format("other", 2))
    b_values = ("concat('v', cast(id AS string))", "concat('w', cast(id AS string))")
elif POLLUTE in ("dictionary", "plain"):  # one file per bucket after compaction: native splits
    spark.sql(DDL.format("other", 2))
    b_values = ("'x'", "'y'") if POLLUTE == "dictionary" else ("concat('v', cast(id AS string))",) * 2
else:
    raise SystemExit(f"POLLUTE must be merged, dictionary or plain, not {POLLUTE!r}")
for step, b in zip((1, 4), b_values, strict=True):
    spark.range(0, 200_000, step).selectExpr(
        "id", "id AS a", f"{b} AS b", "1.0 AS c", "id AS d", "concat('p', cast(id % 2 AS string)) AS p"
    ).writeTo("lake.db.other").append()
if POLLUTE != "merged":
    spark.sql("CALL lake.sys.compact(table => 'db.other', compact_strategy => 'full')").collect()
plan = spark.sql(AGG.format("lake.db.other"))._jdf.queryExecution().executedPlan().toString()
print(
    "other table's scan:", next(line.strip() for line in plan.splitlines() if "BatchScan" in line), flush=True
)
for _ in range(10):
    spark.sql(AGG.format("lake.db.other")).collect()
measure(f"after {POLLUTE} reads")
spark.stop()
