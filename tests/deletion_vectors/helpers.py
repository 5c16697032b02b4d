"""Shared helpers of the deletion-vector tests: tables that produce vectors, and their files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

import stratalake
from stratalake.lsm.deletion_vector import DELETION_VECTORS_INDEX
from stratalake.spec.manifest import IndexManifestEntry
from stratalake.store.index_manifest import live_index_entries

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string()), ("n", pa.int64())])


def make(tmp: Path, name: str = "t", dv: bool = True, **options: str) -> stratalake.Table:
    cat = stratalake.Catalog(str(tmp / "wh"))
    if "db" not in cat.list_databases():
        cat.create_database("db")
    opts = {"bucket": "1", "deletion-vectors.enabled": str(dv).lower(), **options}
    return cat.create_table(f"db.{name}", schema=SCHEMA, primary_key=["k"], options=opts)


def batch(keys: list[int], tag: str, kinds: list[str] | None = None) -> pa.Table:
    data: dict[str, Any] = {"k": keys, "v": [f"{tag}{k}" for k in keys], "n": [1] * len(keys)}
    if kinds is not None:
        data["op"] = kinds
    return pa.table(data)


def rows(t: stratalake.Table, **kw: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in t.read(**kw).to_pylist())


def dv_entries(t: stratalake.Table, snapshot_id: int | None = None) -> list[IndexManifestEntry]:
    snap = t.latest_snapshot() if snapshot_id is None else t.snapshot(snapshot_id)
    return [e for e in live_index_entries(t, snap) if e.index_type == DELETION_VECTORS_INDEX]


def with_vectors(tmp: Path, name: str = "t", base: int = 3000, **options: str) -> stratalake.Table:
    """A table whose top-level file has deletion vectors: a large load compacted to the max
    level, then small updates that the per-commit compaction puts one level below it."""
    t = make(tmp, name, **options)
    t.write(batch(list(range(base)), "a"))
    t.write(batch([1, 5, 9, base + 1], "b"))
    t.write(batch([5, 7], "c", ["+U", "-D"]), row_kind="op")
    return t
