"""Tables: scan planning, merge-on-read, writes and optimistic commits."""

from stratalake.table.commit import CommitMessage, TableCommit
from stratalake.table.read import TableRead
from stratalake.table.scan import Split, TableScan
from stratalake.table.table import Table
from stratalake.table.write import TableWrite

__all__ = ["CommitMessage", "Split", "Table", "TableCommit", "TableRead", "TableScan", "TableWrite"]
