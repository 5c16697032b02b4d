"""Commits of writers' messages as snapshots.

``protocol`` (:class:`TableCommit`: plan, build, retry loop, idempotence), ``conflicts`` (checks
against the latest snapshot and the key reads they need), ``manifest_merge`` (keeping the base
manifest list bounded), ``message`` (:class:`CommitMessage`).
"""

from stratalake.operation.commit.conflicts import InvalidCommitError
from stratalake.operation.commit.message import CommitMessage, delete_uncommitted
from stratalake.operation.commit.protocol import CommitOutcome, TableCommit, new_commit

__all__ = [
    "CommitMessage",
    "CommitOutcome",
    "InvalidCommitError",
    "TableCommit",
    "delete_uncommitted",
    "new_commit",
]
