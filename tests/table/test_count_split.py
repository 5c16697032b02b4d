"""``TableRead.count_split``: a split's live rows (a pushed-down COUNT(*)) from its key columns
where that is exact, checked against the merged read on random tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stratalake
import stratalake.read.merge_read as read_module

SCHEMA = pa.schema([("k", pa.int64()), ("s", pa.string()), ("v", pa.int64())])
ENGINES = [
    {},
    {"merge-engine": "partial-update"},
    {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
    {"merge-engine": "first-row"},
    {"deletion-vectors.enabled": "true"},
    {"changelog-producer": "lookup"},
    {"file.format": "orc"},
    {"file.format": "avro"},
]


def _table(tmp_path: Path, key: list[str], options: dict[str, str], name: str) -> Any:
    cat = stratalake.Catalog(str(tmp_path / name))
    cat.create_database("db")
    return cat.create_table(
        "db.t", schema=SCHEMA, primary_key=key, options={"bucket": "2", "write-only": "true", **options}
    )


def _counts(t: Any) -> tuple[list[int], list[int]]:
    read = t.new_read(columns=["k"])
    splits = t.new_scan().plan()
    return [read.count_split(s) for s in splits], [read.read_split_table(s).num_rows for s in splits]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    engine=st.sampled_from(range(len(ENGINES))),
    composite=st.booleans(),
    commits=st.lists(
        st.tuples(
            st.lists(st.integers(0, 60), min_size=1, max_size=40),
            st.sampled_from(["+I", "+U", "-D"]),
        ),
        min_size=1,
        max_size=6,
    ),
)
def test_count_split_equals_merged_read(
    tmp_path_factory: pytest.TempPathFactory, engine: int, composite: bool, commits: list[tuple[list[int], str]]
) -> None:
    options = ENGINES[engine]
    key = ["k", "s"] if composite else ["k"]
    t = _table(tmp_path_factory.mktemp("c"), key, options, "wh")
    for ids, kind in commits:
        if kind == "-D" and options.get("merge-engine") in ("partial-update", "aggregation", "first-row"):
            kind = "+I"  # these engines refuse or ignore deletes by default; covered by the others
        ids = sorted(set(ids))
        t.write(
            pa.table(
                {
                    "k": pa.array(ids, pa.int64()),
                    "s": pa.array([f"s{i % 3}" for i in ids]),
                    "v": pa.array(ids, pa.int64()),
                    "kind": pa.array([kind] * len(ids)),
                }
            ),
            row_kind="kind",
        )
    counted, read = _counts(t)
    assert counted == read


def test_count_split_reads_only_keys_and_merges_nothing_without_retractions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upserts only (no retraction in any file): the count is the distinct keys of the runs,
    streamed in chunks, with no merge function called; one retraction makes it merge."""
    t = _table(tmp_path, ["k"], {"bucket": "1"}, "wh")
    rng = np.random.default_rng(3)
    keys: set[int] = set()
    for _ in range(4):
        ids = np.unique(rng.integers(0, 20_000, 6_000))
        keys |= set(ids.tolist())
        t.write(pa.table({"k": ids, "s": pa.array(["x"] * len(ids)), "v": ids}))
    (split,) = t.new_scan().plan()
    assert len(split.files) == 4
    merges: list[int] = []
    original = read_module.picked_rows  # how a deduplicate table's reads merge a chunk

    def recording(*args: Any, **kwargs: Any) -> Any:
        merges.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(read_module, "picked_rows", recording)
    read = t.new_read(columns=["k"])
    read.batch_rows = 500  # many key-complete chunks
    assert read.count_split(split) == len(keys)
    assert merges == []
    gone = sorted(keys)[:100]
    t.write(pa.table({"k": gone, "s": ["x"] * 100, "v": gone, "kind": ["-D"] * 100}), row_kind="kind")
    (split,) = t.new_scan().plan()
    assert read.count_split(split) == len(keys) - 100
    assert len(merges) > 1  # merged, chunk by chunk


def test_count_plan_packs_merged_splits_one_group_per_core(tmp_path: Path) -> None:
    """A pushed COUNT(*) sends splits that need a merge as at most ``parallelism`` input
    partitions of similar size, and every split in exactly one of them."""
    import base64
    import pickle

    from stratalake.spark.planning import _count_plan, partition_unit

    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["k"], options={"bucket": "7", "write-only": "true"})
    for _ in range(2):
        t.write(pa.table({"k": pa.array(range(7000), pa.int64()), "s": ["x"] * 7000, "v": range(7000)}))
    splits = t.new_scan().plan()
    plan = _count_plan(t, None, splits, parallelism=3)
    assert plan["count_merged"] == 7 and plan["count_from_metadata"] == 0
    assert len(plan["splits"]) == 3
    seen = []
    for entry in plan["splits"]:
        value = partition_unit(pickle.loads(base64.b64decode(entry["partition"])))
        group = value if isinstance(value, list) else [value]
        seen += [s.bucket for s in group]
        assert 2 <= len(group) <= 3
    assert sorted(seen) == list(range(7))
    # Without a parallelism (an older shim), one input partition per split, as before.
    assert len(_count_plan(t, None, splits)["splits"]) == 7
