"""CDC into a cross-partition upsert table (issue 33): per-batch latency and what each batch reads.

    .venv/bin/python -m bench.cdc_cross_partition [--keys 20000000] [--batches 200] [--batch-size 10000]
        [--partitions 8] [--move 0.1] [--cache-memory '2 gb' | --no-cache] [--json out.json]

A table keyed by ``id`` alone, partitioned by ``p`` (``--partitions``), ``bucket = -1`` (so a key
may live in any partition: Paimon's cross-partition upsert), ``write-only`` (compaction is a
separate job's, as in a Paimon CDC pipeline with a dedicated compaction job; here only the writers'
key index is measured). Preloaded with ``--keys`` keys through the Python API (one writer, batches
of 1M rows, one commit). Then ``--batches`` micro-batches of ``--batch-size`` upserts of random
existing keys plus a few new ones, ``--move`` of them moving to another partition, each written and
committed by a new writer in this process (the Python API; a Spark streaming job's reused Python
workers take the same path, ``bucket/key_index_cache.py``): its latency, and the data files and
bytes its FileIO read.

Reported: the medians of the first and last 20 batches (goal: last <= 1.2x first), the largest
data bytes any batch after the first read over the bytes the batch before it wrote (goal: <= 1x,
only what changed since; never the whole key set), and that as a share of the table's bytes. ``--no-cache`` sets ``stratalake.key-index-cache.max-memory = 0``:
every writer bootstraps from the whole table, as before the cache (main's code).

``make bench`` runs it through ``bench.run`` at the sizes of ``Config`` (quick: 200k keys, 40
batches); the full size (20M keys, 200 batches of 10,000) takes the arguments above.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from typing import Any

from bench.common import Goal

NAME = "cdc_cross_partition"


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64()), ("s", pa.string())])


def build(location: str, keys: int, partitions: int, options: dict[str, str]) -> float:
    """The table with ``keys`` keys, ids 0..keys-1, key i in partition i % partitions."""
    import numpy as np
    import pyarrow as pa

    import stratalake

    t0 = time.perf_counter()
    cat = stratalake.Catalog(location)
    cat.create_database("db")
    table = cat.create_table(
        "db.cdc",
        schema=_schema(),
        primary_key=["id"],
        partition_keys=["p"],
        options={"bucket": "-1", "write-only": "true", **options},
    )
    names = np.array([f"p{i:02d}" for i in range(partitions)])
    with table.new_write() as w:
        for lo in range(0, keys, 1_000_000):
            ids = np.arange(lo, min(lo + 1_000_000, keys), dtype=np.int64)
            w.write(
                pa.table(
                    {
                        "id": ids,
                        "p": pa.array(names[ids % partitions]),
                        "v": ids,
                        "s": pa.array(np.full(len(ids), "initial")),
                    }
                )
            )
        w.commit()
    return time.perf_counter() - t0


def _counting_io() -> Any:
    from stratalake.io import LocalFileIO

    class Counting(LocalFileIO):
        def __init__(self) -> None:
            super().__init__()
            self.reset()

        def reset(self) -> None:
            self.data_files = 0
            self.data_bytes = 0
            self.other_bytes = 0

        def read_bytes(self, path: str) -> bytes:
            data = super().read_bytes(path)
            self._count(path, len(data))
            return data

        def open_input_file(self, path: str) -> Any:
            f = super().open_input_file(path)
            self._count(path, f.size())
            return f

        def _count(self, path: str, n: int) -> None:
            if "/bucket-" in path:
                self.data_files += 1
                self.data_bytes += n
            else:
                self.other_bytes += n

    return Counting()


def _cache_stats() -> Any:
    """The process's key index cache statistics (an empty counter on code without the cache,
    e.g. main's before it: ``PYTHONPATH=<main>/python:<this checkout>``)."""
    import collections

    try:
        from stratalake.bucket.key_index_cache import CACHE
    except ImportError:
        return collections.Counter()
    return CACHE.stats


def _clear_cache() -> None:
    try:
        from stratalake.bucket.key_index_cache import CACHE
    except ImportError:
        return
    CACHE.clear()


def run_batches(
    location: str, keys: int, partitions: int, batches: int, batch_size: int, move: float, seed: int = 1
) -> list[dict[str, Any]]:
    """The micro-batches: one writer and one commit each; per batch its seconds and reads."""
    import numpy as np
    import pyarrow as pa

    from stratalake.table import Table

    stats = _cache_stats()

    io = _counting_io()
    rng = np.random.default_rng(seed)
    names = np.array([f"p{i:02d}" for i in range(partitions)])
    out = []
    next_id = keys
    start = Table(io, f"{location}/db.db/cdc", "db.cdc")
    live_before = sum(e.file.file_size for e in start.live_entries(start.latest_snapshot()))  # type: ignore[arg-type]
    written_before = 0  # data bytes the batch before wrote (0 before the first)
    for b in range(batches):
        new = batch_size // 20  # 5% new keys
        ids = np.concatenate(
            [
                rng.choice(keys, size=batch_size - new, replace=False),
                np.arange(next_id, next_id + new, dtype=np.int64),
            ]
        )
        next_id += new
        home = ids % partitions
        moving = rng.random(len(ids)) < move
        part = np.where(moving, (home + 1 + b) % partitions, home)
        batch = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "p": pa.array(names[part]),
                "v": pa.array(np.full(len(ids), b, dtype=np.int64)),
                "s": pa.array(np.full(len(ids), f"batch-{b}")),
            }
        )
        io.reset()
        table = Table(io, f"{location}/db.db/cdc", "db.cdc")  # a new handle per batch, as a new task
        hits = stats["hit"]
        t0 = time.perf_counter()
        table.write(batch)
        elapsed = time.perf_counter() - t0
        now = table.refresh()
        entries = now.live_entries(now.latest_snapshot())  # type: ignore[arg-type]
        out.append(
            {
                "batch": b,
                "seconds": round(elapsed, 4),
                "data_files_read": io.data_files,
                "data_bytes_read": io.data_bytes,
                "metadata_bytes_read": io.other_bytes,
                "live_files": len(entries),
                "live_data_bytes": sum(e.file.file_size for e in entries),
                "previous_batch_wrote_bytes": written_before,
                "cache_hit": stats["hit"] > hits,
            }
        )
        written_before = out[-1]["live_data_bytes"] - live_before  # write-only: nothing is removed
        live_before = out[-1]["live_data_bytes"]
        print(json.dumps(out[-1]), flush=True)
    return out


def summarize(rows: list[dict[str, Any]], keys: int) -> dict[str, Any]:
    first = [r["seconds"] for r in rows[:20]]
    last = [r["seconds"] for r in rows[-20:]]
    later = rows[1:]
    return {
        "keys": keys,
        "batches": len(rows),
        "first20_median_s": statistics.median(first),
        "last20_median_s": statistics.median(last),
        "ratio": statistics.median(last) / statistics.median(first),
        "first_batch_data_files": rows[0]["data_files_read"],
        "first_batch_data_bytes": rows[0]["data_bytes_read"],
        "max_later_data_files": max((r["data_files_read"] for r in later), default=0),
        "median_later_data_bytes": statistics.median([r["data_bytes_read"] for r in later]) if later else 0,
        # The worst later batch: the share of the table's live data bytes (before it) it read.
        "max_later_read_share": max(
            (r["data_bytes_read"] / p["live_data_bytes"] for p, r in zip(rows, later, strict=False)),
            default=0.0,
        ),
        # The worst later batch: its data bytes read over the bytes the batch before it wrote
        # (1.0: it read exactly the files that batch added).
        "max_later_read_over_previous_written": max(
            (r["data_bytes_read"] / max(r["previous_batch_wrote_bytes"], 1) for r in later), default=0.0
        ),
        "live_files_at_end": rows[-1]["live_files"],
        "live_data_bytes_at_end": rows[-1]["live_data_bytes"],
        "cache_hits": sum(r["cache_hit"] for r in rows),
    }


def measure(
    keys: int, batches: int, batch_size: int, partitions: int, move: float, options: dict[str, str]
) -> dict[str, Any]:
    d = tempfile.mkdtemp(prefix="cdc-cross-")
    try:
        built = build(d, keys, partitions, options)
        print(f"  preload: {keys:,} keys in {built:.1f}s", flush=True)
        _clear_cache()  # the CDC job starts cold, as a new process
        rows = run_batches(d, keys, partitions, batches, batch_size, move)
        return {"build_s": round(built, 1), "options": options, **summarize(rows, keys), "per_batch": rows}
    finally:
        shutil.rmtree(d, ignore_errors=True)


# -- bench.run (make bench) -----------------------------------------------------------------------


def _sizes(cfg: Any) -> tuple[int, int]:
    return (200_000, 40) if cfg.quick else (20_000_000, 200)


def sizes(cfg: Any) -> str:
    keys, batches = _sizes(cfg)
    return f"{keys:,} keys in 8 partitions, {batches} batches of 10,000 upserts"


def run(cfg: Any) -> dict[str, Any]:
    from bench.common import save_workload

    keys, batches = _sizes(cfg)
    print(f"== {NAME}: {keys:,} keys, {batches} batches of 10,000 upserts", flush=True)
    payload = {
        "result": measure(keys, batches, 10_000, 8, 0.1, {"stratalake.key-index-cache.max-memory": "4 gb"})
    }
    save_workload(NAME, cfg, payload)
    return payload


def goals(payload: dict[str, Any]) -> list[Goal]:
    r = payload["result"]
    size = f"{r['keys'] / 1e6:g}M keys, {r['batches']} batches"
    flat = r["ratio"] <= 1.2
    share = r["max_later_read_share"]
    over = r["max_later_read_over_previous_written"]
    return [
        Goal(
            "33 CDC",
            f"per-batch latency, last 20 / first 20 ({size})",
            f"{r['ratio']:.2f}x",
            "<= 1.2x",
            "met" if flat else "MISSED",
        ),
        Goal(
            "33 CDC",
            f"data bytes the worst batch after the first reads / those the batch before it wrote ({size})",
            f"{over:.2f}x ({r['max_later_data_files']} files, {share:.1%} of the table)",
            "<= 1x",
            "met" if over <= 1.0 else "MISSED",
        ),
    ]


def figures(payload: dict[str, Any]) -> list[tuple[str, str, dict[str, Any] | None]]:
    return []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=20_000_000)
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--move", type=float, default=0.1, help="fraction of upserts moving partition")
    ap.add_argument("--cache-memory", default="4 gb", help="stratalake.key-index-cache.max-memory")
    ap.add_argument("--no-cache", action="store_true", help="every writer bootstraps afresh (as before)")
    ap.add_argument("--json")
    args = ap.parse_args()
    options = {"stratalake.key-index-cache.max-memory": "0" if args.no_cache else args.cache_memory}
    t0 = time.perf_counter()
    result = measure(args.keys, args.batches, args.batch_size, args.partitions, args.move, options)
    result["total_s"] = round(time.perf_counter() - t0, 1)
    result["load_after"] = os.getloadavg()
    print(json.dumps({k: v for k, v in result.items() if k != "per_batch"}), flush=True)
    for g in goals({"result": result}):
        print(f"  {g.status:7} {g.goal}: {g.measured} (target {g.target})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
