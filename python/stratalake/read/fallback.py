"""Paimon's fallback-branch reads: a table whose option ``scan.fallback-branch`` names a branch
reads, in a batch scan, each partition from its own branch when that branch has the partition and
from the fallback branch otherwise (Paimon's ``FallbackReadFileStoreTable``).

Which partitions the current branch "has" is decided on the partition filter alone: a partition
with live files in the scanned snapshot is read from the current branch with the full filter, even
when the data filter leaves nothing of it (Paimon's ``FallbackReadScan.plan`` since 1.4). A
non-partitioned table is one partition: the fallback branch is read only while the current branch
has no live file. The fallback branch's splits carry the branch's name (:attr:`Split.branch`), so a
reader reads their files with that branch's schemas.

Time travel by snapshot id reads the fallback branch at its newest snapshot committed at or before
the chosen snapshot (snapshot 1 when there is none, as Paimon's ``rewriteOtherOptions``); by time,
at its newest snapshot at or before that time (nothing when there is none); by tag, at its tag of
the same name (an error when it has none). Writes, streaming
reads, compaction and the other maintenance act on the current branch alone, as in Paimon.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from stratalake.exceptions import (
    BranchNotFoundError,
    SchemaError,
    SnapshotNotFoundError,
    TableNotFoundError,
    TagNotFoundError,
    UnsupportedError,
)
from stratalake.expressions import FilterLike, Predicate, conjunction, split_conjuncts, to_predicate
from stratalake.read.scan import Split, TableScan, partition_matcher
from stratalake.spec.snapshot import Snapshot
from stratalake.store.branch_manager import normalize_branch

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore

FALLBACK_BRANCH = "scan.fallback-branch"


def fallback_branch(table: TableStore) -> str | None:
    """The branch ``table`` falls back to in batch reads, or None (option unset or blank, or naming
    the branch the handle is on: reading a branch's partitions twice from itself changes nothing)."""
    value = table.options().get(FALLBACK_BRANCH)
    if value is None or not value.strip() or normalize_branch(value) == table.current_branch:
        return None
    return value


def fallback_table(table: TableStore) -> TableStore:
    """A handle on ``table``'s fallback branch (latest schema). Raises
    :class:`BranchNotFoundError` when the branch does not exist: Paimon then logs an error and reads
    the current branch alone, which would silently lose the partitions the fallback holds."""
    branch = fallback_branch(table)
    if branch is None:
        raise ValueError(f"table {table.identifier} has no '{FALLBACK_BRANCH}'")
    try:
        other = table.open_branch(branch)
    except TableNotFoundError:
        raise BranchNotFoundError(
            f"table {table.identifier}: option '{FALLBACK_BRANCH}'='{branch}' names branch '{branch}', "
            "which does not exist; create the branch (CALL sys.create_branch) or unset the option "
            f"(ALTER TABLE ... UNSET TBLPROPERTIES ('{FALLBACK_BRANCH}'))"
        ) from None
    other.check_supported("read")
    return other


def check_compatible(table: TableStore, other: TableStore) -> None:
    """Refuse a fallback read whose branches' columns differ (:class:`SchemaError`).

    Paimon's ``validateSchema`` requires the same field types in the same order, ignoring
    nullability. stratalake reads each branch's files by column name and keeps partitions apart by
    their values, so it also requires the same column names and partition keys.
    """
    mine, theirs = table.schema(), other.schema()
    where = (
        f"table {table.identifier}: branch '{table.current_branch}' and its '{FALLBACK_BRANCH}' "
        f"'{other.current_branch}'"
    )
    a = [(f.name, f.type.copy(nullable=True)) for f in mine.fields]
    b = [(f.name, f.type.copy(nullable=True)) for f in theirs.fields]
    if [t for _, t in a] != [t for _, t in b]:
        raise SchemaError(
            f"{where} do not have the same row type; the fallback branch must have the same columns "
            f"as the branch read (Paimon's rule). Columns of '{table.current_branch}': "
            f"{_columns(a)}; of '{other.current_branch}': {_columns(b)}"
        )
    if [n for n, _ in a] != [n for n, _ in b]:
        raise SchemaError(
            f"{where} name their columns differently ({[n for n, _ in a]} and {[n for n, _ in b]}); "
            "stratalake reads the fallback branch by column name, so rename them to match"
        )
    if list(mine.partition_keys) != list(theirs.partition_keys):
        raise SchemaError(
            f"{where} are partitioned differently ({list(mine.partition_keys)} and "
            f"{list(theirs.partition_keys)}); a partition of one is read in place of the same "
            "partition of the other, so they must have the same partition keys"
        )


def _columns(fields: Sequence[tuple[str, object]]) -> str:
    return ", ".join(f"{n} {t}" for n, t in fields)


def _partition_conjuncts(table: TableStore, predicate: Predicate | None) -> list[Predicate]:
    keys = set(table.schema().partition_keys)
    return [p for p in split_conjuncts(predicate) if p.columns() <= keys]


def listed_partitions(
    table: TableStore, snapshot: Snapshot | None, part_preds: list[Predicate]
) -> set[tuple[object, ...]]:
    """The partitions (typed values) holding live files at ``snapshot`` that ``part_preds`` (a
    filter on partition columns) may match: Paimon's ``listPartitions`` of a partition-filtered
    scan, whatever the bucket."""
    if snapshot is None:
        return set()
    where = table.manifest_filter(conjunction(part_preds))
    ok = partition_matcher(table, part_preds)
    codec = table.partition_codec
    return {codec.from_bytes(e.partition) for e in table.live_entries(snapshot, where) if ok(e.partition)}


class FallbackScan:
    """A batch scan of a table with ``scan.fallback-branch``: :meth:`plan` gives the current
    branch's splits, then the fallback branch's splits of the partitions the current branch lacks."""

    def __init__(
        self,
        table: TableStore,
        filter: FilterLike = None,
        snapshot_id: int | None = None,
        timestamp_ms: int | None = None,
        tag: str | None = None,
    ) -> None:
        self.table = table
        self.predicate: Predicate | None = to_predicate(filter)
        self.snapshot_id = snapshot_id
        self.timestamp_ms = timestamp_ms
        self.tag = tag
        self.other = fallback_table(table)
        self._main = (
            TableScan(table, self.predicate, snapshot_id, timestamp_ms)
            if tag is None
            else _SnapshotScan(table, table.tag_manager.tag(tag), self.predicate)
        )

    def snapshot(self) -> Snapshot | None:
        """The current branch's snapshot this scan reads."""
        return self._main.snapshot()

    def fallback_snapshot(self, main: Snapshot | None) -> Snapshot | None:
        """The fallback branch's snapshot read alongside ``main`` (see the module docstring)."""
        sm = self.other.snapshot_manager
        if self.tag is not None:
            try:
                return self.other.tag_manager.tag(self.tag)
            except SnapshotNotFoundError:  # (TagNotFoundError)
                raise TagNotFoundError(
                    f"table {self.table.identifier}: tag '{self.tag}' does not exist in its "
                    f"'{FALLBACK_BRANCH}' '{self.other.current_branch}'; Paimon reads the fallback "
                    "branch at the tag of the same name, so create it there too, or read the "
                    "branches on their own"
                ) from None
        if self.snapshot_id is not None and main is not None:
            found = _at_or_before(self.other, main.time_millis)
            if found is not None:
                return found
            try:
                return sm.snapshot(1)
            except SnapshotNotFoundError:
                raise SnapshotNotFoundError(
                    f"table {self.table.identifier}: snapshot {main.id} of branch "
                    f"'{self.table.current_branch}' is older than every snapshot of its "
                    f"'{FALLBACK_BRANCH}' '{self.other.current_branch}', and that branch has no "
                    "snapshot 1 to read instead (Paimon's rule)"
                ) from None
        if self.timestamp_ms is not None:
            return _at_or_before(self.other, self.timestamp_ms)
        return sm.latest_snapshot()

    def plan_batches(self, max_files: int | None = None) -> Iterator[list[Split]]:
        """:meth:`plan` as one batch (see :meth:`TableScan.plan_batches`)."""
        yield self.plan()

    def plan(self) -> list[Split]:
        """The current branch's splits, then those of the fallback branch's partitions it lacks."""
        main = self._main.snapshot()
        other_snapshot = self.fallback_snapshot(main)
        other = self.other if other_snapshot is None else self.other.as_of(other_snapshot)
        table = self.table if main is None else self.table.as_of(main)
        check_compatible(table, other)
        splits = self._main.plan()
        if other_snapshot is None:
            return splits
        complete = listed_partitions(self.table, main, _partition_conjuncts(self.table, self.predicate))
        branch = other.current_branch
        for s in _SnapshotScan(other, other_snapshot, self.predicate).plan():
            if s.partition_values not in complete:
                splits.append(replace(s, branch=branch, branch_schema_id=other_snapshot.schema_id))
        return splits


class _SnapshotScan(TableScan):
    """A scan of a given snapshot (a tag's own copy: planned even after the snapshot expired)."""

    def __init__(self, table: TableStore, snapshot: Snapshot, predicate: Predicate | None) -> None:
        super().__init__(table, predicate)
        self._fixed = snapshot

    def snapshot(self) -> Snapshot | None:
        return self._fixed


def _at_or_before(table: TableStore, millis: int) -> Snapshot | None:
    try:
        return table.snapshot_manager.snapshot_at_or_before(millis)
    except SnapshotNotFoundError:
        return None


class SplitReader(Protocol):
    """What :class:`BranchReaders` builds: a reader of splits (``TableRead``, ``AppendTableRead``)."""

    table: TableStore
    batch_rows: int


ReaderFactory = Callable[["TableStore", Sequence[str], Predicate | None], SplitReader]
#: Builds the reader of a table's splits (``stratalake.read.new_read``): the readers' package
#: registers it, since the readers themselves use this module (a reader of a primary-key branch
#: may read an append branch's splits, and the other way round).
_factory: list[ReaderFactory] = []


def register_reader_factory(factory: ReaderFactory) -> None:
    """Set the function :class:`BranchReaders` builds readers with."""
    _factory[:] = [factory]


class BranchReaders:
    """The readers of splits from other branches (fallback partitions), one per (branch,
    snapshot), each bound to that snapshot's schema of its branch, reading ``columns`` with
    ``predicate`` as the reader holding this does."""

    def __init__(self, table: TableStore, columns: Sequence[str], predicate: Predicate | None) -> None:
        self.table = table
        self.columns = list(columns)
        self.predicate = predicate
        self._readers: dict[tuple[str, int], SplitReader] = {}

    def reader(self, split: Split, batch_rows: int) -> Any:
        """The reader of ``split`` when it belongs to another branch, else None (typed Any: a
        ``TableRead`` or ``AppendTableRead``, which the readers' module cannot name here)."""
        if split.branch is None or normalize_branch(split.branch) == self.table.current_branch:
            return None
        branch = self.table.open_branch(split.branch) if split.branch_schema_id is None else None
        schema_id = split.branch_schema_id
        if schema_id is None:
            assert branch is not None
            schema_id = branch.snapshot(split.snapshot_id).schema_id
        key = (split.branch, schema_id)
        found = self._readers.get(key)
        if found is None:
            branch = branch or self.table.open_branch(split.branch)
            found = _factory[0](branch.as_of_schema(schema_id), self.columns, self.predicate)
            found.batch_rows = batch_rows
            self._readers[key] = found
        return found


def refuse_fallback(table: TableStore, what: str) -> None:
    """Refuse ``what`` (a kind of read not built for fallback branches) on a table whose
    ``scan.fallback-branch`` is in effect (:class:`UnsupportedError`): reading the current branch
    alone would silently miss the partitions only the fallback branch holds."""
    branch = fallback_branch(table)
    if branch is not None:
        raise UnsupportedError(
            f"table {table.identifier}: {what} of a table with '{FALLBACK_BRANCH}'='{branch}' is not "
            f"supported yet (stratalake reads the fallback branch in plain batch reads only); read "
            f"each branch on its own (t$branch_<name>, Table.branch(name)), or unset the option"
        )
