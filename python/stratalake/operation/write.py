"""Table writes: validate input, assign (partition, bucket), buffer, fold, flush level-0 files."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.bucket.cross_partition import CrossPartitionAssigner
from stratalake.bucket.dynamic import DYNAMIC_BUCKET, BucketAssigner, check_writable, is_cross_partition
from stratalake.exceptions import CorruptFileError, InvalidDataError, SchemaError
from stratalake.lsm.compaction import CompactIncrement, CompactResult, MergeTreeCompactManager
from stratalake.lsm.data_file import DataFileWriter, FileNamer, RollingDataFileWriter, bucket_dir
from stratalake.lsm.merge_reader import key_complete_chunks
from stratalake.lsm.spill import SpillStore
from stratalake.merge import SEQUENCE_NUMBER, VALUE_KIND, merge_kv, prepare_input
from stratalake.operation.commit import CommitMessage
from stratalake.operation.compact import bucket_manager
from stratalake.operation.conform import conform, input_table
from stratalake.operation.write_base import BaseTableWrite
from stratalake.options import ChangelogProducer
from stratalake.spec.bucket import bucket_ids
from stratalake.spec.default_value import column_defaults
from stratalake.spec.manifest import DataFileMeta, IndexManifestEntry
from stratalake.spec.snapshot import CommitKind
from stratalake.store.index_manifest import dv_entries_by_bucket, index_dir, live_index_entries
from stratalake.store.partition import group_rows

if TYPE_CHECKING:
    from stratalake.spec.snapshot import Snapshot
    from stratalake.store.table_store import TableStore

_LOG = logging.getLogger(__name__)
_KIND_STRINGS = pa.array(["+I", "-U", "+U", "-D"])


@dataclass
class _BucketBuffer:
    partition: bytes
    partition_values: tuple[Any, ...]
    bucket: int
    next_sequence: int
    tables: list[pa.Table] = field(default_factory=list)
    nbytes: int = 0
    new_files: list[DataFileMeta] = field(default_factory=list)
    changelog_files: list[DataFileMeta] = field(default_factory=list)
    manager: MergeTreeCompactManager | None = None  # None: no compaction (write-only)
    increment: CompactIncrement | None = None
    # Folded sorted runs spilled to local disk (write-buffer-spillable), oldest first.
    spills: list[str] = field(default_factory=list)


class TableWrite(BaseTableWrite):
    """Writes batches into a table's buckets; :meth:`prepare_commit` returns commit messages.

    Usable as a context manager: ``with t.new_write() as w: w.write(b1); w.write(b2); w.commit()``.
    Leaving the block with an exception (or without ``commit()``) deletes the files written.
    """

    def __init__(self, table: TableStore, commit_user: str | None = None) -> None:
        self.table = table
        self.commit_user = commit_user
        schema = table.schema()
        self._schema = schema
        self._options = table.core_options
        self._arrow_schema = table.arrow_schema()
        self._defaults = column_defaults(table.identifier, self._schema.fields)
        self._num_buckets = self._options.bucket
        check_writable(table)  # postpone buckets are refused up front
        self._assigner: BucketAssigner | None = None  # dynamic buckets, created at the first write
        self._cross: CrossPartitionAssigner | None = None  # cross-partition upsert, likewise
        self._bucket_keys = schema.bucket_keys
        self._bucket_types = [schema.field(k).type for k in self._bucket_keys]
        self._buffers: dict[tuple[bytes, int], _BucketBuffer] = {}
        self._restored: dict[tuple[bytes, int], list[DataFileMeta]] | None = None
        self._restored_dv: dict[tuple[bytes, int], list[IndexManifestEntry]] = {}
        self._restored_pairs: set[tuple[bytes, int]] = set()  # the buckets whose files were read
        self._restore_snapshot: Snapshot | None = None  # the snapshot they were read at
        # Set for an overwrite (Paimon's withIgnorePreviousFiles): the old files are about to go,
        # so compaction must not build on them (nor fail on their removal by the overwrite).
        self.ignore_previous_files = False
        # Set by a Spark write of a dynamic-bucket table: the number of assigner slices Spark
        # clustered the rows by; this writer then holds only its slices' keys (dynamic_bucket.py,
        # cross_partition.py).
        self.dynamic_assigners: int | None = None
        # With dynamic_assigners, on a table whose writers compact what they write: whether this
        # writer may add level-0 files to buckets of other slices (compacted after the commit by
        # whoever planned the write) instead of refusing them.
        self.dynamic_foreign_level0 = False
        self._full_compaction: bool | None = None
        self._data_namer = FileNamer("data")
        self._changelog_namer = FileNamer("changelog")
        self._buffered_bytes = 0
        self._written: list[str] = []
        self._committed = False
        self._lock = threading.Lock()
        # write-buffer-spillable: a full buffer becomes a sorted run on local disk, not a file.
        self._spill = (
            SpillStore(self._options.get_int("write-buffer-spill.max-disk-size") or 0)
            if self._options.get_bool("write-buffer-spillable")
            else None
        )

    # -- input ----------------------------------------------------------------------------------
    def write(self, data: pa.TableStore | pa.RecordBatch, row_kind: str | None = None) -> None:
        """Buffer ``data``; ``row_kind`` names a column of '+I'/'-U'/'+U'/'-D' strings (not stored)."""
        data = input_table(data, self.table.identifier)
        if data.num_rows == 0:
            return
        kinds = self._row_kinds(data, row_kind)
        rows = conform(
            data,
            self._arrow_schema,
            self.table.identifier,
            row_kind=row_kind,
            primary_keys=self._schema.primary_keys,
            defaults=self._defaults,
        )
        if is_cross_partition(self.table):  # rows may move, gain retractions or drop out
            if self._cross is None:
                self._cross = CrossPartitionAssigner(
                    self.table,
                    ignore_existing=self.ignore_previous_files,
                    num_assigners=self.dynamic_assigners,
                    allow_foreign=self.dynamic_foreign_level0,
                )
            rows, kinds, codes = self._cross.route(rows, kinds)
        else:
            codes = self._bucket_codes(rows)
        card = max(self._num_buckets, int(codes.max(initial=0)) + 1)
        groups = list(group_rows(rows, self._schema.partition_keys, codes, card))
        codec = self.table.partition_codec
        # The buckets this batch opens are restored together: one read of the manifests that may hold them.
        self._restore(
            {
                (codec.to_bytes(tuple(rows.column(k)[int(indices[0])].as_py() for k in codec.keys)), bucket)
                for indices, bucket in groups
            }
            - self._buffers.keys()
        )
        for indices, bucket in groups:
            part = rows.take(indices)
            self._add(part, kinds.take(pa.array(indices)) if kinds is not None else None, bucket)
        if self._buffered_bytes > self._options.write_buffer_size:
            self._flush_largest()

    def _row_kinds(self, data: pa.Table, row_kind: str | None) -> pa.Array | None:
        column = row_kind or self._options.rowkind_field
        if column is None:
            return None
        if column not in data.column_names:
            raise SchemaError(
                f"table {self.table.identifier}: row kind column '{column}' is missing from the input"
            )
        values = data.column(column)
        if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
            raise SchemaError(
                f"table {self.table.identifier}: row kind column '{column}' must hold strings "
                f"'+I', '-U', '+U', '-D', not {values.type}"
            )
        idx = pc.index_in(values, value_set=_KIND_STRINGS)
        if idx.null_count:
            bad = pc.filter(values, pc.is_null(idx)).unique().to_pylist()[:5]
            raise InvalidDataError(
                f"table {self.table.identifier}: row kind column '{column}' has invalid values {bad}; "
                "use '+I', '-U', '+U' or '-D'"
            )
        return pc.cast(idx, pa.int8()).combine_chunks()

    def _bucket_codes(self, rows: pa.Table) -> np.ndarray:
        if self._num_buckets == DYNAMIC_BUCKET:
            if self._assigner is None:
                # An overwrite starts the partitions it replaces from an empty index.
                self._assigner = BucketAssigner(
                    self.table,
                    ignore_existing=self.ignore_previous_files,
                    num_assigners=self.dynamic_assigners,
                    allow_foreign=self.dynamic_foreign_level0,
                )
            return self._assigner.assign_rows(rows)
        if self._num_buckets == 1:
            return np.zeros(rows.num_rows, dtype=np.int64)
        cols = [rows.column(k) for k in self._bucket_keys]
        return bucket_ids(cols, self._bucket_types, self._num_buckets).astype(np.int64)

    def _add(self, part: pa.Table, kinds: pa.Array | None, bucket: int) -> None:
        codec = self.table.partition_codec
        values = tuple(part.column(k)[0].as_py() for k in codec.keys)
        partition = codec.to_bytes(values)
        key = (partition, bucket)
        buf = self._buffers.get(key)
        if buf is None:
            buf = self._new_buffer(partition, values, bucket)
            self._buffers[key] = buf
        n = part.num_rows
        seq = pa.array(np.arange(buf.next_sequence, buf.next_sequence + n, dtype=np.int64))
        buf.next_sequence += n
        kind_col = kinds if kinds is not None else pa.array(np.zeros(n, dtype=np.int8))
        kv = part.append_column(SEQUENCE_NUMBER, seq).append_column(VALUE_KIND, kind_col)
        buf.tables.append(kv)
        buf.nbytes += kv.nbytes
        self._buffered_bytes += kv.nbytes

    def _restore(self, pairs: Collection[tuple[bytes, int]]) -> None:
        """Read the live files of the buckets ``pairs`` (partition, bucket) not read yet, at the
        snapshot this writer read first: only manifests whose partition statistics and bucket
        range admit them are opened, not the whole table's."""
        if self._restored is None:
            self._restore_snapshot = self.table.latest_snapshot()
            self._restored = {}
            # Deletion vectors of the same snapshot: the compactions continue from them.
            self._restored_dv = dv_entries_by_bucket(live_index_entries(self.table, self._restore_snapshot))
        todo = {p for p in pairs if p not in self._restored_pairs}
        snap = self._restore_snapshot
        if not todo or snap is None:
            self._restored_pairs |= todo
            return
        where = self.table.manifest_filter(partitions={p for p, _ in todo}, buckets={b for _, b in todo})
        sm = self.table.snapshot_manager
        for attempt in range(10):
            try:
                entries = self.table.live_entries(snap, where)
                break
            except (OSError, CorruptFileError):
                # A writer that opens buckets later than its first write may find the snapshot
                # it read first expired: these buckets are read at the newest one, files and
                # deletion vectors alike (each bucket's state is of one snapshot).
                newest = sm.latest_snapshot(fresh=True)
                if newest is None or newest.id == snap.id or attempt == 9:
                    raise
                snap = newest
        if snap is not self._restore_snapshot:
            dv = dv_entries_by_bucket(live_index_entries(self.table, snap))
            for pair in todo:
                self._restored_dv[pair] = dv.get(pair, [])
        for e in entries:
            if (e.partition, e.bucket) in todo:
                self._restored.setdefault((e.partition, e.bucket), []).append(e.file)
        self._restored_pairs |= todo

    def _new_buffer(self, partition: bytes, values: tuple[Any, ...], bucket: int) -> _BucketBuffer:
        """A bucket continues after the highest sequence number of its live files; unless
        ``write-only``, its files are also restored into levels for compaction."""
        self._restore([(partition, bucket)])
        assert self._restored is not None
        files = [] if self.ignore_previous_files else self._restored.get((partition, bucket), [])
        buf = _BucketBuffer(
            partition, values, bucket, max((f.max_sequence_number for f in files), default=-1) + 1
        )
        if not self._options.get_bool("write-only"):
            dv_index = [] if self.ignore_previous_files else self._restored_dv.get((partition, bucket), [])
            buf.manager = bucket_manager(self.table, values, bucket, files, dv_index)
            buf.increment = CompactIncrement(buf.manager.rewriter.files.delete)
        return buf

    # -- flushing ---------------------------------------------------------------------------------
    def _flush_largest(self) -> None:
        while self._buffered_bytes > self._options.write_buffer_size // 2:
            buf = max(self._buffers.values(), key=lambda b: b.nbytes)
            if buf.nbytes == 0:
                break
            if self._spill is not None and self._spill.has_room():
                self._spill_buffer(buf)
            else:
                self._flush(buf)

    def _spill_buffer(self, buf: _BucketBuffer) -> None:
        """Fold the bucket's buffer into a sorted run on local disk (``write-buffer-spillable``):
        memory is freed without writing a level-0 file, and the runs are merged into one level-0
        run when the bucket is flushed (Paimon's spillable write buffer)."""
        assert self._spill is not None
        kv = self._take_buffer(buf)
        if self._options.changelog_producer is ChangelogProducer.INPUT:
            self._write_input_changelog(buf, kv)
        folded = merge_kv(prepare_input(kv, self.table.merge_context), self.table.merge_context)
        del kv
        buf.spills.append(self._spill.write(folded))

    def _take_buffer(self, buf: _BucketBuffer) -> pa.Table:
        kv = pa.concat_tables(buf.tables) if len(buf.tables) > 1 else buf.tables[0]
        with self._lock:
            self._buffered_bytes -= buf.nbytes
        buf.tables, buf.nbytes = [], 0
        return kv

    def _bucket_directory(self, buf: _BucketBuffer) -> str:
        table = self.table
        return bucket_dir(table.location, table.partition_codec.path(buf.partition_values), buf.bucket)

    def _write_input_changelog(self, buf: _BucketBuffer, kv: pa.Table) -> None:
        directory = self._bucket_directory(buf)
        writer = DataFileWriter(
            self.table.file_io, self._schema, self._options, directory, self._changelog_namer
        )
        files = writer.write(kv, level=0, is_changelog=True)
        buf.changelog_files += files
        with self._lock:
            self._written += [f"{directory}/{f.file_name}" for f in files]

    def _flush(self, buf: _BucketBuffer) -> None:
        if buf.spills:
            self._flush_spilled(buf)
            return
        if not buf.tables:
            return
        kv = self._take_buffer(buf)
        table = self.table
        directory = self._bucket_directory(buf)
        if self._options.changelog_producer is ChangelogProducer.INPUT:
            self._write_input_changelog(buf, kv)
        # Raw input becomes mergeable partial results (e.g. `count` columns -> 1/0) before the fold.
        folded = merge_kv(prepare_input(kv, table.merge_context), table.merge_context)
        del kv  # the raw buffer is folded: free it before the fold's rows are written
        if buf.manager is not None and buf.manager.options.needs_lookup and self._owns(buf):
            direct = buf.manager.write_new_run(folded, estimated_size=max(folded.nbytes // 4, 1))
            if direct is not None and self._options.changelog_producer is ChangelogProducer.LOOKUP:
                # Merged with the old values and written once, at its compaction's output level.
                # Committed as Paimon's writer commits the same work: the APPEND snapshot adds the
                # run at level 0, the COMPACT snapshot upgrades it to the output level and carries
                # the changelog (Paimon 1.0's streaming reader reads lookup changelog only there).
                # Should that COMPACT snapshot be dropped, the run stays a level-0 file, whose
                # next compaction produces its changelog, as after any dropped compaction.
                level0 = tuple(replace(f, level=0) for f in direct.after)
                buf.new_files += level0
                assert buf.increment is not None
                buf.increment.add(CompactResult(level0, direct.after, direct.changelog))
                with self._lock:
                    self._written += [f"{directory}/{f.file_name}" for f in direct.after + direct.changelog]
                return
            if direct is not None:
                # No changelog to carry (e.g. a first-row table without the lookup producer): one
                # APPEND snapshot with the run at its level, so that every snapshot reads its rows
                # (first-row reads skip level 0).
                buf.new_files += direct.after
                with self._lock:
                    self._written += [f"{directory}/{f.file_name}" for f in direct.after + direct.changelog]
                return
        writer = DataFileWriter(table.file_io, self._schema, self._options, directory, self._data_namer)
        files = writer.write(folded, level=0)
        buf.new_files += files
        with self._lock:
            self._written += [f"{directory}/{f.file_name}" for f in files]
        if buf.manager is not None and buf.manager.options.needs_lookup:
            # Compacted before this commit ends: read from memory, not back from storage.
            buf.manager.rewriter.files.remember(files, folded)
        self._added_level0(buf, files)

    def _flush_spilled(self, buf: _BucketBuffer) -> None:
        """Merge the bucket's spilled runs and what is still buffered into one level-0 sorted run,
        streaming (k-way merge, rolling files), so neither the runs nor the result are held."""
        assert self._spill is not None
        ctx = self.table.merge_context
        if buf.tables:
            kv = self._take_buffer(buf)
            if self._options.changelog_producer is ChangelogProducer.INPUT:
                self._write_input_changelog(buf, kv)
            buf.spills.append(self._spill.write(merge_kv(prepare_input(kv, ctx), ctx)))
            del kv
        runs = [self._spill.read(path) for path in buf.spills]
        directory = self._bucket_directory(buf)
        base = DataFileWriter(self.table.file_io, self._schema, self._options, directory, self._data_namer)
        rolling = RollingDataFileWriter(base, level=0)
        with rolling:
            for chunk in key_complete_chunks(runs, ctx.key_names):
                rolling.write(merge_kv(chunk, ctx))
        files = rolling.metas
        for path in buf.spills:
            self._spill.delete(path)
        buf.spills = []
        buf.new_files += files
        with self._lock:
            self._written += [f"{directory}/{f.file_name}" for f in files]
        self._added_level0(buf, files)

    def _owns(self, buf: _BucketBuffer) -> bool:
        """Whether this writer may compact the bucket: always, except in a distributed dynamic-bucket
        write, where only the bucket's owner slice does; other writers of the bucket (updating keys
        of their own slices that it already holds) only add level-0 files, whose keys are disjoint
        from every other writer's, so their merge order does not matter."""
        if self._cross is not None:
            return self._cross.owns(buf.partition, buf.bucket)
        return self._assigner is None or self._assigner.owns(buf.partition, buf.bucket)

    def _added_level0(self, buf: _BucketBuffer, files: Sequence[DataFileMeta]) -> None:
        if buf.manager is not None:
            # As Paimon's writers: new level-0 files may trigger a compaction of the bucket.
            for f in files:
                buf.manager.add_new_file(f)
            if not self._owns(buf):
                return
            self._compact(buf, full=False)
            # num-sorted-run.stop-trigger: with that many runs, compact before buffering more
            # (Paimon's writer waits for its compaction; ours runs inline).
            for _ in range(buf.manager.levels.number_of_levels):
                if not buf.manager.should_wait() or not self._compact(buf, full=False):
                    break

    def _compact(self, buf: _BucketBuffer, full: bool) -> bool:
        assert buf.manager is not None and buf.increment is not None
        written = buf.manager.rewriter.files.written
        start = len(written)
        try:
            result = buf.manager.trigger_compaction(full)
        except CorruptFileError:
            if not self._restored_files_replaced(buf):
                raise
            # A concurrent compaction replaced files this writer restored and expiration deleted
            # them. Compaction is optional (a lost COMPACT commit is dropped too): skip it.
            for path in written[start:]:
                self.table.file_io.delete_quietly(path)
            del written[start:]
            _LOG.warning(
                "table %s: bucket %s skipped compaction: its input files were replaced and expired "
                "by concurrent commits",
                self.table.identifier,
                buf.bucket,
            )
            return False
        if result is None:
            return False
        buf.increment.add(result)
        return True

    def _restored_files_replaced(self, buf: _BucketBuffer) -> bool:
        """Whether some file this writer restored for ``buf``'s bucket is no longer live."""
        restored = (self._restored or {}).get((buf.partition, buf.bucket), [])
        sm = self.table.snapshot_manager
        for attempt in range(10):
            snap = sm.latest_snapshot(fresh=True)
            try:
                where = self.table.manifest_filter(partitions={buf.partition}, buckets={buf.bucket})
                entries = self.table.live_entries(snap, where) if snap is not None else []
                break
            except (OSError, CorruptFileError):
                # The snapshot expired while its manifests were read (a concurrent commit made a
                # newer one and expired it): read the newer one. Without a newer one the
                # manifests really are missing or broken.
                newest = sm.latest_snapshot_id()
                if snap is None or newest is None or newest == snap.id or attempt == 9:
                    raise
        live = {e.file.file_name for e in entries if (e.partition, e.bucket) == (buf.partition, buf.bucket)}
        return any(f.file_name not in live for f in restored)

    def _finish(self, buf: _BucketBuffer, full: bool) -> None:
        """Flush, then compact as a commit requires: fully when due, and for lookup tables all of
        level 0 (whose changelog is produced by that compaction)."""
        self._flush(buf)
        manager = buf.manager
        if manager is None or not self._owns(buf):
            return
        if full:
            self._compact(buf, full=True)
        for _ in range(manager.levels.number_of_levels):
            if not manager.compaction_not_completed() or not self._compact(buf, full=False):
                break

    def _full_compaction_due(self) -> bool:
        """Every ``full-compaction.delta-commits`` commits (default 1 with the full-compaction
        producer), counted as APPEND snapshots since the last full compaction."""
        if self._full_compaction is None:
            delta = self._options.get_int("full-compaction.delta-commits")
            if delta is None and self._options.changelog_producer is ChangelogProducer.FULL_COMPACTION:
                delta = 1
            self._full_compaction = delta is not None and self._commits_since_full_compaction() + 1 >= delta
        return self._full_compaction

    def _commits_since_full_compaction(self) -> int:
        sm = self.table.snapshot_manager
        latest, earliest = sm.latest_snapshot_id(), sm.earliest_snapshot_id()
        count = 0
        if latest is None or earliest is None:
            return count
        producer = self._options.changelog_producer is ChangelogProducer.FULL_COMPACTION
        for sid in range(latest, earliest - 1, -1):
            snap = sm.snapshot(sid)
            if snap.commit_kind is CommitKind.COMPACT and (not producer or snap.changelog_manifest_list):
                break
            count += snap.commit_kind is CommitKind.APPEND
        return count

    def prepare_commit(self) -> list[CommitMessage]:
        """Flush every buffer and describe the new files; nothing is visible until committed."""
        compacting = any(b.manager is not None for b in self._buffers.values())
        buffers = [b for b in self._buffers.values() if b.tables or b.spills or compacting]
        full = compacting and self._full_compaction_due()
        if len(buffers) > 1:
            # Parquet encoding and compression release the GIL: flush (and compact) buckets in parallel.
            with ThreadPoolExecutor(min(len(buffers), os.cpu_count() or 1)) as pool:
                list(pool.map(lambda b: self._finish(b, full), buffers))
        else:
            for buf in buffers:
                self._finish(buf, full)
        hash_changes = self._assigner.prepare_commit() if self._assigner is not None else {}
        claim = self._cross.claim() if self._cross is not None else None
        key_base = self._cross.key_index_snapshot() if self._cross is not None else None
        with self._lock:
            self._written += [f"{index_dir(self.table)}/{c.added.file_name}" for c in hash_changes.values()]
        messages = []
        for buf in self._buffers.values():
            before, after, compact_changelog = buf.increment.drain() if buf.increment else ((), (), ())
            dvs = buf.manager.dv_maintainer if buf.manager is not None else None
            index_base = None if dvs is None else tuple(e.file_name for e in dvs.base_files)
            index_added: tuple[IndexManifestEntry, ...] = ()
            index_deleted: tuple[IndexManifestEntry, ...] = ()
            if dvs is not None and (before or after):
                index_added, index_deleted = dvs.write(self.table.file_io)
            hash_change = hash_changes.pop((buf.partition, buf.bucket), None)
            if hash_change is not None:  # the bucket's new HASH index replaces its old one
                index_added += hash_change.entries_added()
                index_deleted += hash_change.entries_deleted()
            if buf.new_files or buf.changelog_files or before or after or compact_changelog or index_added:
                messages.append(
                    CommitMessage(
                        partition=buf.partition,
                        bucket=buf.bucket,
                        total_buckets=self._num_buckets,
                        new_files=tuple(buf.new_files),
                        changelog_files=tuple(buf.changelog_files),
                        compact_before=before,
                        compact_after=after,
                        compact_changelog_files=compact_changelog,
                        index_files_added=index_added,
                        index_files_deleted=index_deleted,
                        index_base=index_base,
                        assigner_claim=claim,
                        key_index_snapshot=key_base,
                    )
                )
            buf.new_files, buf.changelog_files = [], []
            if buf.manager is not None:
                buf.manager.rewriter.files.written.clear()  # now owned by the messages
        for (partition, bucket), change in hash_changes.items():  # keys of buckets with no rows left
            messages.append(
                CommitMessage(
                    partition=partition,
                    bucket=bucket,
                    total_buckets=self._num_buckets,
                    index_files_added=change.entries_added(),
                    index_files_deleted=change.entries_deleted(),
                )
            )
        # From here on the messages own the files: whoever commits (or abandons) them decides.
        self._written = []
        self._full_compaction = None  # the next commit counts again
        if self._spill is not None:
            self._spill.close()  # every spilled run was merged into a level-0 run
        return messages

    def abort(self) -> None:
        """Delete every file this writer wrote that was not committed."""
        for path in self._written:
            self.table.file_io.delete_quietly(path)
        for buf in self._buffers.values():
            if buf.manager is not None:  # compaction outputs (never the committed inputs)
                for path in buf.manager.rewriter.files.written:
                    self.table.file_io.delete_quietly(path)
        self._written = []
        self._buffers.clear()
        self._buffered_bytes = 0
        if self._spill is not None:
            self._spill.close()
