"""Commits of writers' messages as snapshots.

``protocol`` (:class:`TableCommit`: plan, build, retry loop, idempotence), ``conflicts`` (checks
against the latest snapshot and the key reads they need), ``manifest_merge`` (keeping the base
manifest list bounded), ``message`` (:class:`CommitMessage`).
"""

from stratalake.table.commit.conflicts import InvalidCommitError
from stratalake.table.commit.message import CommitMessage
from stratalake.table.commit.protocol import CommitOutcome, TableCommit

__all__ = ["CommitMessage", "CommitOutcome", "InvalidCommitError", "TableCommit"]
