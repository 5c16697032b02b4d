"""Driver memory while Spark plans a MERGE INTO over a table of many files (issue 33).

    .venv/bin/python -m bench.merge_planning [--files 1000,10000,100000] [--json out.json]

The metadata workload's table (``bench/metadata_scale.py``: ``db.t`` with 200 partitions x 8
buckets at 100,000 files, built by writing manifests of small files directly), one size at a time,
each in a fresh Spark session (its own driver JVM and Python bridge). In each, after a warm-up
statement on a table holding two versions of one key (its split is merged in Python, so Spark's
Python data source workers start before the measurement, as the measured table needs them):

- ``EXPLAIN MERGE INTO lake.db.t USING <10 rows> ON t.id = s.id AND t.dt = s.dt WHEN MATCHED THEN
  UPDATE ... WHEN NOT MATCHED THEN INSERT *``: Spark analyses the MERGE, rewrites it into its
  row-level plan and plans the target's scan, whose condition prunes nothing, so every live file
  of the table is planned into splits (the explained scan says how many: native, merged in Python). The files themselves
  are not read (the table holds manifests only), so this is the planning alone;
- the same for ``EXPLAIN SELECT * FROM lake.db.t``, the whole-table query.

Reported per statement, medians of ``--repeats`` fresh sessions: wall time, and the peak RSS growth (over the statement, sampled every
50 ms) of the driver JVM and of the Python processes Spark started (the bridge that plans).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

MERGE = (
    "MERGE INTO lake.db.t t USING src s ON t.id = s.id AND t.dt = s.dt "
    "WHEN MATCHED THEN UPDATE SET t.v = s.v WHEN NOT MATCHED THEN INSERT *"
)


STATEMENTS = {"merge": MERGE, "select": "SELECT * FROM lake.db.t"}


def _processes() -> int:
    from bench.spark_peers.workload import TreeSampler

    return len(TreeSampler()._tree())


def measure(location: str, name: str) -> dict[str, Any]:
    """In a fresh interpreter and Spark session: statement ``name`` on ``location``'s table, after
    the same statement on a table of one key (same schema, same warehouse), so that Spark's
    Python processes (bridge, workers) exist before the measured statement starts."""
    from bench.spark_peers.workload import TreeSampler
    from stratalake.spark import session

    spark = session(location)
    spark.sql("DROP TABLE IF EXISTS lake.db.small")  # the runs of one size share a warehouse
    spark.sql(
        "CREATE TABLE lake.db.small (id BIGINT, dt STRING, v STRING, PRIMARY KEY (id, dt) NOT ENFORCED) "
        "PARTITIONED BY (dt) WITH ('bucket' = '8', 'write-only' = 'true')"
    )
    # Two versions of one key: the warm-up's split is merged in Python, as the measured table's
    # are, so Spark's Python data source workers (lookup, create, plan read: a daemon and a
    # worker each, ~150 MiB of RSS together, once per session) start before the measurement.
    spark.sql("INSERT INTO lake.db.small VALUES (1, '2026-01-01', 'a')")
    spark.sql("INSERT INTO lake.db.small VALUES (1, '2026-01-01', 'b')")
    spark.sql(
        "SELECT id, dt, concat('m', id) AS v FROM (SELECT id * 10 AS id, '2026-01-01' AS dt FROM range(10))"
    ).createOrReplaceTempView("src")
    statement = STATEMENTS[name]
    warm = spark.sql(f"EXPLAIN {statement.replace('lake.db.t', 'lake.db.small')}").collect()[0][0]
    processes = _processes()
    with TreeSampler(0.05) as before:
        pass
    t0 = time.perf_counter()
    with TreeSampler(0.05) as sampler:
        plan = spark.sql(f"EXPLAIN {statement}").collect()[0][0]
    out: dict[str, Any] = {
        f"{name}_s": time.perf_counter() - t0,
        f"{name}_jvm_peak_growth_mib": sampler.peak["jvm"] - before.peak["jvm"],
        f"{name}_python_peak_growth_mib": sampler.peak["python_workers"] - before.peak["python_workers"],
        f"{name}_jvm_peak_mib": sampler.peak["jvm"],
        f"{name}_new_processes": _processes() - processes,
        f"{name}_splits": re.findall(r"\[splits: ([^\]]*)\]", plan),
        f"{name}_warm_up_splits": re.findall(r"\[splits: ([^\]]*)\]", warm),
    }
    if name == "merge":
        out["merge_plan_nodes"] = sorted(set(re.findall(r"(WriteDelta|ReplaceData|MergeRows|Join\w*)", plan)))
    spark.stop()
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", default="1000,10000,100000")
    ap.add_argument("--snapshots", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3, help="fresh sessions per statement (medians reported)")
    ap.add_argument("--json")
    ap.add_argument("--measure", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.measure:
        print(json.dumps(measure(*args.measure)))
        return {}
    from bench.metadata_scale import build

    results: dict[str, Any] = {}
    for n in [int(x) for x in args.files.split(",")]:
        location = tempfile.mkdtemp(prefix=f"merge-plan-{n}-")
        try:
            t0 = time.perf_counter()
            build(location, n, args.snapshots)
            built = time.perf_counter() - t0
            env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
            r: dict[str, Any] = {"build_s": built}
            runs: dict[str, list[Any]] = {}
            for _ in range(args.repeats):
                for name in STATEMENTS:  # each in its own process: no heap grown by the other
                    proc = subprocess.run(
                        [sys.executable, "-m", "bench.merge_planning", "--measure", location, name],
                        check=True,
                        capture_output=True,
                        text=True,
                        env=env,
                    )
                    for key, value in json.loads(proc.stdout.strip().splitlines()[-1]).items():
                        runs.setdefault(key, []).append(value)
            for key, values in runs.items():
                numeric = all(isinstance(v, int | float) for v in values)
                r[key] = statistics.median(values) if numeric else values[0]
                if numeric:
                    r[key + "_runs"] = values
            results[str(n)] = r
            print(n, json.dumps(r), flush=True)
        finally:
            shutil.rmtree(location, ignore_errors=True)
    print(
        f"{'files':>8} {'statement':<10} {'s':>7} {'JVM peak +MiB':>14} {'Python peak +MiB':>17} "
        f"{'new procs':>9}  splits"
    )
    for n, r in results.items():
        for name in ("merge", "select"):
            print(
                f"{int(n):>8,} {name:<10} {r[f'{name}_s']:>7.2f} {r[f'{name}_jvm_peak_growth_mib']:>14.0f} "
                f"{r[f'{name}_python_peak_growth_mib']:>17.0f} {r[f'{name}_new_processes']:>9}  {r[f'{name}_splits']}"
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return results


if __name__ == "__main__":
    main()
