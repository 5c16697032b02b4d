"""Full compaction of a 2M-row, 4-bucket table with 5 sorted runs per bucket, against plain pyarrow
reading all its files and writing the merged rows (the goal: within 3x).

Run: .venv/bin/python bench/bench_compaction.py [--rows N] [--producer lookup|full-compaction]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import stratalake
from stratalake.lsm.data_file import bucket_dir


def batch(rng: np.random.Generator, n: int, key_space: int, round_: int) -> pa.Table:
    keys = rng.choice(key_space, size=n, replace=False)
    return pa.table(
        {
            "k": pa.array(keys, pa.int64()),
            "name": pa.array([f"name-{round_}-{i % 1000}" for i in range(n)]),
            "price": pa.array(rng.random(n)),
            "qty": pa.array(rng.integers(0, 1000, n)),
            "ts": pa.array(rng.integers(0, 2**40, n)),
        }
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--producer", default="none")
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    d = tempfile.mkdtemp(prefix="bench-compact-")
    cat = stratalake.Catalog(d)
    cat.create_database("db")
    schema = pa.schema(
        [
            ("k", pa.int64()),
            ("name", pa.string()),
            ("price", pa.float64()),
            ("qty", pa.int64()),
            ("ts", pa.int64()),
        ]
    )
    opts = {"bucket": "4", "write-only": "true", "changelog-producer": args.producer}
    t = cat.create_table("db.t", schema=schema, primary_key=["k"], options=opts)
    per_run = args.rows // args.runs
    for r in range(args.runs):
        t.write(batch(rng, per_run, int(args.rows * 0.6), r))
    entries = t.live_entries(t.latest_snapshot())
    paths = [f"{bucket_dir(t.location, '', e.bucket)}/{e.file.file_name}" for e in entries]
    runs_per_bucket = {b: sum(1 for e in entries if e.bucket == b) for b in range(4)}

    start = time.perf_counter()
    sid = t.compact(full=True)
    compact_s = time.perf_counter() - start
    assert sid is not None
    out = t.live_entries(t.latest_snapshot())
    merged_rows = sum(e.file.row_count for e in out)

    # Baseline: plain pyarrow reads every input file and writes the merged rows (zstd, like us).
    out_paths = [f"{bucket_dir(t.location, '', e.bucket)}/{e.file.file_name}" for e in out]
    merged = [pq.read_table(p) for p in out_paths]
    base_dir = tempfile.mkdtemp(prefix="bench-base-")
    start = time.perf_counter()
    for p in paths:
        pq.read_table(p)
    for i, m in enumerate(merged):
        pq.write_table(m, os.path.join(base_dir, f"{i}.parquet"), compression="zstd")
    base_s = time.perf_counter() - start

    start = time.perf_counter()
    n = t.read().num_rows
    read_s = time.perf_counter() - start
    assert n == merged_rows
    print(f"input rows {args.rows:,}, runs per bucket {runs_per_bucket}, merged rows {merged_rows:,}")
    print(f"full compaction (incl. commit): {compact_s:.2f}s")
    print(f"plain pyarrow read inputs + write merged: {base_s:.2f}s  -> ratio {compact_s / base_s:.2f}x")
    print(f"read of the compacted table: {read_s:.2f}s")


if __name__ == "__main__":
    main()
