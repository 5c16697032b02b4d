"""The files that snapshots, tags and long-lived changelogs reference.

Snapshot expiration, tag deletion and orphan removal all decide what to delete the same way: the
files some metadata references, minus the files the metadata that stays references. This module
computes those sets; it reads metadata and never deletes anything.

Data files count as referenced by a snapshot when they are *live* in it (its base + delta
manifests folded) or are changelog files of its changelog manifest list: exactly the files a reader
of the snapshot may open. Metadata files count by name.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from stratalake.exceptions import CorruptFileError
from stratalake.lsm.data_file import bucket_dir
from stratalake.spec.manifest import FileKind, ManifestEntry, ManifestFileMeta
from stratalake.spec.snapshot import CommitKind, Snapshot
from stratalake.store.files import data_file_path, table_file
from stratalake.store.manifests import fold_entries

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore


@dataclass
class FileSet:
    """Files of one table, by directory kind."""

    data: set[str] = field(default_factory=set)  # paths of data, changelog and extra files
    manifests: set[str] = field(default_factory=set)  # names under manifest/ (lists, manifests)
    index: set[str] = field(default_factory=set)  # names under index/
    statistics: set[str] = field(default_factory=set)  # names under statistics/

    def update(self, other: FileSet) -> None:
        self.data |= other.data
        self.manifests |= other.manifests
        self.index |= other.index
        self.statistics |= other.statistics

    def minus(self, other: FileSet) -> FileSet:
        return FileSet(
            self.data - other.data,
            self.manifests - other.manifests,
            self.index - other.index,
            self.statistics - other.statistics,
        )

    def __len__(self) -> int:
        return len(self.data) + len(self.manifests) + len(self.index) + len(self.statistics)


class ReferenceCollector:
    """Collects the files metadata references.

    ``strict=True`` (for what must be kept) raises :class:`CorruptFileError` when a manifest
    cannot be read, since an incomplete keep-set could delete a needed file; ``strict=False`` (for
    deletion candidates) skips it: a smaller candidate set only leaves garbage behind.
    """

    def __init__(self, table: TableStore) -> None:
        self.table = table
        self._dirs: dict[tuple[bytes, int], str] = {}

    # -- file names ------------------------------------------------------------------------------
    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        key = (partition, bucket)
        d = self._dirs.get(key)
        if d is None:
            codec = self.table.partition_codec
            d = bucket_dir(self.table.location, codec.path(codec.from_bytes(partition)), bucket)
            self._dirs[key] = d
        return d

    def entry_paths(self, e: ManifestEntry) -> Iterator[str]:
        directory = self.bucket_dir(e.partition, e.bucket)
        yield data_file_path(directory, e.file)
        for extra in e.file.extra_files:
            yield table_file(directory, extra, "extra file")

    # -- reading ---------------------------------------------------------------------------------
    def _fail(self, what: str, err: Exception) -> CorruptFileError:
        return CorruptFileError(
            f"table {self.table.identifier}: cannot read {what} ({err}); nothing was deleted, "
            "because the files still in use cannot be determined"
        )

    # Non-strict reads find deletion candidates (metadata about to be deleted): they leave the
    # process's cache of decoded manifests to the manifests that stay (``keep=strict``).
    def _read_list(self, name: str, strict: bool) -> list[ManifestFileMeta]:
        try:
            return self.table.manifest_io.read_list(name, keep=strict)
        except (OSError, CorruptFileError) as e:
            if strict:
                raise self._fail(f"manifest list {name}", e) from None
            return []

    def _read_entries(self, name: str, strict: bool) -> list[ManifestEntry]:
        try:
            return self.table.manifest_io.read_entries(name, keep=strict)
        except (OSError, CorruptFileError) as e:
            if strict:
                raise self._fail(f"manifest {name}", e) from None
            return []

    def _list(self, out: FileSet, name: str, strict: bool, entries: bool = True) -> list[ManifestEntry]:
        """Mark a manifest list and its manifests; return their entries when ``entries``."""
        out.manifests.add(name)
        result: list[ManifestEntry] = []
        for meta in self._read_list(name, strict):
            out.manifests.add(meta.file_name)
            if entries:
                result += self._read_entries(meta.file_name, strict)
        return result

    def _index(self, out: FileSet, snap: Snapshot, strict: bool) -> None:
        name = snap.index_manifest
        if name is None:
            return
        out.manifests.add(name)
        try:
            index_entries = self.table.manifest_io.read_index(name)
        except (OSError, CorruptFileError) as e:
            if strict:
                raise self._fail(f"index manifest {name}", e) from None
            return
        deleted = {e.file_name for e in index_entries if e.kind is FileKind.DELETE}
        out.index |= {e.file_name for e in index_entries if e.kind is FileKind.ADD} - deleted

    def _adds(self, out: FileSet, entries: Sequence[ManifestEntry]) -> None:
        for e in entries:
            if e.kind is FileKind.ADD:
                out.data.update(self.entry_paths(e))

    # -- what readers need -------------------------------------------------------------------------
    def snapshots(self, snaps: Sequence[Snapshot], strict: bool) -> FileSet:
        """Every file needed to read any of ``snaps`` (data and changelog).

        Consecutive ids share work: a file live in snapshot ``n`` is live in ``n - 1`` or added
        by ``n``'s delta, so only the first snapshot of a run needs its base manifests folded.
        """
        out = FileSet()
        previous: int | None = None
        for s in sorted(snaps, key=lambda x: x.id):
            consecutive = previous is not None and s.id == previous + 1
            base = self._list(out, s.base_manifest_list, strict, entries=not consecutive)
            delta = self._list(out, s.delta_manifest_list, strict)
            if consecutive:
                self._adds(out, delta)
            else:
                for e in fold_entries([*base, *delta]).values():
                    out.data.update(self.entry_paths(e))
            if s.changelog_manifest_list is not None:
                self._adds(out, self._list(out, s.changelog_manifest_list, strict))
            self._index(out, s, strict)
            if s.statistics is not None:
                out.statistics.add(s.statistics)
            previous = s.id
        return out

    def changelogs(self, changelogs: Sequence[Snapshot], strict: bool) -> FileSet:
        """Files a changelog read of long-lived changelogs needs (see ``changelog_manager``)."""
        out = FileSet()
        for c in changelogs:
            if c.changelog_manifest_list is not None:
                self._adds(out, self._list(out, c.changelog_manifest_list, strict))
            elif c.commit_kind is CommitKind.APPEND:
                # changelog-producer=none: the files an APPEND added are its changelog
                self._adds(out, self._list(out, c.delta_manifest_list, strict))
        return out

    def mentioned(self, snap: Snapshot, strict: bool, long_lived_changelog: bool = False) -> FileSet:
        """Every file any manifest of ``snap`` names, ADD or DELETE (for orphan removal).

        A superset of :meth:`snapshots`: orphan removal only needs to be safe, and a file some
        reachable manifest still names is never an orphan.
        """
        out = FileSet()
        names: list[str]
        if long_lived_changelog:
            if snap.changelog_manifest_list is not None:
                names = [snap.changelog_manifest_list]
            else:
                names = [snap.delta_manifest_list] if snap.commit_kind is CommitKind.APPEND else []
        else:
            names = [snap.base_manifest_list, snap.delta_manifest_list]
            if snap.changelog_manifest_list is not None:
                names.append(snap.changelog_manifest_list)
            self._index(out, snap, strict)
            if snap.statistics is not None:
                out.statistics.add(snap.statistics)
        for name in names:
            for e in self._list(out, name, strict):
                out.data.update(self.entry_paths(e))
        return out
