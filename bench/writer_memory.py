"""Standalone check (issue 14): one ``TableWrite`` fed 20M rows (``--quick``: 2M) into one bucket in
1M-row batches keeps bounded memory: the write buffer flushes level-0 files at
``write-buffer-size``, compactions (streamed) keep the sorted runs below the stop trigger, and the
peak resident set does not grow with the rows written.

    .venv/bin/python -m bench.writer_memory [--quick] [--option write-buffer-size='64 mb' ...]

Prints one line per batch (RSS, peak growth, sorted runs, level-0 files written) and the totals.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time

import numpy as np
import pyarrow as pa

from bench.data import random_strings
from bench.harness import WORK_DIR

BATCH = 1_000_000


def _status_mib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) // 1024
    return 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="2M rows instead of 20M")
    p.add_argument("--option", action="append", default=[], help="table option key=value")
    args = p.parse_args()
    import stratalake

    total = 2_000_000 if args.quick else 20_000_000
    options = {"bucket": "1", **dict(o.split("=", 1) for o in args.option)}
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    location = tempfile.mkdtemp(dir=WORK_DIR, prefix="writer-memory-")
    try:
        cat = stratalake.Catalog(location)
        cat.create_database("db")
        schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int64())])
        t = cat.create_table("db.t", schema=schema, primary_key=["id"], options=options)
        rng = np.random.default_rng(1)
        w = t.new_write()
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # VmHWM from here on
        base = _status_mib("VmRSS")
        t0 = time.perf_counter()
        for i in range(total // BATCH):
            ids = rng.integers(0, total, BATCH)  # upserts over a key space as large as the input
            w.write(pa.table({"id": ids, "v": random_strings(rng, BATCH), "n": rng.integers(0, 1000, BATCH)}))
            buf = next(iter(w._buffers.values()))
            runs = buf.manager.levels.number_of_sorted_runs() if buf.manager is not None else -1
            print(
                f"batch {i + 1}: rss {_status_mib('VmRSS')} MiB, peak +{_status_mib('VmHWM') - base} MiB, "
                f"sorted runs {runs}, level-0 files written {len(buf.new_files)}, {time.perf_counter() - t0:.0f}s",
                flush=True,
            )
        w.commit()
        elapsed = time.perf_counter() - t0
        (split,) = t.new_scan().plan()
        print(
            f"{total:,} rows written with {options}: peak RSS growth +{_status_mib('VmHWM') - base} MiB, "
            f"{elapsed:.0f}s; {len(split.files)} files, {split.row_count:,} rows after the commit"
        )
    finally:
        shutil.rmtree(location, ignore_errors=True)


if __name__ == "__main__":
    main()
