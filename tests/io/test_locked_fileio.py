"""A catalog lock makes commits safe on a filesystem without atomic create-if-absent."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pyarrow.fs as pafs
import pytest

from stratalake.catalog.lock import LockedFileIO
from stratalake.io import FileIO
from stratalake.io.fileio import AtomicCreateUnsupportedError


class ThreadLock:
    """A lock per table within this process: the simplest CatalogLock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.held: list[str] = []

    @contextmanager
    def hold(self, database: str, table: str) -> Iterator[None]:
        with self.lock:
            self.held.append(f"{database}.{table}")
            yield


def plain(tmp_path) -> FileIO:
    # pyarrow's filesystem with no create-if-absent: what GCS, ADLS or HDFS look like to us.
    return FileIO(pafs.LocalFileSystem())


def test_without_a_lock_commits_are_refused_with_what_to_do(tmp_path):
    with pytest.raises(AtomicCreateUnsupportedError, match=r"lock\.enabled"):
        plain(tmp_path).try_create_atomic(str(tmp_path / "snapshot-1"), b"{}")
    assert not (tmp_path / "snapshot-1").exists()


def test_under_the_lock_exactly_one_concurrent_creator_wins(tmp_path):
    lock = ThreadLock()
    io = LockedFileIO(plain(tmp_path), lock, "db", "t")
    target = str(tmp_path / "snapshot" / "snapshot-7")
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: io.try_create_atomic(target, f"writer {i}".encode()), range(32)))
    assert results.count(True) == 1
    winner = results.index(True)
    assert io.read_bytes(target) == f"writer {winner}".encode()
    assert set(lock.held) == {"db.t"}
    # No temp file is left beside the snapshot.
    assert [p.name for p in (tmp_path / "snapshot").iterdir()] == ["snapshot-7"]


def test_a_failed_precondition_creates_nothing(tmp_path):
    io = LockedFileIO(plain(tmp_path), ThreadLock(), "db", "t")
    target = str(tmp_path / "snapshot-1")
    assert io.try_create_atomic(target, b"{}", precondition=lambda: False) is False
    assert not (tmp_path / "snapshot-1").exists()


def test_a_filesystem_with_atomic_create_still_commits_under_the_lock(tmp_path):
    lock = ThreadLock()
    io = LockedFileIO(FileIO.get(str(tmp_path)), lock, "db", "t")
    assert io.is_local
    assert io.try_create_atomic(str(tmp_path / "s-1"), b"a") is True
    assert io.try_create_atomic(str(tmp_path / "s-1"), b"b") is False
    assert lock.held == ["db.t", "db.t"]
    assert io.read_bytes(str(tmp_path / "s-1")) == b"a"
