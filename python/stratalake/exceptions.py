"""Every error stratalake raises on purpose derives from :class:`StrataLakeError`.

Messages name the table, column or option at fault and say what to do about it.
"""

from __future__ import annotations


class StrataLakeError(Exception):
    """Base class of all stratalake errors."""


class TableNotFoundError(StrataLakeError):
    """The table does not exist in the catalog."""


class TableAlreadyExistsError(StrataLakeError):
    """A table with that name already exists."""


class DatabaseNotFoundError(StrataLakeError):
    """The database does not exist in the catalog."""


class DatabaseAlreadyExistsError(StrataLakeError):
    """A database with that name already exists."""


class DatabaseNotEmptyError(StrataLakeError):
    """Dropping a database that still holds tables without cascade."""


class InvalidOptionError(StrataLakeError, ValueError):
    """A table option is unknown or has a malformed value."""


class SchemaError(StrataLakeError, ValueError):
    """A schema, schema change or input batch does not fit the table."""


class InvalidDataError(StrataLakeError, ValueError):
    """Input rows violate the table's rules (e.g. a null primary-key value)."""


class SnapshotNotFoundError(StrataLakeError):
    """The requested snapshot does not exist or has expired."""


class TagNotFoundError(SnapshotNotFoundError):
    """The requested tag does not exist."""


class TagAlreadyExistsError(StrataLakeError):
    """A tag with that name already exists."""


class BranchNotFoundError(TableNotFoundError):
    """The requested branch of a table does not exist."""


class BranchAlreadyExistsError(StrataLakeError):
    """A branch with that name already exists."""


class CorruptFileError(StrataLakeError):
    """A metadata or data file cannot be decoded."""


class CommitConflictError(StrataLakeError):
    """A commit conflicts with a concurrent commit and cannot be retried. Nothing was committed."""


class CommitStateUnknownError(StrataLakeError):
    """Whether a commit happened cannot be told: the snapshot file may have been published (an
    object store's PUT whose answer was lost, a read-back that failed too).

    Nothing is cleaned up, since the files may be referenced by a published snapshot; leftovers of
    a commit that did not happen are removed by ``remove_orphan_files``. The message names the
    commit user and says how to check (the table's ``$snapshots``)."""

    def __init__(self, message: str, commit_user: str | None = None, snapshot_id: int | None = None) -> None:
        super().__init__(message)
        self.commit_user = commit_user
        self.snapshot_id = snapshot_id


class MergeError(StrataLakeError):
    """Records cannot be merged under the table's merge engine (e.g. a delete it rejects)."""


class UnsupportedError(StrataLakeError):
    """A valid request that stratalake does not support (yet)."""


class InvalidIdentifierError(StrataLakeError, ValueError):
    """A database or table name breaks the naming rules (see :mod:`stratalake.identifiers`),
    e.g. it holds a path separator, is ``..``, uses ``$`` (system tables) or would resolve to a path
    outside the warehouse. The message names the identifier and the rule."""


class UnsafeDirectoryError(StrataLakeError):
    """A local cache or scratch directory that other users could read or change: not owned by
    this user, open to the group or others, or a symbolic link. The message names the directory
    and how to fix it."""
