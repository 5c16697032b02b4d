"""A writer that publishes snapshots by exists-then-rename (as Paimon Java's FileIOs do) races
stratalake for the same id, and its rename lands right after stratalake's atomic create.

The interleaving is forced, not hoped for: the other writer checks that ``snapshot-N`` is free,
stratalake then creates it, and the other writer's rename replaces it a millisecond later (a
rename(2) replaces an existing file). stratalake must notice that the snapshot it created is no
longer its own, report no commit it does not have, and commit again on top of the other one;
its next commit must build on the snapshot as it is on disk, never on a cached copy of its own.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from stratalake import Catalog
from stratalake.io import LocalFileIO
from stratalake.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


class RenamingFileIO(LocalFileIO):
    """Publishes like an exists-then-rename writer, with a hook between the check and the rename."""

    def __init__(self, between: Callable[[], None]) -> None:
        super().__init__()
        self.between = between

    def try_create_atomic(self, path: str, data: bytes, precondition: Callable[[], bool] | None = None) -> bool:
        target = self.to_fs_path(path)
        if os.path.exists(target):
            return False
        tmp = f"{target}.{uuid.uuid4().hex}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        self.between()
        os.replace(tmp, target)  # replaces whatever was created meanwhile
        return True


class SignallingFileIO(LocalFileIO):
    """stratalake's own FileIO, which tells when its snapshot create has happened."""

    def __init__(self, wait_for: threading.Event, created: threading.Event) -> None:
        super().__init__()
        self.wait_for, self.created = wait_for, created
        self.armed = True

    def try_create_atomic(self, path: str, data: bytes, precondition: Callable[[], bool] | None = None) -> bool:
        if self.armed and "/snapshot/snapshot-" in path:
            assert self.wait_for.wait(30)  # the other writer found the id free
        ok = super().try_create_atomic(path, data, precondition)
        if self.armed and "/snapshot/snapshot-" in path:
            self.armed = False
            self.created.set()
        return ok


def _rows(ids: range, v: str) -> pa.Table:
    return pa.table({"id": pa.array(list(ids), pa.int64()), "v": [f"{v}{i}" for i in ids]}, schema=SCHEMA)


def _race(tmp_path: Path, options: dict[str, str], primary_key: list[str] | None) -> None:
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=primary_key, options=options)
    t.write(_rows(range(0, 10), "base"))
    location = t.location

    checked, created = threading.Event(), threading.Event()

    def between() -> None:  # the other writer: id free, now let stratalake create it first
        checked.set()
        assert created.wait(30)
        time.sleep(0.001)

    other = Table(RenamingFileIO(between), location, "db.t")
    ours_io = SignallingFileIO(checked, created)
    ours = Table(ours_io, location, "db.t")
    results: dict[str, int | None] = {}

    def other_writer() -> None:
        results["other"] = other.write(_rows(range(100, 110), "other"))

    th = threading.Thread(target=other_writer)
    th.start()
    results["ours"] = ours.write(_rows(range(200, 210), "ours"))
    th.join(30)
    assert not th.is_alive()

    # The other writer's rename took snapshot 2; stratalake committed again, as snapshot 3.
    assert results == {"other": 2, "ours": 3}, results
    fresh = Table(LocalFileIO(), location, "db.t")
    reported = fresh.snapshot(results["ours"])
    assert reported.commit_user != fresh.snapshot(2).commit_user
    ids = sorted(fresh.read().column("id").to_pylist())
    assert ids == [*range(0, 10), *range(100, 110), *range(200, 210)]

    # The next commit of the same handle builds on snapshot 3 as it is on disk.
    assert ours.write(_rows(range(300, 305), "next")) == 4
    ids = sorted(Table(LocalFileIO(), location, "db.t").read().column("id").to_pylist())
    assert ids == [*range(0, 10), *range(100, 110), *range(200, 210), *range(300, 305)]


def test_replaced_snapshot_is_committed_again_primary_key(tmp_path: Path) -> None:
    _race(tmp_path, {"bucket": "1"}, ["id"])


def test_replaced_snapshot_is_committed_again_append(tmp_path: Path) -> None:
    _race(tmp_path, {"bucket": "-1"}, None)


def test_commit_base_is_read_from_disk_not_from_the_cache(tmp_path: Path) -> None:
    """A snapshot replaced after the settle window (too late to notice at commit time) is still
    never the base of the next commit: the base is read from disk."""
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    t.write(_rows(range(0, 10), "a"))
    assert t.write(_rows(range(10, 20), "b")) == 2
    # Another writer's version of snapshot 2 (its rows 50..59) replaces ours after the fact.
    other_wh = str(tmp_path / "other")
    ocat = Catalog(other_wh)
    ocat.create_database("db")
    o = ocat.create_table("db.t", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
    o.write(_rows(range(0, 10), "a"))
    o.write(_rows(range(50, 60), "c"))
    for name in os.listdir(Path(o.location) / "manifest"):
        os.link(Path(o.location) / "manifest" / name, Path(t.location) / "manifest" / name)
    for name in os.listdir(Path(o.location) / "bucket-0"):
        if not (Path(t.location) / "bucket-0" / name).exists():
            os.link(Path(o.location) / "bucket-0" / name, Path(t.location) / "bucket-0" / name)
    os.replace(Path(o.location) / "snapshot" / "snapshot-2", Path(t.location) / "snapshot" / "snapshot-2")
    # The same handle (whose cache holds its own snapshot 2) commits next: on top of the disk's.
    assert t.write(_rows(range(20, 25), "d")) == 3
    ids = sorted(Table(LocalFileIO(), t.location, "db.t").read().column("id").to_pylist())
    assert ids == [*range(0, 10), *range(20, 25), *range(50, 60)]
