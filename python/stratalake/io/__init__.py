"""File access for tables: :class:`FileIO` over :mod:`pyarrow.fs`, chosen by path or URI."""

from stratalake.io.fileio import (
    FileIO,
    FileStatus,
    LocalFileIO,
    WriteOutcomeUnknownError,
    s3_filesystem_kwargs,
)
from stratalake.io.s3 import S3FileIO

__all__ = ["FileIO", "FileStatus", "LocalFileIO", "S3FileIO", "WriteOutcomeUnknownError", "s3_filesystem_kwargs"]
