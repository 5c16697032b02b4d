"""A fresh session's first query: stratalake against Spark's Parquet source on the same pyspark.

    python -m bench.first_query [--rows 200000] [--runs 3] [--delays 0,3]

Each run is a new Python process: it creates a session (stratalake's ``session()``, or a plain
``SparkSession`` for Parquet), waits ``delay`` seconds (a notebook user between cells; 0 is a
script), then times its first query, a point lookup collected, and a second one. The table (a
compacted primary-key table, ``bucket = 4``) and the Parquet copy of its rows are written once, by a
process of their own. Prints one line per (system, delay): median, min and max of the first query,
and the median of the second (warm) one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_SETUP = r"""
import sys
from stratalake.spark import session
wh, pq, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
spark = session(wh, spark_ui_enabled="false")
spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.db")
spark.sql("CREATE TABLE lake.db.t (id BIGINT, a BIGINT, b STRING, PRIMARY KEY (id) NOT ENFORCED) "
          "WITH ('bucket' = '4', 'deletion-vectors.enabled' = 'true')")
df = spark.range(rows).selectExpr("id", "id * 3 AS a", "concat('v', cast(id AS string)) AS b")
df.writeTo("lake.db.t").append()
spark.sql("CALL lake.sys.compact(table => 'db.t')").collect()
df.write.mode("overwrite").parquet(pq)
spark.stop()
"""

_RUN = r"""
import json, sys, time
system, wh, pq, delay, key = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
if system == "stratalake":
    from stratalake.spark import session
    spark = session(wh, spark_ui_enabled="false", spark_ui_showConsoleProgress="false")
    query = f"SELECT * FROM lake.db.t WHERE id = {{}}"
else:
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.read.parquet(pq).createOrReplaceTempView("t")
    query = "SELECT * FROM t WHERE id = {}"
time.sleep(delay)
times = []
for k in (key, key + 1):
    start = time.perf_counter()
    rows = spark.sql(query.format(k)).collect()
    times.append(time.perf_counter() - start)
    assert len(rows) == 1, rows
print("RESULT " + json.dumps(times))
spark.stop()
"""


def _python(code: str, *args: str) -> str:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "python"), env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    return proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--delays", default="0,3", help="seconds between the session and its first query")
    args = parser.parse_args()
    try:
        delays = [float(d) for d in args.delays.split(",")]
    except ValueError:
        parser.error(f"--delays {args.delays!r}: give seconds separated by commas, such as 0,3")
    if any(d < 0 for d in delays):
        parser.error(f"--delays {args.delays!r}: a delay cannot be negative")
    if args.runs < 1:
        parser.error(f"--runs {args.runs}: give at least 1 run")
    if args.rows < 100:
        parser.error(f"--rows {args.rows}: give at least 100 rows (the lookups read keys near rows / 3)")
    with tempfile.TemporaryDirectory(prefix="stratalake-first-query-") as work:
        wh, pq = str(Path(work) / "wh"), str(Path(work) / "pq")
        _python(_SETUP, wh, pq, str(args.rows))
        for delay in delays:
            for system in ("stratalake", "parquet"):
                firsts, seconds = [], []
                for run in range(args.runs):
                    out = _python(_RUN, system, wh, pq, str(delay), str(args.rows // 3 + run))
                    first, second = json.loads(out.split("RESULT ", 1)[1].splitlines()[0])
                    firsts.append(first)
                    seconds.append(second)
                print(
                    f"{system:10s} delay {delay:g} s: first query median {statistics.median(firsts):.2f} s "
                    f"(min {min(firsts):.2f}, max {max(firsts):.2f}), second {statistics.median(seconds):.3f} s",
                    flush=True,
                )


if __name__ == "__main__":
    main()
