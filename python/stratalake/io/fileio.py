"""File access over :mod:`pyarrow.fs`.

A :class:`FileIO` is bound to one filesystem (chosen from a path or URI by :meth:`FileIO.get`) and
takes paths as the user spells them: ``/tmp/wh/db.db/t/snapshot/snapshot-1``,
``file:///tmp/wh/...`` or ``s3://bucket/wh/...``. :meth:`FileIO.to_fs_path` turns such a path into
the form the pyarrow filesystem expects, so ``pyarrow.parquet`` can be handed
``(io.filesystem, io.to_fs_path(path))``.

Atomic create-if-absent (:meth:`FileIO.try_create_atomic`) is what the commit protocol rests on
(docs/format.md section 3): :class:`LocalFileIO` and :class:`~stratalake.io.s3.S3FileIO` provide it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.fs as pafs

from stratalake.exceptions import UnsupportedError

__all__ = [
    "AtomicCreateUnsupportedError",
    "FileIO",
    "FileStatus",
    "LocalFileIO",
    "WriteOutcomeUnknownError",
    "register_scheme",
]

#: FileIO factories of the URI schemes pyarrow's ``from_uri`` would not set up as a table needs,
#: ``factory(options, scheme)``. Filled by the modules of those schemes when imported (``io/s3.py``;
#: the package's ``__init__`` imports them, so any import of ``stratalake.io`` registers them).
_SCHEMES: dict[str, Callable[[Mapping[str, str], str], FileIO]] = {}


class WriteOutcomeUnknownError(OSError):
    """A write that may or may not have taken effect (an object store's request whose answer was
    lost). Raised by :meth:`FileIO.try_create_atomic`; the committer resolves it by reading the
    file back (``store/snapshot_manager.py``). Any other error of that call means "not created"."""


class AtomicCreateUnsupportedError(UnsupportedError):
    """The filesystem cannot create a file only if it is absent (no hard links, no conditional
    PUT). Commits there need a catalog lock (:meth:`FileIO.create_under_lock`)."""


@dataclass(frozen=True, slots=True)
class FileStatus:
    """One entry of :meth:`FileIO.list_status`."""

    path: str  # the listed directory joined with ``name``, in the caller's spelling
    name: str
    size: int
    mtime_ms: int
    is_dir: bool  # as the filesystem reports it: a symbolic link to a directory is a directory
    is_link: bool = False  # a symbolic link (local filesystems only; object stores have none)


def _join(parent: str, name: str) -> str:
    return parent.rstrip("/") + "/" + name


def _parent(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[0]


def _scheme(path: str) -> str:
    """The URI scheme of ``path`` ('' for a plain path, including Windows drive letters)."""
    head, sep, _ = path.partition(":")
    if not sep or len(head) < 2 or not head.replace("+", "").replace(".", "").replace("-", "").isalnum():
        return ""
    return head.lower()


class FileIO:
    """Reads and writes files of one pyarrow filesystem.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> io = FileIO.get(d)
    >>> io.try_create_atomic(d + "/snapshot/snapshot-1", b"{}")
    True
    >>> io.try_create_atomic(d + "/snapshot/snapshot-1", b"{}")
    False
    >>> [s.name for s in io.list_status(d + "/snapshot")]
    ['snapshot-1']
    """

    #: How long a committer waits after creating a snapshot before it checks that the file still
    #: holds its commit (``SnapshotManager.try_commit``): the window in which another engine's
    #: exists-then-rename publish can replace it.
    publish_settle_ms = 5

    #: Whether paths are on this machine's own filesystem (native readers and writers may open them).
    is_local = False

    def __init__(self, filesystem: pafs.FileSystem, uri_prefix: str = "") -> None:
        # ``uri_prefix`` is what a URI has in front of the filesystem path: "s3://" for S3
        # ("s3://b/k" -> "b/k"), "hdfs://nn:8020" for HDFS ("hdfs://nn:8020/a" -> "/a").
        self._fs = filesystem
        self._uri_prefix = uri_prefix

    # ---------------------------------------------------------------- construction

    @staticmethod
    def get(path_or_uri: str, options: Mapping[str, str] | None = None) -> FileIO:
        """The FileIO for ``path_or_uri``: local for plain paths and ``file:``, S3 for
        ``s3://``/``s3a://`` (configured by ``s3.*`` / ``fs.s3a.*`` options), otherwise whatever
        :meth:`pyarrow.fs.FileSystem.from_uri` supports."""
        options = options or {}
        scheme = _scheme(path_or_uri)
        if scheme in ("", "file"):
            return LocalFileIO()
        factory = _SCHEMES.get(scheme)
        if factory is not None:
            return factory(options, scheme)
        try:
            fs, fs_path = pafs.FileSystem.from_uri(path_or_uri)
        except (ValueError, NotImplementedError) as e:  # ArrowInvalid, ArrowNotImplementedError
            raise UnsupportedError(
                f"no filesystem for {path_or_uri!r} ({e}); use a local path, file://, s3:// or "
                "another URI scheme pyarrow supports"
            ) from e
        uri = path_or_uri.split("?", 1)[0].rstrip("/")
        fs_path = fs_path.rstrip("/")
        if not fs_path or not uri.endswith(fs_path):
            raise UnsupportedError(f"cannot map paths of {path_or_uri!r} onto its filesystem")
        return FileIO(fs, uri[: len(uri) - len(fs_path)])

    # ---------------------------------------------------------------- accessors

    @property
    def filesystem(self) -> pafs.FileSystem:
        """The pyarrow filesystem, to pass along with :meth:`to_fs_path` to pyarrow readers."""
        return self._fs

    def to_fs_path(self, path: str) -> str:
        """``path`` as the pyarrow filesystem names it."""
        if self._uri_prefix and path.startswith(self._uri_prefix):
            return path[len(self._uri_prefix) :]
        if _scheme(path):
            raise UnsupportedError(
                f"{path!r} is not on this filesystem (expected paths starting {self._uri_prefix!r})"
            )
        return path

    def _info(self, path: str) -> pafs.FileInfo:
        return self._fs.get_file_info(self.to_fs_path(path))

    # ---------------------------------------------------------------- queries

    def exists(self, path: str) -> bool:
        return bool(self._info(path).type != pafs.FileType.NotFound)

    def file_size(self, path: str) -> int:
        """Size in bytes; FileNotFoundError if absent."""
        info = self._info(path)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(errno.ENOENT, "no such file", path)
        return int(info.size)

    def list_status(self, path: str) -> list[FileStatus]:
        """The direct children of a directory, sorted by name; [] if the directory is missing."""
        selector = pafs.FileSelector(self.to_fs_path(path), allow_not_found=True)
        try:
            infos = self._fs.get_file_info(selector)
        except (NotADirectoryError, FileNotFoundError):
            return []
        out = [
            FileStatus(
                path=_join(path, info.base_name),
                name=info.base_name,
                size=int(info.size or 0),
                mtime_ms=int(info.mtime_ns or 0) // 1_000_000,
                is_dir=info.type == pafs.FileType.Directory,
            )
            for info in infos
        ]
        out.sort(key=lambda s: s.name)
        return out

    def list_names(self, path: str, ordered: bool = True) -> list[str]:
        """The names of a directory's direct children, sorted unless ``ordered`` is false; [] if
        the directory is missing.

        Like :meth:`list_status` without the status: object stores list names and status in the
        same requests, but :class:`LocalFileIO` then reads no per-file metadata.
        """
        return [s.name for s in self.list_status(path)]

    def status(self, path: str) -> FileStatus:
        """The status of one file (one ``stat`` / ``HEAD``); FileNotFoundError if absent."""
        info = self._info(path)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(errno.ENOENT, "no such file", path)
        return FileStatus(
            path=path,
            name=info.base_name,
            size=int(info.size or 0),
            mtime_ms=int(info.mtime_ns or 0) // 1_000_000,
            is_dir=info.type == pafs.FileType.Directory,
        )

    # ---------------------------------------------------------------- reading

    def read_bytes(self, path: str) -> bytes:
        """The whole file; FileNotFoundError if absent."""
        with self._fs.open_input_stream(self.to_fs_path(path)) as f:
            data: bytes = f.read()
        return data

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def open_input_file(self, path: str) -> pa.NativeFile:
        """A seekable file (``pyarrow.RandomAccessFile``), e.g. for ``pyarrow.parquet``."""
        return self._fs.open_input_file(self.to_fs_path(path))

    # ---------------------------------------------------------------- writing

    def open_output_stream(self, path: str) -> pa.NativeFile:
        """A new file (overwriting); the file is complete once the stream is closed."""
        return self._fs.open_output_stream(self.to_fs_path(path))

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path``, replacing any existing file.

        Object stores make a PUT visible all at once; :class:`LocalFileIO` writes a temp file
        and renames it over the target.
        """
        with self.open_output_stream(path) as out:
            out.write(data)

    def copy_file(self, src: str, dst: str) -> None:
        """Copy a file (replacing ``dst``); object stores copy on the server side."""
        self._fs.copy_file(self.to_fs_path(src), self.to_fs_path(dst))

    def try_create_atomic(
        self, path: str, data: bytes, precondition: Callable[[], bool] | None = None
    ) -> bool:
        """Create ``path`` holding ``data`` only if it does not exist; False if it does.

        ``precondition`` is checked as late as possible, right before the file is published;
        False (nothing created) if it fails. The commit uses it to check its base snapshot.

        Readers never see a partial file and of concurrent callers exactly one succeeds. Object
        stores need a conditional PUT (``If-None-Match: *``) that pyarrow 19 cannot send:
        :class:`~stratalake.io.s3.S3FileIO` sends it through boto3; other filesystems refuse.

        Outcomes: True (created by this call), False (the file exists and is not this call's),
        :class:`WriteOutcomeUnknownError` (it cannot tell), any other exception (not created).
        """
        raise AtomicCreateUnsupportedError(
            f"atomic create-if-absent is not supported on {self._fs.type_name} ({path}); "
            "commits need a local filesystem, S3 (s3://, with boto3 installed), or a catalog "
            "with a commit lock (a metastore catalog with 'lock.enabled' = 'true')"
        )

    def create_under_lock(
        self, path: str, data: bytes, precondition: Callable[[], bool] | None = None
    ) -> bool:
        """:meth:`try_create_atomic` for a caller holding a lock that every writer of ``path``
        takes (a catalog's commit lock), on a filesystem without atomic create-if-absent.

        The lock makes check-then-write safe; the file is written beside ``path`` and moved into
        place so that readers never see a partial file. Same outcomes as :meth:`try_create_atomic`.
        """
        if self.exists(path) or (precondition is not None and not precondition()):
            return False
        directory, name = path.rstrip("/").rsplit("/", 1)
        tmp = f"{directory}/.{name}.{uuid.uuid4().hex}.tmp"
        self.mkdirs(directory)
        self.write_bytes(tmp, data)
        try:
            self._fs.move(self.to_fs_path(tmp), self.to_fs_path(path))
        except BaseException as e:
            # The move may have happened before the error: only a read tells.
            try:
                created = self.exists(path) and self.read_bytes(path) == data
            except OSError as check:
                raise WriteOutcomeUnknownError(f"moving {tmp} to {path} failed ({e}); {check}") from e
            if not created:
                self.delete_quietly(tmp)
                raise
            return True
        return True

    def mkdirs(self, path: str) -> None:
        self._fs.create_dir(self.to_fs_path(path), recursive=True)

    def rename(self, src: str, dst: str) -> bool:
        """Move ``src`` to ``dst``; False if ``src`` is missing or ``dst`` already exists.

        The existence check and the move are separate steps here; use :meth:`try_create_atomic`
        when two writers may race for ``dst``.
        """
        if not self.exists(src) or self.exists(dst):
            return False
        self._fs.move(self.to_fs_path(src), self.to_fs_path(dst))
        return True

    # ---------------------------------------------------------------- deleting

    def delete(self, path: str) -> None:
        """Delete a file; FileNotFoundError if absent."""
        self._fs.delete_file(self.to_fs_path(path))

    def delete_quietly(self, path: str) -> bool:
        """Delete a file if possible; True if it was deleted. Never raises an I/O error."""
        try:
            self.delete(path)
        except OSError:
            return False
        return True

    def delete_dir(self, path: str) -> None:
        """Delete a directory and everything below it; nothing happens if it is missing."""
        info = self._info(path)
        if info.type == pafs.FileType.NotFound:
            return
        self._fs.delete_dir(self.to_fs_path(path))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._fs.type_name}, prefix={self._uri_prefix!r})"


def register_scheme(schemes: Iterable[str], factory: Callable[[Mapping[str, str], str], FileIO]) -> None:
    """Let :meth:`FileIO.get` build the FileIO of URIs of ``schemes`` with ``factory(options, scheme)``."""
    for scheme in schemes:
        _SCHEMES[scheme.lower()] = factory


class LocalFileIO(FileIO):
    """The local filesystem, with atomic overwrite and atomic create-if-absent."""

    is_local = True

    def __init__(self) -> None:
        super().__init__(pafs.LocalFileSystem(), "file://")

    def to_fs_path(self, path: str) -> str:
        if path.startswith("file:"):
            # file:///tmp/x (URI) and file:/tmp/x (Hadoop's spelling) both mean /tmp/x
            path = urlsplit(path).path
        elif _scheme(path):
            raise UnsupportedError(f"{path!r} is not a local path")
        return os.path.abspath(path)

    def list_status(self, path: str) -> list[FileStatus]:
        out = super().list_status(path)
        if out:
            # d_type from one scandir: no extra stat per entry.
            with contextlib.suppress(OSError), os.scandir(self.to_fs_path(path)) as it:
                links = {e.name for e in it if e.is_symlink()}
                if links:
                    out = [replace(s, is_link=True) if s.name in links else s for s in out]
        return out

    def list_names(self, path: str, ordered: bool = True) -> list[str]:
        if type(self._fs) is not pafs.LocalFileSystem:
            return super().list_names(path, ordered)  # a wrapped filesystem (e.g. the tests' faulty one)
        try:
            names = os.listdir(self.to_fs_path(path))  # names only: no stat per entry
        except (FileNotFoundError, NotADirectoryError):
            return []
        if ordered:  # (sorting 10,000 snapshot names costs ~4 ms; a commit's check needs no order)
            names.sort()
        return names

    def read_bytes(self, path: str) -> bytes:
        _refuse_linked_file(self.to_fs_path(path))
        return super().read_bytes(path)

    def open_input_file(self, path: str) -> pa.NativeFile:
        _refuse_linked_file(self.to_fs_path(path))
        return super().open_input_file(path)

    def open_output_stream(self, path: str) -> pa.NativeFile:
        self._make_parent(path)
        return super().open_output_stream(path)

    def copy_file(self, src: str, dst: str) -> None:
        _refuse_linked_file(self.to_fs_path(src))
        self._make_parent(dst)
        super().copy_file(src, dst)

    def write_bytes(self, path: str, data: bytes) -> None:
        target = self.to_fs_path(path)
        tmp = self._write_temp(target, data)
        try:
            os.replace(tmp, target)
        except BaseException:
            _unlink_quietly(tmp)
            raise

    def try_create_atomic(
        self, path: str, data: bytes, precondition: Callable[[], bool] | None = None
    ) -> bool:
        target = self.to_fs_path(path)
        tmp = self._write_temp(target, data)
        try:
            if precondition is not None and not precondition():
                return False
            # link(2) fails with EEXIST if the target exists and publishes a complete file.
            os.link(tmp, target)
            return True
        except FileExistsError:
            return False
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
                raise
            return self._create_exclusive(target, data)
        finally:
            _unlink_quietly(tmp)

    def rename(self, src: str, dst: str) -> bool:
        s, d = self.to_fs_path(src), self.to_fs_path(dst)
        if os.path.isfile(s):
            # For files, link + unlink never replaces an existing dst, even under a race.
            try:
                os.link(s, d)
            except FileExistsError:
                return False
            except FileNotFoundError:
                return False
            os.unlink(s)
            return True
        return super().rename(src, dst)

    # ---------------------------------------------------------------- helpers

    def _make_parent(self, path: str) -> None:
        directory = posixpath.dirname(self.to_fs_path(path))
        os.makedirs(directory, exist_ok=True)
        _refuse_linked_directory(directory)

    @staticmethod
    def _write_temp(target: str, data: bytes) -> str:
        """Write ``data`` durably to a hidden temp file beside ``target`` (same filesystem)."""
        directory, name = os.path.split(target)
        os.makedirs(directory, exist_ok=True)
        _refuse_linked_directory(directory)
        tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
        _write_new(tmp, data)
        return tmp

    @staticmethod
    def _create_exclusive(target: str, data: bytes) -> bool:
        # Filesystems without hard links: O_EXCL still lets exactly one writer win, but a
        # reader may briefly see a partial file.
        # A torn file is no commit: _write_new removes it, so that the id stays free.
        try:
            _write_new(target, data)
        except FileExistsError:
            return False
        return True


def _refuse_linked_directory(directory: str) -> None:
    """Files are never written into a directory that is a symbolic link: inside a table (a
    ``bucket-7 -> /elsewhere`` planted by someone who may write the table) it would lead the
    writer, who may hold wider rights, outside. Links further up (e.g. the warehouse) are fine."""
    if os.path.islink(directory):
        raise UnsupportedError(
            f"{directory} is a symbolic link; stratalake does not write files through a linked "
            "directory (it could lead outside the table). Replace the link by a real directory"
        )


#: Directory levels a table holds under its root (Paimon's layout): a file's ancestors with these
#: names are inside the table; the first other name is the table's own directory.
_TABLE_LEVELS = ("manifest", "snapshot", "changelog", "index", "tag", "schema", "statistics")


def _inside_table_level(name: str) -> bool:
    return name.startswith("bucket-") or "=" in name or name in _TABLE_LEVELS


def _refuse_linked_file(path: str) -> None:
    """Files are never read through a symbolic link: the file's own, or a directory between it and
    its table (bucket, partition and metadata directories). A ``bucket-7 -> /elsewhere`` planted by
    someone who may write the table would otherwise let a reader with wider rights (a compaction,
    an operator's job) copy another table's rows into this one. A few ``lstat`` calls per opened
    file; links further up (the table's own directory, the warehouse) are fine."""
    candidate = path
    while True:
        if os.path.islink(candidate):
            raise UnsupportedError(
                f"{candidate} is a symbolic link; stratalake does not read table files through "
                f"links (reading {path}: a link inside a table could lead outside it). Replace "
                "the link by the real file or directory"
            )
        parent = os.path.dirname(candidate)
        if parent == candidate or not _inside_table_level(os.path.basename(parent)):
            return
        candidate = parent


def _write_new(path: str, data: bytes) -> None:
    """Create ``path`` (FileExistsError if it exists) holding ``data``, synced to disk; a file
    left half-written by a failure is removed."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        _unlink_quietly(path)
        raise


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
