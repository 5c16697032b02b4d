"""A local FileIO that counts the file-system operations of one statement and fails the k-th.

Every operation reaches the disk through this FileIO: its own calls (``write_bytes``,
``try_create_atomic``) and, through a :class:`pyarrow.fs.PyFileSystem` handler, every call that
stratalake or pyarrow makes on ``file_io.filesystem`` (Parquet and ORC files, manifests, listings,
deletes). The k-th operation (0-based, counted from :meth:`FaultPlan.arm`) then

- ``before``: raises :class:`InjectedFault` without acting;
- ``after``: acts, then raises (the answer was lost: for ``try_create_atomic`` that is
  :class:`~stratalake.io.WriteOutcomeUnknownError`, the FileIO contract for "cannot tell");
- ``exit_before`` / ``exit_after``: ends the process with ``os._exit`` there (as a kill would).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.fs as pafs

from stratalake.io import LocalFileIO, WriteOutcomeUnknownError

T = TypeVar("T")

MODES = ("before", "after")
EXIT_MODES = ("exit_before", "exit_after")
EXIT_CODE = 86


class InjectedFault(OSError):
    """The fault the plan injects (an I/O error, as a full disk or an object store gives)."""


@dataclass
class FaultPlan:
    """Which operations fail, and how; records every operation it saw (kind, path).

    ``fail_at`` counts from :meth:`arm`; or ``after_publish = (n, offset)`` places it ``offset``
    operations after the ``n``-th snapshot publish (0-based) of the statement. ``span`` makes
    that many consecutive operations fail (a store that stays down).
    """

    fail_at: int | None = None
    mode: str = "before"
    armed: bool = False
    ops: list[tuple[str, str]] = field(default_factory=list)
    fired: tuple[str, str] | None = None
    span: int = 1
    after_publish: tuple[int, int] | None = None
    _publishes: int = 0

    def arm(self) -> None:
        self.armed, self.ops, self.fired, self._publishes = True, [], None, 0

    def disarm(self) -> None:
        self.armed = False

    def run(self, kind: str, path: str, act: Callable[[], T], unknown: bool = False) -> T:
        if not self.armed:
            return act()
        k = len(self.ops)
        self.ops.append((kind, path))
        publish = self.after_publish is not None and kind == "publish" and "/snapshot/snapshot-" in path
        if publish and self._publishes == self.after_publish[0] and self.fail_at is None:  # type: ignore[index]
            self.fail_at = k + self.after_publish[1]  # type: ignore[index]
        if publish:
            self._publishes += 1
        if self.fail_at is None or not self.fail_at <= k < self.fail_at + self.span:
            return act()
        if self.fired is None:
            self.fired = (kind, path)
        if self.mode == "exit_before":
            os._exit(EXIT_CODE)
        if self.mode == "before":
            raise InjectedFault(f"injected fault before {kind} {path}")
        act()
        if self.mode == "exit_after":
            os._exit(EXIT_CODE)
        if unknown:
            raise WriteOutcomeUnknownError(f"injected lost answer after {kind} {path}")
        raise InjectedFault(f"injected fault after {kind} {path}")


class _Stream:
    """A writable file object whose close is the counted operation (the file is complete then)."""

    def __init__(self, inner: pa.NativeFile, plan: FaultPlan, path: str) -> None:
        self._inner, self._plan, self._path = inner, plan, path
        self.closed = False

    def write(self, data: Any) -> int:
        return int(self._inner.write(data))

    def flush(self) -> None:
        self._inner.flush()

    def tell(self) -> int:
        return int(self._inner.tell())

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._plan.run("close", self._path, self._inner.close)


class _Handler(pafs.FileSystemHandler):
    """Delegates to the local filesystem, every call counted by the plan."""

    def __init__(self, plan: FaultPlan) -> None:
        self._fs = pafs.LocalFileSystem()
        self._plan = plan

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Handler) and other._plan is self._plan

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return id(self._plan)

    def get_type_name(self) -> str:
        return "faulty-local"

    def normalize_path(self, path: str) -> str:
        return str(self._fs.normalize_path(path))

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return [self._plan.run("stat", p, lambda p=p: self._fs.get_file_info(p)) for p in paths]  # type: ignore[misc]

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        return self._plan.run("list", selector.base_dir, lambda: self._fs.get_file_info(selector))  # type: ignore[no-any-return]

    def create_dir(self, path: str, recursive: bool) -> None:
        self._plan.run("mkdir", path, lambda: self._fs.create_dir(path, recursive=recursive))

    def delete_dir(self, path: str) -> None:
        self._plan.run("rmdir", path, lambda: self._fs.delete_dir(path))

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self._plan.run("rmdir", path, lambda: self._fs.delete_dir_contents(path, missing_dir_ok=missing_dir_ok))

    def delete_root_dir_contents(self) -> None:
        raise InjectedFault("refusing to delete the root directory")

    def delete_file(self, path: str) -> None:
        self._plan.run("delete", path, lambda: self._fs.delete_file(path))

    def move(self, src: str, dest: str) -> None:
        self._plan.run("move", dest, lambda: self._fs.move(src, dest))

    def copy_file(self, src: str, dest: str) -> None:
        self._plan.run("copy", dest, lambda: self._fs.copy_file(src, dest))

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return self._plan.run("read", path, lambda: self._fs.open_input_stream(path))  # type: ignore[no-any-return]

    def open_input_file(self, path: str) -> pa.NativeFile:
        return self._plan.run("read", path, lambda: self._fs.open_input_file(path))  # type: ignore[no-any-return]

    def open_output_stream(self, path: str, metadata: Any) -> pa.NativeFile:
        inner = self._plan.run("create", path, lambda: self._fs.open_output_stream(path))
        return pa.PythonFile(_Stream(inner, self._plan, path), mode="w")

    def open_append_stream(self, path: str, metadata: Any) -> pa.NativeFile:
        return self._plan.run("append", path, lambda: self._fs.open_append_stream(path))  # type: ignore[no-any-return]


class FaultyFileIO(LocalFileIO):
    """:class:`LocalFileIO` whose every operation goes through ``plan``."""

    def __init__(self, plan: FaultPlan) -> None:
        super().__init__()
        self.plan = plan
        self._fs = pafs.PyFileSystem(_Handler(plan))

    def write_bytes(self, path: str, data: bytes) -> None:
        self.plan.run("write", path, lambda: LocalFileIO.write_bytes(self, path, data))

    def try_create_atomic(self, path: str, data: bytes, precondition: Callable[[], bool] | None = None) -> bool:
        # The precondition's own operations come first, so that the publish is one operation
        # (the create itself) and the ones after it are the commit's next steps.
        ok = precondition is None or precondition()
        return self.plan.run(
            "publish",
            path,
            lambda: LocalFileIO.try_create_atomic(self, path, data, None if ok else lambda: False),
            unknown=True,
        )

    def rename(self, src: str, dst: str) -> bool:
        return self.plan.run("rename", dst, lambda: LocalFileIO.rename(self, src, dst))

    def __reduce__(self) -> Any:
        # Pickled into threads' or processes' work (never in these tests): a plain local FileIO.
        return (LocalFileIO, ())
