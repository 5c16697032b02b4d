"""The Python side of the shim's scan (stratalake.spark.planning): no SparkSession needed."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa

from stratalake import Catalog
from stratalake.expressions import Compare, In, IsNull, Not
from stratalake.spark import planning
from stratalake.spark import source_options as keys

KEYS = {"id", "dt"}


def leaf(op: str, column: str, *values: object, type: str = "long", **extra: object) -> dict[str, object]:
    return {"op": op, "column": column, "type": type, "values": list(values), **extra}


def test_leaves_translate_with_catalyst_values() -> None:
    assert planning.predicate_from_json(leaf("=", "id", 3), KEYS) == Compare("id", "=", 3)
    assert planning.predicate_from_json(leaf("<", "id", 3, flipped=True), KEYS) == Compare("id", ">", 3)
    day = planning.predicate_from_json(leaf(">=", "dt", 19_000, type="date"), KEYS)
    assert day == Compare("dt", ">=", dt.date(1970, 1, 1) + dt.timedelta(days=19_000))
    assert planning.predicate_from_json(leaf("in", "id", 1, None, 2), KEYS) == In("id", (1, 2))
    assert planning.predicate_from_json(leaf("<=>", "id", None), KEYS) == IsNull("id")
    # Not a key column, or a type whose comparison semantics differ from Arrow's: not used.
    assert planning.predicate_from_json(leaf("=", "v", 1), KEYS) is None
    assert planning.predicate_from_json(leaf("=", "id", 1.5, type="double"), KEYS) is None


def test_untranslatable_parts_only_weaken_conjunctions() -> None:
    good, bad = leaf("=", "id", 1), leaf("=", "v", 2)
    assert planning.predicate_from_json({"op": "and", "children": [good, bad]}, KEYS) == Compare("id", "=", 1)
    assert planning.predicate_from_json({"op": "or", "children": [good, bad]}, KEYS) is None
    negated_and = {"op": "not", "children": [{"op": "and", "children": [good, bad]}]}
    assert planning.predicate_from_json(negated_and, KEYS) is None
    assert planning.predicate_from_json({"op": "not", "children": [good]}, KEYS) == Not(Compare("id", "=", 1))


def _table(tmp_path: Path, writes: int) -> tuple[object, dict[str, str]]:
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())]),
        primary_key=["id", "dt"],
        partition_keys=["dt"],
        options={"bucket": "2"},
    )
    for i in range(writes):
        t.write(pa.table({"id": list(range(20)), "dt": ["a", "b"] * 10, "v": [f"v{i}"] * 20}))
    options = {keys.WAREHOUSE: str(tmp_path), keys.TABLE: "db.t"}
    return t, options


def test_plan_reports_splits_stats_and_buckets(tmp_path: Path) -> None:
    t, options = _table(tmp_path, writes=2)
    out = planning.plan(t, options, {"columns": ["v"], "filters": [leaf("=", "dt", "a", type="string")]})  # type: ignore[arg-type]
    assert out["num_buckets"] == 2 and out["bucket_keys"] == ["id"]
    assert {s["bucket"] for s in out["splits"]} <= {0, 1} and len(out["splits"]) == 2
    assert all(s["files"] == 2 and s["runs"] == 2 for s in out["splits"])  # two level-0 files
    assert sum(s["rows"] for s in out["splits"]) == 20
    assert out["rows"] == 20  # an upper bound: two versions of each key
    full = planning.plan(t, options, {"columns": None})  # type: ignore[arg-type]
    assert 0 < out["bytes"] < full["bytes"]
    assert planning.count_rows(t, options) is None  # type: ignore[arg-type]


def test_count_and_limit_use_raw_convertible_splits(tmp_path: Path) -> None:
    t, options = _table(tmp_path, writes=1)
    assert planning.count_rows(t, options) == 20  # type: ignore[arg-type]
    limited = planning.plan(t, options, {"columns": ["v"], "limit": 3})  # type: ignore[arg-type]
    assert len(limited["splits"]) == 1 and limited["rows"] == 3


def test_exact_filters_are_whole_key_predicates(tmp_path: Path) -> None:
    t, _ = _table(tmp_path, writes=1)
    good, bad = leaf("=", "id", 1), leaf("=", "v", 2, type="string")
    trees = [good, bad, {"op": "and", "children": [good, bad]}, {"op": "or", "children": [good, good]}]
    assert planning.exact_filters(t, trees) == [True, False, False, True]  # type: ignore[arg-type]


def test_limit_never_drops_splits_under_a_filter(tmp_path: Path) -> None:
    t, options = _table(tmp_path, writes=1)
    req = {"columns": ["v"], "limit": 1, "filters": [leaf("=", "dt", "b", type="string")]}
    out = planning.plan(t, options, req)  # type: ignore[arg-type]
    assert len(out["splits"]) == len(planning.plan(t, options, {"filters": req["filters"]})["splits"])  # type: ignore[arg-type]


def test_input_partitions_carry_their_splits_compressed(tmp_path: Path) -> None:
    """A planned split reaches its task as it was planned, in fewer bytes than its pickle: the
    driver's JVM holds every input partition of a scan (issue 33)."""
    import base64
    import pickle

    t, options = _table(tmp_path, writes=0)
    t = t.copy({"write-only": "true"})  # type: ignore[attr-defined]
    for i in range(30):
        t.write(pa.table({"id": list(range(20)), "dt": ["a", "b"] * 10, "v": [f"v{i}"] * 20}))  # type: ignore[attr-defined]
    out = planning.plan(t, options, {"columns": None})  # type: ignore[arg-type]
    splits = {(s.partition, s.bucket): s for s in t.new_scan().plan()}  # type: ignore[attr-defined]
    assert len(out["splits"]) == len(splits) == 4
    for entry in out["splits"]:
        partition = pickle.loads(base64.b64decode(entry["partition"]))
        unit = planning.partition_unit(partition)
        assert unit == splits[(unit.partition, unit.bucket)] and len(unit.files) == 30
        assert len(partition.value) * 3 < len(pickle.dumps(unit))
    assert planning.partition_unit(planning.InputPartition(None)) is None  # Spark's empty placeholder


def test_a_plan_in_batches_answers_as_one(tmp_path: Path, monkeypatch: object) -> None:
    """A snapshot too large to plan at once is planned in batches of buckets (issue 33): the
    reply is the same, entry for entry, whether splits are packed, key-merged or limited."""
    import base64
    import pickle

    import pytest

    from stratalake.read import scan as scan_module

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    t, options = _table(tmp_path, writes=3)
    t.compact(full=True)  # type: ignore[attr-defined]
    t.write(pa.table({"id": [1, 2, 3], "dt": ["a", "b", "a"], "v": ["w"] * 3}))  # type: ignore[attr-defined]
    requests = [
        {"columns": None},
        {"columns": ["id", "v"], "native": True, "parallelism": 1},  # small splits: packed
        {"columns": ["id", "v"], "native": True, "native_merge": False},
        {"columns": None, "native": True, "limit": 2},
    ]
    whole = [planning.plan(t, options, r) for r in requests]  # type: ignore[arg-type]
    monkeypatch.setattr(scan_module, "PLAN_BATCH_FILES", 1)
    monkeypatch.setattr(scan_module, "PLAN_AT_ONCE_FILES", 1)
    assert [planning.plan(t, options, r) for r in requests] == whole  # type: ignore[arg-type]
    splits = t.new_scan().plan()  # type: ignore[attr-defined]
    decoded = []
    for entry in whole[1]["splits"]:
        unit = planning.partition_unit(pickle.loads(base64.b64decode(entry["partition"])))
        decoded += unit if isinstance(unit, list) else [unit]
    assert sorted(decoded, key=lambda s: (s.partition, s.bucket)) == splits
    assert any(e.get("superseded") for e in whole[1]["splits"])  # a key-merged native read


def _plan_request(tmp_path: Path, **extra: object) -> str:
    import json

    from stratalake.spark import bridge_contract as bc

    request = {
        "op": "plan_scan",
        "protocol": bc.PROTOCOL_VERSION,
        "source_options": {keys.WAREHOUSE: str(tmp_path), keys.TABLE: "db.t"},
        "columns": ["id", "v"],
        "count": False,
        "parallelism": 1,
        "filters": [],
        "runtime_filters": [],
        "limit": None,
        "native": True,
        "native_merge": True,
        **extra,
    }
    return json.dumps(request)


def test_a_plan_reply_is_written_split_by_split(tmp_path: Path, monkeypatch: object) -> None:
    """The bridge writes a scan plan's splits one at a time, framed as Spark reads it, and the
    answer is the contract's reply of the whole plan; a failure half-way answers an error only."""
    import io
    import json
    import struct

    import pytest

    from stratalake.spark import bridge_contract as bc
    from stratalake.spark import bridge_handlers

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    t, options = _table(tmp_path, writes=3)
    out = io.BytesIO()
    bridge_handlers.handle_to(_plan_request(tmp_path), out)
    framed = out.getvalue()
    (length,) = struct.unpack("!i", framed[:4])
    assert length == len(framed) - 4
    answer = json.loads(framed[4:])
    assert answer == json.loads(bridge_handlers.handle(_plan_request(tmp_path)))
    plan = planning.plan(t, options, {"columns": ["id", "v"], "native": True, "parallelism": 1})  # type: ignore[arg-type]
    assert len(plan["splits"]) == len(answer["result"]["splits"]) == 2  # packed by bucket
    assert answer["result"] == bc.reply_json("plan_scan", {**plan, "splits": list(plan["splits"])})

    made = 0
    finished = planning._finished_split

    def failing(entries: list[dict[str, object]], bucket: int) -> dict[str, object]:
        nonlocal made
        made += 1
        if made == 2:  # the second split
            raise OSError("disk gone")
        return finished(entries, bucket)

    monkeypatch.setattr(planning, "_finished_split", failing)
    error = json.loads(bridge_handlers.handle(_plan_request(tmp_path)))
    assert set(error) == {"error"} and "disk gone" in error["error"]["message"]
