"""Orphan-file removal: files in a table's directories that no snapshot, tag or changelog uses.

Orphans come from crashed writers, failed commits, and expirations interrupted after their
snapshot files were deleted. Safety rests on two rules (as in Paimon's ``OrphanFilesClean``):

- only files last modified before ``older_than_ms`` (default: one day ago) are candidates, because
  a writer may still be about to commit a file it wrote recently;
- candidates are listed *before* the used files are read, and snapshots are re-listed until no new
  one appears: a file some snapshot uses that was committed after the listing is either young or
  already used by the newest snapshot read. Snapshots are read before changelogs and tags, since
  expiration writes a changelog copy, and ``create_tag`` checks its snapshot, before a snapshot
  file disappears.

Used means named by any manifest a snapshot, tag or long-lived changelog of any branch reaches
(ADD or DELETE): branches share the table's data and manifest files.

Symbolic links inside the table are neither followed nor deleted (a ``bucket-7 -> /elsewhere``
planted by whoever may write the table must not make this job delete files there), and every
delete is checked to lie inside the table by its real path (``store/files.delete_in_table``).
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

from stratalake.exceptions import CorruptFileError
from stratalake.identifiers import MAIN_BRANCH
from stratalake.io import FileStatus
from stratalake.maintenance.expire import branch_references
from stratalake.store.branch_manager import BranchManager, branch_path
from stratalake.store.files import STAGING_DIR, delete_in_table
from stratalake.store.references import FileSet, ReferenceCollector
from stratalake.store.schema_manager import SchemaManager

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore

_DAY_MS = 86_400_000
_TEMP_RE = re.compile(r"^\..+\.tmp$")  # LocalFileIO's temp files: .<name>.<hex>.tmp


def remove_orphan_files(
    table: TableStore, older_than_ms: int | None = None, dry_run: bool = False
) -> list[str]:
    """Delete (or with ``dry_run`` only list) orphan files older than ``older_than_ms``.

    Returns the paths of the orphans, sorted.
    """
    threshold = older_than_ms if older_than_ms is not None else int(time.time() * 1000) - _DAY_MS
    candidates = [s for s in _list_candidates(table) if s.mtime_ms < threshold]
    if not candidates:
        return []
    used = _used_files(table)
    loc = table.location
    orphans = []
    for s in candidates:
        parent = s.path[: -len(s.name) - 1]
        if parent == f"{loc}/manifest":
            is_used = s.name in used.manifests
        elif parent == f"{loc}/index":
            is_used = s.name in used.index
        elif parent == f"{loc}/statistics":
            is_used = s.name in used.statistics
        elif parent in (f"{loc}/snapshot", f"{loc}/changelog", f"{loc}/tag"):
            is_used = False  # only temp files are listed there
        elif parent.startswith(f"{loc}/{STAGING_DIR}/"):
            is_used = False  # never referenced
        else:
            is_used = s.path in used.data
        if not is_used:
            orphans.append(s.path)
    orphans.sort()
    if not dry_run:
        for path in orphans:
            delete_in_table(table, path)
    return orphans


def _files(table: TableStore, directory: str) -> list[FileStatus]:
    # Links are never candidates: deleting through one (or the link itself) is not orphan removal.
    return [s for s in table.file_io.list_status(directory) if not s.is_dir and not s.is_link]


def _list_candidates(table: TableStore) -> list[FileStatus]:
    loc = table.location
    out = []
    for name in ("manifest", "index", "statistics"):
        out += _files(table, f"{loc}/{name}")
    # Metadata directories: only leftover temp files, never a snapshot, changelog or tag itself.
    for name in ("snapshot", "changelog", "tag"):
        out += [s for s in _files(table, f"{loc}/{name}") if _TEMP_RE.match(s.name)]
    out += _data_files(table, loc, len(table.schema().partition_keys))
    # Staged units of DML jobs whose driver died before it removed them (a running job's are new).
    for s in table.file_io.list_status(f"{loc}/{STAGING_DIR}"):
        if s.is_dir and not s.is_link:
            out += _files(table, s.path)
    return out


def _data_files(table: TableStore, directory: str, partition_depth: int) -> list[FileStatus]:
    """Files in bucket directories: ``[<k>=<v>/...]bucket-<n>/``."""
    out = []
    for s in table.file_io.list_status(directory):
        if not s.is_dir or s.is_link:  # a linked directory may lead anywhere: never followed
            continue
        if s.name.startswith("bucket-"):
            out += _files(table, s.path)
        elif partition_depth > 0 and "=" in s.name:
            out += _data_files(table, s.path, partition_depth - 1)
    return out


def _used_files(table: TableStore) -> FileSet:
    """The files any branch uses: ``main`` and every branch share the data and manifest files
    (as Paimon's ``OrphanFilesClean``, which reads the snapshots, tags and changelogs of each
    branch), so a file only a branch uses is never an orphan."""
    used = FileSet()
    collector = ReferenceCollector(table)
    manager = BranchManager(table.file_io, table.location, table.identifier, MAIN_BRANCH)
    branches = manager.branches()
    # A branch without schemas is being created (Paimon copies its schemas last) or is damaged:
    # what it uses cannot be told, so nothing is deleted (as Paimon's OrphanFilesClean).
    abnormal = [
        b for b in branches if not SchemaManager(table.file_io, branch_path(table.location, b)).list_ids()
    ]
    if abnormal:
        raise CorruptFileError(
            f"table {table.identifier}: branches {abnormal} have no schemas, so orphan files cleaning "
            "was aborted and nothing was deleted; check these branches (a branch being created gets "
            "its schemas last), then run it again"
        )
    for branch in [MAIN_BRANCH, *branches]:
        used.update(branch_references(table, collector, branch))
    return used
