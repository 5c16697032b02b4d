"""Sorted runs of a write buffer spilled to local disk (``write-buffer-spillable``).

A writer whose buffer is full folds it into a sorted run and writes it here as an Arrow IPC file
(LZ4-compressed record batches) instead of a level-0 data file; at the bucket's flush the runs
are read back batch by batch and merged into one level-0 run (see ``TableWrite._flush_spilled``).
The files live in a private temporary directory, removed when the writer is done or collected.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

#: Rows per record batch in a spill file: the unit the merge reads back.
SPILL_BATCH_ROWS = 64 * 1024


class SpillStore:
    """Local files of spilled sorted runs, bounded by ``max_disk_bytes`` in total."""

    def __init__(self, max_disk_bytes: int, directory: str | None = None) -> None:
        self.max_disk_bytes = max_disk_bytes
        self._parent = directory
        self._dir: str | None = None
        self._sizes: dict[str, int] = {}
        self._names = itertools.count()
        self._finalizer: weakref.finalize[Any, Any] | None = None

    @property
    def used_bytes(self) -> int:
        return sum(self._sizes.values())

    def has_room(self) -> bool:
        return self.used_bytes < self.max_disk_bytes

    def _directory(self) -> str:
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="stratalake-spill-", dir=self._parent)
            self._finalizer = weakref.finalize(self, shutil.rmtree, self._dir, True)
        return self._dir

    def write(self, kv: pa.Table) -> str:
        """Write one sorted run; returns its path."""
        path = os.path.join(self._directory(), f"run-{next(self._names)}.arrow")
        options = pa.ipc.IpcWriteOptions(compression="lz4")
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, kv.schema, options=options) as writer:
            for batch in kv.to_batches(max_chunksize=SPILL_BATCH_ROWS):
                writer.write_batch(batch)
        self._sizes[path] = os.path.getsize(path)
        return path

    def read(self, path: str) -> Iterator[pa.Table]:
        """The run's rows, one record batch at a time (memory-mapped, decompressed per batch)."""
        with pa.memory_map(path) as source:
            reader = pa.ipc.open_file(source)
            for i in range(reader.num_record_batches):
                yield pa.Table.from_batches([reader.get_batch(i)])

    def delete(self, path: str) -> None:
        self._sizes.pop(path, None)
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)

    def close(self) -> None:
        """Remove every spilled run and the directory."""
        self._sizes.clear()
        if self._finalizer is not None:
            self._finalizer()
        self._dir = None
        self._finalizer = None


__all__ = ["SPILL_BATCH_ROWS", "SpillStore"]
