"""File access for tables: :class:`FileIO` over :mod:`pyarrow.fs`, chosen by path or URI."""

from stratalake.io.fileio import FileIO, FileStatus, LocalFileIO, WriteOutcomeUnknownError

# Imported here so that S3's URI schemes are registered with FileIO.get whenever stratalake.io is.
from stratalake.io.s3 import S3FileIO, s3_filesystem_kwargs

__all__ = [
    "FileIO",
    "FileStatus",
    "LocalFileIO",
    "S3FileIO",
    "WriteOutcomeUnknownError",
    "s3_filesystem_kwargs",
]
