"""Branches of a table: ``branch/branch-<name>/`` holding the branch's own ``schema``,
``snapshot``, ``tag``, ``changelog`` and ``consumer`` directories, as Paimon lays them out
(``BranchManager.branchPath``, ``FileSystemBranchManager``).

A branch shares the table's data, manifest, index and statistics files: only its metadata root
differs (Paimon's ``FileStorePathFactory`` keeps those under the table root for every branch).
So a branch handle is an ordinary :class:`~stratalake.store.table_store.TableStore` whose metadata
managers look under :func:`branch_path`.

The operations follow ``FileSystemBranchManager``: creating copies the schema files (all up to
the latest, or up to the tag's snapshot's schema) and, from a tag, the tag and its snapshot;
deleting and renaming move the branch directory; fast-forward replaces the current branch's
snapshots, schemas and tags from the branch's earliest snapshot on by the branch's. None of them
deletes data files: files only a deleted branch used are orphans that ``remove_orphan_files``
reclaims (it reads every branch's snapshots, tags and changelogs).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping

from stratalake.exceptions import (
    BranchAlreadyExistsError,
    BranchNotFoundError,
    InvalidIdentifierError,
    SnapshotNotFoundError,
)
from stratalake.identifiers import MAIN_BRANCH, check_branch_name
from stratalake.io import FileIO, FileStatus
from stratalake.spec.snapshot import Snapshot
from stratalake.store.schema_manager import SchemaManager
from stratalake.store.snapshot_manager import SnapshotManager
from stratalake.store.tag_manager import TAG_FILE_RE, TagManager

BRANCH_DIR = "branch"
BRANCH_PREFIX = "branch-"
_TEMP_RE = re.compile(r"^\..+\.tmp$")  # LocalFileIO's temp files: never copied


def normalize_branch(branch: str | None) -> str:
    """Paimon's ``BranchManager.normalizeBranch``: a missing or blank branch is ``main``."""
    return MAIN_BRANCH if branch is None or not branch.strip() else branch


def branch_path(table_path: str, branch: str | None) -> str:
    """The metadata root of ``branch``: the table's directory for ``main``, else
    ``<table>/branch/branch-<name>`` (Paimon's ``BranchManager.branchPath``)."""
    root = table_path.rstrip("/")
    branch = normalize_branch(branch)
    return root if branch == MAIN_BRANCH else f"{root}/{BRANCH_DIR}/{BRANCH_PREFIX}{branch}"


class BranchManager:
    """The branches of the table at ``table_path``, seen from ``current`` (the branch a handle is on:
    new branches copy its schemas and tags, fast-forward replaces its metadata)."""

    def __init__(self, file_io: FileIO, table_path: str, table_name: str, current: str) -> None:
        self.file_io = file_io
        self.table_path = table_path.rstrip("/")
        self.table_name = table_name
        self.current = normalize_branch(current)
        root = branch_path(self.table_path, self.current)
        self.snapshot_manager = SnapshotManager(file_io, root, table_name)
        self.schema_manager = SchemaManager(file_io, root, table_name)
        self.tag_manager = TagManager(file_io, root, table_name)

    def path(self, branch: str) -> str:
        check_branch_name(branch, self.table_name)
        return branch_path(self.table_path, branch)

    # -- listing ------------------------------------------------------------------------------------
    def _statuses(self) -> Iterator[FileStatus]:
        for status in self.file_io.list_status(f"{self.table_path}/{BRANCH_DIR}"):
            name = status.name[len(BRANCH_PREFIX) :]
            if status.is_dir and not status.is_link and status.name.startswith(BRANCH_PREFIX) and name:
                yield status

    def branches(self) -> list[str]:
        """Every branch but ``main``, sorted."""
        return sorted(s.name[len(BRANCH_PREFIX) :] for s in self._statuses())

    def created(self) -> dict[str, int]:
        """Each branch's directory modification time (epoch millis): Paimon's ``$branches.create_time``."""
        return {s.name[len(BRANCH_PREFIX) :]: s.mtime_ms for s in self._statuses()}

    def exists(self, branch: str) -> bool:
        """Whether ``branch`` exists (``main`` always does)."""
        if normalize_branch(branch) == MAIN_BRANCH:
            return True
        return self.file_io.exists(self.path(branch))

    def check_exists(self, branch: str) -> None:
        if not self.exists(branch):
            raise BranchNotFoundError(
                f"table {self.table_name}: branch '{branch}' does not exist; branches are "
                f"{self.branches()} (create it with create_branch)"
            )

    def _check_new(self, branch: str) -> None:
        check_branch_name(branch, self.table_name, creating=True)
        if self.exists(branch):
            raise BranchAlreadyExistsError(
                f"table {self.table_name}: branch '{branch}' already exists; delete it first, or "
                "pass ignore_if_exists"
            )

    # -- create, delete, rename ----------------------------------------------------------------------
    def create(self, branch: str, tag: str | None = None, ignore_if_exists: bool = False) -> bool:
        """Create ``branch``: empty (the schemas up to the latest) or from ``tag`` (the tag, its
        snapshot and the schemas up to the snapshot's). False when it existed and
        ``ignore_if_exists``. A failed create removes what it wrote."""
        if ignore_if_exists and normalize_branch(branch) != MAIN_BRANCH and self.exists(branch):
            return False
        self._check_new(branch)
        snapshot: Snapshot | None = None
        if tag is not None:
            snapshot = self.tag_manager.tag(tag)  # TagNotFoundError names the tags
            last_schema = snapshot.schema_id
        else:
            last_schema = self.schema_manager.latest().id
        target = branch_path(self.table_path, branch)
        schemas = SchemaManager(self.file_io, target, self.table_name)
        ids = [i for i in self.schema_manager.list_ids() if i <= last_schema]
        # The first schema file is created atomically: of two concurrent creates one wins, and
        # the other finds the branch taken without having written anything.
        first = self.file_io.read_bytes(self.schema_manager.schema_path(ids[0]))
        if not self.file_io.try_create_atomic(schemas.schema_path(ids[0]), first):
            raise BranchAlreadyExistsError(
                f"table {self.table_name}: branch '{branch}' already exists (created concurrently)"
            )
        try:
            for i in ids[1:]:
                self._copy(self.schema_manager.schema_path(i), schemas.schema_path(i))
            if tag is not None and snapshot is not None:
                snapshots = SnapshotManager(self.file_io, target, self.table_name)
                source = self.snapshot_manager.snapshot_path(snapshot.id)
                if self.file_io.exists(source):
                    self._copy(source, snapshots.snapshot_path(snapshot.id))
                else:  # expired, kept by the tag: the snapshot is written from the tag (as Paimon)
                    self.file_io.write_bytes(
                        snapshots.snapshot_path(snapshot.id), snapshot.to_json().encode()
                    )
                tags = TagManager(self.file_io, target, self.table_name)
                self._copy(self.tag_manager.tag_path(tag), tags.tag_path(tag))
        except BaseException:
            self.file_io.delete_dir(target)
            raise
        return True

    def _copy(self, src: str, dst: str) -> None:
        self.file_io.write_bytes(dst, self.file_io.read_bytes(src))

    def delete(
        self, branch: str, options: Mapping[str, str] | None = None, guard: Callable[[], None] | None = None
    ) -> None:
        """Delete ``branch``'s directory (its data files stay until ``remove_orphan_files``).
        ``options``: the table's, whose ``scan.fallback-branch`` may not be deleted (Paimon's
        ``AbstractFileStoreTable.deleteBranch``). ``guard`` runs once the arguments are checked,
        right before the delete (the table's own refusals)."""
        if normalize_branch(branch) == MAIN_BRANCH:
            raise InvalidIdentifierError(
                f"table {self.table_name}: cannot delete the main branch (drop the table instead)"
            )
        check_branch_name(branch, self.table_name)
        self._check_not_current(branch, "delete")
        fallback = (options or {}).get("scan.fallback-branch")
        if fallback is not None and fallback.strip() and branch == fallback:
            raise InvalidIdentifierError(
                f"table {self.table_name}: cannot delete branch '{branch}' because it is configured "
                "as 'scan.fallback-branch'; unset 'scan.fallback-branch' first"
            )
        self.check_exists(branch)
        if guard is not None:
            guard()
        self.file_io.delete_dir(self.path(branch))

    def rename(self, source: str, target: str) -> None:
        """Rename branch ``source`` to ``target`` (one directory move)."""
        if normalize_branch(source) == MAIN_BRANCH:
            raise InvalidIdentifierError(f"table {self.table_name}: cannot rename the main branch")
        check_branch_name(source, self.table_name)
        self._check_not_current(source, "rename")
        self.check_exists(source)
        self._check_new(target)
        if not self.file_io.rename(self.path(source), self.path(target)):
            raise BranchAlreadyExistsError(
                f"table {self.table_name}: cannot rename branch '{source}' to '{target}': "
                f"'{target}' was created concurrently or '{source}' was removed"
            )

    def _check_not_current(self, branch: str, action: str) -> None:
        if normalize_branch(branch) == self.current:
            raise InvalidIdentifierError(
                f"table {self.table_name}: cannot {action} branch '{branch}' through a handle on that "
                f"branch; {action} it from the table's main branch"
            )

    # -- fast-forward --------------------------------------------------------------------------------
    def fast_forward(self, branch: str) -> None:
        """Make the current branch (``main``) what ``branch`` is: its snapshots, schemas and tags
        from the branch's earliest snapshot on replace the current branch's (Paimon's
        ``FileSystemBranchManager.fastForward``: newer snapshots, schemas and tags of the current
        branch are deleted first, their data files left to ``remove_orphan_files``)."""
        if not isinstance(branch, str) or normalize_branch(branch) == MAIN_BRANCH:
            raise InvalidIdentifierError(
                f"table {self.table_name}: fast_forward needs a branch other than '{MAIN_BRANCH}' "
                f"(got {branch!r}); it moves the current branch to that branch's state"
            )
        check_branch_name(branch, self.table_name)
        if branch == self.current:
            raise InvalidIdentifierError(
                f"table {self.table_name}: fast-forward from the current branch '{branch}' is not allowed"
            )
        self.check_exists(branch)
        source_root = branch_path(self.table_path, branch)
        source = SnapshotManager(self.file_io, source_root, self.table_name)
        earliest = source.earliest_snapshot_id()
        if earliest is None:
            raise SnapshotNotFoundError(
                f"table {self.table_name}: cannot fast-forward to branch '{branch}', because it does "
                "not have a snapshot; write to the branch first"
            )
        earliest_schema = source.snapshot(earliest).schema_id
        sm, schm, tm = self.snapshot_manager, self.schema_manager, self.tag_manager
        doomed = [sm.snapshot_path(i) for i in sm.list_ids() if i >= earliest]
        doomed += [schm.schema_path(i) for i in schm.list_ids() if i >= earliest_schema]
        doomed += [tm.tag_path(n) for n, s in tm.tags().items() if s.id >= earliest]
        self.file_io.delete_quietly(f"{sm.snapshot_dir}/LATEST")
        for path in doomed:
            self.file_io.delete_quietly(path)
        for sub in ("snapshot", "schema", "tag"):
            for status in self.file_io.list_status(f"{source_root}/{sub}"):
                if status.is_dir or status.is_link or _TEMP_RE.match(status.name):
                    continue
                if sub == "tag" and not TAG_FILE_RE.match(status.name):
                    continue
                self._copy(status.path, f"{branch_path(self.table_path, self.current)}/{sub}/{status.name}")
        sm.forget_all()
