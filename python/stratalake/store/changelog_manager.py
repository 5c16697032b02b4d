"""Long-lived changelogs: ``changelog/changelog-<id>`` files that outlive their snapshots.

When ``changelog.num-retained.*`` or ``changelog.time-retained`` keep changelogs longer than
snapshots (Paimon's "decoupled" changelog lifecycle), snapshot expiration copies each expiring
snapshot's JSON to ``changelog/changelog-<id>`` before deleting ``snapshot-<id>``. Such a copy keeps
only what a changelog read needs: its changelog manifest list (and files), or for a changelog-less
APPEND snapshot its delta manifest list (and the data files it added). The base manifest list it
still names is deleted with the snapshot, as Java Paimon does.
"""

from __future__ import annotations

import contextlib
import re

from stratalake.exceptions import CorruptFileError
from stratalake.io import FileIO
from stratalake.spec.snapshot import Snapshot

_CHANGELOG_RE = re.compile(r"^changelog-(\d+)$")


class ChangelogManager:
    """I/O of the long-lived changelog files of one table (JSON in the snapshot format)."""

    def __init__(self, file_io: FileIO, table_path: str, table_name: str = "table") -> None:
        self.file_io = file_io
        self.table_name = table_name
        self.changelog_dir = f"{table_path.rstrip('/')}/changelog"

    def changelog_path(self, changelog_id: int) -> str:
        return f"{self.changelog_dir}/changelog-{changelog_id}"

    def ids(self) -> list[int]:
        """Ids of every long-lived changelog, ascending (listing: the hints may be stale)."""
        out = []
        for status in self.file_io.list_status(self.changelog_dir):
            m = _CHANGELOG_RE.match(status.name)
            if m:
                out.append(int(m.group(1)))
        return sorted(out)

    def try_changelog(self, changelog_id: int) -> Snapshot | None:
        """The long-lived changelog ``changelog_id``, or None if there is none."""
        path = self.changelog_path(changelog_id)
        try:
            text = self.file_io.read_text(path)
        except (FileNotFoundError, OSError):
            return None
        snap = Snapshot.from_json(text, origin=path)
        if snap.id != changelog_id:
            raise CorruptFileError(f"{path}: holds changelog id {snap.id}, expected {changelog_id}")
        return snap

    def changelogs(self) -> list[Snapshot]:
        """Every long-lived changelog, oldest first."""
        out = []
        for cid in self.ids():
            snap = self.try_changelog(cid)
            if snap is not None:  # expired while listing
                out.append(snap)
        return out

    def commit(self, snapshot: Snapshot) -> None:
        """Write (or rewrite, when a crashed expiration is resumed) the changelog of ``snapshot``."""
        self.file_io.write_bytes(self.changelog_path(snapshot.id), snapshot.to_json().encode())

    def delete(self, changelog_id: int) -> bool:
        """Delete one changelog file; False if it is (or may be) still there."""
        path = self.changelog_path(changelog_id)
        if self.file_io.delete_quietly(path):
            return True
        try:
            return not self.file_io.exists(path)
        except OSError:
            return False

    def commit_hint(self, name: str, changelog_id: int) -> None:
        """Best-effort LATEST/EARLIEST hint, for Java readers; this package always lists."""
        with contextlib.suppress(OSError):
            self.file_io.write_bytes(f"{self.changelog_dir}/{name}", str(changelog_id).encode())
