"""What every table writer shares: commit as one snapshot, and the context-manager protocol.

Writers (:class:`~stratalake.operation.write.TableWrite` for primary-key tables,
:class:`~stratalake.append.write.AppendTableWrite` for append tables) implement
:meth:`prepare_commit` and :meth:`abort`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from stratalake.operation.commit import CommitMessage, new_commit

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore


class BaseTableWrite(ABC):
    """``with t.new_write() as w: w.write(b1); w.write(b2); w.commit()``; leaving the block with an
    exception (or without ``commit()``) deletes the files written."""

    table: TableStore
    commit_user: str | None
    _committed: bool

    @abstractmethod
    def prepare_commit(self) -> list[CommitMessage]:
        """Flush everything and describe the new files; nothing is visible until committed."""

    @abstractmethod
    def abort(self) -> None:
        """Delete every file this writer wrote that was not committed."""

    def commit(
        self,
        overwrite: bool = False,
        overwrite_partitions: Sequence[dict[str, Any]] | None = None,
        commit_identifier: int | None = None,
    ) -> int | None:
        """Flush and commit everything written as one snapshot; returns its id."""
        messages = self.prepare_commit()
        # From here the messages hold the files (abort() no longer lists them).
        self._committed = True
        commit = new_commit(self.table, self.commit_user)
        try:
            snapshot_id = commit.commit(
                messages,
                overwrite=overwrite,
                overwrite_partitions=overwrite_partitions,
                commit_identifier=commit_identifier,
            )
        except BaseException:
            commit.abort(messages)  # deletes them only if the commit is known not to have happened
            raise
        return snapshot_id

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is not None or not self._committed:
            self.abort()


__all__ = ["BaseTableWrite"]
