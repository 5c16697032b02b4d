"""A test filesystem like GCS, ADLS or HDFS through pyarrow: no atomic create-if-absent.

``racy:///abs/path`` is the local disk through plain :class:`FileIO` (so ``try_create_atomic``
refuses, and a commit lock's ``create_under_lock`` checks, then writes beside and moves into place,
and a move replaces an existing file), with a deliberate (random) pause after every existence check of a
snapshot or schema file, so that two committers that are not excluded by a lock race through the
check-then-move window every time.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.fs as pafs

from stratalake.io import FileIO
from stratalake.io.fileio import register_scheme

SCHEME = "racy"
PAUSE_S = 0.08  # at most; random, so that two writers' moves land apart, not together


class RacyFileIO(FileIO):
    def __init__(self) -> None:
        super().__init__(pafs.LocalFileSystem(), f"{SCHEME}://")

    def open_output_stream(self, path: str) -> pa.NativeFile:
        # An object store has no directories to create first; the local disk does.
        self._fs.create_dir(self.to_fs_path(path).rsplit("/", 1)[0], recursive=True)
        return super().open_output_stream(path)

    def exists(self, path: str) -> bool:
        found = super().exists(path)
        name = path.rsplit("/", 1)[-1]
        if name.startswith(("snapshot-", "schema-")):
            time.sleep(random.uniform(0, PAUSE_S))  # widen the window between the check and the write
        return found


def _factory(options: Mapping[str, str], scheme: str) -> FileIO:
    return RacyFileIO()


def register() -> None:
    register_scheme([SCHEME], _factory)


register()
