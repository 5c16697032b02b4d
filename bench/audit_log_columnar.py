"""The changelog workload of the peers bench, A/B on how `$audit_log` reaches Spark (issue 31).

    .venv/bin/python -m bench.audit_log_columnar [ROWS]        # 2,000,000 rows by default

A primary-key table (8 buckets, lookup changelog) loaded with ROWS rows, then a quarter of the keys
upserted; the read is the peers bench's changelog workload: ``$audit_log`` with
``incremental-between`` = the upsert's snapshots and scan mode ``changelog``, grouped by
``rowkind``. It runs alternately on three paths, REPS (3) times each, so that load from other work
hits all: ``stratalake.read.columnar.enabled`` off (Spark's row-by-row conversion of the Python
reader's Arrow batches), on with ``stratalake.read.native.enabled`` off (the Python reader's batches
handed over as columns, only the columns the query uses), and both on (the change files read by
Spark's Parquet reader, ``native_changes``). Reported: every time and the median per path.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from typing import Any

from pyspark.sql import SparkSession

from stratalake.spark.session import configure


def main(rows: int, reps: int) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = configure(SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false"), tempfile.mkdtemp()).getOrCreate()
    spark.sql("CREATE DATABASE lake.db")
    spark.sql(
        "CREATE TABLE lake.db.t (k BIGINT, a BIGINT, b DOUBLE, c STRING, d BIGINT, PRIMARY KEY (k) NOT ENFORCED) "
        "TBLPROPERTIES ('bucket' = '8', 'changelog-producer' = 'lookup')"
    )
    spark.sql(f"INSERT INTO lake.db.t SELECT id, id * 3, id / 7.0, concat('v', id), id % 13 FROM range({rows})")
    before = spark.sql("SELECT max(snapshot_id) FROM lake.db.`t$snapshots`").first()[0]
    spark.sql(f"INSERT INTO lake.db.t SELECT id * 4, id, 1.5, 'u', 0 FROM range({rows // 4})")
    latest = spark.sql("SELECT max(snapshot_id) FROM lake.db.`t$snapshots`").first()[0]

    def run() -> tuple[float, list[Any]]:
        start = time.perf_counter()
        out = (
            spark.read.option("incremental-between", f"{before},{latest}")
            .option("incremental-between-scan-mode", "changelog")
            .table("lake.db.`t$audit_log`")
            .groupBy("rowkind")
            .count()
            .collect()
        )
        return time.perf_counter() - start, sorted(tuple(r) for r in out)

    paths = (("row path", "false", "false"), ("columnar", "true", "false"), ("native", "true", "true"))
    times: dict[str, list[float]] = {side: [] for side, _, _ in paths}
    answers = set()
    for _ in range(reps + 1):  # the first round warms every path up
        for side, columnar, native in paths:
            spark.conf.set("stratalake.read.columnar.enabled", columnar)
            spark.conf.set("stratalake.read.native.enabled", native)
            took, answer = run()
            times[side].append(took)
            answers.add(repr(answer))
    times = {side: ts[1:] for side, ts in times.items()}
    assert len(answers) == 1, answers
    print(f"rows {rows}, snapshots ({before}, {latest}], answer {answers.pop()}")
    for side, ts in times.items():
        print(f"{side}: median {statistics.median(ts):.2f} s, runs {', '.join(f'{t:.2f}' for t in ts)}")
    native = statistics.median(times["native"])
    for side in ("row path", "columnar"):
        print(f"{side} / native: {statistics.median(times[side]) / native:.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000, int(os.environ.get("REPS", "3")))
