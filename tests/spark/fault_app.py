"""A Spark application that makes INSERT tasks fail for real (run by ``test_faults.py``).

Usage: ``python tests/spark/fault_app.py <master> <workdir> <case>[,<case>...]``. It needs
``tests/spark/fault_site`` first on ``PYTHONPATH`` and ``STRATALAKE_FAULT_FILE`` set (the test does
both): the ``sitecustomize`` there fails chosen write tasks as ``<workdir>/control.json`` says. Each
case writes a fresh table and records what the table holds afterwards in
``<workdir>/results.json``; the test asserts on it.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

ROWS = 20_000
TABLE_OPTIONS = "'bucket' = '16', 'write-only' = 'true', 'write-buffer-size' = '64 kb'"


def main(master: str, workdir: Path, cases: list[str]) -> None:
    control = Path(os.environ["STRATALAKE_FAULT_FILE"])
    control.write_text(json.dumps({"mode": "none"}))
    warehouse = workdir / "warehouse"
    from pyspark import TaskContext
    from pyspark.sql import SparkSession
    from pyspark.sql.functions import udf

    from stratalake.catalog import Catalog
    from stratalake.spark import configure

    builder = SparkSession.builder.master(master).appName("stratalake-faults")
    builder = configure(builder, str(warehouse))
    for key, value in {
        # Keep the 4 write tasks (one per shuffle partition) and feed them many small batches;
        # 16 buckets, so that Spark's hash of the bucket ids reaches all 4 partitions.
        "spark.sql.adaptive.coalescePartitions.enabled": "false",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "500",
        "spark.executorEnv.PYTHONPATH": os.environ["PYTHONPATH"],
        "spark.executorEnv.STRATALAKE_FAULT_FILE": str(control),
        "spark.executor.memory": "768m",
    }.items():
        builder = builder.config(key, value)
    started = time.monotonic()
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("OFF")
    spark.sql("CREATE DATABASE IF NOT EXISTS lake.f")
    src = spark.range(0, ROWS, numPartitions=2).selectExpr(
        "id AS k", "concat('v', id) AS v", "repeat('x', 100) AS payload"
    )
    src.createOrReplaceTempView("src")
    log = Path(str(control) + ".log")

    @udf("string")
    def fail_once(v: str) -> str:  # an upstream (map stage) failure, before the shuffle
        ctx = TaskContext.get()
        if ctx is not None and ctx.partitionId() == 0 and ctx.attemptNumber() == 0 and v == "v5000":
            with open(log, "a", encoding="utf-8") as f:
                f.write(json.dumps({"mode": "udf", "partition": 0, "attempt": 0}) + "\n")
            raise RuntimeError("injected fault in the map stage")
        return v

    spark.udf.register("fail_once", fail_once)
    catalog = Catalog(str(warehouse))
    results: dict[str, Any] = {"startup_s": time.monotonic() - started}

    def table_state(name: str) -> dict[str, Any]:
        t = catalog.get_table(f"f.{name}")
        rows = t.read()
        k = rows.column("k")
        expected_v = pc.binary_join_element_wise(pa.scalar("v"), pc.cast(k, pa.string()), "")
        matching = pc.sum(pc.equal(rows.column("v"), expected_v))
        live = {f"{e.bucket}/{e.file.file_name}" for s in t.snapshots() for e in t.live_entries(s)}
        on_disk = {f"{p.parent.name[len('bucket-') :]}/{p.name}" for p in Path(t.location).rglob("data-*")}
        return {
            "snapshots": [(s.id, s.commit_kind.name) for s in t.snapshots()],
            "rows": rows.num_rows,
            "distinct": len(pc.unique(k)),
            "min": pc.min(k).as_py(),
            "max": pc.max(k).as_py(),
            "sum": pc.sum(k).as_py(),
            "bad_values": rows.num_rows - matching.as_py() if rows.num_rows else 0,
            "unreferenced_files": len(on_disk - live),  # by any snapshot
        }

    def run(name: str, fault: dict[str, Any], sql: str, setup: str | None = None) -> None:
        started = time.monotonic()
        spark.sql(
            f"CREATE TABLE lake.f.{name} (k BIGINT, v STRING, payload STRING, "
            f"PRIMARY KEY (k) NOT ENFORCED) WITH ({TABLE_OPTIONS})"
        )
        if setup is not None:
            spark.sql(setup.format(t=f"lake.f.{name}"))
        before = table_state(name)
        log.unlink(missing_ok=True)
        control.write_text(json.dumps(fault))
        error = None
        try:
            spark.sql(sql.format(t=f"lake.f.{name}"))
        except Exception as e:  # the statement failed: recorded, the test decides
            error = f"{type(e).__name__}: {e}"[:2000]
        finally:
            control.write_text(json.dumps({"mode": "none"}))
        faults = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        after = table_state(name)
        out: dict[str, Any] = {"before": before, "after": after, "faults": faults, "error": error}
        if error is not None:  # a new writer still works on the table
            spark.sql(
                f"INSERT INTO lake.f.{name} SELECT k + {ROWS}, concat('v', k + {ROWS}), payload FROM src"
            )
            out["next_write"] = table_state(name)
        t = catalog.get_table(f"f.{name}")
        out["orphans_removed"] = len(t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000))
        out["after_cleanup"] = table_state(name)
        out["seconds"] = time.monotonic() - started
        results[name] = out

    insert = "INSERT INTO {t} SELECT * FROM src"
    for case in cases:
        try:
            if case == "raise":
                run(case, {"mode": "raise", "partition": 1, "after_rows": 2000}, insert)
            elif case == "exit":
                run(
                    case,
                    {"mode": "exit", "partition": 2, "after_rows": 2000},
                    insert,
                    setup="INSERT INTO {t} VALUES (-1, 'v-1', 'base')",
                )
            elif case == "overwrite":
                run(
                    case,
                    {"mode": "raise", "partition": 3, "after_rows": 2000},
                    "INSERT OVERWRITE {t} SELECT * FROM src",
                    setup=f"INSERT INTO {{t}} SELECT k + {ROWS}, concat('v', k + {ROWS}), payload "
                    "FROM src WHERE k < 100",
                )
            elif case == "upstream":
                run(case, {"mode": "none"}, "INSERT INTO {t} SELECT k, fail_once(v), payload FROM src")
            elif case == "always":
                run(
                    case,
                    {"mode": "raise", "partition": 1, "after_rows": 2000, "attempts": "all"},
                    insert,
                    setup="INSERT INTO {t} VALUES (-1, 'v-1', 'base')",
                )
            elif case == "kill_executor":
                run(case, {"mode": "kill_executor", "partition": 1, "after_rows": 2000}, insert)
            else:
                raise ValueError(f"unknown case {case}")
        except Exception:
            results[case] = {"crash": traceback.format_exc()}
    spark.stop()
    (workdir / "results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), sys.argv[3].split(","))
