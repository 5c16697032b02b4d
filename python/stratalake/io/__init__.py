"""File access for tables: :class:`FileIO` over :mod:`pyarrow.fs`, chosen by path or URI."""

from stratalake.io.fileio import FileIO, FileStatus, LocalFileIO, s3_filesystem_kwargs

__all__ = ["FileIO", "FileStatus", "LocalFileIO", "s3_filesystem_kwargs"]
