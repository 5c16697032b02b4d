"""Quick figures for issue #10 (run: .venv/bin/python bench/catalyst_quick.py; ROWS=2000000)."""

import os
import shutil
import sys
import time

os.environ["PYSPARK_PYTHON"] = sys.executable
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import stratalake
from stratalake.lsm.data_file import bucket_dir
from stratalake.table.read import TableRead

N = int(os.environ.get("ROWS", 2_000_000))
wh = os.environ.get("WAREHOUSE", "/tmp/stratalake-catalyst-bench")
shutil.rmtree(wh, ignore_errors=True)
cat = stratalake.Catalog(wh)
cat.create_database("db", ignore_if_exists=True)
rng = np.random.default_rng(1)


def data(n, start=0):
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "c1": rng.integers(0, 1 << 30, n),
            "c2": rng.integers(0, 1000, n).astype(np.int32),
            "c3": rng.random(n),
            "c4": rng.random(n),
            "c5": pa.array([f"s{i % 9973}" for i in range(n)]),
            "c6": pa.array([f"name-{i % 50000}-x" for i in range(n)]),
            "c7": rng.integers(0, 1 << 40, n),
            "c8": rng.random(n),
            "c9": pa.array([f"k{i % 101}" for i in range(n)]),
        }
    )


for name in ("a", "b"):
    t = cat.create_table(f"db.{name}", schema=data(1).schema, primary_key=["id"], options={"bucket": "4"})
    t0 = time.perf_counter()
    t.write(data(N))
    upd = data(N // 20)  # 5% updated keys: every bucket needs a merge
    t.write(upd)
    print(f"wrote db.{name} in {time.perf_counter() - t0:.1f}s")

# Bytes: Parquet column chunks the reader actually fetches (what pyarrow reads), per file.
t = cat.get_table("db.a")
splits = t.new_scan().plan()


def chunk_bytes(columns):
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


one_cols = set(TableRead(t, columns=["c3"]).read_columns or []) | {
    "_SEQUENCE_NUMBER",
    "_VALUE_KIND",
    "_KEY_id",
}
all_b, one_b = chunk_bytes(None), chunk_bytes(one_cols)
print(
    f"bytes: SELECT * {all_b / 1e6:.1f} MB, SELECT c3 {one_b / 1e6:.1f} MB ({100 * one_b / all_b:.0f}%), reads {sorted(one_cols)}"
)

from stratalake.spark import session  # noqa: E402  (after the data is written)

spark = session(
    wh,
    spark_ui_showConsoleProgress="false",
    spark_sql_adaptive_enabled="false",
    spark_sql_autoBroadcastJoinThreshold="-1",
)
spark.sparkContext.setLogLevel("ERROR")


def timed(q, reps=3):
    best = 1e9
    for _ in range(reps):
        t0 = time.perf_counter()
        spark.sql(q).write.format("noop").mode("overwrite").save()
        best = min(best, time.perf_counter() - t0)
    return best


timed("SELECT c3 FROM lake.db.a", 1)  # warm up workers
ts = timed("SELECT * FROM lake.db.a")
t1 = timed("SELECT c3 FROM lake.db.a")
print(f"SELECT *: {ts:.2f}s  SELECT c3: {t1:.2f}s  speedup {ts / t1:.2f}x")

for j in (
    "SELECT a.id, a.c3, b.c4 FROM lake.db.a a JOIN lake.db.b b ON a.id = b.id",
    "SELECT * FROM lake.db.a a JOIN lake.db.b b ON a.id = b.id",
):
    res = {}
    for enabled in ("true", "false"):
        spark.conf.set("spark.sql.sources.v2.bucketing.enabled", enabled)
        plan = spark.sql(j)._jdf.queryExecution().executedPlan().toString()
        timed(j, 1)
        res[enabled] = timed(j, 2)
        print(f"  bucketing={enabled}: Exchange in plan: {'Exchange' in plan}, {res[enabled]:.2f}s")
    print(f"{j}: SPJ speedup {res['false'] / res['true']:.2f}x")
