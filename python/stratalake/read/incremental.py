"""Batch incremental reads: the changes between two snapshots, two tags or two points in time,
as Paimon's ``incremental-between`` / ``incremental-between-timestamp`` scans.

Snapshot ids ``(start, end]`` (start exclusive, end inclusive) are read per
``incremental-between-scan-mode``:

- ``delta``: every record of the data files each APPEND snapshot of the range added, unmerged
  (COMPACT and OVERWRITE snapshots add none), as Paimon's streaming-mode delta splits;
- ``changelog``: every record of the changelog files of the range's snapshots except OVERWRITE
  ones (tables with a ``changelog-producer``);
- ``auto`` (the default): ``changelog`` when the table has a changelog producer, else ``delta``;
- ``diff``: the difference between the two snapshots' states, as for tags.

Two tag names (checked before snapshot ids, as Paimon does) always give the difference between
the tagged states: per partition and primary key, a key only the end state holds or holds with
another value (or another kind) is returned as the end state's record (``+I``, or ``+U`` when that
is how it was written), a key only the start state holds is ``-D`` with its old value. Append
tables have no key: the rows of files only the end holds are ``+I``, of files only the start holds
``-D``.

A plain read keeps the records that add rows (``+I`` / ``+U``) and drops retractions, as Paimon's
batch reads drop ``-D``; ``$audit_log`` reads keep every record with its ``rowkind``.
Timestamps ``(t1, t2]`` map to snapshots as Paimon does: the start is the newest snapshot at or
before ``t1`` (just before the earliest when none is), the end the newest at or before ``t2``.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from stratalake.exceptions import InvalidOptionError, SnapshotNotFoundError
from stratalake.expressions import FilterLike, Predicate, to_predicate
from stratalake.lsm.data_file import kv_schema
from stratalake.merge import SEQUENCE_NUMBER, VALUE_KIND
from stratalake.options import ChangelogProducer
from stratalake.read import changelog_read, new_read
from stratalake.read.append_read import AppendTableRead
from stratalake.read.fallback import refuse_fallback
from stratalake.read.merge_read import TableRead
from stratalake.read.scan import Split, TableScan
from stratalake.spec.manifest import ManifestEntry
from stratalake.spec.snapshot import Snapshot
from stratalake.store.append_file import with_kv_columns

if TYPE_CHECKING:
    from stratalake.store.table_store import TableStore

ROW_KIND_COLUMN = changelog_read.AUDIT_KIND_COLUMN
_INSERT, _UPDATE_BEFORE, _UPDATE_AFTER, _DELETE = 0, 1, 2, 3


class IncrementalMode(enum.Enum):
    """``incremental-between-scan-mode``."""

    AUTO = "auto"
    DELTA = "delta"
    CHANGELOG = "changelog"
    DIFF = "diff"

    @classmethod
    def parse(
        cls, table: str, text: str | None, option: str = "read option 'incremental-between-scan-mode'"
    ) -> IncrementalMode:
        if text is None:
            return cls.AUTO
        try:
            return cls(text.strip().lower())
        except ValueError:
            raise InvalidOptionError(
                f"table {table}: {option} must be one of {', '.join(m.value for m in cls)}, got {text!r}"
            ) from None


@dataclass(frozen=True)
class IncrementalRange:
    """What an incremental read covers, resolved against the table: snapshots ``(start, end]``
    read per ``mode`` (``delta`` / ``changelog``), or the difference between two states (``diff``,
    with the two snapshots, which for tags are the tags' own copies). ``empty``: nothing to read."""

    mode: IncrementalMode
    start_id: int
    end_id: int
    before: Snapshot | None = None
    after: Snapshot | None = None
    empty: bool = False


@dataclass(frozen=True)
class IncrementalSplit:
    """One unit of an incremental read: one (partition, bucket)'s change files (read unmerged, in
    order), or for a diff, one partition's changed buckets at both ends. Picklable."""

    partition: bytes
    bucket: int
    entries: tuple[ManifestEntry, ...] = ()
    before: tuple[Split, ...] = ()
    after: tuple[Split, ...] = ()

    @property
    def row_count(self) -> int:
        return sum(e.file.row_count for e in self.entries) + sum(
            s.row_count for s in (*self.before, *self.after)
        )

    @property
    def file_size(self) -> int:
        return sum(e.file.file_size for e in self.entries) + sum(
            f.file_size for s in (*self.before, *self.after) for f in s.files
        )


# ---- resolving the range ---------------------------------------------------------------------


def _resolve_mode(
    table: TableStore, mode: IncrementalMode, option: str = "read option 'incremental-between-scan-mode'"
) -> IncrementalMode:
    producer = table.core_options.changelog_producer
    if mode is IncrementalMode.AUTO:
        return IncrementalMode.DELTA if producer is ChangelogProducer.NONE else IncrementalMode.CHANGELOG
    if mode is IncrementalMode.CHANGELOG and producer is ChangelogProducer.NONE:
        raise InvalidOptionError(
            f"table {table.identifier}: {option} = 'changelog' reads changelog files, and the table has no "
            "'changelog-producer'; use 'delta' (the files each snapshot added) or 'diff'"
        )
    return mode


def between_snapshots(
    table: TableStore,
    start: int,
    end: int,
    mode: IncrementalMode = IncrementalMode.AUTO,
    option: str = "read option 'incremental-between'",
) -> IncrementalRange:
    """Snapshots ``(start, end]``; refused when ``start > end`` or outside the snapshots (or
    long-lived changelogs) the table keeps."""
    ident = table.identifier
    if start < 0 or end < 0:
        raise InvalidOptionError(
            f"table {ident}: {option} = '{start},{end}': snapshot ids must not be negative"
        )
    if start > end:
        raise InvalidOptionError(
            f"table {ident}: {option} = '{start},{end}': the start snapshot (exclusive) must not be after the "
            "end snapshot (inclusive); swap them"
        )
    mode = _resolve_mode(table, mode)
    sm = table.snapshot_manager
    latest = sm.latest_snapshot_id()
    if latest is None or start == end:
        return IncrementalRange(mode, start, end, empty=True)
    earliest = sm.earliest_snapshot_id() or latest
    ids = table.changelog_manager.ids() if mode is not IncrementalMode.DIFF else []
    oldest = min(earliest, ids[0]) if ids else earliest
    if end > latest:
        raise SnapshotNotFoundError(
            f"table {ident}: {option} = '{start},{end}': snapshot {end} does not exist; the latest is {latest}"
        )
    if mode is IncrementalMode.DIFF:
        if start < earliest or end < earliest:
            raise SnapshotNotFoundError(
                f"table {ident}: {option} = '{start},{end}' with scan mode 'diff' needs both snapshots; the "
                f"table keeps snapshots {earliest}..{latest} (older ones expired: tag the snapshots to keep)"
            )
        return IncrementalRange(mode, start, end, before=sm.snapshot(start), after=sm.snapshot(end))
    if start < oldest - 1:
        raise SnapshotNotFoundError(
            f"table {ident}: {option} = '{start},{end}': snapshots up to {oldest - 1} expired; the table keeps "
            f"the changes of snapshots {oldest}..{latest} (start at {oldest - 1} or later, or raise "
            "'snapshot.num-retained.min' / 'changelog.num-retained.min' to keep them longer)"
        )
    return IncrementalRange(mode, start, end)


def between_tags(
    table: TableStore, start: str, end: str, option: str = "read option 'incremental-between'"
) -> IncrementalRange:
    """The difference between tags ``start`` and ``end`` (their own snapshot copies)."""
    tm = table.tag_manager
    before, after = tm.tag(start), tm.tag(end)
    if after.id < before.id:
        raise InvalidOptionError(
            f"table {table.identifier}: {option} = '{start},{end}': tag '{end}' (snapshot {after.id}) is older "
            f"than tag '{start}' (snapshot {before.id}); give the older tag first"
        )
    return IncrementalRange(
        IncrementalMode.DIFF, before.id, after.id, before=before, after=after, empty=before.id == after.id
    )


def between(
    table: TableStore,
    text: str,
    mode: IncrementalMode = IncrementalMode.AUTO,
    option: str = "read option 'incremental-between'",
) -> IncrementalRange:
    """``'start,end'``: two tag names (tags first, as Paimon), else two snapshot ids."""
    ident = table.identifier
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise InvalidOptionError(
            f"table {ident}: {option} must be 'start,end' (two snapshot ids, start exclusive, "
            f"or two tag names), got {text!r}"
        )
    tm = table.tag_manager
    if tm.exists(parts[0]) and tm.exists(parts[1]):
        return between_tags(table, parts[0], parts[1], option)
    try:
        start, end = int(parts[0]), int(parts[1])
    except ValueError:
        missing = [repr(p) for p in parts if not tm.exists(p)]
        what = f"{missing[0]} is not a tag" if len(missing) == 1 else f"{' and '.join(missing)} are not tags"
        raise SnapshotNotFoundError(
            f"table {ident}: {option} = {text!r}: {what}, and the values are not two snapshot ids; "
            "give two existing tags or two snapshot ids"
        ) from None
    return between_snapshots(table, start, end, mode, option)


def between_timestamps(
    table: TableStore,
    start_ms: int,
    end_ms: int,
    mode: IncrementalMode = IncrementalMode.AUTO,
    option: str = "read option 'incremental-between-timestamp'",
) -> IncrementalRange:
    """The snapshots committed in ``(start_ms, end_ms]``."""
    ident = table.identifier
    if start_ms > end_ms:
        raise InvalidOptionError(
            f"table {ident}: {option} = '{start_ms},{end_ms}': the start timestamp must not be after the end; swap them"
        )
    resolved = _resolve_mode(table, mode)
    sm = table.snapshot_manager
    latest_id, earliest_id = sm.latest_snapshot_id(), sm.earliest_snapshot_id()
    if latest_id is None or earliest_id is None:
        return IncrementalRange(resolved, 0, 0, empty=True)
    earliest, latest = sm.snapshot(earliest_id), sm.snapshot(latest_id)
    if start_ms == end_ms or start_ms > latest.time_millis or end_ms < earliest.time_millis:
        return IncrementalRange(resolved, 0, 0, empty=True)
    start = earliest.id - 1 if earliest.time_millis > start_ms else sm.snapshot_at_or_before(start_ms).id
    end = sm.snapshot_at_or_before(end_ms).id
    if resolved is IncrementalMode.DIFF:
        after = sm.snapshot(end)
        if start < earliest.id:  # everything up to the end is new
            return IncrementalRange(resolved, start, end, before=None, after=after, empty=False)
        return IncrementalRange(
            resolved, start, end, before=sm.snapshot(start), after=after, empty=start == end
        )
    return IncrementalRange(resolved, start, end, empty=start == end)


# Auto-created tag names per 'tag.creation-period' and 'tag.period-formatter' (Paimon's
# TagPeriodHandler); 'tag.creation-period-duration' names tags by the minute.
_DAY = {"with_dashes": r"(\d{4})-(\d{2})-(\d{2})", "without_dashes": r"(\d{4})(\d{2})(\d{2})"}
_DAY["without_dashes_and_spaces"] = _DAY["without_dashes"]
_HOUR = {
    "with_dashes": r"(\d{4})-(\d{2})-(\d{2}) (\d{2})",
    "without_dashes": r"(\d{4})(\d{2})(\d{2}) (\d{2})",
    "without_dashes_and_spaces": r"(\d{4})(\d{2})(\d{2})(\d{2})",
}
_MINUTE = r"(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})"


def auto_tag_time(table: TableStore, tag: str) -> datetime.datetime | None:
    """The time an automatically created tag's name stands for, or None when ``tag`` is not
    such a name under the table's tag options."""
    opts = table.core_options
    formatter = (opts.get("tag.period-formatter") or "with_dashes").strip().lower()
    period = (opts.get("tag.creation-period") or "daily").strip().lower()
    if opts.get("tag.creation-period-duration"):
        pattern = _MINUTE
    elif period == "daily":
        pattern, tag = _DAY.get(formatter, _DAY["with_dashes"]), tag.split(" ")[0]
    elif period == "hourly":
        pattern = _HOUR.get(formatter, _HOUR["with_dashes"])
    else:  # two-hours: always with dashes
        pattern = _HOUR["with_dashes"]
    m = re.fullmatch(pattern, tag)
    if m is None:
        return None
    try:
        parts = [int(g) for g in m.groups()] + [0, 0]  # hour and minute default to 0
        return datetime.datetime(parts[0], parts[1], parts[2], parts[3], parts[4])
    except ValueError:  # no such day or hour
        return None


def to_auto_tag(
    table: TableStore, end_tag: str, option: str = "read option 'incremental-to-auto-tag'"
) -> IncrementalRange:
    """The difference between the automatically created tag before ``end_tag`` and ``end_tag``;
    nothing when ``end_tag`` or an earlier auto tag does not exist, as Paimon."""
    end_time = auto_tag_time(table, end_tag)
    if end_time is None:
        raise InvalidOptionError(
            f"table {table.identifier}: {option} = {end_tag!r} is not the name of an automatically created tag "
            "(per 'tag.creation-period' and 'tag.period-formatter'); give one, or use 'incremental-between'"
        )
    tags = table.tag_manager.tags()
    if end_tag not in tags:
        return IncrementalRange(IncrementalMode.DIFF, 0, 0, empty=True)
    earlier = [
        (when, name) for name in tags if (when := auto_tag_time(table, name)) is not None and when < end_time
    ]
    if not earlier:
        return IncrementalRange(IncrementalMode.DIFF, 0, 0, empty=True)
    before, after = tags[max(earlier)[1]], tags[end_tag]
    return IncrementalRange(IncrementalMode.DIFF, before.id, after.id, before=before, after=after)


# ---- planning --------------------------------------------------------------------------------


def plan(table: TableStore, rng: IncrementalRange, filter: FilterLike = None) -> list[IncrementalSplit]:
    """The units of an incremental read, in a stable order."""
    table.check_supported("read")
    refuse_fallback(table, "an incremental read")
    if rng.empty:
        return []
    if rng.mode is IncrementalMode.DIFF:
        return _plan_diff(table, rng, to_predicate(filter))
    read_entries = (
        changelog_read.delta_entries
        if rng.mode is IncrementalMode.DELTA
        else changelog_read.changelog_entries
    )
    groups: dict[tuple[bytes, int], list[ManifestEntry]] = defaultdict(list)
    for sid in range(rng.start_id + 1, rng.end_id + 1):
        snap = changelog_read.snapshot_or_changelog(table, sid)
        for e in read_entries(table, snap):
            groups[(e.partition, e.bucket)].append(e)  # snapshot order, then sequence order
    return [IncrementalSplit(p, b, tuple(es)) for (p, b), es in sorted(groups.items(), key=lambda kv: kv[0])]


class _SnapshotScan(TableScan):
    def __init__(self, table: TableStore, snapshot: Snapshot, predicate: Predicate | None) -> None:
        super().__init__(table, predicate)
        self._at = snapshot

    def snapshot(self) -> Snapshot | None:
        return self._at


def _plan_diff(
    table: TableStore, rng: IncrementalRange, predicate: Predicate | None
) -> list[IncrementalSplit]:
    assert rng.after is not None
    after = _SnapshotScan(table, rng.after, predicate).plan()
    before = _SnapshotScan(table, rng.before, predicate).plan() if rng.before is not None else []

    def files(s: Split) -> frozenset[str]:
        return frozenset(f.file_name for f in s.files)

    def by_partition(splits: list[Split]) -> dict[bytes, dict[int, list[Split]]]:
        out: dict[bytes, dict[int, list[Split]]] = defaultdict(lambda: defaultdict(list))
        for s in splits:
            out[s.partition][s.bucket].append(s)
        return out

    b_parts, a_parts = by_partition(before), by_partition(after)
    out = []
    for partition in sorted(set(b_parts) | set(a_parts)):
        b_buckets, a_buckets = b_parts.get(partition, {}), a_parts.get(partition, {})
        b_kept: list[Split] = []
        a_kept: list[Split] = []
        for bucket in sorted(set(b_buckets) | set(a_buckets)):
            bs, as_ = b_buckets.get(bucket, []), a_buckets.get(bucket, [])
            same = {files(s) for s in bs} == {files(s) for s in as_} and {s.deletion_files for s in bs} == {
                s.deletion_files for s in as_
            }
            if not same:  # a bucket whose files did not change holds the same rows at both ends
                b_kept.extend(bs)
                a_kept.extend(as_)
        if b_kept or a_kept:
            # Keys are compared across the partition's buckets: a rescaled table moves them.
            out.append(IncrementalSplit(partition, -1, before=tuple(b_kept), after=tuple(a_kept)))
    return out


# ---- reading ---------------------------------------------------------------------------------


def read_split_kv(table: TableStore, split: IncrementalSplit, filter: FilterLike = None) -> pa.Table:
    """One unit's change records as a KV table (``_VALUE_KIND`` per record), retractions kept,
    rows not matching ``filter`` dropped."""
    predicate = to_predicate(filter)
    if split.before or split.after:
        kv = _diff(table, split)
    else:
        parts = [changelog_read.read_entry_kv(table, e) for e in split.entries]
        kv = pa.concat_tables(parts) if parts else kv_schema(table.schema()).empty_table()
    if predicate is not None and kv.num_rows:
        kv = kv.filter(predicate.to_arrow())
    return kv


def _state(table: TableStore, splits: Sequence[Split]) -> pa.Table:
    """The merged rows of splits with their retractions (a read that keeps deletes); an append
    table's rows are all inserts."""
    schema = kv_schema(table.schema())
    read = new_read(table)
    parts = []
    for s in splits:
        if isinstance(read, AppendTableRead):
            batches = list(read.read_split(s))
            rows = pa.Table.from_batches(batches) if batches else table.arrow_schema().empty_table()
            parts.append(with_kv_columns(rows, 0))
        elif isinstance(read, TableRead):
            parts.append(read.read_kv_split(s))
    return (
        pa.concat_tables([p.select(schema.names).cast(schema) for p in parts])
        if parts
        else schema.empty_table()
    )


def _diff(table: TableStore, split: IncrementalSplit) -> pa.Table:
    if table.is_append:
        before_files = {f.file_name for s in split.before for f in s.files}
        after_files = {f.file_name for s in split.after for f in s.files}
        added = [s for s in split.after if any(f.file_name not in before_files for f in s.files)]
        removed = [s for s in split.before if any(f.file_name not in after_files for f in s.files)]
        plus = _state(table, [_only(s, before_files) for s in added])
        minus = _state(table, [_only(s, after_files) for s in removed])
        return pa.concat_tables([_as_deletes(minus), plus])
    before, after = _state(table, split.before), _state(table, split.after)
    schema = table.schema()
    keys = list(dict.fromkeys([*schema.partition_keys, *schema.primary_keys]))
    return diff_states(before, after, keys)


def _only(split: Split, excluded: set[str]) -> Split:
    return dataclasses.replace(split, files=tuple(f for f in split.files if f.file_name not in excluded))


_ROW = "__row"


def diff_states(before: pa.Table, after: pa.Table, keys: Sequence[str]) -> pa.Table:
    """The records turning state ``before`` into ``after`` (both KV tables holding each key once,
    retractions included): Paimon's diff of two snapshots. Per key: only in ``after`` -> its
    record; in both with another value or kind -> the ``after`` record; only in ``before`` and not
    a retraction -> ``-D`` with the old value; anything else -> nothing."""
    b_keys = before.select(list(keys)).append_column(
        _ROW, pa.array(np.arange(before.num_rows, dtype=np.int64))
    )
    a_keys = after.select(list(keys)).append_column(
        _ROW + "_a", pa.array(np.arange(after.num_rows, dtype=np.int64))
    )
    joined = b_keys.join(a_keys, keys=list(keys), join_type="full outer")
    b_idx = joined.column(_ROW).combine_chunks()
    a_idx = joined.column(_ROW + "_a").combine_chunks()
    only_before = pc.and_(pc.is_valid(b_idx), pc.is_null(a_idx))
    in_after = pc.is_valid(a_idx)
    # Deleted keys: the old record as -D, unless it already was a retraction.
    gone = pc.drop_null(pc.filter(b_idx, only_before))
    gone_rows = before.take(gone)
    gone_rows = gone_rows.filter(
        pc.is_in(gone_rows.column(VALUE_KIND), pa.array([_INSERT, _UPDATE_AFTER], pa.int8()))
    )
    gone_rows = _as_deletes(gone_rows)
    a_sel = pc.filter(a_idx, in_after)
    b_sel = pc.filter(b_idx, in_after)
    after_rows = after.take(a_sel)
    changed = _differs(before, after, b_sel, a_sel)
    return pa.concat_tables([gone_rows, after_rows.filter(changed)])


def _as_deletes(kv: pa.Table) -> pa.Table:
    i = kv.schema.get_field_index(VALUE_KIND)
    return kv.set_column(i, kv.schema.field(i), pa.array(np.full(kv.num_rows, _DELETE, np.int8)))


def _differs(before: pa.Table, after: pa.Table, b_idx: pa.Array, a_idx: pa.Array) -> pa.Array:
    """Per pair (before row or null, after row): whether the values or the add/retract kind differ."""
    n = len(a_idx)
    differs = pc.is_null(b_idx)  # a new key always differs
    present = pc.fill_null(b_idx, 0)
    adds = pa.array([_INSERT, _UPDATE_AFTER], pa.int8())
    b_add = (
        pc.is_in(before.column(VALUE_KIND).take(present), adds)
        if before.num_rows
        else pa.nulls(n, pa.bool_())
    )
    a_add = pc.is_in(after.column(VALUE_KIND).take(a_idx), adds)
    if before.num_rows:
        differs = pc.or_(differs, pc.not_equal(b_add, a_add))
    for name in after.column_names:
        if name in (SEQUENCE_NUMBER, VALUE_KIND) or not before.num_rows:
            continue
        b_col = before.column(name).take(present)
        a_col = after.column(name).take(a_idx)
        differs = pc.or_(differs, _column_differs(b_col, a_col))
    return pc.fill_null(differs, True)


def _column_differs(b: pa.ChunkedArray | pa.Array, a: pa.ChunkedArray | pa.Array) -> pa.Array:
    t = a.type
    if pa.types.is_nested(t) or pa.types.is_dictionary(t):
        # No vectorized equality for nested values: compare their Python forms (diff rows only).
        return pa.array([x != y for x, y in zip(b.to_pylist(), a.to_pylist(), strict=True)], pa.bool_())
    if pa.types.is_floating(t):  # Paimon compares binary rows: NaN equals NaN
        both_nan = pc.and_(pc.fill_null(pc.is_nan(b), False), pc.fill_null(pc.is_nan(a), False))
    else:
        both_nan = None
    eq = pc.equal(b, a)
    nulls_differ = pc.xor(pc.is_null(b), pc.is_null(a))
    out = pc.or_(pc.fill_null(pc.invert(eq), False), nulls_differ)
    if both_nan is not None:
        out = pc.and_(out, pc.invert(both_nan))
    return out


def with_row_kind(table: TableStore, kv: pa.Table, columns: Sequence[str] | None = None) -> pa.Table:
    """``kv``'s table columns with the row kind (+I/-U/+U/-D) first, as ``$audit_log``."""
    out = changelog_read.with_kind_column(table, kv, ROW_KIND_COLUMN)
    return out if columns is None else out.select([ROW_KIND_COLUMN, *columns])


def added_rows(table: TableStore, kv: pa.Table, columns: Sequence[str] | None = None) -> pa.Table:
    """``kv``'s records that add rows (+I / +U), as table rows: a plain read of the changes."""
    kept = kv.filter(pc.is_in(kv.column(VALUE_KIND), pa.array([_INSERT, _UPDATE_AFTER], pa.int8())))
    names = [f.name for f in table.arrow_schema()] if columns is None else list(columns)
    return kept.select(names)


def read(
    table: TableStore,
    rng: IncrementalRange,
    columns: Sequence[str] | None = None,
    filter: FilterLike = None,
    row_kind: bool = False,
) -> pa.Table:
    """An incremental read as one Arrow table: the added rows, or every record with a leading
    ``rowkind`` column (``row_kind=True``, as ``$audit_log``)."""
    parts = []
    for split in plan(table, rng, filter):
        kv = read_split_kv(table, split, filter)
        parts.append(with_row_kind(table, kv, columns) if row_kind else added_rows(table, kv, columns))
    if parts:
        return pa.concat_tables(parts)
    empty = kv_schema(table.schema()).empty_table()
    return with_row_kind(table, empty, columns) if row_kind else added_rows(table, empty, columns)


__all__ = [
    "IncrementalMode",
    "IncrementalRange",
    "IncrementalSplit",
    "between",
    "between_snapshots",
    "between_tags",
    "between_timestamps",
    "diff_states",
    "plan",
    "read",
    "read_split_kv",
    "to_auto_tag",
]
