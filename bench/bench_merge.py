"""Fold 1M KV rows (30% duplicate keys) with each engine; compare with a plain pyarrow sort + take.

Run: .venv/bin/python bench/bench_merge.py [--string-keys]
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.merge import SEQUENCE_NUMBER, VALUE_KIND, MergeContext, create_merge_function, merge_kv
from stratalake.options import CoreOptions
from stratalake.spec.schema import TableSchema
from stratalake.types import DataField, DataType

N = 1_000_000
STRING_KEYS = "--string-keys" in sys.argv


def data() -> pa.Table:
    rng = np.random.default_rng(1)
    n_keys = int(N * 0.7)
    keys = np.concatenate([np.arange(n_keys), rng.integers(0, n_keys, N - n_keys)])
    rng.shuffle(keys)
    k = pa.array([f"key-{x:09d}" for x in keys]) if STRING_KEYS else pa.array(keys)

    def nullable(arr: np.ndarray) -> pa.Array:
        return pa.array(arr, mask=rng.random(N) < 0.2)

    return pa.table(
        {
            "k": k,
            "v1": nullable(rng.random(N)),
            "v2": nullable(rng.integers(0, 1000, N)),
            "v3": nullable(rng.random(N)),
            "v4": nullable(rng.integers(0, 1000, N)),
            "v5": nullable(rng.random(N)),
            SEQUENCE_NUMBER: pa.array(np.arange(N, dtype=np.int64)),
            VALUE_KIND: pa.array(np.zeros(N, dtype=np.int8)),
        }
    )


def ctx_for(options: dict[str, str]) -> MergeContext:
    types = [
        "STRING NOT NULL" if STRING_KEYS else "BIGINT NOT NULL",
        "DOUBLE",
        "BIGINT",
        "DOUBLE",
        "BIGINT",
        "DOUBLE",
    ]
    fields = tuple(
        DataField(i, n, DataType.parse(t))
        for i, (n, t) in enumerate(zip(["k", "v1", "v2", "v3", "v4", "v5"], types, strict=True))
    )
    schema = TableSchema(id=0, fields=fields, highest_field_id=5, primary_keys=("k",), options=options)
    return MergeContext.of(schema, CoreOptions(options, "bench"), "bench")


def best(fn, repeat: int = 3) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    kv = data()
    base = best(lambda: kv.take(pc.sort_indices(kv, [("k", "ascending"), (SEQUENCE_NUMBER, "ascending")])))
    print(f"keys={'string' if STRING_KEYS else 'int64'} rows={N:,} baseline sort+take: {base * 1000:.0f} ms")
    engines = {
        "deduplicate": {},
        "first-row": {"merge-engine": "first-row"},
        "partial-update": {"merge-engine": "partial-update"},
        "aggregation": {
            "merge-engine": "aggregation",
            "fields.v1.aggregate-function": "sum",
            "fields.v2.aggregate-function": "max",
            "fields.v3.aggregate-function": "min",
            "fields.v4.aggregate-function": "sum",
            "fields.v5.aggregate-function": "last_non_null_value",
        },
        "partial-update+seq-group": {
            "merge-engine": "partial-update",
            "fields.v2.sequence-group": "v1,v3",
            "fields.v4.sequence-group": "v5",
        },
    }
    for name, options in engines.items():
        ctx = ctx_for(options)
        mf = create_merge_function(ctx)
        t = best(lambda ctx=ctx, mf=mf: merge_kv(kv, ctx, mf))  # type: ignore[misc]
        print(f"  {name:26s} {t * 1000:6.0f} ms  = {t / base:4.2f}x baseline")


if __name__ == "__main__":
    main()
