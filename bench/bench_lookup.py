"""Lookup changelog cost (issue #5): a 100k-row upsert into a 2M-row table with
``changelog-producer=lookup``, against the same upsert with ``changelog-producer=none`` plus its
compaction (level 0 pushed up, as lookup does: ``compaction.force-up-level-0``). Goal: < 2x.

Run: .venv/bin/python bench/bench_lookup.py [--rows N] [--upsert N] [--reps R]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa

import stratalake

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("n", pa.int64())])


def rows(ids: np.ndarray, tag: int) -> pa.Table:
    return pa.table({"id": ids, "v": pa.array([f"value-{tag}-{i % 100_000:06d}" for i in ids]), "n": ids * tag})


def make_table(warehouse: str, producer: str, base: pa.Table) -> stratalake.Table:
    options = {"bucket": "4", "changelog-producer": producer}
    if producer == "none":
        options["compaction.force-up-level-0"] = "true"
    cat = stratalake.Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options=options)
    t.write(base)
    t.compact(full=True)
    return t


def timed_write(t: stratalake.Table, b: pa.Table) -> float:
    start = time.perf_counter()
    t.write(b)  # the writer compacts level 0 (and, for lookup, emits the changelog)
    return time.perf_counter() - start


def measure(base: pa.Table, upserts: list[pa.Table]) -> tuple[list[float], list[float]]:
    """Both tables get the same upserts, interleaved (alternating which goes first), so load from
    other work on the machine hits both sides of the ratio alike."""
    with tempfile.TemporaryDirectory() as d1, tempfile.TemporaryDirectory() as d2:
        none_t, lookup_t = make_table(d1, "none", base), make_table(d2, "lookup", base)
        none, lookup = [], []
        for i, b in enumerate(upserts):
            if i % 2:
                lookup.append(timed_write(lookup_t, b))
                none.append(timed_write(none_t, b))
            else:
                none.append(timed_write(none_t, b))
                lookup.append(timed_write(lookup_t, b))
        assert lookup_t.changelog(1).num_rows > 0
        assert sorted(none_t.read().column("id").to_pylist()) == sorted(lookup_t.read().column("id").to_pylist())
        return none, lookup


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--upsert", type=int, default=100_000)
    ap.add_argument("--reps", type=int, default=9)
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    base = rows(np.arange(args.rows), 1)
    upserts = []
    for r in range(args.reps):
        half = args.upsert // 2
        updated = rng.choice(args.rows, half, replace=False)
        new = np.arange(args.rows + r * half, args.rows + (r + 1) * half)
        upserts.append(rows(np.concatenate([updated, new]), r + 2))
    none, lookup = measure(base, upserts)
    mn, ml = statistics.median(none), statistics.median(lookup)
    pairs = statistics.median(lk / nn for lk, nn in zip(lookup, none, strict=True))
    print(f"upsert {args.upsert:,} into {args.rows:,} rows, 4 buckets, median of {args.reps}:")
    print(f"  changelog-producer=none + level-0 compaction: {mn:.3f} s  [{min(none):.3f}-{max(none):.3f}]")
    print(f"  changelog-producer=lookup:                    {ml:.3f} s  [{min(lookup):.3f}-{max(lookup):.3f}]")
    print(f"  ratio lookup / none: {ml / mn:.2f}x of medians, {pairs:.2f}x median per upsert (goal < 2x)")


if __name__ == "__main__":
    main()
