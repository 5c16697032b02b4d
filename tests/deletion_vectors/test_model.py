"""Property test: random upserts, deletes, commits and compactions on a deletion-vector table
read like a dict model, and like the same history on a table without deletion vectors."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.deletion_vectors.helpers import make

_counter = itertools.count()

# One step: ("write", [(key, op)]) with op None = delete, or ("compact", full).
_ops = st.lists(st.tuples(st.integers(0, 300), st.none() | st.integers(0, 9)), min_size=1, max_size=30)
_step = st.one_of(st.tuples(st.just("write"), _ops), st.tuples(st.just("compact"), st.booleans()))


def _apply(t: Any, step: tuple[str, Any], deletes: bool) -> None:
    kind, arg = step
    if kind == "compact":
        t.compact(full=arg)
        return
    last: dict[int, int | None] = {}
    for k, v in arg:
        # One record per key and commit: input order within a batch is not a contract. Without
        # ``deletes`` (aggregation, whose -D retracts instead of removing) a delete becomes 0.
        last[k] = v if deletes or v is not None else 0
    keys = sorted(last)
    t.write(
        pa.table(
            {
                "k": keys,
                "v": [f"v{last[k]}" if last[k] is not None else "x" for k in keys],
                "n": [last[k] or 0 for k in keys],
                "op": ["-D" if last[k] is None else "+U" for k in keys],
            }
        ),
        row_kind="op",
    )


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(_step, min_size=1, max_size=8), engine=st.sampled_from(["deduplicate", "aggregation"]))
def test_deletion_vector_table_matches_model(
    tmp_path: Path, steps: list[tuple[str, Any]], engine: str
) -> None:
    run = next(_counter)
    opts = {"merge-engine": engine, "bucket": "2"}
    if engine == "aggregation":
        opts |= {"fields.n.aggregate-function": "sum", "fields.v.aggregate-function": "last_value"}
    with_dv = make(tmp_path, f"dv{run}", dv=True, **opts)
    without = make(tmp_path, f"plain{run}", dv=False, **opts)
    # A large base compacted to the top level, so later small commits produce vectors.
    base = [("write", [(k, 0) for k in range(0, 300, 2)])]
    model: dict[int, tuple[str, int]] = {}
    for step in base + steps:
        deletes = engine == "deduplicate"
        _apply(with_dv, step, deletes)
        _apply(without, step, deletes)
        if step[0] == "write":
            last = {k: (v if deletes or v is not None else 0) for k, v in step[1]}
            for k, v in last.items():
                if v is None:
                    model.pop(k, None)
                elif engine == "aggregation":
                    model[k] = (f"v{v}", model.get(k, ("", 0))[1] + v)
                else:
                    model[k] = (f"v{v}", v)
        got = sorted(tuple(r.values()) for r in with_dv.read().to_pylist())
        assert got == sorted((k, v, n) for k, (v, n) in model.items()), step
        assert got == sorted(tuple(r.values()) for r in without.read().to_pylist())
