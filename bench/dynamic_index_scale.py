"""Dynamic-bucket writers (issue 33): what one small write into one partition reads, as the table grows.

    .venv/bin/python -m bench.dynamic_index_scale [--partitions 10,100,1000] [--json out.json]

Builds, through the Python API, a dynamic-bucket table (``bucket = -1``, partitioned by ``dt``,
``write-only`` so no writer compacts) of P partitions, 20 rows each, written by P/10 commits of 10
partitions each (so the data manifests grow with P, and its minor compaction merges them). Then, in a fresh interpreter (no manifest decoded in advance), a writer writes one
row (a new key) into one existing partition and prepares its commit (not committed): the time, and
how many manifests, HASH index files and bytes its FileIO read.

``--cross``: the same table keyed by ``id`` alone (a cross-partition upsert table, ids unique over
the table): its writer bootstraps the key index from every live row (``bucket/cross_partition.py``),
so ``data_reads`` grows with the table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

ROWS = 20
PER_COMMIT = 10


def build(location: str, partitions: int, cross: bool = False) -> None:
    import pyarrow as pa

    import stratalake

    cat = stratalake.Catalog(location)
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
    table = cat.create_table(
        "db.t",
        schema=schema,
        primary_key=["id"] if cross else ["id", "dt"],
        partition_keys=["dt"],
        options={"bucket": "-1", "write-only": "true"},
    )
    per = PER_COMMIT
    for start in range(0, partitions, per):
        parts = range(start, min(start + per, partitions))
        ids = [p * ROWS + i if cross else i for p in parts for i in range(ROWS)]
        dts = [f"p{p:05d}" for p in parts for _ in range(ROWS)]
        table.write(pa.table({"id": pa.array(ids, pa.int64()), "dt": dts, "v": ["x"] * len(ids)}))


def probe(location: str, partitions: int) -> dict[str, Any]:
    """One row into the middle partition: a writer's write and prepare_commit, cold."""
    import pyarrow as pa

    from stratalake.io import LocalFileIO
    from stratalake.table import Table

    class Counting(LocalFileIO):
        def __init__(self) -> None:
            super().__init__()
            self.reads: dict[str, int] = {"manifest": 0, "index": 0, "data": 0, "other": 0}
            self.nbytes = 0

        def read_bytes(self, path: str) -> bytes:
            data = super().read_bytes(path)
            kind = "manifest" if "/manifest/" in path else "index" if "/index/" in path else "other"
            kind = "data" if "/bucket-" in path else kind
            self.reads[kind] += 1
            self.nbytes += len(data)
            return data

        def open_input_file(self, path: str) -> Any:
            f = super().open_input_file(path)
            self.reads["data" if "/bucket-" in path else "other"] += 1
            self.nbytes += f.size()
            return f

    io = Counting()
    table = Table(io, f"{location}/db.db/t", "db.t")
    start = time.perf_counter()
    w = table.new_write()
    dt = f"p{partitions // 2:05d}"
    w.write(pa.table({"id": pa.array([10**9], pa.int64()), "dt": [dt], "v": ["new"]}))
    w.prepare_commit()
    elapsed = time.perf_counter() - start
    return {"seconds": round(elapsed, 3), "bytes_read": io.nbytes, **{f"{k}_reads": v for k, v in io.reads.items()}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", default="10,100,1000")
    ap.add_argument("--json")
    ap.add_argument("--cross", action="store_true", help="a cross-partition upsert table")
    ap.add_argument("--probe", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.probe:
        print(json.dumps(probe(args.probe[0], int(args.probe[1]))))
        return
    results = []
    for p in (int(x) for x in args.partitions.split(",")):
        d = tempfile.mkdtemp(prefix="dynidx-")
        try:
            t0 = time.perf_counter()
            build(d, p, args.cross)
            built = time.perf_counter() - t0
            out = subprocess.run(
                [sys.executable, "-m", "bench.dynamic_index_scale", "--probe", d, str(p)],
                check=True, capture_output=True, text=True, env=os.environ.copy(),
            )
            row = {"partitions": p, "build_seconds": round(built, 1), **json.loads(out.stdout.splitlines()[-1])}
            print(json.dumps(row), flush=True)
            results.append(row)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
