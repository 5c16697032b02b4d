"""The I/O of compaction: read the picked runs, merge them with the table's merge function, and
write the result at the output level (``_FILE_SOURCE`` = COMPACT).

Changelog producers subclass :class:`MergeTreeCompactRewriter` (see :mod:`stratalake.changelog`)
and return changelog files along with the compacted ones.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.io import FileIO, LocalFileIO
from stratalake.lsm.data_file import (
    DEFAULT_BATCH_ROWS,
    DataFileWriter,
    FileNamer,
    RollingDataFileWriter,
    iter_kv_file,
    read_kv_file,
    written_slices,
)
from stratalake.lsm.deletion_vector import DeletionVectorsMaintainer
from stratalake.lsm.levels import KeyOf, SortedRun, key_decoder
from stratalake.lsm.lookup import LookupMergeFunction, with_level
from stratalake.lsm.merge_reader import (
    dv_keep_mask,
    key_complete_chunks,
    merge_sorted_runs,
    slices,
    sorted_runs,
)
from stratalake.merge import (
    SEQUENCE_NUMBER,
    MergeContext,
    MergeFunction,
    create_merge_function,
    drop_retracted,
    key_group_starts,
    sort_kv,
)
from stratalake.options import CoreOptions
from stratalake.spec.manifest import DataFileMeta, FileSource
from stratalake.spec.schema import TableSchema


@dataclass(frozen=True)
class CompactResult:
    """Files a compaction removed and added, and the changelog files it produced."""

    before: tuple[DataFileMeta, ...] = ()
    after: tuple[DataFileMeta, ...] = ()
    changelog: tuple[DataFileMeta, ...] = ()

    def merge(self, other: CompactResult) -> CompactResult:
        return CompactResult(
            self.before + other.before, self.after + other.after, self.changelog + other.changelog
        )


@dataclass
class BucketFiles:
    """Reading and writing the data files of one (partition, bucket)."""

    file_io: FileIO
    directory: str
    schema: TableSchema  # files are read into and written with this schema
    options: CoreOptions
    schema_of: Callable[[int], TableSchema]  # the schema a file was written with
    data_namer: FileNamer = dataclasses.field(default_factory=lambda: FileNamer("data"))
    changelog_namer: FileNamer = dataclasses.field(default_factory=lambda: FileNamer("changelog"))
    written: list[str] = dataclasses.field(default_factory=list)  # paths, for cleanup on failure
    # Reads files through another path (e.g. a local copy of a remote file) when set; given the
    # file's path and its size in the file's metadata.
    local_path: Callable[[str, int], str] | None = None
    # The bucket's deletion vectors (tables with ``deletion-vectors.enabled``): rows they mark are
    # stale and must not take part in any merge.
    deletion_vectors: DeletionVectorsMaintainer | None = None
    # Files this process just wrote, still in memory (read once instead of from storage; a
    # writer's level-0 files are compacted right after the flush that wrote them).
    fresh: dict[str, pa.Table] = dataclasses.field(default_factory=dict)
    # Rows per batch of each sorted run in a streaming merge (and per row group written).
    batch_rows: int = DEFAULT_BATCH_ROWS
    _key_of: KeyOf | None = None

    def remember(self, metas: Sequence[DataFileMeta], kv: pa.Table) -> None:
        """Keep the rows of just-written ``metas`` (written from ``kv``, in order) for one read."""
        for m, rows in zip(metas, written_slices(metas, kv, self.schema), strict=True):
            self.fresh[m.file_name] = rows

    def path(self, f: DataFileMeta) -> str:
        return f"{self.directory}/{f.file_name}"

    def read(self, f: DataFileMeta) -> pa.Table:
        """The live rows of a data file (deletion vector applied), in :attr:`schema`."""
        kv = self.read_raw(f)
        dv = self.deletion_vectors.deletion_vector_of(f.file_name) if self.deletion_vectors else None
        return dv.apply(kv) if dv is not None else kv

    def read_raw(self, f: DataFileMeta) -> pa.Table:
        """Every row of a data file in file order (row ``i`` is position ``i``), in :attr:`schema`."""
        fresh = self.fresh.pop(f.file_name, None)
        if fresh is not None:
            return fresh
        path = self.path(f)
        if self.local_path is not None:
            return read_kv_file(
                LocalFileIO(),
                self.local_path(path, f.file_size),
                self.schema_of(f.schema_id),
                self.schema,
                expected_rows=f.row_count,
            )
        return read_kv_file(
            self.file_io, path, self.schema_of(f.schema_id), self.schema, expected_rows=f.row_count
        )

    def read_all(self, files: Iterable[DataFileMeta], levels: bool = False) -> pa.Table:
        """Files concatenated oldest first (see :func:`sort_runs`); with ``levels``, each row also
        carries its file's level."""
        ordered = sorted(files, key=lambda f: (-f.level, f.max_sequence_number, f.file_name))
        parts = [with_level(self.read(f), f.level) if levels else self.read(f) for f in ordered]
        if not parts:
            raise ValueError("no files to read")
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

    def iter_raw(self, f: DataFileMeta) -> Iterator[pa.Table]:
        """Every row of a data file in file order, batch by batch, in :attr:`schema`."""
        fresh = self.fresh.pop(f.file_name, None)
        if fresh is not None:
            yield from slices(fresh, self.batch_rows)
            return
        path = self.path(f)
        if self.local_path is not None:
            yield from iter_kv_file(
                LocalFileIO(),
                self.local_path(path, f.file_size),
                self.schema_of(f.schema_id),
                self.schema,
                None,
                self.batch_rows,
                expected_rows=f.row_count,
            )
            return
        yield from iter_kv_file(
            self.file_io, path, self.schema_of(f.schema_id), self.schema, None, self.batch_rows, f.row_count
        )

    def iter_live(self, f: DataFileMeta, levels: bool = False) -> Iterator[pa.Table]:
        """The live rows of a data file (deletion vector applied by file position), batch by
        batch; with ``levels``, each row also carries the file's level."""
        dv = self.deletion_vectors.deletion_vector_of(f.file_name) if self.deletion_vectors else None
        offset = 0
        for batch in self.iter_raw(f):
            n = batch.num_rows
            if dv is not None:
                keep = dv_keep_mask(dv.positions, offset, n)
                if keep is not None:
                    batch = batch.filter(pa.array(keep))
            offset += n
            yield with_level(batch, f.level) if levels else batch

    def key_of(self) -> KeyOf:
        if self._key_of is None:
            self._key_of = key_decoder(self.schema)
        return self._key_of

    def run_batches(self, files: Iterable[DataFileMeta], levels: bool = False) -> list[Iterator[pa.Table]]:
        """The sorted runs of ``files``, oldest first, each as a stream of batches."""

        def run(run_files: list[DataFileMeta]) -> Iterator[pa.Table]:
            for f in run_files:
                yield from self.iter_live(f, levels)

        return [run(r) for r in sorted_runs(files, self.key_of())]

    def chunks(self, files: Iterable[DataFileMeta], levels: bool = False) -> Iterator[pa.Table]:
        """Rows of ``files`` in key-complete chunks, each concatenated oldest run first (what
        :func:`sort_runs` expects), in key order; see :func:`key_complete_chunks`."""
        return key_complete_chunks(self.run_batches(files, levels), self.schema.trimmed_primary_keys)

    def merged(
        self, files: Iterable[DataFileMeta], ctx: MergeContext, mf: MergeFunction, levels: bool = False
    ) -> Iterator[pa.Table]:
        """The streaming merge of ``files``: merged rows (retractions kept), chunk by chunk."""
        runs = self.run_batches(files, levels)
        return merge_sorted_runs(runs, self.schema.trimmed_primary_keys, lambda kv: merge_runs(kv, ctx, mf))

    def open_writer(
        self, level: int, changelog: bool = False, source: FileSource = FileSource.COMPACT
    ) -> RollingDataFileWriter:
        """A rolling writer of this bucket; call :meth:`close_writer` (or its ``abort``)."""
        namer = self.changelog_namer if changelog else self.data_namer
        base = DataFileWriter(self.file_io, self.schema, self.options, self.directory, namer)
        return RollingDataFileWriter(
            base, level, source, is_changelog=changelog, row_group_rows=self.batch_rows
        )

    def close_writer(self, writer: RollingDataFileWriter) -> tuple[DataFileMeta, ...]:
        metas = writer.close()
        self.written += [self.path(m) for m in metas]
        return tuple(metas)

    def write_stream(
        self,
        chunks: Iterable[pa.Table],
        level: int,
        changelog: bool = False,
        source: FileSource = FileSource.COMPACT,
    ) -> tuple[DataFileMeta, ...]:
        """Write a stream of sorted KV chunks at ``level`` through a rolling writer."""
        writer = self.open_writer(level, changelog, source)
        try:
            for kv in chunks:
                writer.write(kv)
        except BaseException:
            writer.abort()
            raise
        return self.close_writer(writer)

    def write(
        self, kv: pa.Table, level: int, changelog: bool = False, source: FileSource = FileSource.COMPACT
    ) -> tuple[DataFileMeta, ...]:
        namer = self.changelog_namer if changelog else self.data_namer
        writer = DataFileWriter(self.file_io, self.schema, self.options, self.directory, namer)
        metas = writer.write(kv, level=level, file_source=source, is_changelog=changelog)
        self.written += [self.path(m) for m in metas]
        return tuple(metas)

    def delete(self, f: DataFileMeta) -> None:
        self.file_io.delete_quietly(self.path(f))


def sort_runs(kv: pa.Table, ctx: MergeContext) -> pa.Table:
    """Sort rows of whole sorted runs, concatenated oldest first, into merge order.

    For a key, a higher level holds older records than a lower one, and older level-0 files hold
    older records than newer ones; so a stable sort by the key alone yields merge order, much
    faster than also sorting by sequence number. The order is verified and, where it does not hold
    (``sequence.field``, concurrent writers' interleaved level-0 files), the full sort is used.
    """
    if kv.num_rows == 0 or ctx.sequence_fields:
        return sort_kv(kv, ctx)
    names = list(ctx.key_names)
    col = kv.column(names[0]) if len(names) == 1 else None
    if col is not None and pa.types.is_integer(col.type) and col.null_count == 0:
        idx = np.argsort(col.to_numpy(), kind="stable")
    else:
        idx = pc.sort_indices(kv, sort_keys=[(k, "ascending") for k in names]).to_numpy()
    out = kv if bool(np.all(idx[1:] > idx[:-1])) else kv.take(pa.array(idx))
    seq = out.column(SEQUENCE_NUMBER).to_numpy()
    starts = key_group_starts(out, ctx.key_names)
    same_key = np.ones(len(seq) - 1, dtype=bool)
    same_key[starts[1:] - 1] = False
    if bool(np.any(same_key & (seq[1:] < seq[:-1]))):
        return sort_kv(kv, ctx)
    return out


def merge_runs(kv: pa.Table, ctx: MergeContext, mf: MergeFunction) -> pa.Table:
    """:func:`sort_runs`, then fold every key with ``mf``."""
    if kv.num_rows == 0:
        return kv
    sorted_kv = sort_runs(kv, ctx)
    return mf.merge(sorted_kv, key_group_starts(sorted_kv, ctx.key_names))


def section_files(sections: Sequence[Sequence[SortedRun]]) -> tuple[DataFileMeta, ...]:
    return tuple(f for section in sections for run in section for f in run.files)


class MergeTreeCompactRewriter:
    """Merges runs into files of the output level; upgrades only change a file's level.

    With ``lookup_merge`` (lookup tables) only the newest high-level record of a key and its
    level-0 records are merged, as every reader of such a table does.
    """

    def __init__(self, files: BucketFiles, ctx: MergeContext, lookup_merge: bool = False) -> None:
        self.files = files
        self.ctx = ctx
        self.lookup_merge = lookup_merge
        inner = create_merge_function(ctx)
        self.merge_function: MergeFunction = LookupMergeFunction(inner) if lookup_merge else inner

    def rewrite(
        self, output_level: int, drop_delete: bool, sections: Sequence[Sequence[SortedRun]]
    ) -> CompactResult:
        before = section_files(sections)
        merged = self.files.merged(before, self.ctx, self.merge_function, levels=self.lookup_merge)
        if drop_delete:
            merged = (drop_retracted(kv) for kv in merged)
        return CompactResult(before, self.files.write_stream(merged, output_level))

    def upgrade(self, output_level: int, file: DataFileMeta) -> CompactResult:
        return CompactResult((file,), (dataclasses.replace(file, level=output_level),))

    def merges_new_runs(self) -> bool:
        """Whether :meth:`merge_new_run` is supported (lookup tables without deletion vectors)."""
        return False

    def merge_new_run(self, kv: pa.Table, output_level: int) -> CompactResult:
        """Write a writer's new sorted run (``kv``, not yet a file) straight at ``output_level``,
        as compacting it from level 0 would (new files with ``_FILE_SOURCE`` = APPEND)."""
        raise NotImplementedError(f"{type(self).__name__} writes new runs to level 0 first")
