"""Malformed input batches: a clear StrataLakeError, the table unchanged and readable.

A seeded random sequence of writes, each a valid batch or a valid batch broken one way (nulls in
keys, wrong types, unknown row kinds, huge strings, empty batches, schema drift, ...). A broken
batch must raise a :class:`StrataLakeError` naming what is wrong, commit nothing and leave no file
behind; a valid one must land exactly as a simple model (last write per key wins) says.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from stratalake.exceptions import InvalidDataError, SchemaError, StrataLakeError
from stratalake.table import Table
from tests.reliability.workload import SCHEMA, batch, create_table

Mutation = Callable[[pa.Table, random.Random], tuple[pa.Table, dict[str, Any]]]


def _set(t: pa.Table, name: str, arr: pa.Array | pa.ChunkedArray) -> pa.Table:
    return t.set_column(t.schema.get_field_index(name), name, arr)


def _valid(t: pa.Table, rng: random.Random) -> tuple[pa.Table, dict[str, Any]]:
    return t, {}


def null_key(t: pa.Table, rng: random.Random) -> tuple[pa.Table, dict[str, Any]]:
    keys = t.column("k").to_pylist()
    keys[rng.randrange(len(keys))] = None
    return _set(t, "k", pa.array(keys, pa.int64())), {"error": InvalidDataError, "match": "'k'.*null"}


def key_as_text(t: pa.Table, rng: random.Random) -> tuple[pa.Table, dict[str, Any]]:
    keys = [f"key-{k}" for k in t.column("k").to_pylist()]
    return _set(t, "k", pa.array(keys)), {"error": SchemaError, "match": "column 'k'"}


def key_as_int32(t: pa.Table, rng: random.Random) -> tuple[pa.Table, dict[str, Any]]:
    return _set(t, "k", t.column("k").cast(pa.int32())), {}  # widening cast: accepted


def value_overflows(t: pa.Table, rng: random.Random) -> tuple[pa.Table, dict[str, Any]]:
    cnt = pa.array([2**40] * t.num_rows, pa.int64())
    return _set(t, "cnt", cnt), {"error": SchemaError, "match": "column 'cnt'"}


def value_nan_into_int(t: pa.Table, rng: random.Random) -> tuple[pa.Table, dict[str, Any]]:
    cnt = pa.array([float("nan")] * t.num_rows, pa.float64())
    return _set(t, "cnt", cnt), {"error": SchemaError, "match": "column 'cnt'"}


def value_nested(t: pa.Table, rng: random.Random) -> tuple[pa.Table, dict[str, Any]]:
    tags = pa.array([[1, 2]] * t.num_rows, pa.list_(pa.int64()))
    return _set(t, "tag", tags), {"error": SchemaError, "match": "column 'tag'"}


def unknown_row_kind(t: pa.Table, rng: random.Random) -> tuple[pa.Table, dict[str, Any]]:
    kinds = ["+I"] * t.num_rows
    kinds[rng.randrange(t.num_rows)] = rng.choice(["+X", "", "insert", "+i", "-d "])
    return t.append_column("rk", pa.array(kinds)), {
        "row_kind": "rk",
        "error": InvalidDataError,
        "match": "rk",
    }


def null_row_kind(t: pa.Table, rng: random.Random) -> tuple[pa.Table, dict[str, Any]]:
    kinds: list[str | None] = ["+I"] * t.num_rows
    kinds[0] = None
    return t.append_column("rk", pa.array(kinds)), {
        "row_kind": "rk",
        "error": InvalidDataError,
        "match": "rk",
    }


def numeric_row_kind(t: pa.Table, rng: random.Random) -> tuple[pa.Table, dict[str, Any]]:
    return t.append_column("rk", pa.array([0] * t.num_rows, pa.int8())), {
        "row_kind": "rk",
        "error": SchemaError,
        "match": "rk",
    }


def missing_row_kind_column(t: pa.Table, rng: random.Random) -> tuple[pa.Table, dict[str, Any]]:
    return t, {"row_kind": "rk", "error": SchemaError, "match": "rk"}


def valid_row_kinds(t: pa.Table, rng: random.Random) -> tuple[pa.Table, dict[str, Any]]:
    return t.append_column("rk", pa.array(["+I"] * (t.num_rows - 1) + ["+U"])), {"row_kind": "rk"}


def huge_string(t: pa.Table, rng: random.Random) -> tuple[pa.Table, dict[str, Any]]:
    payload = t.column("payload").to_pylist()
    payload[rng.randrange(len(payload))] = "h" * rng.choice([1 << 20, 8 << 20])
    return _set(t, "payload", pa.array(payload)), {}


def empty_batch(t: pa.Table, rng: random.Random) -> tuple[pa.Table, dict[str, Any]]:
    return t.slice(0, 0), {"empty": True}


def extra_column(t: pa.Table, rng: random.Random) -> tuple[pa.Table, dict[str, Any]]:
    name = rng.choice(["extra", "_SEQUENCE_NUMBER", "_VALUE_KIND", "K"])
    return t.append_column(name, pa.array([1] * t.num_rows)), {
        "error": SchemaError,
        "match": "unknown column",
    }


def missing_column(t: pa.Table, rng: random.Random) -> tuple[pa.Table, dict[str, Any]]:
    name = rng.choice(SCHEMA.names)
    return t.drop_columns([name]), {"error": SchemaError, "match": "lacks column"}


def duplicate_column(t: pa.Table, rng: random.Random) -> tuple[pa.Table, dict[str, Any]]:
    name = rng.choice(SCHEMA.names)
    return t.append_column(name, t.column(name)), {"error": SchemaError, "match": "more than once"}


def reordered_columns(t: pa.Table, rng: random.Random) -> tuple[pa.Table, dict[str, Any]]:
    names = list(t.column_names)
    rng.shuffle(names)
    return t.select(names), {}


def dictionary_and_chunks(t: pa.Table, rng: random.Random) -> tuple[pa.Table, dict[str, Any]]:
    tag = pc.dictionary_encode(t.column("tag"))
    half = t.num_rows // 2
    payload = pa.chunked_array([t.column("payload").slice(0, half), t.column("payload").slice(half)])
    return _set(_set(t, "tag", tag), "payload", payload), {}


def duplicate_keys(t: pa.Table, rng: random.Random) -> tuple[pa.Table, dict[str, Any]]:
    # The same key twice in one batch: the later row wins.
    dup = t.slice(0, 1)
    dup = _set(dup, "payload", pa.array(["later"]))
    return pa.concat_tables([t, dup]), {}


def record_batch(t: pa.Table, rng: random.Random) -> tuple[Any, dict[str, Any]]:
    return t.combine_chunks().to_batches()[0], {}


def not_a_table(t: pa.Table, rng: random.Random) -> tuple[Any, dict[str, Any]]:
    return rng.choice([t.to_pydict(), t.to_pylist(), None, "k,v\n1,2"]), {
        "error": SchemaError,
        "match": "Arrow",
    }


MUTATIONS: list[Mutation] = [
    _valid, null_key, key_as_text, key_as_int32, value_overflows, value_nan_into_int, value_nested,
    unknown_row_kind, null_row_kind, numeric_row_kind, missing_row_kind_column, valid_row_kinds, huge_string,
    empty_batch, extra_column, missing_column, duplicate_column, reordered_columns, dictionary_and_chunks,
    duplicate_keys, record_batch, not_a_table,
]  # fmt: skip


def table_files(t: Table) -> set[str]:
    root = Path(t.location)
    return {str(Path(d, f).relative_to(root)) for d, _, files in os.walk(root) for f in files}


def _apply(model: dict[int, dict[str, Any]], data: pa.Table | pa.RecordBatch) -> None:
    rows = data.to_pylist() if isinstance(data, pa.Table) else pa.Table.from_batches([data]).to_pylist()
    for r in rows:
        model[int(r["k"])] = {n: r[n] for n in SCHEMA.names}


def run_bad_inputs(tmp_path: Path, rounds: int, seed: int) -> dict[str, int]:
    t = create_table(str(tmp_path / "wh"))
    rng = random.Random(seed)
    model: dict[int, dict[str, Any]] = {}
    stats = {"rounds": 0, "rejected": 0, "accepted": 0}
    for i in range(rounds):
        mutation = MUTATIONS[i % len(MUTATIONS)] if i < len(MUTATIONS) else rng.choice(MUTATIONS)
        data, how = mutation(batch(rng.randrange(3), i, rng.randint(1, 30)), rng)
        before_snapshot = t.snapshot_manager.latest_snapshot_id()
        before_files = table_files(t)
        stats["rounds"] += 1
        if "error" in how:
            with pytest.raises(how["error"], match=how["match"]) as info:
                t.write(data, row_kind=how.get("row_kind"))
            assert t.identifier in str(info.value) or how["error"] is SchemaError, info.value
            assert t.snapshot_manager.latest_snapshot_id() == before_snapshot, mutation.__name__
            assert table_files(t) == before_files, (mutation.__name__, table_files(t) ^ before_files)
            stats["rejected"] += 1
        else:
            t.write(data, row_kind=how.get("row_kind"))
            if how.get("empty"):
                assert t.snapshot_manager.latest_snapshot_id() == before_snapshot
            plain = data.drop_columns(["rk"]) if "rk" in data.schema.names else data
            _apply(model, plain)
            stats["accepted"] += 1
        got = {r["k"]: r for r in t.read().to_pylist()}
        assert got == model, mutation.__name__
    return stats


def test_malformed_batches_are_rejected_cleanly(tmp_path: Path) -> None:
    stats = run_bad_inputs(tmp_path, rounds=60, seed=11)
    assert stats["rejected"] >= 25 and stats["accepted"] >= 15, stats


def test_string_primary_key_of_a_megabyte(tmp_path: Path) -> None:
    import stratalake

    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.s",
        schema=pa.schema([("k", pa.string()), ("v", pa.int64())]),
        primary_key=["k"],
        options={"bucket": "2"},
    )
    big = "k" * (1 << 20)
    t.write(pa.table({"k": [big, "a", ""], "v": [1, 2, 3]}))
    t.write(pa.table({"k": [big], "v": [4]}))
    t.compact(full=True)
    got = dict(zip(*[t.read().column(c).to_pylist() for c in ("k", "v")], strict=True))
    assert got == {big: 4, "a": 2, "": 3}
    with pytest.raises(StrataLakeError):
        t.write(pa.table({"k": pa.array([None], pa.string()), "v": [1]}))
