"""File names read from metadata (snapshots, manifests, index manifests) are single path components.

A table's metadata is written by whoever may write the table, and read by jobs that may hold wider
rights (an operator's expiration or orphan cleanup over every table of a warehouse). A name such as
``../../other.db/t/snapshot/snapshot-3`` or an absolute ``_EXTERNAL_PATH`` would let the first
make the second read or delete files outside the table. Every name decoded from metadata goes
through :func:`check_file_name` once per decoded entry (string checks only, never per row), and
:func:`stratalake.store.files.table_file` joins it under the table's directories.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from stratalake.exceptions import CorruptFileError

if TYPE_CHECKING:
    from stratalake.spec.manifest import DataFileMeta, IndexManifestEntry

__all__ = ["check_data_file", "check_file_name", "check_index_file", "check_no_external_path"]

# Characters no Paimon writer puts in a file name: separators, NUL, ':' (a URI scheme or a Windows
# drive), and '%XX' escapes (a layer that URL-decodes, e.g. Hadoop's Path, would see '/' or '..').
_FORBIDDEN = re.compile(r"[/\\\x00:]|%[0-9A-Fa-f]{2}")


def check_file_name(name: object, what: str = "file name") -> str:
    """``name`` if it is one path component; :class:`CorruptFileError` naming ``what`` otherwise."""
    if not isinstance(name, str) or not name or name in (".", "..") or _FORBIDDEN.search(name):
        raise CorruptFileError(
            f"{what} {name!r} is not a single file name (no '/', '\\', '..', ':', NUL or %XX escapes); "
            "a table's metadata may only name files inside the table's own directories"
        )
    return name


def check_no_external_path(path: object, name: str) -> None:
    """Refuse ``_EXTERNAL_PATH``: stratalake reads and deletes only files inside the table."""
    if path is not None:
        raise CorruptFileError(
            f"file {name!r} has an external path {path!r}; external data paths "
            "(data-file.external-paths) are not supported: a table's files must live in its own "
            "directory, so this metadata is refused rather than read or deleted"
        )


def check_data_file(f: DataFileMeta, what: str = "data file") -> None:
    """A data or changelog file's name, extra files and external path (once per decoded entry)."""
    check_file_name(f.file_name, what)
    for extra in f.extra_files:
        check_file_name(extra, f"extra file of {f.file_name!r}")
    check_no_external_path(f.external_path, f.file_name)


def check_index_file(e: IndexManifestEntry) -> None:
    """An index file's name and external path."""
    check_file_name(e.file_name, "index file")
    check_no_external_path(e.external_path, e.file_name)
