"""A catalog lock makes commits safe on a filesystem without atomic create-if-absent."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import pyarrow.fs as pafs
import pytest

from stratalake.catalog.lock import LockedFileIO
from stratalake.io import FileIO, WriteOutcomeUnknownError
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


class _MoveFault(FileIO):
    """pyarrow's local filesystem whose ``move`` fails before or after it took effect, and whose
    reads may fail too: the faults a commit must tell apart."""

    def __init__(self, after: bool, reads_fail: bool = False) -> None:
        super().__init__(pafs.LocalFileSystem())
        self.after = after
        self.reads_fail = reads_fail

    def exists(self, path: str) -> bool:
        if self.reads_fail and getattr(self, "_moved", False):
            raise OSError("store unreachable")
        return super().exists(path)

    def create_under_lock(self, path, data, precondition=None):  # type: ignore[no-untyped-def]
        real_move = self._fs.move

        def move(src: str, dst: str) -> None:
            if self.after:
                real_move(src, dst)
                self._moved = True
            raise OSError("connection reset")

        self._fs = _Shim(self._fs, move)
        try:
            return super().create_under_lock(path, data, precondition)
        finally:
            self._fs = self._fs.inner


class _Shim:
    def __init__(self, inner: pafs.FileSystem, move: object) -> None:
        self.inner = inner
        self.move = move

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def test_a_move_failing_after_it_took_effect_is_a_commit(tmp_path):
    io = LockedFileIO(_MoveFault(after=True), ThreadLock(), "db", "t")
    target = str(tmp_path / "snapshot-1")
    assert io.try_create_atomic(target, b"mine") is True
    assert (tmp_path / "snapshot-1").read_bytes() == b"mine"


def test_a_move_failing_before_it_took_effect_is_no_commit_and_leaves_nothing(tmp_path):
    io = LockedFileIO(_MoveFault(after=False), ThreadLock(), "db", "t")
    with pytest.raises(OSError, match="connection reset"):
        io.try_create_atomic(str(tmp_path / "snapshot-1"), b"mine")
    assert list(tmp_path.iterdir()) == []  # neither the snapshot nor the temp file


def test_a_failed_move_that_cannot_be_read_back_is_unknown(tmp_path):
    io = LockedFileIO(_MoveFault(after=True, reads_fail=True), ThreadLock(), "db", "t")
    with pytest.raises(WriteOutcomeUnknownError):
        io.try_create_atomic(str(tmp_path / "snapshot-1"), b"mine")
