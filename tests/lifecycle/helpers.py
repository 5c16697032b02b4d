"""Shared helpers of the lifecycle tests: tables, and the files snapshots need, computed directly."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa

import stratalake
from stratalake.spec.manifest import FileKind
from stratalake.spec.snapshot import Snapshot
from stratalake.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])


def make_table(tmp_path: Path, name: str = "t", **options: str) -> Table:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    if not cat.database_exists("db"):
        cat.create_database("db")
    # Writers compact on their own after 5 sorted runs; these tests count snapshots, so they
    # compact explicitly (t.compact) where they want COMPACT snapshots.
    opts = {"bucket": "2", "num-sorted-run.compaction-trigger": "100", **options}
    return cat.create_table(
        f"db.{name}", schema=SCHEMA, primary_key=["id", "dt"], partition_keys=["dt"], options=opts
    )


def batch(ids: Iterable[int], v: str, dt: str = "d1", kinds: list[str] | None = None) -> pa.Table:
    ids = list(ids)
    cols: dict[str, Any] = {"id": ids, "v": [f"{v}{i}" for i in ids], "dt": [dt] * len(ids)}
    if kinds is not None:
        cols["k"] = kinds
    return pa.table(cols)


def rows(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in t.to_pylist())


def disk_files(t: Table) -> set[str]:
    """Relative paths of every manifest, index and bucket file on disk."""
    root = Path(t.location)
    out = set()
    for dirpath, _dirs, files in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        top = rel.parts[0] if rel.parts else ""
        if top in ("", "schema", "snapshot", "tag", "changelog", "consumer"):
            continue
        out |= {str(rel / f) for f in files}
    return out


def needed_files(t: Table, snaps: Iterable[Snapshot], changelogs: Iterable[Snapshot] = ()) -> set[str]:
    """What readers of ``snaps`` (and of long-lived ``changelogs``) open, via the core's own fold."""
    mio = t.manifest_io
    codec = t.partition_codec
    out: set[str] = set()

    def data_path(e: Any) -> str:
        part = codec.path(codec.from_bytes(e.partition))
        return (
            f"{part}/bucket-{e.bucket}/{e.file.file_name}"
            if part
            else f"bucket-{e.bucket}/{e.file.file_name}"
        )

    def list_files(name: str) -> list[Any]:
        out.add(f"manifest/{name}")
        entries = []
        for m in mio.read_list(name):
            out.add(f"manifest/{m.file_name}")
            entries += mio.read_entries(m.file_name)
        return entries

    for s in snaps:
        list_files(s.base_manifest_list)
        list_files(s.delta_manifest_list)
        out |= {data_path(e) for e in t.live_entries(s)}
        if s.changelog_manifest_list:
            out |= {data_path(e) for e in list_files(s.changelog_manifest_list) if e.kind is FileKind.ADD}
    for c in changelogs:
        name = c.changelog_manifest_list or c.delta_manifest_list
        out |= {data_path(e) for e in list_files(name) if e.kind is FileKind.ADD}
    return out


def fresh(t: Table) -> Table:
    """A new handle with the process-wide manifest cache emptied, so reads really hit the disk."""
    from stratalake.store import manifests

    manifests._CACHE._data.clear()
    return t.refresh()


def build_history(t: Table) -> None:
    """Seven snapshots: inserts, upserts, deletes, a partition overwrite, two partitions."""
    t.write(batch(range(0, 10), "a"))  # 1
    t.write(batch(range(5, 15), "b"))  # 2
    t.write(batch(range(0, 5), "c", dt="d2"))  # 3
    t.write(batch([1, 2], "x", kinds=["-D", "-D"]), row_kind="k")  # 4
    t.write(batch(range(0, 3), "o"), overwrite=True, overwrite_partitions=[{"dt": "d1"}])  # 5
    t.write(batch(range(3, 8), "e", dt="d2"))  # 6
    t.write(batch(range(20, 25), "f"))  # 7
