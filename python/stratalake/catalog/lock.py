"""Commit locks of metastore catalogs, as Paimon's ``CatalogLock``.

A metastore catalog with ``lock.enabled`` hands each table a :class:`LockedFileIO`: every atomic
create of the commit protocol (snapshots, schemas, tags) runs while the catalog's lock on that
table is held, so engines that take the same lock (Paimon's Java and Python catalogs of the same
metastore) never publish the same snapshot twice. On a filesystem without atomic create-if-absent
(GCS, ADLS, HDFS through pyarrow) the lock is what makes commits safe at all: under it, an
existence check followed by a move into place is a create-if-absent.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

import pyarrow as pa
import pyarrow.fs as pafs

from stratalake.io import FileIO, FileStatus
from stratalake.io.fileio import AtomicCreateUnsupportedError

__all__ = ["CatalogLock", "LockedFileIO"]


class CatalogLock(Protocol):
    """A lock per table, held across processes and engines.

    ``hold`` blocks until the lock is acquired (raising :class:`~stratalake.exceptions.
    CommitConflictError` naming the table when it cannot be within the catalog's timeout) and
    releases it on exit. A lock whose holder died expires, so a killed writer never blocks a
    table for good.
    """

    def hold(self, database: str, table: str) -> AbstractContextManager[None]: ...


class LockedFileIO(FileIO):
    """``inner`` with its atomic creates run under ``lock`` for ``database.table``.

    Everything but :meth:`try_create_atomic` is ``inner``'s own behaviour.
    """

    def __init__(self, inner: FileIO, lock: CatalogLock, database: str, table: str) -> None:
        super().__init__(inner.filesystem)
        self.inner = inner
        self.lock = lock
        self.database = database
        self.table = table
        self.publish_settle_ms = inner.publish_settle_ms
        self.is_local = inner.is_local

    def try_create_atomic(
        self, path: str, data: bytes, precondition: Callable[[], bool] | None = None
    ) -> bool:
        with self.lock.hold(self.database, self.table):
            try:
                return self.inner.try_create_atomic(path, data, precondition)
            except AtomicCreateUnsupportedError:
                # No create-if-absent on this filesystem: the lock makes check-then-move safe.
                return self.inner.create_under_lock(path, data, precondition)

    def create_under_lock(
        self, path: str, data: bytes, precondition: Callable[[], bool] | None = None
    ) -> bool:
        return self.inner.create_under_lock(path, data, precondition)

    # Everything else is the inner FileIO's (its path rules, links refusals, atomic overwrite).
    @property
    def filesystem(self) -> pafs.FileSystem:
        return self.inner.filesystem

    def to_fs_path(self, path: str) -> str:
        return self.inner.to_fs_path(path)

    def exists(self, path: str) -> bool:
        return self.inner.exists(path)

    def file_size(self, path: str) -> int:
        return self.inner.file_size(path)

    def list_status(self, path: str) -> list[FileStatus]:
        return self.inner.list_status(path)

    def list_names(self, path: str, ordered: bool = True) -> list[str]:
        return self.inner.list_names(path, ordered)

    def copy_file(self, src: str, dst: str) -> None:
        self.inner.copy_file(src, dst)

    def status(self, path: str) -> FileStatus:
        return self.inner.status(path)

    def read_bytes(self, path: str) -> bytes:
        return self.inner.read_bytes(path)

    def read_text(self, path: str) -> str:
        return self.inner.read_text(path)

    def open_input_file(self, path: str) -> pa.NativeFile:
        return self.inner.open_input_file(path)

    def open_output_stream(self, path: str) -> pa.NativeFile:
        return self.inner.open_output_stream(path)

    def write_bytes(self, path: str, data: bytes) -> None:
        self.inner.write_bytes(path, data)

    def mkdirs(self, path: str) -> None:
        self.inner.mkdirs(path)

    def rename(self, src: str, dst: str) -> bool:
        return self.inner.rename(src, dst)

    def delete(self, path: str) -> None:
        self.inner.delete(path)

    def delete_quietly(self, path: str) -> bool:
        return self.inner.delete_quietly(path)

    def delete_dir(self, path: str) -> None:
        self.inner.delete_dir(path)

    def __repr__(self) -> str:
        return f"LockedFileIO({self.inner!r}, table={self.database}.{self.table})"
