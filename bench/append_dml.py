"""DELETE and UPDATE of an append table through Spark SQL (issue 33): where the work runs.

    .venv/bin/python -m bench.append_dml [--rows 4000000] [--batches 8] [--repeats 3]
        [--deletion-vectors] [--split-target-size '8 mb'] [--json out.json]

An append table of ``--rows`` rows (``id``, ``g = id % 97``, ``v = id``, a random uuid string, so the
files hold ~30 bytes a row), partitioned into
4, loaded by ``--batches`` INSERTs (so each partition holds that many files), copy-on-write unless
``--deletion-vectors``. A statement whose files exceed one split (``--split-target-size``, default
128 MB) runs its work on data files as a job of Spark tasks, a smaller one in the bridge. Then, each ``--repeats`` times on a fresh copy of the table:

- a DELETE the table evaluates (``g = k``: 1% of the rows, in every file), which Spark hands to the
  table whole (``deleteWhere``);
- an UPDATE through Spark's row-level plan (``v % 97 = k``, not a condition the table evaluates),
  1% of the rows, in every file.

A first statement on another copy starts Spark's Python workers. Reported: the median wall
time of each (the rows left are checked), the rows a second, and the number of tasks of each Spark
stage the statement ran (a stage of many tasks: the work was distributed; none: the driver did it),
with the peak RSS and the CPU seconds of the JVM and of the Python processes (bridge and workers).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _tasks(spark: Any, group: str) -> list[str]:
    """Each stage the statement ran: its number of tasks (and what ran it)."""
    tracker = spark.sparkContext.statusTracker()
    out = []
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info is not None else []:
            s = tracker.getStageInfo(stage)
            if s is not None:
                out.append(f"{s.numTasks} ({s.name.split(' at ')[0]})")
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=4_000_000)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--deletion-vectors", action="store_true")
    ap.add_argument(
        "--split-target-size", help="the table's 'source.split.target-size' (e.g. '8 mb'): statements whose files exceed it run as jobs"
    )
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import stratalake
    from bench.spark_peers.workload import TreeSampler
    from stratalake.spark import configure

    work = Path(tempfile.mkdtemp(prefix="append-dml-"))
    warehouse = work / "wh"
    spark = configure(SparkSession.builder.master("local[2]").appName("bench-append-dml"), str(warehouse)).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    dv = "'deletion-vectors.enabled' = 'true'" if args.deletion_vectors else "'deletion-vectors.enabled' = 'false'"
    if args.split_target_size:
        dv += f", 'source.split.target-size' = '{args.split_target_size}'"
    out: dict[str, Any] = {
        "rows": args.rows,
        "batches": args.batches,
        "deletion_vectors": args.deletion_vectors,
        "split_target_size": args.split_target_size,
    }
    try:
        spark.sql("CREATE DATABASE lake.b")
        spark.sql(f"CREATE TABLE lake.b.base (id BIGINT, g INT, v BIGINT, s STRING) PARTITIONED BY (p INT) TBLPROPERTIES ({dv})")
        per = args.rows // args.batches
        t0 = time.perf_counter()
        for i in range(args.batches):
            spark.sql(
                f"INSERT INTO lake.b.base SELECT id, CAST(id % 97 AS INT), id, uuid(), CAST(id % 4 AS INT) "
                f"FROM range({i * per}, {(i + 1) * per}, 1, 2)"
            )
        out["load_s"] = round(time.perf_counter() - t0, 2)
        base = stratalake.Catalog(str(warehouse)).get_table("b.base")
        snap = base.latest_snapshot()
        entries = base.live_entries(snap) if snap is not None else []
        out["files"] = len(entries)
        out["table_mb"] = round(sum(e.file.file_size for e in entries) / 2**20, 1)
        statements = {
            "delete_pushed": "DELETE FROM {t} WHERE g = {k}",
            "update_row_level": "UPDATE {t} SET v = -v WHERE v % 97 = {k}",
        }

        def hit(k: int) -> int:  # the rows with id % 97 == k (g and, before the UPDATE, v are id % 97)
            return len(range(k, per * args.batches, 97))

        for name, sql in statements.items():
            times, tasks = [], []
            peaks: dict[str, float] = {}
            cpus: dict[str, list[float]] = {}
            # A first statement on another copy: Spark's Python workers start and import once.
            shutil.copytree(base.location, f"{warehouse}/b.db/w{name[:1]}")
            spark.sql(sql.format(t=f"lake.b.w{name[:1]}", k=3))
            for r in range(args.repeats):
                copy = f"c{name[:1]}{r}"
                shutil.copytree(base.location, f"{warehouse}/b.db/{copy}")
                group = f"{name}-{r}"
                spark.sparkContext.setJobGroup(group, name)
                with TreeSampler(0.05) as sampler:
                    t0 = time.perf_counter()
                    spark.sql(sql.format(t=f"lake.b.{copy}", k=7 + r))
                    times.append(time.perf_counter() - t0)
                for kind, mib in sampler.peak.items():
                    peaks[kind] = max(peaks.get(kind, 0.0), mib)
                for kind, sec in sampler.cpu().items():
                    cpus.setdefault(kind, []).append(sec)
                spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
                tasks.append(_tasks(spark, group))
                count = spark.sql(f"SELECT count(*), sum(CAST(v < 0 AS INT)) FROM lake.b.{copy}").collect()[0]
                deleted = hit(7 + r) if name == "delete_pushed" else 0
                assert count[0] == per * args.batches - deleted, (name, count[0])
                assert name != "update_row_level" or count[1] == hit(7 + r), (name, count[1])
            median = statistics.median(times)
            out[name] = {
                "median_s": round(median, 3),
                "min_s": round(min(times), 3),
                "max_s": round(max(times), 3),
                "rows_per_s": round(args.rows / median),
                "stage_tasks": tasks[0],
                # Peak RSS (MiB, summed per kind: the JVM runs the tasks in local mode; the Python
                # processes are the bridge and Spark's workers) and median CPU seconds per kind.
                "peak_rss_mib": {k: round(v) for k, v in peaks.items()},
                "cpu_s": {k: round(statistics.median(v), 2) for k, v in cpus.items()},
            }
            print(f"{name}: median {median:.2f} s over {args.repeats} (min {min(times):.2f}, max {max(times):.2f}); stage tasks {tasks[0]}", flush=True)
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
