"""Where a table's files are: names from metadata are joined under the table here, and every
delete proves that its path lies inside the table first.

Metadata is written by whoever may write a table, and read by jobs that may hold wider rights
(expiration runs after every commit; an operator's orphan cleanup may cover every table). The
names were already checked once when decoded (:mod:`stratalake.spec.names`); the helpers below
repeat the cheap string check where a name becomes a path, and :func:`delete_in_table` checks the
finished path (lexically, and on a local filesystem through its real path, so a symlinked
directory inside the table cannot lead a delete elsewhere).
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from stratalake.io import FileIO
from stratalake.spec.manifest import DataFileMeta, IndexManifestEntry
from stratalake.spec.names import check_file_name, check_no_external_path

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore

__all__ = ["data_file_path", "delete_in_table", "index_file_path", "inside_table", "table_file"]

_log = logging.getLogger(__name__)


STAGING_DIR = ".stratalake-staging"
"""Under a table: the staging directories of running DELETE / UPDATE / MERGE jobs
(``spark/delete_job.py``), never referenced by a snapshot; Paimon ignores the directory."""


def table_file(directory: str, name: str, what: str = "file") -> str:
    """``directory/name`` for a ``name`` that is one file name (:class:`CorruptFileError` if not)."""
    return f"{directory}/{check_file_name(name, what)}"


def data_file_path(directory: str, f: DataFileMeta) -> str:
    """The path of data or changelog file ``f`` in its bucket ``directory``; never an external path."""
    check_no_external_path(f.external_path, f.file_name)
    return table_file(directory, f.file_name, "data file")


def index_file_path(index_dir: str, e: IndexManifestEntry) -> str:
    """The path of index file ``e`` under the table's ``index/`` directory."""
    check_no_external_path(e.external_path, e.file_name)
    return table_file(index_dir, e.file_name, "index file")


def inside_table(file_io: FileIO, location: str, path: str) -> bool:
    """Whether ``path`` lies strictly inside the table directory ``location``.

    Lexically (no empty, ``.`` or ``..`` segment, no ``\\`` or NUL below the table), and on a local
    filesystem also after resolving symlinks: a link inside the table to somewhere else is outside.
    """
    root = location.rstrip("/") + "/"
    if not path.startswith(root):
        return False
    rest = path[len(root) :]
    if "\\" in rest or "\x00" in rest or any(s in ("", ".", "..") for s in rest.split("/")):
        return False
    if file_io.is_local:
        real_root = os.path.realpath(file_io.to_fs_path(location))
        real = os.path.realpath(file_io.to_fs_path(path))
        return real.startswith(real_root.rstrip("/") + "/")
    return True


def delete_in_table(table: TableStore, path: str) -> bool:
    """Delete one file of ``table`` if it is inside the table; True if it was deleted.

    A path outside the table is never deleted: it is logged (naming the table and the path) and
    left alone, as maintenance must not fail half-way over one bad entry.
    """
    try:
        inside = inside_table(table.file_io, table.location, path)
    except (OSError, ValueError):
        inside = False
    if not inside:
        _log.warning(
            "table %s: refused to delete %r: it is not inside the table's directory %r (metadata "
            "naming it, or a symbolic link on the way to it, points elsewhere)",
            table.identifier,
            path,
            table.location,
        )
        return False
    return table.file_io.delete_quietly(path)
