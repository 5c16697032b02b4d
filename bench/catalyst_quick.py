"""Figures for issue #10's goals: column pruning and storage-partitioned joins through Catalyst.

    .venv/bin/python bench/catalyst_quick.py            # ROWS=2000000 REPS=7 by default

Two 10-column tables of ROWS rows (primary key ``id``, bucket = 4), each written in two commits: the
load, then 5% of the keys updated, so every bucket holds two sorted runs and every read merges. With
``COMPACT=1`` both tables are fully compacted first (raw-convertible splits, no merge).

Measured, every statement run to completion with ``write.format("noop")``:

- ``SELECT *`` vs ``SELECT c3`` (one DOUBLE column) of table a;
- a join of a and b on ``id`` (their bucket key), narrow (3 columns) and wide (all 20 columns), with
  ``spark.sql.sources.v2.bucketing.enabled`` true (no Exchange) and false (both sides shuffled).

Adaptive execution and broadcast joins are off so that the plans are fixed. Every statement has one
warm-up run; then REPS rounds each run every statement once, in a rotating order, so that load from
other work on the machine hits both sides of every ratio alike. Reported: median [min-max] per
statement and the ratio of medians. ``KEEP=1`` reuses tables of an earlier run (same ROWS).
"""

import os
import shutil
import statistics
import sys
import time

os.environ["PYSPARK_PYTHON"] = sys.executable
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import stratalake
from bench.spark_sql import catalyst_data, process_tree_cpu
from stratalake.lsm.data_file import bucket_dir
from stratalake.read.merge_read import TableRead

N = int(os.environ.get("ROWS", 2_000_000))
REPS = int(os.environ.get("REPS", 7))
COMPACT = os.environ.get("COMPACT") == "1"
wh = os.environ.get("WAREHOUSE", f"/tmp/stratalake-catalyst-bench-{N}{'-compact' if COMPACT else ''}")
keep = os.environ.get("KEEP") == "1" and os.path.isdir(os.path.join(wh, "db.db"))
if not keep:
    shutil.rmtree(wh, ignore_errors=True)
cat = stratalake.Catalog(wh)
cat.create_database("db", ignore_if_exists=True)


if not keep:
    for name in ("a", "b"):
        t = cat.create_table(
            f"db.{name}", schema=catalyst_data(1, 0).schema, primary_key=["id"], options={"bucket": "4"}
        )
        t0 = time.perf_counter()
        t.write(catalyst_data(N, 1))
        t.write(catalyst_data(N // 20, 2))  # 5% updated keys: every bucket needs a merge
        if COMPACT:
            t.compact(full=True)
        print(f"wrote db.{name} in {time.perf_counter() - t0:.1f}s", flush=True)

# Bytes: Parquet column chunks the reader actually fetches (what pyarrow reads), per file.
t = cat.get_table("db.a")
splits = t.new_scan().plan()
print(
    f"db.a: {sum(len(s.files) for s in splits)} files in {len(splits)} splits, "
    f"raw-convertible: {sum(s.raw_convertible for s in splits)}/{len(splits)}",
    flush=True,
)


def chunk_bytes(columns: set[str] | None) -> int:
    total = 0
    for s in splits:
        d = bucket_dir(t.location, t.partition_codec.path(s.partition_values), s.bucket)
        for f in s.files:
            md = pq.ParquetFile(t.file_io.open_input_file(f"{d}/{f.file_name}")).metadata
            for rg in range(md.num_row_groups):
                g = md.row_group(rg)
                for c in range(g.num_columns):
                    col = g.column(c)
                    if columns is None or col.path_in_schema in columns:
                        total += col.total_compressed_size
    return total


one_cols = set(TableRead(t, columns=["c3"]).read_columns or []) | {"_SEQUENCE_NUMBER", "_VALUE_KIND"}
all_b, one_b = chunk_bytes(None), chunk_bytes(one_cols)
print(
    f"bytes: SELECT * {all_b / 1e6:.1f} MB, SELECT c3 {one_b / 1e6:.1f} MB "
    f"({100 * one_b / all_b:.0f}%), reads {sorted(one_cols)}",
    flush=True,
)

from stratalake.spark import session  # noqa: E402  (after the data is written)

spark = session(
    wh,
    spark_ui_showConsoleProgress="false",
    spark_sql_adaptive_enabled="false",
    spark_sql_autoBroadcastJoinThreshold="-1",
)
spark.sparkContext.setLogLevel("ERROR")

NARROW = "SELECT a.id, a.c3, b.c4 FROM lake.db.a a JOIN lake.db.b b ON a.id = b.id"
WIDE = "SELECT * FROM lake.db.a a JOIN lake.db.b b ON a.id = b.id"
# name -> (SQL, bucketing enabled)
STATEMENTS = {
    "select *": ("SELECT * FROM lake.db.a", "false"),
    "select c3": ("SELECT c3 FROM lake.db.a", "false"),
    "narrow join, SPJ": (NARROW, "true"),
    "narrow join, shuffle": (NARROW, "false"),
    "wide join, SPJ": (WIDE, "true"),
    "wide join, shuffle": (WIDE, "false"),
}


JVM_PID = int(spark._jvm.java.lang.ProcessHandle.current().pid())


def tree_cpu() -> float:
    """CPU seconds of the JVM, its Python workers and this driver: a figure that moves far less
    than wall time when other work competes for the machine's cores."""
    return process_tree_cpu(JVM_PID)


def run(name: str, cpu: dict[str, list[float]] | None = None) -> float:
    sql, bucketing = STATEMENTS[name]
    spark.conf.set("spark.sql.sources.v2.bucketing.enabled", bucketing)
    c0, t0 = tree_cpu(), time.perf_counter()
    spark.sql(sql).write.format("noop").mode("overwrite").save()
    wall = time.perf_counter() - t0
    if cpu is not None:
        cpu[name].append(tree_cpu() - c0)
    return wall


for name, (sql, bucketing) in STATEMENTS.items():
    spark.conf.set("spark.sql.sources.v2.bucketing.enabled", bucketing)
    plan = spark.sql(sql)._jdf.queryExecution().executedPlan().toString()
    print(f"{name}: Exchange in plan: {'Exchange' in plan}; warm-up {run(name):.2f}s", flush=True)

load_before = os.getloadavg()
samples: dict[str, list[float]] = {k: [] for k in STATEMENTS}
cpu: dict[str, list[float]] = {k: [] for k in STATEMENTS}
names = list(STATEMENTS)
for rep in range(REPS):
    order = names[rep % len(names) :] + names[: rep % len(names)]
    for name in order:
        samples[name].append(run(name, cpu))
    print(f"round {rep + 1}/{REPS}: " + ", ".join(f"{k} {samples[k][-1]:.2f}s" for k in names), flush=True)

med = {k: statistics.median(v) for k, v in samples.items()}
cpu_med = {k: statistics.median(v) for k, v in cpu.items()}
print(
    f"\n{N:,} rows per table{' (fully compacted)' if COMPACT else ' (2 sorted runs per bucket)'}, "
    f"{REPS} interleaved rounds, load average (1/5/15 min) {load_before} before, {os.getloadavg()} after"
)
print(f"  {'statement':22} wall median [min-max]        CPU s (JVM + Python workers) median")
for k in names:
    print(f"  {k:22} {med[k]:.3f} s [{min(samples[k]):.3f}-{max(samples[k]):.3f}]    {cpu_med[k]:.2f}")
for label, slow, fast, goal in (
    ("SELECT * / SELECT c3", "select *", "select c3", 2.0),
    ("narrow join: shuffle / SPJ", "narrow join, shuffle", "narrow join, SPJ", 1.5),
    ("wide join: shuffle / SPJ", "wide join, shuffle", "wide join, SPJ", 1.5),
):
    if slow not in med or fast not in med:
        continue
    ratio = med[slow] / med[fast]
    print(
        f"  {label:28} {ratio:.2f}x wall (goal >= {goal}x: {'met' if ratio >= goal else 'MISSED'}), "
        f"{cpu_med[slow] / cpu_med[fast]:.2f}x CPU"
    )
spark.stop()
