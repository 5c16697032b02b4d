"""Workload 5 - merge engines: fold 1M KV rows with 30% duplicate keys in memory, per engine, against a
plain pyarrow sort + take (sort by key and sequence, keep the last row per key).

This is the first of the "later" workloads of issue #6 and the template for the others:

- add a case to :data:`ENGINES` (options of the table + how to shape the input), and the workload
  measures it through ``stratalake.merge.merge_kv`` as soon as the registry knows the engine; until
  then the row reads "not available yet" with stratalake's own error message;
- compaction, lookup changelog, deletion vectors and streaming latency follow the same pattern: a
  module here with ``run(cfg) -> payload``, ``goals(payload)`` and ``figures(payload)``, a worker op
  registered in ``bench/worker.py`` (see ``op_fold`` below), and one line in ``bench/run.py``'s
  ``WORKLOADS``.

Run alone: ``.venv/bin/python -m bench.merge_engines [--quick]``
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from bench.common import Goal, cli, med, ratio_goal, save_workload
from bench.config import Config
from bench.harness import repeat_many

NAME = "merge_engines"
DUPLICATE_FRACTION = 0.3

#: engine -> (table options, fraction of value cells set to null in the input)
ENGINES: dict[str, tuple[dict[str, str], float]] = {
    "deduplicate": ({}, 0.0),
    "partial-update": ({"merge-engine": "partial-update"}, 0.3),
    "aggregation": (
        {
            "merge-engine": "aggregation",
            "fields.n.aggregate-function": "sum",
            "fields.v.aggregate-function": "last_non_null_value",
        },
        0.0,
    ),
}


def kv_input(rows: int, null_fraction: float, seed: int = 11) -> pa.Table:
    """``rows`` KV rows, 30% of them repeating one of the other 70%'s keys, shuffled."""
    from bench.data import random_strings

    rng = np.random.default_rng(seed)
    distinct = rows - int(rows * DUPLICATE_FRACTION)
    ids = np.concatenate([np.arange(distinct), rng.integers(0, distinct, rows - distinct)]).astype(np.int64)
    rng.shuffle(ids)
    v = random_strings(rng, rows)
    n = pa.array(rng.integers(0, 1000, rows, dtype=np.int64))
    if null_fraction:
        v = pa.array(v.to_pylist(), pa.string(), mask=rng.random(rows) < null_fraction)
        n = pa.array(n.to_numpy(), pa.int64(), mask=rng.random(rows) < null_fraction)
    return pa.table(
        {
            "id": pa.array(ids),
            "v": v,
            "n": n,
            "_SEQUENCE_NUMBER": pa.array(np.arange(rows, dtype=np.int64)),
            "_VALUE_KIND": pa.array(np.zeros(rows, dtype=np.int8)),
        }
    )


def _floor(kv: pa.Table) -> pa.Table:
    import pyarrow.compute as pc

    order = pc.sort_indices(kv, sort_keys=[("id", "ascending"), ("_SEQUENCE_NUMBER", "descending")])
    ids = kv.column("id").take(order).to_numpy()
    first = np.empty(len(ids), dtype=bool)
    first[:1] = True
    np.not_equal(ids[1:], ids[:-1], out=first[1:])
    return kv.take(order.filter(pa.array(first)))


def _stratalake_fold(options: dict[str, str]) -> Any:
    from stratalake.merge import MergeContext, create_merge_function, merge_kv
    from stratalake.spec.schema import TableSchema
    from stratalake.types import DataField, DataType

    schema = TableSchema(
        id=0,
        fields=(
            DataField(0, "id", DataType.parse("BIGINT NOT NULL")),
            DataField(1, "v", DataType.parse("STRING")),
            DataField(2, "n", DataType.parse("BIGINT")),
        ),
        highest_field_id=2,
        primary_keys=("id",),
        options={"bucket": "4", **options},
    )
    ctx = MergeContext.of(schema, table_name="bench.fold")
    mf = create_merge_function(ctx)
    return lambda kv: merge_kv(kv, ctx, mf)


def op_fold(spec: dict[str, Any], rec: Any) -> None:
    options, null_fraction = ENGINES[spec["engine"]]
    kv = kv_input(spec["rows"], null_fraction)
    fold = _floor if spec["peer"] == "pyarrow" else _stratalake_fold(options)
    fold(kv_input(1000, null_fraction, seed=3))  # warm-up
    with rec.phase("fold"):
        out = fold(kv)
    rec.info["rows_out"] = out.num_rows


def _available(engine: str) -> str | None:
    try:
        _stratalake_fold(ENGINES[engine][0])
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None


def run(cfg: Config) -> dict[str, Any]:
    print(f"== {NAME}: {cfg.fold_rows:,} rows, {DUPLICATE_FRACTION:.0%} duplicate keys", flush=True)
    results: dict[str, Any] = {}
    specs = [{"op": "fold", "peer": "pyarrow", "engine": "deduplicate", "rows": cfg.fold_rows}]
    names = ["pyarrow sort+take"]
    for engine in ENGINES:
        reason = _available(engine)
        if reason is not None:
            print(f"  SKIP stratalake {engine}: {reason}", flush=True)
            results[engine] = {"skipped": reason}
            continue
        specs.append({"op": "fold", "peer": "stratalake", "engine": engine, "rows": cfg.fold_rows})
        names.append(engine)
    results.update(zip(names, repeat_many(specs, cfg.read_reps), strict=True))
    payload = {"rows": cfg.fold_rows, "duplicate_fraction": DUPLICATE_FRACTION, "peers": results}
    save_workload(NAME, cfg, payload)
    return payload


def goals(payload: dict[str, Any]) -> list[Goal]:
    # No target in issue #6 yet: reported as ratios to the floor.
    floor = med(payload["peers"].get("pyarrow sort+take"), "fold")
    out = []
    for engine in ENGINES:
        g = ratio_goal(
            "5 merge",
            f"fold {engine}: stratalake / pyarrow sort+take",
            med(payload["peers"].get(engine), "fold"),
            floor,
            float("inf"),
        )
        g.target, g.status = "(no target yet)", ("report" if g.status != "n/a" else "n/a")
        if "skipped" in payload["peers"].get(engine, {}):
            g.note = "engine not available yet"
        out.append(g)
    return out


def figures(payload: dict[str, Any]) -> list[tuple[str, str, dict[str, Any] | None]]:
    rows = []
    floor = payload["peers"].get("pyarrow sort+take")
    for engine in ENGINES:
        r = payload["peers"].get(engine, {})
        label = f"fold {payload['rows']:,} rows: {engine}"
        rows.append((label, "stratalake", r if "phases" in r else None))
        rows.append((label, "pyarrow sort+take", floor if floor and "phases" in floor else None))
    return rows


if __name__ == "__main__":
    cfg, _ = cli(__doc__ or NAME)
    payload = run(cfg)
    for g in goals(payload):
        print(f"  {g.status:7} {g.goal}: {g.measured} {g.note}")
