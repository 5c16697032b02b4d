"""Workload 4 - Spark SQL through the stratalake catalog, against Spark's native Parquet source.

- insert: ``INSERT INTO lake.db.ins SELECT * FROM src`` of 2M rows vs ``src.write.parquet(path)``; ``src``
  is the load commit of the shared data set (same rows as every other workload), cached in Spark first.
- scan / count: a full scan (``write.format("noop")``) and ``SELECT count(*)`` of workload 1's upserted
  table (written with ``Table.write``, 6 runs per bucket) vs the same over a Parquet copy of its merged
  rows (the floor: Spark reads Parquet without any merge).
- per-statement overhead on a 10-row table: ``SELECT * ... collect()`` and a 10-row ``INSERT ... VALUES``.
- Catalyst (issue #10): two 10-column tables of ``spark_rows`` rows (bucket = 4, a load and 5% of the keys
  updated, so every read merges): ``SELECT *`` vs ``SELECT c3`` (column pruning), and their join on the
  bucket key, narrow and wide, with ``spark.sql.sources.v2.bucketing.enabled`` true (storage-partitioned,
  no Exchange) vs false. These statements run interleaved (one of each per round, rotating) with
  ``spark_reps + 2`` rounds, and their CPU seconds (JVM and Python workers) are recorded too.

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


CATALYST_STATEMENTS = {
    # name -> (SQL, spark.sql.sources.v2.bucketing.enabled)
    "select *": ("SELECT * FROM {c}.db.ca", "false"),
    "select c3": ("SELECT c3 FROM {c}.db.ca", "false"),
    "narrow join SPJ": ("SELECT a.id, a.c3, b.c4 FROM {c}.db.ca a JOIN {c}.db.cb b ON a.id = b.id", "true"),
    "narrow join shuffle": (
        "SELECT a.id, a.c3, b.c4 FROM {c}.db.ca a JOIN {c}.db.cb b ON a.id = b.id",
        "false",
    ),
    "wide join SPJ": ("SELECT * FROM {c}.db.ca a JOIN {c}.db.cb b ON a.id = b.id", "true"),
    "wide join shuffle": ("SELECT * FROM {c}.db.ca a JOIN {c}.db.cb b ON a.id = b.id", "false"),
}


def catalyst_data(n: int, seed: int) -> Any:
    """10 columns (ints, doubles, strings of low and high cardinality), ids 0..n-1."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": np.arange(n, dtype=np.int64),
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


def process_tree_cpu(root_pid: int) -> float:
    """CPU seconds used so far by ``root_pid`` and every process under it (reaped children
    included), plus this process: for Spark, the JVM and its Python workers and daemons."""
    tick = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # after the command: state, ppid, ..., utime, stime, cutime, cstime (fields 14-17 of stat)
        stats[int(entry)] = (int(fields[1]), sum(int(x) for x in fields[11:15]) / tick)
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [root_pid]
    while todo:
        pid = todo.pop()
        total += stats.get(pid, (0, 0.0))[1]
        todo.extend(children.get(pid, []))
    own = os.times()
    return total + own.user + own.system


def catalyst_statements(
    spark: Any, catalog: str, rounds: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds of each of :data:`CATALYST_STATEMENTS` (one warm-up each, then
    ``rounds`` rounds running every statement once, in a rotating order)."""
    jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    names = list(CATALYST_STATEMENTS)

    def run(name: str) -> tuple[float, float]:
        sql, bucketing = CATALYST_STATEMENTS[name]
        spark.conf.set("spark.sql.sources.v2.bucketing.enabled", bucketing)
        c0, t0 = process_tree_cpu(jvm_pid), time.perf_counter()
        spark.sql(sql.format(c=catalog)).write.format("noop").mode("overwrite").save()
        return time.perf_counter() - t0, process_tree_cpu(jvm_pid) - c0

    for name in names:
        sql, bucketing = CATALYST_STATEMENTS[name]
        spark.conf.set("spark.sql.sources.v2.bucketing.enabled", bucketing)
        plan = spark.sql(sql.format(c=catalog))._jdf.queryExecution().executedPlan().toString()
        if ("Exchange" in plan) != (bucketing == "false" and "join" in name):
            raise AssertionError(f"unexpected plan for {name}:\n{plan}")
        run(name)
    wall: dict[str, list[float]] = {k: [] for k in names}
    cpu: dict[str, list[float]] = {k: [] for k in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            w, c = run(name)
            wall[name].append(w)
            cpu[name].append(c)
    spark.conf.unset("spark.sql.sources.v2.bucketing.enabled")
    return wall, cpu


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

    # Catalyst: column pruning and storage-partitioned joins (issue #10)
    n = spec["insert_rows"]
    for name, seed in (("ca", 1), ("cb", 2)):
        t = cat.create_table(
            f"db.{name}", schema=catalyst_data(1, 0).schema, primary_key=["id"], options={"bucket": "4"}
        )
        t.write(catalyst_data(n, seed))
        t.write(catalyst_data(n // 20, seed + 10))  # 5% of the keys updated: every bucket merges
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    wall, cpu = catalyst_statements(spark, CATALOG, reps + 2)
    cpu_samples: dict[str, list[float]] = {}
    for k in wall:
        samples[f"catalyst {k}: stratalake"] = wall[k]
        cpu_samples[f"catalyst {k}: stratalake"] = cpu[k]
    spark.stop()

    for k, v in samples.items():
        rec.phases[k] = statistics.median(v)
        rec.cpu[k] = statistics.median(cpu_samples[k]) if k in cpu_samples else 0.0
    rec.info["samples"] = samples
    rec.info["cpu_samples"] = cpu_samples
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
            res["cpu"] = {k: summarize(v) for k, v in res["info"].get("cpu_samples", {}).items()}
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


#: issue #10's goals: (label, slower statement, faster statement, target ratio)
CATALYST_GOALS = [
    ("SELECT * / SELECT one column (10 columns)", "select *", "select c3", 2.0),
    (
        "bucket-key join, 3 columns: shuffled / storage-partitioned",
        "narrow join shuffle",
        "narrow join SPJ",
        1.5,
    ),
    (
        "bucket-key join, 20 columns: shuffled / storage-partitioned",
        "wide join shuffle",
        "wide join SPJ",
        1.5,
    ),
]


def catalyst_goals(res: dict[str, Any], note: str) -> list[Goal]:
    out = []
    for label, slow, fast, target in CATALYST_GOALS:
        ks, kf = f"catalyst {slow}: stratalake", f"catalyst {fast}: stratalake"
        if "phases" not in res or ks not in res["phases"]:
            out.append(Goal("10 catalyst", label, "-", f">= {target}x", "n/a", note))
            continue
        s, f = res["phases"][ks]["median"], res["phases"][kf]["median"]
        cpu = res.get("cpu", {})
        cpu_ratio = f"{cpu[ks]['median'] / cpu[kf]['median']:.2f}x" if ks in cpu and kf in cpu else ""
        out.append(
            Goal(
                "10 catalyst",
                label,
                f"{s / f:.2f}x ({s:.3f}s vs {f:.3f}s)",
                f">= {target}x",
                "met" if s / f >= target else "MISSED",
                cpu=cpu_ratio,
            )
        )
    return out


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
    note = payload.get("skipped") or "failed: " + res.get("error", "")[:200]
    return out + catalyst_goals(res, note)


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
