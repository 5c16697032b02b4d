"""Property test: any sequence of upserts/deletes, in any commit grouping, reads back like a dict."""

from __future__ import annotations

import itertools
import tempfile

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stratalake

ops = st.lists(
    st.tuples(st.sampled_from(["+I", "+U", "-D", "-U"]), st.integers(0, 15), st.sampled_from(["p", "q"]), st.integers(0, 99)),
    min_size=1,
    max_size=60,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=ops,
    cuts=st.lists(st.integers(1, 60), max_size=5),
    buckets=st.sampled_from([1, 3]),
    partitioned=st.booleans(),
    batch_split=st.integers(1, 4),
)
def test_dedupe_matches_dict_model(
    history: list[tuple[str, int, str, int]], cuts: list[int], buckets: int, partitioned: bool, batch_split: int
) -> None:
    with tempfile.TemporaryDirectory() as d:
        cat = stratalake.Catalog(d)
        cat.create_database("db")
        schema = pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.int64())])
        pk = ["k", "p"] if partitioned else ["k"]
        t = cat.create_table(
            "db.t", schema=schema, primary_key=pk, partition_keys=["p"] if partitioned else [],
            options={"bucket": str(buckets)},
        )
        model: dict[tuple[int, str] | int, tuple[int, str, int]] = {}
        bounds = sorted({c for c in cuts if c < len(history)} | {0, len(history)})
        for lo, hi in itertools.pairwise(bounds):
            commit = history[lo:hi]
            with t.new_write() as w:
                step = max(1, len(commit) // batch_split)
                for i in range(0, len(commit), step):
                    part = commit[i : i + step]
                    w.write(
                        pa.table(
                            {
                                "k": [o[1] for o in part],
                                "p": [o[2] for o in part],
                                "v": [o[3] for o in part],
                                "kind": [o[0] for o in part],
                            }
                        ),
                        row_kind="kind",
                    )
                w.commit()
            for kind, k, p, v in commit:
                key = (k, p) if partitioned else k
                if kind in ("+I", "+U"):
                    model[key] = (k, p, v)
                else:
                    model.pop(key, None)
        got = sorted(tuple(r.values()) for r in t.read().to_pylist())
        assert got == sorted(model.values())
