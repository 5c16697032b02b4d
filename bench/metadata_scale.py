"""Metadata scale (issue 33): commit, planning and expiration cost against live files and snapshots.

    .venv/bin/python -m bench.metadata_scale [--quick] [--sizes 1000,10000,100000] [--json out.json]

Builds a primary-key table of P partitions x 8 buckets holding N small live data files over S
snapshots *through the library's metadata writers* (``ManifestIO`` manifests and lists,
``Snapshot`` JSON), without writing the data files: commits, planning and expiration of files that
are only added read metadata alone. History is chronological and partition-clustered (a
time-partitioned table: each commit writes the newest partition), and the small snapshots' delta
manifests are minor-merged every 30 as a committer would. Then, in a fresh interpreter per size
(no manifest decoded in advance):

- a writer's first small write (one row into the newest partition, not committed), in an
  interpreter of its own (cold);
- one small commit (one new level-0 file in the newest partition, ``TableCommit.commit`` of a
  writer's message): the first one (cold) and the median of 20; then the median of 20 more with
  ``write-only`` (no expiration after each commit);
- planning a query of one partition (``dt = <one>``): cold, then the median of 5;
- planning the whole table, in an interpreter of its own: time and peak RSS growth;
- ``expire_snapshots`` keeping 10 snapshots (all others expire).

With ``--paimon``, Apache Paimon's Java implementation (``paimon-bundle`` 1.3.1 from Maven Central,
the core its Spark connector plans and commits with) measures the same figures on a copy of the
same table (``bench/PaimonMetadata.java``): planning one partition first in a fresh JVM, then
first after the JVM is warm, then warm; planning the whole table; small commits of one row into
the newest partition (``write-only``: the bench writes no data files, so nothing may compact);
expiring all but 10 snapshots.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

BUCKETS = 8
SNAPSHOTS = {1_000: 100, 10_000: 300, 100_000: 1_000}
FILES_PER_SMALL_SNAPSHOT = 8


def _partitions(n: int) -> int:
    return 50 if n >= 10_000 else 20


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _dt(i: int) -> str:
    return (datetime.date(2020, 1, 1) + datetime.timedelta(days=i)).isoformat()


def build(location: str, n_files: int, n_snapshots: int) -> None:
    """The table ``db.t`` at ``location`` with ``n_files`` live files over ``n_snapshots`` snapshots."""
    import pyarrow as pa

    import stratalake
    from stratalake.spec.binary_row import encode_row
    from stratalake.spec.manifest import DataFileMeta, FileKind, ManifestEntry, SimpleStats
    from stratalake.spec.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Snapshot
    from stratalake.store.manifests import ManifestNamer
    from stratalake.types import DataType

    cat = stratalake.Catalog(location)
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
    table = cat.create_table(
        "db.t", schema=schema, primary_key=["id", "dt"], partition_keys=["dt"], options={"bucket": str(BUCKETS)}
    )
    mio = table.manifest_io
    codec = table.partition_codec
    bigint, string = DataType.parse("BIGINT"), DataType.parse("STRING")
    parts = _partitions(n_files)
    next_seq: dict[tuple[int, int], int] = {}
    now = int(time.time() * 1000)

    def entry(j: int) -> ManifestEntry:
        p = min(j * parts // n_files, parts - 1)
        bucket = j % BUCKETS
        seq = next_seq.get((p, bucket), 0)
        next_seq[(p, bucket)] = seq + 10
        lo, hi = j * 10, j * 10 + 9
        key_lo, key_hi = encode_row([lo], [bigint]), encode_row([hi], [bigint])
        f = DataFileMeta(
            file_name=f"data-bench-{j:08d}-0.parquet",
            file_size=2_000,
            row_count=10,
            min_key=key_lo,
            max_key=key_hi,
            key_stats=SimpleStats(key_lo, key_hi, (0,)),
            value_stats=SimpleStats(
                encode_row([lo, _dt(p), "aaaaaaaa"], [bigint, string, string]),
                encode_row([hi, _dt(p), "zzzzzzzz"], [bigint, string, string]),
                (0, 0, 0),
            ),
            min_sequence_number=seq,
            max_sequence_number=seq + 9,
            schema_id=0,
            level=0,
            creation_time=now,
            delete_row_count=0,
            file_source=0,
        )
        return ManifestEntry(FileKind.ADD, codec.to_bytes([_dt(p)]), bucket, BUCKETS, f)

    small = FILES_PER_SMALL_SNAPSHOT * (n_snapshots - 1)
    bulk = n_files - small
    assert bulk > 0, "more small snapshots than files"
    sm = table.snapshot_manager
    namer = ManifestNamer()
    # Snapshot 1: the bulk, in manifests of about the target size (as merged manifests are).
    per_manifest = 25_000
    entries = [entry(j) for j in range(bulk)]
    base: list[Any] = []
    for off in range(0, bulk, per_manifest):
        base += mio.write_entries(entries[off : off + per_manifest], namer)
    pending: list[Any] = []  # small delta manifests not merged yet
    total = 0
    j = bulk
    for sid in range(1, n_snapshots + 1):
        if sid == 1:
            delta, base_metas = base, []
        else:
            chunk = [entry(k) for k in range(j, j + FILES_PER_SMALL_SNAPSHOT)]
            j += len(chunk)
            delta = mio.write_entries(chunk, namer)
            if len(pending) >= 30:  # minor merge of the small manifests, as the committer's
                merged = [e for m in pending for e in mio.read_entries(m.file_name)]
                base += mio.write_entries(merged, namer)
                pending = []
            base_metas = base + pending
        added = sum(m.num_added_files for m in delta) * 10
        total += added
        base_name, base_size = mio.write_list(base_metas, namer)
        delta_name, delta_size = mio.write_list(delta, namer)
        snap = Snapshot(
            id=sid,
            schema_id=0,
            base_manifest_list=base_name,
            delta_manifest_list=delta_name,
            changelog_manifest_list=None,
            index_manifest=None,
            commit_user="bench",
            commit_identifier=BATCH_COMMIT_IDENTIFIER,
            commit_kind=CommitKind.APPEND,
            time_millis=now - (n_snapshots - sid),
            total_record_count=total,
            delta_record_count=added,
            changelog_record_count=0,
            watermark=None,
            base_manifest_list_size=base_size,
            delta_manifest_list_size=delta_size,
            changelog_manifest_list_size=None,
        )
        table.file_io.write_bytes(sm.snapshot_path(sid), snap.to_json().encode())
        if sid > 1:
            pending += delta
    assert j == n_files
    sm.commit_hint("EARLIEST", 1)
    sm.commit_hint("LATEST", n_snapshots)


def measure_plan_all(location: str) -> dict[str, Any]:
    """In a fresh interpreter: planning the whole table, its time and peak RSS growth."""
    import stratalake

    table = stratalake.Catalog(location).get_table("db.t")
    table.latest_snapshot()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM from here on
    rss0 = _status_kib("VmRSS")
    t0 = time.perf_counter()
    splits = table.new_scan().plan()
    out: dict[str, Any] = {"plan_table_ms": (time.perf_counter() - t0) * 1000, "plan_table_splits": len(splits)}
    out["plan_table_peak_rss_growth_mib"] = (_status_kib("VmHWM") - rss0) / 1024
    return out


def measure_write(location: str, n_files: int) -> dict[str, Any]:
    """In a fresh interpreter: a writer's first small write, one row into the newest partition
    (the writer restores the state of the bucket it opens; no data file is read, nothing is
    committed)."""
    import pyarrow as pa

    import stratalake

    table = stratalake.Catalog(location).get_table("db.t")
    newest = _dt(_partitions(n_files) - 1)
    t0 = time.perf_counter()
    w = table.new_write()
    w.write(pa.table({"id": pa.array([-1], pa.int64()), "dt": [newest], "v": ["x"]}))
    elapsed = (time.perf_counter() - t0) * 1000
    w.abort()
    return {"write_first_ms": elapsed}


def measure(location: str, n_files: int, commits: int) -> dict[str, Any]:
    """In a fresh interpreter: the figures of one built table (see the module docstring)."""
    import stratalake
    from stratalake import field
    from stratalake.operation.commit.message import CommitMessage
    from stratalake.spec.binary_row import encode_row
    from stratalake.spec.manifest import DataFileMeta, SimpleStats
    from stratalake.types import DataType

    table = stratalake.Catalog(location).get_table("db.t")
    parts = _partitions(n_files)
    newest = _dt(parts - 1)
    partition = table.partition_codec.to_bytes([newest])
    bigint = DataType.parse("BIGINT")
    out: dict[str, Any] = {"files": n_files, "partitions": parts, "buckets": BUCKETS}
    out["snapshots"] = table.snapshot_manager.latest_snapshot_id()

    # Planning first, on a cold process (nothing decoded yet).
    def plan_one() -> int:
        return len(table.new_scan(filter=field("dt") == _dt(parts // 2)).plan())

    t0 = time.perf_counter()
    plan_one()
    out["plan_one_partition_cold_ms"] = (time.perf_counter() - t0) * 1000
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        plan_one()
        times.append((time.perf_counter() - t0) * 1000)
    out["plan_one_partition_ms"] = statistics.median(times)

    # Small commits: one new level-0 file in the newest partition, numbered after its bucket;
    # then as many again with write-only (no expiration after each), as Paimon's are timed here.
    latencies = []
    write_only = table.copy({"write-only": "true"})
    for i in range(2 * commits):
        bucket = i % BUCKETS
        seq = 10_000_000 + i * 10
        key = encode_row([-(i + 1)], [bigint])
        f = DataFileMeta(
            file_name=f"data-bench-commit-{i:05d}-0.parquet",
            file_size=2_000,
            row_count=1,
            min_key=key,
            max_key=key,
            key_stats=SimpleStats(key, key, (0,)),
            value_stats=SimpleStats.empty(),
            min_sequence_number=seq,
            max_sequence_number=seq,
            schema_id=0,
            level=0,
            delete_row_count=0,
            file_source=0,
            value_stats_cols=(),
        )
        msg = CommitMessage(partition, bucket, BUCKETS, new_files=(f,))
        t0 = time.perf_counter()
        (table if i < commits else write_only).new_commit().commit([msg])
        latencies.append((time.perf_counter() - t0) * 1000)
    out["commit_first_ms"] = latencies[0]
    out["commit_median_ms"] = statistics.median(latencies[:commits])
    out["commit_max_ms"] = max(latencies[:commits])
    out["commit_write_only_median_ms"] = statistics.median(latencies[commits:])

    t0 = time.perf_counter()
    expired = table.expire_snapshots(
        retain_max=10, retain_min=1, older_than_ms=int(time.time() * 1000) + 1, max_deletes=1_000_000
    )
    out["expire_ms"] = (time.perf_counter() - t0) * 1000
    out["expired"] = expired
    return out


PAIMON_RELEASE = "1.3.1"


def _paimon_class_path() -> str:
    """The class path of ``bench/PaimonMetadata.java`` against Paimon's bundle (fetched by Maven
    once, as the Java interop tests do), compiling it when it changed."""
    from tests.interop_java.paimon_java import class_path

    jars = class_path(PAIMON_RELEASE)
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "PaimonMetadata.java")
    out = os.path.join(os.path.dirname(os.path.dirname(source)), ".paimon-java", f"bench-{PAIMON_RELEASE}")
    compiled = os.path.join(out, "PaimonMetadata.class")
    if not os.path.exists(compiled) or os.path.getmtime(compiled) < os.path.getmtime(source):
        os.makedirs(out, exist_ok=True)
        subprocess.run(["javac", "-d", out, "-cp", jars, source], check=True, timeout=300)
    return os.pathsep.join([jars, out])


def measure_paimon(location: str, n_files: int, commits: int) -> dict[str, Any]:
    """Paimon Java's figures on ``location`` (a copy of the built table; its commits change it)."""
    cp = _paimon_class_path()
    parts = _partitions(n_files)
    phases = [
        ["plan", _dt(parts // 2), _dt(parts // 4), "5"],
        ["plan-all"],
        ["commit", _dt(parts - 1), str(commits)],
        ["expire", "10"],
    ]
    out: dict[str, Any] = {}
    for phase in phases:
        proc = subprocess.run(
            ["java", "-cp", cp, "PaimonMetadata", location, *phase], check=True, capture_output=True, text=True
        )
        out.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    return out


def run_size(n_files: int, n_snapshots: int, commits: int, work: str, paimon: bool = False) -> dict[str, Any]:
    location = tempfile.mkdtemp(dir=work, prefix=f"meta-{n_files}-")
    try:
        t0 = time.perf_counter()
        build(location, n_files, n_snapshots)
        built = time.perf_counter() - t0
        if paimon:
            shutil.copytree(location, location + "-paimon")
        result: dict[str, Any] = {}
        for phase in (
            ["--measure-write", location, str(n_files)],
            ["--measure-plan-all", location],
            ["--measure", location, str(n_files), str(commits)],
        ):
            proc = subprocess.run(
                [sys.executable, "-m", "bench.metadata_scale", *phase], check=True, capture_output=True, text=True
            )
            result.update(json.loads(proc.stdout.strip().splitlines()[-1]))
        result["build_s"] = built
        if paimon:
            result["paimon"] = measure_paimon(location + "-paimon", n_files, commits)
        return result
    finally:
        shutil.rmtree(location, ignore_errors=True)
        shutil.rmtree(location + "-paimon", ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="1k and 10k files only, 10 commits")
    p.add_argument("--sizes", help="comma-separated live file counts (default 1000,10000,100000)")
    p.add_argument("--commits", type=int, help="small commits to time (default 20; --quick 10)")
    p.add_argument("--snapshots", type=int, help="snapshots of every table (default: 100, 300, 1000 by size)")
    p.add_argument("--json", help="also write the results to this file")
    p.add_argument("--paimon", action="store_true", help=f"also measure Paimon {PAIMON_RELEASE} (Java) on each table")
    p.add_argument("--measure", nargs=3, help=argparse.SUPPRESS)
    p.add_argument("--measure-plan-all", help=argparse.SUPPRESS)
    p.add_argument("--measure-write", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.measure_write:
        print(json.dumps(measure_write(args.measure_write[0], int(args.measure_write[1]))))
        return
    if args.measure_plan_all:
        print(json.dumps(measure_plan_all(args.measure_plan_all)))
        return
    if args.measure:
        location, n, commits = args.measure
        print(json.dumps(measure(location, int(n), int(commits))))
        return
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else [1_000, 10_000] if args.quick else list(SNAPSHOTS)
    commits = args.commits or (10 if args.quick else 20)
    from bench.harness import WORK_DIR

    WORK_DIR.mkdir(parents=True, exist_ok=True)
    work = str(WORK_DIR)
    results = []
    header = (
        f"{'files':>8} {'snaps':>6} {'build s':>8} {'write 1st':>10} {'commit 1st':>11} {'commit med':>11} "
        f"{'plan 1 part':>12} {'(cold)':>8} {'plan all':>9} {'peak MiB':>9} {'expire':>9}"
    )
    print(header, flush=True)
    for n in sizes:
        snaps = args.snapshots or SNAPSHOTS.get(n, max(2, min(1_000, n // 100)))
        r = run_size(n, snaps, commits, work, paimon=args.paimon)
        results.append(r)
        print(
            f"{n:>8} {r['snapshots']:>6} {r['build_s']:>8.1f} {r['write_first_ms']:>8.0f}ms "
            f"{r['commit_first_ms']:>9.0f}ms "
            f"{r['commit_median_ms']:>9.0f}ms {r['plan_one_partition_ms']:>10.0f}ms "
            f"{r['plan_one_partition_cold_ms']:>6.0f}ms {r['plan_table_ms']:>7.0f}ms "
            f"{r['plan_table_peak_rss_growth_mib']:>9.0f} {r['expire_ms']:>7.0f}ms ({r['expired']})"
            f"  [commit median, write-only: {r['commit_write_only_median_ms']:.0f}ms]",
            flush=True,
        )
        if "paimon" in r:
            j = r["paimon"]
            print(
                f"{'Paimon':>8} {'Java':>6} {'':>8} {j['write_first_ms']:>8.0f}ms {j['commit_first_ms']:>9.0f}ms "
                # write-only, see measure_paimon
                f"{j['commit_median_ms']:>9.0f}ms {j['plan_one_partition_ms']:>10.0f}ms "
                f"{j['plan_one_partition_cold_ms']:>6.0f}ms {j['plan_table_ms']:>7.0f}ms "
                f"{j['plan_table_peak_rss_growth_mib']:>9.0f} {j['expire_ms']:>7.0f}ms ({j['expired']})"
                f"  [plan 1 partition first in a warm JVM: {j['plan_one_partition_warm_jvm_ms']:.0f}ms]",
                flush=True,
            )
    if len(results) > 1:
        first, last = results[0], results[-1]
        print(
            f"commit median {last['files']} / {first['files']} files: "
            f"{last['commit_median_ms'] / first['commit_median_ms']:.2f}x",
            flush=True,
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
