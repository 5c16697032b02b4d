"""Deletion-vector read cost: a merged read of a DV table vs a plain Parquet read of its files.

    .venv/bin/python -m bench.bench_deletion_vectors [--rows 2000000] [--updates 5] [--buckets 4]

The table gets one large load (compacted to the top level) and a few commits updating ~1% of the
keys each, so the top files carry deletion vectors and a few small level>=1 files hold the new rows.
The floor reads the same live files with ``pyarrow.parquet.read_table`` (value columns only) and
concatenates them, without masking anything.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import stratalake
from stratalake.lsm.data_file import bucket_dir


def _best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--updates", type=int, default=5)
    ap.add_argument("--fraction", type=float, default=0.01)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dv-bench-"))
    try:
        cat = stratalake.Catalog(str(work / "wh"))
        cat.create_database("db")
        schema = pa.schema([("k", pa.int64()), ("v", pa.string()), ("x", pa.float64())])
        t = cat.create_table(
            "db.t",
            schema=schema,
            primary_key=["k"],
            options={"bucket": str(args.buckets), "deletion-vectors.enabled": "true"},
        )
        rng = np.random.default_rng(7)
        n = args.rows
        keys = np.arange(n, dtype=np.int64)
        t.write(pa.table({"k": keys, "v": pa.array(keys.astype(str)), "x": rng.random(n)}))
        start = time.perf_counter()
        for i in range(args.updates):
            upd = np.sort(rng.choice(n, int(n * args.fraction), replace=False)).astype(np.int64)
            t.write(pa.table({"k": upd, "v": pa.array([f"u{i}"] * len(upd)), "x": rng.random(len(upd))}))
        update_s = time.perf_counter() - start
        splits = t.new_scan().plan()
        codec = t.partition_codec
        paths = [
            f"{bucket_dir(t.location, codec.path(s.partition_values), s.bucket)}/{f.file_name}"
            for s in splits
            for f in s.files
        ]
        dv_rows = sum(d.cardinality or 0 for s in splits for _, d in s.deletion_files)
        result = t.read()
        assert result.num_rows == n, result.num_rows

        def floor() -> pa.Table:
            return pa.concat_tables([pq.read_table(p, columns=["k", "v", "x"]) for p in paths])

        def floor_threaded() -> pa.Table:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(len(splits)) as pool:
                return pa.concat_tables(
                    list(pool.map(lambda p: pq.read_table(p, columns=["k", "v", "x"]), paths))
                )

        ours = _best(lambda: t.read(), args.repeat)
        plain = _best(floor, args.repeat)
        plain_mt = _best(floor_threaded, args.repeat)
        print(
            f"rows={n} buckets={args.buckets} files={len(paths)} splits={len(splits)} masked_rows={dv_rows} "
            f"update_commits={args.updates} ({update_s / args.updates:.2f}s each, with compaction)"
        )
        print(f"stratalake read (DV, no merge): {ours * 1000:.0f} ms")
        print(f"plain parquet read of the same files: {plain * 1000:.0f} ms (one file at a time)")
        print(f"plain parquet read, files in parallel: {plain_mt * 1000:.0f} ms")
        print(f"ratio vs plain: {ours / plain:.2f}x; vs parallel plain: {ours / plain_mt:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
