"""One system's run of issue 31's workloads, in a process of its own (see ``run.py``).

    python -m bench.spark_peers.workload SYSTEM ROWS OUT.json [--jars a.jar,b.jar] [--reps 3]

SYSTEM: ``stratalake``, ``paimon`` (Apache Paimon's own Spark connector, its jar in ``--jars``),
``delta``, ``iceberg`` or ``parquet`` (Spark's Parquet source on the running pyspark;
``--sorted-floor`` adds the clustered, sorted write); ``load-pairs`` times only stratalake's load and
the sorted floor, alternated in one process (``--pairs``, see ``run_load_pairs``). Data: bench.spark_scale's
rows (``id, a, b, c, d, p``, ``p`` one of 4 values, key ``(id, p)``); the upsert rewrites a quarter
of every partition's keys, the delete removes 1% of the keys by a key list. Each statement first
runs untimed on a small table of the same system (class loading, Python workers), then once on
the real one; reads (the changelog too) run ``--reps`` times and report the median. Around every statement the
process tree is sampled every 0.25 s from /proc: peak RSS and CPU seconds of the driver JVM
(``local[2]``: also the executor), the driver's Python and Spark's Python workers; and Spark's
REST API gives the stages' task run time and JVM CPU time.

Imports only pyspark and the standard library (stratalake for the stratalake system).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

AGG = "SELECT sum(length(b)) AS lb, sum(c) AS sc, max(a) AS ma FROM {t}"
COUNT = "SELECT count(*) FROM {t}"
COLS = (
    "id",
    "id * 3 AS a",
    "concat('v', cast(id AS string)) AS b",
    "CAST(id * 0.5 AS DOUBLE) AS c",
    "id % 1000 AS d",
    "concat('p', cast(id % 4 AS string)) AS p",
)
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_MIB = os.sysconf("SC_PAGE_SIZE") / 2**20


# ---------------------------------------------------------------------------------------------------------
# measurement


def _proc_table() -> dict[int, tuple[int, str, float, float]]:
    """pid -> (ppid, comm, cpu seconds, rss MiB) of every process (one /proc pass)."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # comm is in parentheses and may hold spaces: split after the last ')'
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        ppid, utime, stime, rss = int(fields[1]), int(fields[11]), int(fields[12]), int(fields[21])
        out[int(name)] = (ppid, comm, (utime + stime) / CLK_TCK, rss * PAGE_MIB)
    return out


def _pss_mib(pid: int) -> float | None:
    """Proportional set size (MiB) of a process: its private pages plus its share of the pages it
    shares with others; 0 if it ended, None if this kernel does not report it (no smaps_rollup)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return 0.0 if not os.path.exists(f"/proc/{pid}") else None
    return None


def _kind(pid: int, comm: str) -> str:
    if pid == os.getpid():
        return "driver_python"
    return "jvm" if comm == "java" else "python_workers" if comm.startswith("python") else "other"


class TreeSampler:
    """Peak RSS (MiB, summed per kind) and CPU seconds per kind of this process and its descendants:
    ``jvm`` (Spark's driver, which runs the tasks in local mode), ``driver_python`` (this process) and
    ``python_workers`` (Spark's Python daemon and the workers it forks); ``all``, the peak of the
    three kinds' sum. CPU of a process that ends between two samples is counted up to its last
    sample."""

    KINDS = ("jvm", "driver_python", "python_workers")

    def __init__(self, interval: float = 0.25) -> None:
        self.interval = interval
        self.peak = dict.fromkeys(self.KINDS, 0.0)
        self._no_pss = False
        self._samples = 0
        self._base: dict[int, float] = {}
        self._last: dict[int, tuple[str, float]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _tree(self) -> dict[int, tuple[str, float, float]]:
        table = _proc_table()
        children: dict[int, list[int]] = {}
        for pid, (ppid, *_rest) in table.items():
            children.setdefault(ppid, []).append(pid)
        out, todo = {}, [os.getpid()]
        while todo:
            pid = todo.pop()
            if pid in table:
                _, comm, cpu, rss = table[pid]
                out[pid] = (_kind(pid, comm), cpu, rss)
            todo.extend(children.get(pid, []))
        return out

    def _sample(self, final: bool = False) -> None:
        rss = dict.fromkeys(self.KINDS, 0.0)
        workers = []
        for pid, (kind, cpu, mib) in self._tree().items():
            if kind in rss:
                rss[kind] += mib
                self._last[pid] = (kind, cpu)
            if kind == "python_workers":
                workers.append(pid)
        # Spark's workers are forked from its daemon and share the pages of the modules it
        # imported: their RSS, summed, counts those pages once per worker; PSS splits them. The
        # kernel walks a process's pages to sum its PSS. Read every 0.25 s, that cost this (the
        # driver's) process 0.11-0.12 of a core with 1.1 GB of idle workers (0.02 as now, the same
        # peak) and ~0.17 in the 20M-row run, on the 2 cores the measured statements run on, and
        # only in the runs that have Python workers. So PSS is read when the workers' RSS reaches
        # a new peak (the PSS peak comes with it: PSS is RSS with the shared pages split), every
        # 16th sample and at the end.
        self._samples += 1
        if workers and (
            final or self._samples % 16 == 0 or rss["python_workers"] > self.peak["python_workers"]
        ):
            pss: float | None = 0.0
            for pid in workers:
                one = _pss_mib(pid)
                pss = None if one is None or pss is None else pss + one
            # Without PSS from the kernel the figure is left out of the results (the report says "-").
            if pss is None:
                self._no_pss = True
            elif not self._no_pss:
                self.peak["python_workers_pss"] = max(self.peak.get("python_workers_pss", 0.0), pss)
            if self._no_pss:
                self.peak.pop("python_workers_pss", None)
        for k, v in rss.items():
            self.peak[k] = max(self.peak[k], v)
        # Every process at once: the peak of the sum, not the sum of each kind's peak (the JVM and
        # the workers need not peak together). RSS: shared pages counted once per process.
        self.peak["all"] = max(self.peak.get("all", 0.0), sum(rss.values()))

    def cpu(self) -> dict[str, float]:
        out = dict.fromkeys(self.KINDS, 0.0)
        for pid, (kind, cpu) in self._last.items():
            out[kind] += cpu - self._base.get(pid, 0.0)
        return out

    def __enter__(self) -> TreeSampler:
        self._base = {pid: cpu for pid, (_k, cpu, _r) in self._tree().items()}

        def loop() -> None:
            while not self._stop.wait(self.interval):
                self._sample()

        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample(final=True)


class Stages:
    """Task time of the stages a statement ran, from Spark's REST API (the UI must be on)."""

    def __init__(self, spark: Any) -> None:
        sc = spark.sparkContext
        self.url = (
            f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/stages?status=complete"
            if sc.uiWebUrl
            else None
        )
        self.seen: set[tuple[int, int]] = set()
        self.mark()

    def _stages(self) -> list[dict[str, Any]]:
        if self.url is None:
            return []
        try:
            with urllib.request.urlopen(self.url, timeout=30) as r:
                result: list[dict[str, Any]] = json.load(r)
                return result
        except OSError:
            return []

    def mark(self) -> None:
        self.seen = {(s["stageId"], s["attemptId"]) for s in self._stages()}

    def since_mark(self) -> dict[str, float]:
        """Summed over the stages completed since :meth:`mark`: tasks' run time and their JVM CPU time
        (which leaves out the Python workers a task waits for), seconds."""
        run = cpu = 0.0
        n = 0
        for s in self._stages():
            if (s["stageId"], s["attemptId"]) in self.seen:
                continue
            n += 1
            run += s.get("executorRunTime", 0) / 1e3
            cpu += s.get("executorCpuTime", 0) / 1e9
        self.mark()
        return {"stages": n, "task_run_seconds": run, "task_jvm_cpu_seconds": cpu}


class Recorder:
    def __init__(self, spark: Any) -> None:
        self.statements: dict[str, Any] = {}
        self.stages = Stages(spark)
        self.enabled = True

    def timed(self, label: str, fn: Callable[[], Any], reps: int = 1) -> Any:
        """Runs ``fn`` ``reps`` times; records median seconds, every run, peak RSS and CPU per process
        kind over all runs and the task time of the stages of the runs (summed, divided by reps)."""
        if not self.enabled:
            start = time.perf_counter()
            out = fn()
            print(f"  (warm-up) {label}: {time.perf_counter() - start:.2f}s", flush=True)
            return out
        times: list[float] = []
        value: Any = None
        self.stages.mark()
        with TreeSampler() as tree:
            for rep in range(reps):
                start = time.perf_counter()
                out = fn()
                times.append(time.perf_counter() - start)
                value = out if rep == 0 else value
        time.sleep(0.3)  # Spark's status store hears of finished stages asynchronously
        stages = {k: v / reps for k, v in self.stages.since_mark().items()}
        cpu = {k: v / reps for k, v in tree.cpu().items()}
        self.statements[label] = {
            "seconds": sorted(times)[len(times) // 2],
            "runs": times,
            "peak_mib": tree.peak,
            "cpu_seconds": cpu,
            **stages,
        }
        print(
            f"  {label}: {self.statements[label]['seconds']:.2f}s (runs {', '.join(f'{t:.2f}' for t in times)}; "
            f"cpu {json.dumps({k: round(v, 1) for k, v in cpu.items()})}; peak MiB "
            f"{json.dumps({k: round(v) for k, v in tree.peak.items()})})",
            flush=True,
        )
        return value


# ---------------------------------------------------------------------------------------------------------
# systems


def _base_conf(work: Path) -> dict[str, str]:
    # stratalake's local session sets these (4 shuffle partitions for local[2], UTC): every system
    # gets the same, so they differ in their table format only. The UI is on for the stage times.
    return {
        "spark.driver.memory": "4g",
        "spark.sql.shuffle.partitions": "4",
        "spark.default.parallelism": "4",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "true",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.warehouse.dir": str(work / "spark-warehouse"),
    }


class System:
    name = ""
    table = ""

    def __init__(self, work: Path, jars: list[str]) -> None:
        self.work = work
        self.jars = jars

    def session(self) -> Any:
        from pyspark.sql import SparkSession

        b = SparkSession.builder.master("local[2]").appName(f"peers-{self.name}")
        for k, v in {**_base_conf(self.work), **self.conf()}.items():
            b = b.config(k, v)
        return b.getOrCreate()

    def conf(self) -> dict[str, str]:
        return {"spark.jars": ",".join(self.jars)} if self.jars else {}

    def name_of(self, t: str) -> str:
        return t

    def create(self, spark: Any, t: str) -> None:
        raise NotImplementedError

    def upsert(self, spark: Any, t: str, view: str) -> None:
        raise NotImplementedError

    def version(self, spark: Any, t: str) -> Any:
        """The table's latest version (snapshot id), before a statement whose changes are read."""
        raise NotImplementedError

    def changelog(self, spark: Any, t: str, before: Any) -> dict[str, int]:
        """Row count per change kind (+I/-U/+U/-D) of the commits after version ``before``."""
        raise NotImplementedError

    def delete(self, spark: Any, t: str, keys: str) -> None:
        """Deletes the rows whose ``id`` is in the view ``keys``."""
        spark.sql(f"DELETE FROM {self.name_of(t)} WHERE id IN (SELECT id FROM {keys})")

    def compact(self, spark: Any, t: str) -> None:
        raise NotImplementedError


class StrataLake(System):
    name = "stratalake"
    catalog = "lake"
    OPTIONS = "'bucket' = '8', 'changelog-producer' = 'lookup', 'deletion-vectors.enabled' = 'true'"

    def session(self) -> Any:
        from stratalake.spark import session

        return session(str(self.work / "wh"), **{**_base_conf(self.work), **self.conf()})

    def name_of(self, t: str) -> str:
        return f"{self.catalog}.db.{t}"

    def create(self, spark: Any, t: str) -> None:
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {self.catalog}.db")
        spark.sql(
            f"CREATE TABLE {self.name_of(t)} (id BIGINT, a BIGINT, b STRING, c DOUBLE, d BIGINT, p STRING, "
            f"PRIMARY KEY (id, p) NOT ENFORCED) PARTITIONED BY (p) WITH ({self.OPTIONS})"
        )

    def upsert(self, spark: Any, t: str, view: str) -> None:
        spark.table(view).writeTo(self.name_of(t)).append()

    def version(self, spark: Any, t: str) -> Any:
        return spark.sql(f"SELECT max(snapshot_id) FROM {self.catalog}.db.`{t}$snapshots`").first()[0]

    def changelog(self, spark: Any, t: str, before: Any) -> dict[str, int]:
        # The upsert's changes as a batch read gives them, as Delta's table_changes does: the
        # lookup changelog of the snapshots after `before` through $audit_log with Paimon's
        # incremental-between (start exclusive), scan mode changelog. (Before incremental reads
        # existed this was a Trigger.AvailableNow stream, ~3 s of which was the stream's own
        # start and stop.)
        latest = self.version(spark, t)
        rows = (
            spark.read.option("incremental-between", f"{before},{latest}")
            .option("incremental-between-scan-mode", "changelog")
            .table(f"{self.catalog}.db.`{t}$audit_log`")
            .groupBy("rowkind")
            .count()
            .collect()
        )
        return {kind: n for kind, n in rows}

    def compact(self, spark: Any, t: str) -> None:
        spark.sql(f"CALL {self.catalog}.sys.compact(table => 'db.{t}', compact_strategy => 'full')").collect()

    def change_files(self, t: str, before: Any, latest: Any) -> list[str]:
        """The Parquet files holding the change records of the snapshots ``(before, latest]``, as
        the changelog read plans them. Asked of stratalake's Python API in a child process: this
        driver's memory is measured, and the API would import pyarrow into it."""
        script = f"""
import json, pathlib, stratalake
from stratalake.read import incremental
table = stratalake.Catalog({str(self.work / "wh")!r}).get_table("db.{t}")
rng = incremental.between_snapshots(table, {int(before)}, {int(latest)}, incremental.IncrementalMode.CHANGELOG, "bench")
names = {{e.file.file_name for s in incremental.plan(table, rng) for e in s.entries}}
found = {{f.name: str(f) for f in pathlib.Path({str(self.work / "wh" / "db.db" / t)!r}).rglob("*.parquet") if f.name in names}}
assert set(found) == names, sorted(names - set(found))
print(json.dumps(sorted(found.values())))
"""
        import subprocess

        out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)
        return list(json.loads(out.stdout))

    def changelog_floor(self, spark: Any, files: list[str]) -> dict[str, int]:
        """Spark's Parquet source reading the kind byte of the same change files, grouped and
        counted: what any changelog read of these records costs on this Spark at least."""
        kinds = {0: "+I", 1: "-U", 2: "+U", 3: "-D"}
        df = spark.read.schema("_VALUE_KIND TINYINT").parquet(*files)
        return {kinds[k]: n for k, n in df.groupBy("_VALUE_KIND").count().collect()}


class Paimon(StrataLake):
    """Apache Paimon's own Spark connector (``paimon-spark-4.0``, built from Paimon's released source by
    build_paimon.sh) on the peers' pyspark, with stratalake's statements: the same table options, the
    upsert as an append (``writeTo().append()``, Spark's ``INSERT INTO``) that the primary key merges,
    the delete by the key list's subquery, the changelog as ``$audit_log`` read with
    ``incremental-between`` (scan mode changelog), and ``sys.compact`` with the full strategy. Only
    the table's DDL differs: Paimon's connector takes the key as the ``'primary-key'`` table property
    (on Spark 4.0 a ``PRIMARY KEY (id, p)`` clause is a ParseException)."""

    name = "paimon"
    catalog = "paimon"

    def session(self) -> Any:
        return System.session(self)

    def conf(self) -> dict[str, str]:
        return {
            **super().conf(),
            "spark.sql.extensions": "org.apache.paimon.spark.extensions.PaimonSparkSessionExtensions",
            "spark.sql.catalog.paimon": "org.apache.paimon.spark.SparkCatalog",
            "spark.sql.catalog.paimon.warehouse": (self.work / "paimon").as_uri(),
        }

    def create(self, spark: Any, t: str) -> None:
        spark.sql("CREATE DATABASE IF NOT EXISTS paimon.db")
        spark.sql(
            f"CREATE TABLE {self.name_of(t)} (id BIGINT, a BIGINT, b STRING, c DOUBLE, d BIGINT, p STRING) "
            f"PARTITIONED BY (p) TBLPROPERTIES ('primary-key' = 'id,p', {self.OPTIONS})"
        )


class Delta(System):
    name = "delta"

    def conf(self) -> dict[str, str]:
        return {
            **super().conf(),
            "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
            "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        }

    def create(self, spark: Any, t: str) -> None:
        # Change data feed for the changelog; deletion vectors so that DELETE and MERGE mark rows
        # instead of rewriting files (Delta's merge-on-read, the fastest path it has for them).
        spark.sql(
            f"CREATE TABLE {t} (id BIGINT, a BIGINT, b STRING, c DOUBLE, d BIGINT, p STRING) USING delta "
            "PARTITIONED BY (p) TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true', "
            "'delta.enableDeletionVectors' = 'true')"
        )

    def upsert(self, spark: Any, t: str, view: str) -> None:
        spark.sql(
            f"MERGE INTO {t} t USING {view} s ON t.id = s.id AND t.p = s.p "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )

    def delete(self, spark: Any, t: str, keys: str) -> None:
        # Delta's DELETE takes no subquery: a key list is deleted with MERGE.
        spark.sql(f"MERGE INTO {t} t USING {keys} k ON t.id = k.id WHEN MATCHED THEN DELETE")

    def version(self, spark: Any, t: str) -> Any:
        return spark.sql(f"DESCRIBE HISTORY {t}").agg({"version": "max"}).first()[0]

    def changelog(self, spark: Any, t: str, before: Any) -> dict[str, int]:
        kinds = {"insert": "+I", "update_preimage": "-U", "update_postimage": "+U", "delete": "-D"}
        rows = spark.sql(
            f"SELECT _change_type, count(*) FROM table_changes('{t}', {before + 1}) GROUP BY _change_type"
        ).collect()
        return {kinds[k]: n for k, n in rows}

    def compact(self, spark: Any, t: str) -> None:
        spark.sql(f"OPTIMIZE {t}").collect()


class Iceberg(System):
    name = "iceberg"

    def conf(self) -> dict[str, str]:
        return {
            **super().conf(),
            "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
            "spark.sql.catalog.ice": "org.apache.iceberg.spark.SparkCatalog",
            "spark.sql.catalog.ice.type": "hadoop",
            "spark.sql.catalog.ice.warehouse": str(self.work / "ice"),
        }

    def name_of(self, t: str) -> str:
        return f"ice.db.{t}"

    def create(self, spark: Any, t: str) -> None:
        # The same layout as stratalake's (partition p, 8 buckets of id), format v2, merge-on-read
        # for MERGE, DELETE and UPDATE (position deletes instead of rewritten files).
        spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.db")
        spark.sql(
            f"CREATE TABLE {self.name_of(t)} (id BIGINT NOT NULL, a BIGINT, b STRING, c DOUBLE, d BIGINT, "
            "p STRING NOT NULL) USING iceberg PARTITIONED BY (p, bucket(8, id)) TBLPROPERTIES ("
            "'format-version' = '2', 'write.merge.mode' = 'merge-on-read', "
            "'write.delete.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read')"
        )
        spark.sql(f"ALTER TABLE {self.name_of(t)} SET IDENTIFIER FIELDS id, p")

    def upsert(self, spark: Any, t: str, view: str) -> None:
        spark.sql(
            f"MERGE INTO {self.name_of(t)} t USING {view} s ON t.id = s.id AND t.p = s.p "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )

    def version(self, spark: Any, t: str) -> Any:
        return spark.sql(
            f"SELECT snapshot_id FROM {self.name_of(t)}.snapshots ORDER BY committed_at DESC LIMIT 1"
        ).first()[0]

    def changelog(self, spark: Any, t: str, before: Any) -> dict[str, int]:
        kinds = {"INSERT": "+I", "UPDATE_BEFORE": "-U", "UPDATE_AFTER": "+U", "DELETE": "-D"}
        view = f"{t}_changes"
        spark.sql(
            f"CALL ice.system.create_changelog_view(table => 'db.{t}', changelog_view => '{view}', "
            f"options => map('start-snapshot-id', '{before}'), compute_updates => true, "
            "identifier_columns => array('id', 'p'))"
        )
        rows = spark.sql(f"SELECT _change_type, count(*) FROM {view} GROUP BY _change_type").collect()
        spark.catalog.dropTempView(view)
        return {kinds[k]: n for k, n in rows}

    def compact(self, spark: Any, t: str) -> None:
        spark.sql(
            f"CALL ice.system.rewrite_data_files(table => 'db.{t}', options => map('rewrite-all', 'true'))"
        ).collect()


SYSTEMS: dict[str, type[System]] = {
    "stratalake": StrataLake,
    "paimon": Paimon,
    "delta": Delta,
    "iceberg": Iceberg,
}


# ---------------------------------------------------------------------------------------------------------
# workloads


def _frames(spark: Any, rows: int) -> tuple[Any, Any, Any]:
    src = spark.range(rows).selectExpr(*COLS)
    # Every fourth key of every partition (id 4i + i % 4 keeps its partition), new values.
    upd = spark.range(rows // 4).selectExpr(
        "id * 4 + id % 4 AS id", "id AS a", "'u' AS b", "CAST(id * 0.25 AS DOUBLE) AS c", "id % 7 AS d",
        "concat('p', cast(id % 4 AS string)) AS p",
    )  # fmt: skip
    dels = spark.range(rows // 100).selectExpr("id * 100 + id % 4 AS id")
    return src, upd, dels


def _lookups(rows: int) -> tuple[str, str]:
    i = rows // 8  # an upserted key that the delete keeps (deleted keys are 100k + k % 4)
    while (4 * i + i % 4) % 100 < 4:
        i += 1
    key = 4 * i + i % 4
    lo, width = rows // 3, max(rows // 1000, 10)
    return (
        f"SELECT id, a, b, c, d, p FROM {{t}} WHERE id = {key}",
        f"SELECT count(*), sum(c) FROM {{t}} WHERE id BETWEEN {lo} AND {lo + width - 1}",
    )


def _reads(rec: Recorder, spark: Any, t: str, phase: str, reps: int, answers: dict[str, Any]) -> None:
    point, key_range = _lookups(answers["_rows"])
    for stmt, sql in (
        ("count", COUNT),
        ("aggregate", AGG),
        ("point lookup", point),
        ("key range", key_range),
    ):
        label = f"{stmt}{phase}"
        value = rec.timed(label, lambda s=sql: spark.sql(s.format(t=t)).collect(), reps)  # type: ignore[misc]
        answers[label] = [list(r) for r in value]


def run_table(system: System, spark: Any, rows: int, reps: int, rec: Recorder, suffix: str) -> dict[str, Any]:
    src, upd, dels = _frames(spark, rows)
    upd.createOrReplaceTempView("upd")
    dels.createOrReplaceTempView("del_keys")
    base = f"t{suffix}"
    t = system.name_of(base)
    system.create(spark, base)
    answers: dict[str, Any] = {"_rows": rows}
    rec.timed("load", lambda: src.writeTo(t).append())
    before = system.version(spark, base)
    rec.timed("upsert", lambda: system.upsert(spark, base, "upd"))
    try:
        # A read like the others (median of reps; its first run is kept in the statement's runs).
        answers["changelog"] = rec.timed("changelog", lambda: system.changelog(spark, base, before), reps)
        if hasattr(system, "progress"):
            answers["changelog_progress"] = system.progress
        if system.name == "stratalake":
            files = system.change_files(base, before, system.version(spark, base))  # type: ignore[attr-defined]
            answers["changelog floor"] = rec.timed(
                "changelog floor",
                lambda: system.changelog_floor(spark, files),  # type: ignore[attr-defined]
                reps,
            )
    except Exception as e:  # a peer without a changelog of this table kind: say why, go on
        answers["changelog_error"] = f"{type(e).__name__}: {e}"[:500]
        print(f"  changelog failed: {answers['changelog_error']}", flush=True)
    rec.timed("delete", lambda: system.delete(spark, base, "del_keys"))
    _reads(rec, spark, t, " before compaction", reps, answers)
    rec.timed("compaction", lambda: system.compact(spark, base))
    _reads(rec, spark, t, " after compaction", reps, answers)
    return answers


def _sorted_floor(src: Any, path: Path) -> None:
    """The fair floor of an LSM writer's load: Spark's own shuffle by partition and bucket and sort
    by key before its Parquet writer (what a bucketed primary-key write must do at least)."""
    (
        src.selectExpr("*", "pmod(hash(id), 8) AS bucket")
        .repartition("p", "bucket")
        .sortWithinPartitions("p", "bucket", "id")
        .drop("bucket")
        .write.mode("overwrite")
        .partitionBy("p")
        .parquet(str(path))
    )


def run_load_pairs(system: StrataLake, spark: Any, rows: int, pairs: int, rec: Recorder, work: Path) -> None:
    """stratalake's load and the sorted floor, alternated in one process: ``pairs`` pairs, the order
    swapped in every other pair (floor first, then the load first, ...).

    The machine's speed drifts by a fifth within minutes, and the main run times each system's load
    once, in processes minutes apart; here both statements run on the same Spark, close together,
    and each takes its turn first. Both are warmed first on a tenth of the rows (the JIT of the
    rows' generation and the shuffle they share), so no run pays the process's first large write.
    Every run writes to a new table or folder (an overwrite would time Spark's delete of the last
    one) and its output is removed outside the timer."""
    src, _, _ = _frames(spark, rows)
    warm, _, _ = _frames(spark, max(rows // 10, 1))

    def load(frame: Any, t: str) -> None:
        system.create(spark, t)
        frame.writeTo(system.name_of(t)).append()

    def drop(t: str) -> None:
        spark.sql(f"DROP TABLE {system.name_of(t)}")
        shutil.rmtree(work / "wh" / "db.db" / t, ignore_errors=True)

    rec.enabled = False
    rec.timed("load sorted floor (warm-up)", lambda: _sorted_floor(warm, work / "floor-warm"))
    rec.timed("load (warm-up)", lambda: load(warm, "pair_warm"))
    drop("pair_warm")
    shutil.rmtree(work / "floor-warm", ignore_errors=True)
    rec.enabled = True
    for i in range(1, pairs + 1):
        steps: list[tuple[str, Callable[[], None]]] = [
            ("load sorted floor", lambda i=i: _sorted_floor(src, work / f"floor{i}")),  # type: ignore[misc]
            ("load", lambda i=i: load(src, f"pair{i}")),  # type: ignore[misc]
        ]
        for label, fn in steps if i % 2 else steps[::-1]:
            rec.timed(f"{label} #{i}", fn)
        # Both wrote every row (outside the timers: the count is the table's metadata, the floor's a scan).
        counts = (
            spark.sql(f"SELECT count(*) FROM {system.name_of(f'pair{i}')}").collect()[0][0],
            spark.read.parquet(str(work / f"floor{i}")).count(),
        )
        if counts != (rows, rows):
            raise AssertionError(
                f"pair {i}: the load wrote {counts[0]:,} rows, the floor {counts[1]:,}, not {rows:,}"
            )
        drop(f"pair{i}")
        shutil.rmtree(work / f"floor{i}", ignore_errors=True)


def run_parquet(
    spark: Any, rows: int, reps: int, rec: Recorder, work: Path, sorted_floor: bool
) -> dict[str, Any]:
    src, upd, dels = _frames(spark, rows)
    out = work / "parquet"
    if sorted_floor:
        # The process's first write of the real rows, as every system's load is: after the plain
        # write of the same rows it ran 18% faster (16.0 s against 19.5 s at 20M rows, the JVM's
        # code warmed by a write of the same shape), a head start no system's load gets.
        rec.timed("load sorted floor", lambda: _sorted_floor(src, out / "sorted"))
    rec.timed("load", lambda: src.write.mode("overwrite").partitionBy("p").parquet(str(out / "load")))
    rec.timed("upsert", lambda: upd.write.mode("overwrite").partitionBy("p").parquet(str(out / "upsert")))
    # The floor of the reads: the table's final rows (load, upsert, delete applied), computed
    # independently of any table format and written once by Spark's Parquet writer.
    merged = src.join(upd.select("id"), "id", "left_anti").unionByName(upd).join(dels, "id", "left_anti")
    merged.write.mode("overwrite").partitionBy("p").parquet(str(out / "merged"))
    spark.read.parquet(str(out / "merged")).createOrReplaceTempView("merged")
    answers: dict[str, Any] = {"_rows": rows}
    # What any collected query costs on this Spark through pyspark with nothing to read (parsing,
    # planning, the collect's round trip): the floor of the short reads.
    rec.timed("query floor", lambda: spark.sql("SELECT 1").collect(), reps)
    _reads(rec, spark, "merged", "", reps, answers)
    return answers


def main(argv: list[str]) -> int:
    import argparse

    p = argparse.ArgumentParser()
    p.add_argument("system", choices=[*SYSTEMS, "parquet", "load-pairs"])
    p.add_argument("rows", type=int)
    p.add_argument("out")
    p.add_argument("--jars", default="")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--work", required=True)
    p.add_argument("--sorted-floor", action="store_true")
    p.add_argument("--pairs", type=int, default=3, help="load-pairs: pairs of the load and the floor")
    args = p.parse_args(argv)
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    jars = [j for j in args.jars.split(",") if j]
    if args.system == "load-pairs":
        system: System = StrataLake(work, jars)
    else:
        system = SYSTEMS[args.system](work, jars) if args.system in SYSTEMS else System(work, jars)
    t0 = time.perf_counter()
    spark = system.session()
    spark.sparkContext.setLogLevel("ERROR")
    rec = Recorder(spark)
    import pyspark

    result: dict[str, Any] = {
        "system": args.system,
        "rows": args.rows,
        "reps": args.reps,
        "spark": pyspark.__version__,
        "python": sys.executable,
        "jars": [os.path.basename(j) for j in jars],
    }
    if args.system == "load-pairs":
        run_load_pairs(system, spark, args.rows, args.pairs, rec, work)  # type: ignore[arg-type]
        result["pairs"] = args.pairs
        return _finish(spark, rec, result, args.out, work, t0)
    # Warm-up on a small table: class loading, the Python workers, the first plans; not timed.
    rec.enabled = False
    warm_rows = 20_000
    if args.system == "parquet":
        run_parquet(spark, warm_rows, 1, rec, work / "warm", args.sorted_floor)
    else:
        run_table(system, spark, warm_rows, 1, rec, "_warm")
    rec.enabled = True
    if args.system == "parquet":
        result["answers"] = run_parquet(spark, args.rows, args.reps, rec, work, args.sorted_floor)
    else:
        result["answers"] = run_table(system, spark, args.rows, args.reps, rec, "")
    return _finish(spark, rec, result, args.out, work, t0)


def _finish(spark: Any, rec: Recorder, result: dict[str, Any], out: str, work: Path, t0: float) -> int:
    result["statements"] = rec.statements
    result["elapsed_s"] = time.perf_counter() - t0
    spark.stop()
    Path(out).write_text(json.dumps(result, default=str, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
