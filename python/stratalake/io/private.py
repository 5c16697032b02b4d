"""Per-user private directories for local caches and scratch files.

A shared, predictable path under ``/tmp`` lets another local user create it first: they can then
read what is cached there (table data), or plant files that are reused by name (code shipped to
executors, copies of data files a compaction merges). So every local cache lives in a directory
named for this user, created with mode 0700, and checked before each use: a real directory (not
a link) owned by this user that no one else may enter.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from stratalake.exceptions import UnsafeDirectoryError


def private_dir(prefix: str, parent: str | None = None) -> Path:
    """``<parent>/<prefix>-<uid>`` (``parent`` defaults to the temporary directory), created with
    mode 0700 if missing; raises :class:`UnsafeDirectoryError` if it exists but is not private."""
    uid = os.getuid()
    path = Path(parent if parent is not None else tempfile.gettempdir()) / f"{prefix}-{uid}"
    with contextlib.suppress(FileExistsError):  # checked below, whoever made it
        os.mkdir(path, 0o700)
    check_private(path)
    return path


def check_private(path: Path) -> None:
    """Raises :class:`UnsafeDirectoryError` unless ``path`` is a directory, not a symbolic link,
    owned by this user, with no permissions for group or others."""
    st = os.lstat(path)
    fix = "remove it (or let its owner remove it) and run again; stratalake then creates it with mode 0700"
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise UnsafeDirectoryError(
            f"{path} is a symbolic link or a file, not a directory, so someone may have planted it: {fix}"
        )
    if st.st_uid != os.getuid():
        raise UnsafeDirectoryError(
            f"{path} belongs to user id {st.st_uid}, not to you (user id {os.getuid()}), so its "
            f"files cannot be trusted: {fix}"
        )
    if st.st_mode & 0o077:
        raise UnsafeDirectoryError(
            f"{path} has mode {stat.S_IMODE(st.st_mode):04o}: other users may read or replace its "
            f"files; make it private with chmod 700 {path}, or {fix}"
        )
