"""Merging a snapshot's manifests into its new base list, as Paimon's ``ManifestFileMerger``."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from stratalake.spec.avro import encode_manifest_entries
from stratalake.spec.binary_row import decode_row
from stratalake.spec.manifest import FileKind, ManifestEntry, ManifestFileMeta
from stratalake.store.manifests import ManifestNamer

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore

_LOG = logging.getLogger(__name__)


class ManifestMerger:
    """Keeps a table's base manifest list bounded; files it writes are recorded in ``written``."""

    def __init__(self, table: TableStore) -> None:
        self.table = table

    def maybe_merge(
        self, metas: list[ManifestFileMeta], namer: ManifestNamer, written: list[str]
    ) -> list[ManifestFileMeta]:
        """Merge the previous snapshot's manifests into the new base list, as Paimon does.

        First a full compaction when the manifests that need rewriting (those with DELETE
        entries or below ``manifest.target-file-size``) add up to
        ``manifest.full-compaction-threshold-size``: every DELETE entry cancels its ADD and the
        rest is rewritten into target-size files. Otherwise a minor merge: consecutive small
        manifests are merged once they reach the target size, and the small ones at the end once
        there are ``manifest.merge-min-count`` of them. So the base list stays bounded.
        """
        opts = self.table.core_options
        target = max(opts.get_int("manifest.target-file-size") or 1, 1)
        threshold = max(opts.get_int("manifest.full-compaction-threshold-size") or 1, 1)
        # Paimon takes any integer; 0 or less merges whatever small manifests are left every time.
        min_count = opts.get_int("manifest.merge-min-count")
        min_count = 30 if min_count is None else min_count
        full = self._full_manifest_compaction(metas, namer, written, target, threshold)
        if full is not None:
            return full
        result: list[ManifestFileMeta] = []
        candidates: list[ManifestFileMeta] = []
        size = 0
        for m in metas:
            candidates.append(m)
            size += m.file_size
            if size >= target:
                result += self._merge_manifests(candidates, namer, written, target)
                candidates, size = [], 0
        if len(candidates) >= min_count:
            result += self._merge_manifests(candidates, namer, written, target)
        else:
            result += candidates
        return result

    def _merge_manifests(
        self, metas: list[ManifestFileMeta], namer: ManifestNamer, written: list[str], target: int
    ) -> list[ManifestFileMeta]:
        """Consecutive manifests as fewer: an ADD and a later DELETE of the same file cancel; a
        DELETE whose ADD lies in an earlier manifest stays (after that manifest, so in order)."""
        if len(metas) <= 1:
            return metas
        mio = self.table.manifest_io
        merged: dict[tuple[bytes, int, int, str], ManifestEntry] = {}
        for m in metas:
            for e in mio.read_entries(m.file_name):
                key = _entry_key(e)
                if e.kind is FileKind.DELETE and key in merged:
                    del merged[key]
                else:
                    merged[key] = e
        return self._write_rolling(list(merged.values()), namer, written, target)

    def _full_manifest_compaction(
        self,
        metas: list[ManifestFileMeta],
        namer: ManifestNamer,
        written: list[str],
        target: int,
        threshold: int,
    ) -> list[ManifestFileMeta] | None:
        """Paimon's rule: rewrite without DELETE entries once the manifests that must change
        (with deletes, or smaller than the target) reach ``threshold`` bytes; None if not due."""

        def must_change(m: ManifestFileMeta) -> bool:
            return m.num_deleted_files > 0 or m.file_size < target

        if sum(m.file_size for m in metas if must_change(m)) < threshold:
            return None
        mio = self.table.manifest_io
        deleted = {
            _entry_key(e)
            for m in metas
            if m.num_deleted_files > 0
            for e in mio.read_entries(m.file_name)
            if e.kind is FileKind.DELETE
        }
        # A large manifest without deletes stays as it is if none of its files can be deleted.
        may_hold = self._may_hold_partitions({k[0] for k in deleted})
        kept = [m for m in metas if not must_change(m) and not may_hold(m)]
        to_merge = [m for m in metas if must_change(m) or may_hold(m)]
        if len(to_merge) <= 1:
            return None
        entries: list[ManifestEntry] = []
        rewritten: list[ManifestFileMeta] = []
        for m in to_merge:
            adds = [e for e in mio.read_entries(m.file_name) if e.kind is FileKind.ADD]
            live = [e for e in adds if _entry_key(e) not in deleted]
            if must_change(m) or len(live) < len(adds):
                entries += live
                rewritten.append(m)
            else:
                kept.append(m)
        entries = self._clustered(entries)
        _LOG.info(
            "table %s: full manifest compaction of %d manifests (%d bytes), %d DELETE entries dropped",
            self.table.identifier,
            len(rewritten),
            sum(m.file_size for m in rewritten),
            len(deleted),
        )
        return kept + self._write_rolling(entries, namer, written, target)

    def _clustered(self, entries: list[ManifestEntry]) -> list[ManifestEntry]:
        """``entries`` (ADDs of distinct files, so their order means nothing to a reader) ordered
        by partition values, then bucket: each rewritten manifest then covers a narrow range of
        partitions, so its partition statistics prune it for reads of other partitions, and a
        read of one partition decodes only the Avro blocks holding it."""
        codec = self.table.partition_codec
        distinct = {e.partition for e in entries}
        try:
            ordered = sorted(distinct, key=lambda p: tuple((v is not None, v) for v in codec.from_bytes(p)))
        except Exception:  # values that do not decode or compare: their bytes still group them
            ordered = sorted(distinct)
        rank = {p: i for i, p in enumerate(ordered)}
        return sorted(entries, key=lambda e: (rank[e.partition], e.bucket))

    def _may_hold_partitions(self, partitions: set[bytes]) -> Callable[[ManifestFileMeta], bool]:
        """Whether a manifest's partition statistics admit one of ``partitions`` (conservative)."""
        if not partitions:
            return lambda _m: False
        codec = self.table.partition_codec
        if not codec.is_partitioned:
            return lambda _m: True
        types = list(codec.types)
        values = [codec.from_bytes(p) for p in partitions]

        def may_hold(m: ManifestFileMeta) -> bool:
            stats = m.partition_stats
            try:
                lows = decode_row(stats.min_values, types)
                highs = decode_row(stats.max_values, types)
                nulls = stats.null_counts or (0,) * len(types)
                return any(
                    all(
                        (nulls[i] or 0) > 0
                        if v is None
                        else lo is not None and hi is not None and lo <= v <= hi
                        for i, (v, lo, hi) in enumerate(zip(p, lows, highs, strict=True))
                    )
                    for p in values
                )
            except Exception:  # statistics that do not decode or compare: read the manifest
                return True

        return may_hold

    def _write_rolling(
        self, entries: list[ManifestEntry], namer: ManifestNamer, written: list[str], target: int
    ) -> list[ManifestFileMeta]:
        """Write ``entries`` as manifests of at least ``target`` bytes each (but the last), like
        Paimon's rolling writer, so merged manifests are not merged again on the next commit.

        Entries per file are estimated from an encoded sample (with a margin: larger files
        compress better) and corrected after each file from its real size.
        """
        if not entries:
            return []
        mio = self.table.manifest_io
        header = len(encode_manifest_entries([]))
        sample = entries[:256]
        per_entry = max((len(encode_manifest_entries(sample)) - header) / len(sample), 1.0)
        out: list[ManifestFileMeta] = []
        offset = 0
        while offset < len(entries):
            chunk = max(math.ceil(1.25 * max(target - header, 1) / per_entry), 1)
            part = entries[offset : offset + chunk]
            metas = mio.write_entries(part, namer)
            written += [mio.path(m.file_name) for m in metas]
            out += metas
            offset += len(part)
            size = sum(m.file_size for m in metas) - header * len(metas)
            per_entry = max(size / len(part), 1.0)
        return out


def _entry_key(e: ManifestEntry) -> tuple[bytes, int, int, str]:
    """Paimon's identifier of a manifest entry: an upgraded file is deleted at its old level and
    added at the new one, under the same name."""
    return (e.partition, e.bucket, e.file.level, e.file.file_name)
