"""Workload 4 - Spark SQL through the stratalake catalog, against Spark's native Parquet source.

- insert: ``INSERT INTO lake.db.ins SELECT * FROM src`` of 2M rows vs ``src.write.parquet(path)``; ``src``
  is the load commit of the shared data set (same rows as every other workload), cached in Spark first.
- scan / count: a full scan (``write.format("noop")``) and ``SELECT count(*)`` of workload 1's upserted
  table (written with ``Table.write``, 6 runs per bucket) vs the same over a Parquet copy of its merged
  rows (the floor: Spark reads Parquet without any merge).
- per-statement overhead on a 10-row table: ``SELECT * ... collect()`` and a 10-row ``INSERT ... VALUES``.

Everything runs in one Spark session (``stratalake.spark.session``) in one subprocess; each statement has
one warm-up execution and then ``spark_reps`` timed ones (``spark_reps * 4`` for the 10-row statements).
Skips, with the reason, when the session helper, the shim jar or the Table API is missing.

Run alone: ``.venv/bin/python -m bench.spark_sql [--quick]``
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.common import Goal, cli, guarded, save_workload
from bench.config import TABLE_OPTIONS, Config
from bench.harness import WORK_DIR, repeat, summarize

NAME = "spark_sql"
CATALOG = "lake"
DDL = "CREATE TABLE {name} (id BIGINT NOT NULL, v STRING, n BIGINT) TBLPROPERTIES ('primary-key'='id', 'bucket'='4')"


def unavailable() -> str | None:
    import importlib

    try:
        import stratalake

        session_module = importlib.import_module("stratalake.spark.session")
    except ImportError as e:
        return f"stratalake.spark.session is not importable yet: {e}"
    if not hasattr(stratalake, "Catalog"):
        return "stratalake.Catalog (Table API) does not exist yet"
    fn = getattr(session_module, "session", None)
    if not callable(fn):
        return "stratalake.spark.session(warehouse) does not exist yet"
    try:
        session_module.shim_jar()
    except FileNotFoundError as e:
        return str(e)
    return None


def _timed(fn: Callable[[], Any], reps: int, before: Callable[[], Any] | None = None) -> list[float]:
    out = []
    for i in range(reps + 1):  # first run is the warm-up
        if before is not None:
            before()
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        if i:
            out.append(dt)
    return out


def op_spark(spec: dict[str, Any], rec: Any) -> None:
    import stratalake
    from bench.data import Commits, generate
    from bench.peers import PEERS
    from stratalake.spark import session

    root = spec["location"]
    shutil.rmtree(root, ignore_errors=True)
    wh = os.path.join(root, "warehouse")
    pq_dir = os.path.join(root, "parquet")
    os.makedirs(pq_dir, exist_ok=True)
    reps = spec["reps"]

    # Upserted table (workload 1's data) and its merged rows as Parquet, written outside Spark.
    core = Commits.from_json(spec["core"])
    cat = stratalake.Catalog(wh)
    cat.create_database("db", ignore_if_exists=True)
    from bench.data import PRIMARY_KEY, SCHEMA

    up = cat.create_table(
        "db.up", schema=SCHEMA, primary_key=PRIMARY_KEY, partition_keys=[], options=TABLE_OPTIONS
    )
    floor = PEERS["pyarrow"]().create(os.path.join(root, "floor-runs"), {})
    for t in generate(core):
        up.write(t)
        floor.write(t)
    import pyarrow.parquet as pq

    pq.write_table(
        floor.read(), os.path.join(pq_dir, "merged.parquet"), compression="zstd", compression_level=1
    )

    spark = session(wh, catalog=CATALOG)
    spark.sparkContext.setLogLevel("ERROR")
    samples: dict[str, list[float]] = {}

    # insert
    src_arrow = next(generate(Commits(load_rows=spec["insert_rows"])))
    src = spark.createDataFrame(src_arrow).cache()
    src.count()
    src.createOrReplaceTempView("src")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {CATALOG}.db")

    def fresh_ins() -> None:
        spark.sql(f"DROP TABLE IF EXISTS {CATALOG}.db.ins")
        spark.sql(DDL.format(name=f"{CATALOG}.db.ins"))

    samples["insert: stratalake"] = _timed(
        lambda: spark.sql(f"INSERT INTO {CATALOG}.db.ins SELECT * FROM src"), reps, fresh_ins
    )
    samples["insert: parquet"] = _timed(
        lambda: src.write.mode("overwrite").parquet(os.path.join(root, "ins.parquet")), reps
    )
    src.unpersist()

    # scan and count of the upserted table
    upserted = spark.table(f"{CATALOG}.db.up")
    merged_pq = spark.read.parquet(pq_dir)
    samples["scan: stratalake"] = _timed(lambda: upserted.write.format("noop").mode("overwrite").save(), reps)
    samples["scan: parquet"] = _timed(lambda: merged_pq.write.format("noop").mode("overwrite").save(), reps)
    counts: dict[str, int] = {}
    samples["count: stratalake"] = _timed(
        lambda: counts.__setitem__("up", spark.sql(f"SELECT count(*) FROM {CATALOG}.db.up").collect()[0][0]),
        reps,
    )
    samples["count: parquet"] = _timed(
        lambda: counts.__setitem__("pq", spark.read.parquet(pq_dir).selectExpr("count(*)").collect()[0][0]),
        reps,
    )
    if counts["up"] != core.live_keys or counts["pq"] != core.live_keys:
        raise AssertionError(f"count(*) mismatch: {counts}, expected {core.live_keys}")

    # per-statement overhead, 10-row table
    spark.sql(DDL.format(name=f"{CATALOG}.db.small"))
    ten = spark.createDataFrame(next(generate(Commits(load_rows=10))))
    ten.createOrReplaceTempView("ten")
    spark.sql(f"INSERT INTO {CATALOG}.db.small SELECT * FROM ten")
    small_pq = os.path.join(root, "small.parquet")
    ten.write.mode("overwrite").parquet(small_pq)
    small_reps = reps * 4
    samples["select 10 rows: stratalake"] = _timed(
        lambda: spark.sql(f"SELECT * FROM {CATALOG}.db.small").collect(), small_reps
    )
    samples["select 10 rows: parquet"] = _timed(lambda: spark.read.parquet(small_pq).collect(), small_reps)
    values = ", ".join(f"({i}, 'x{i:019d}', {i})" for i in range(10))
    samples["insert 10 rows: stratalake"] = _timed(
        lambda: spark.sql(f"INSERT INTO {CATALOG}.db.small VALUES {values}"), small_reps
    )
    samples["insert 10 rows: parquet"] = _timed(
        lambda: (
            spark.sql(f"SELECT * FROM VALUES {values} AS t(id, v, n)").write.mode("append").parquet(small_pq)
        ),
        small_reps,
    )
    spark.stop()

    for k, v in samples.items():
        rec.phases[k] = statistics.median(v)
        rec.cpu[k] = 0.0
    rec.info["samples"] = samples
    rec.info["counts"] = counts


def run(cfg: Config) -> dict[str, Any]:
    print(f"== {NAME}: insert {cfg.spark_rows:,} rows", flush=True)
    reason = unavailable()
    if reason is not None:
        print(f"  SKIP {NAME}: {reason}", flush=True)
        payload: dict[str, Any] = {"skipped": reason}
    else:
        spec = {
            "op": "spark",
            "peer": "stratalake",
            "location": str(WORK_DIR / "spark"),
            "core": cfg.core.to_json(),
            "insert_rows": cfg.spark_rows,
            "reps": cfg.spark_reps,
        }
        res = guarded(repeat, spec, 1)
        if "phases" in res:
            # one process; expose each statement's samples as its own summary
            res["phases"] = {k: summarize(v) for k, v in res["info"]["samples"].items()}
        payload = {"result": res}
    save_workload(NAME, cfg, payload)
    return payload


PAIRS = [
    ("insert", "INSERT of the load vs df.write.parquet"),
    ("scan", "full scan of upserted table vs Parquet"),
    ("count", "count(*) of upserted table vs Parquet"),
    ("select 10 rows", "SELECT on a 10-row table vs Parquet"),
    ("insert 10 rows", "INSERT of 10 rows vs Parquet append"),
]


def goals(payload: dict[str, Any]) -> list[Goal]:
    res = payload.get("result", {})
    out = []
    for key, label in PAIRS:
        if "phases" not in res:
            note = payload.get("skipped") or "failed: " + res.get("error", "")[:200]
            out.append(Goal("4 spark", label, "-", "(no target)", "n/a", note))
            continue
        s, p = res["phases"][f"{key}: stratalake"]["median"], res["phases"][f"{key}: parquet"]["median"]
        out.append(
            Goal(
                "4 spark",
                f"{label}: stratalake / parquet",
                f"{s / p:.2f}x ({s:.3f}s vs {p:.3f}s)",
                "(no target)",
                "report",
            )
        )
    return out


def figures(payload: dict[str, Any]) -> list[tuple[str, str, dict[str, Any] | None]]:
    res = payload.get("result", {})
    if "phases" not in res:
        return []
    rows: list[tuple[str, str, dict[str, Any] | None]] = []
    for k, v in res["phases"].items():
        stmt, peer = k.split(": ")
        rows.append((f"spark {stmt}", peer, {"phases": {"t": v}}))
    return rows


if __name__ == "__main__":
    cfg, _ = cli(__doc__ or NAME)
    payload = run(cfg)
    for g in goals(payload):
        print(f"  {g.status:7} {g.goal}: {g.measured} {g.note}")
