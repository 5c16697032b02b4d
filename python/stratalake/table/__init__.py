"""The table layer: the public :class:`Table` handle, the compaction job and system tables.

Re-exports the handles of the layers below so that ``stratalake.table`` stays the public face.
"""

from stratalake.operation.commit import CommitMessage, TableCommit
from stratalake.operation.write import TableWrite
from stratalake.read.merge_read import TableRead
from stratalake.read.scan import Split, TableScan
from stratalake.table.table import Table

__all__ = ["CommitMessage", "Split", "Table", "TableCommit", "TableRead", "TableScan", "TableWrite"]
