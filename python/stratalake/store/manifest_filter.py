"""Which manifest files a read must open: pruning by ``_PARTITION_STATS`` and bucket range.

A manifest list records, per manifest, the min/max of each partition column over the manifest's
entries, their null counts, and the bucket range (docs/format.md section 4). A planner that
knows which partitions it wants skips a manifest when those statistics exclude them, as Paimon's
``ManifestsReader`` does with its partition predicate; then keeps only the entries of the wanted
partitions before folding. Both are exact: every entry of a file (its ADD and any DELETE) carries
the same partition, so dropping other partitions' entries never changes the fold of the rest.

Skipping must never be stricter than evaluating the predicate on each entry's partition values
(what planning did before): :func:`outcomes` gives every result a predicate may take on some
partition the statistics admit, in the same three-valued logic as ``Predicate.eval_values``, and a
manifest is skipped only when that is ``False`` alone. Null partition values (the default
partition, ``__DEFAULT_PARTITION__`` on disk) count whenever the null counts do not rule them out.
"""

from __future__ import annotations

import datetime
import operator
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from stratalake.expressions import (
    And,
    Compare,
    In,
    IsNotNull,
    IsNull,
    Not,
    Or,
    Predicate,
    pinned_combinations,
    split_conjuncts,
)
from stratalake.spec.binary_row import decode_row
from stratalake.spec.manifest import ManifestFileMeta
from stratalake.store.partition import PartitionCodec
from stratalake.types import (
    BigIntType,
    BooleanType,
    DataType,
    DateType,
    IntType,
    SmallIntType,
    TinyIntType,
    VarCharType,
)

# Past these counts a block search costs more than it saves (one substring search per pair).
MAX_WANTED_PARTITIONS = 256
MAX_WANTED_PAIRS = 1024

_ALL: frozenset[bool | None] = frozenset({True, False, None})


@dataclass(frozen=True)
class ColumnRange:
    """What a manifest's statistics say about one partition column over its entries."""

    low: Any  # None: unknown, or no non-null value
    high: Any
    may_be_null: bool
    may_be_non_null: bool


def column_ranges(meta: ManifestFileMeta, codec: PartitionCodec) -> dict[str, ColumnRange] | None:
    """The partition statistics of ``meta`` per column; None when they do not decode (a manifest
    written with other partition columns, or corrupt statistics: then it must be read)."""
    stats = meta.partition_stats
    types = list(codec.types)
    try:
        lows = decode_row(stats.min_values, types)
        highs = decode_row(stats.max_values, types)
    except Exception:
        return None
    if len(lows) != len(types) or len(highs) != len(types):
        return None
    nulls = stats.null_counts
    entries = meta.num_added_files + meta.num_deleted_files
    out = {}
    for i, name in enumerate(codec.keys):
        count = nulls[i] if nulls is not None and i < len(nulls) else None
        lo, hi = lows[i], highs[i]
        non_null_known_absent = lo is None and hi is None and count is not None and count > 0
        out[name] = ColumnRange(
            low=lo,
            high=hi,
            may_be_null=count is None or count > 0,
            # Both bounds null with nulls counted: every entry's value is null. A manifest whose
            # null count equals its entry count says the same (Paimon counts per entry).
            may_be_non_null=not non_null_known_absent
            and not (count is not None and entries > 0 and count >= entries),
        )
    return out


_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _compare_outcomes(op: str, lo: Any, hi: Any, v: Any) -> frozenset[bool | None]:
    """The results ``x <op> v`` may take for some non-null ``x`` in ``[lo, hi]``."""
    if lo is None or hi is None:
        return _ALL
    try:
        if op == "=":
            can_true = lo <= v <= hi
            can_false = not (lo == hi == v)
        elif op == "!=":
            can_true = not (lo == hi == v)
            can_false = lo <= v <= hi
        elif op in ("<", "<="):
            fn = _OPS[op]
            can_true, can_false = fn(lo, v), not fn(hi, v)
        else:  # > and >=
            fn = _OPS[op]
            can_true, can_false = fn(hi, v), not fn(lo, v)
    except TypeError:
        return _ALL  # eval_values answers None for values that do not compare
    result: set[bool | None] = set()
    if can_true:
        result.add(True)
    if can_false:
        result.add(False)
    return frozenset(result)


def outcomes(p: Predicate, ranges: Mapping[str, ColumnRange]) -> frozenset[bool | None]:
    """Every value ``p.eval_values(values)`` may take for partition values the statistics admit
    (an over-approximation: columns are treated as independent)."""
    if isinstance(p, Compare):
        r = ranges.get(p.column)
        if r is None:
            return frozenset({None})
        out: set[bool | None] = set()
        if r.may_be_null or p.value is None:
            out.add(False)  # eval_values: a null on either side compares False
        if r.may_be_non_null and p.value is not None:
            out |= _compare_outcomes(p.op, r.low, r.high, p.value)
        return frozenset(out)
    if isinstance(p, In):
        r = ranges.get(p.column)
        if r is None:
            return frozenset({None})
        out = set()
        if r.may_be_null:
            out.add(None in p.values)
        if r.may_be_non_null:
            values = [v for v in p.values if v is not None]
            hits = [_compare_outcomes("=", r.low, r.high, v) for v in values]
            if any(True in h for h in hits):
                out.add(True)
            if not values or all(False in h for h in hits) or any(None in h for h in hits):
                out.add(False)  # a value none of them equals is possible (or cannot be ruled out)
        return frozenset(out)
    if isinstance(p, IsNull | IsNotNull):
        r = ranges.get(p.column)
        if r is None:
            return frozenset({None})
        null_result = isinstance(p, IsNull)
        out = set()
        if r.may_be_null:
            out.add(null_result)
        if r.may_be_non_null:
            out.add(not null_result)
        return frozenset(out)
    if isinstance(p, And | Or):
        child = [outcomes(c, ranges) for c in p.children]
        return _and_outcomes(child) if isinstance(p, And) else _or_outcomes(child)
    if isinstance(p, Not):
        return frozenset(None if r is None else not r for r in outcomes(p.child, ranges))
    return _ALL  # a predicate kind this module does not know: never prune by it


def _and_outcomes(children: Sequence[frozenset[bool | None]]) -> frozenset[bool | None]:
    out: set[bool | None] = set()
    if any(False in c for c in children):
        out.add(False)
    if all(c & {True, None} for c in children) and any(None in c for c in children):
        out.add(None)
    if all(True in c for c in children):
        out.add(True)
    return frozenset(out)


def _or_outcomes(children: Sequence[frozenset[bool | None]]) -> frozenset[bool | None]:
    out: set[bool | None] = set()
    if any(True in c for c in children):
        out.add(True)
    if all(c & {False, None} for c in children) and any(None in c for c in children):
        out.add(None)
    if all(False in c for c in children):
        out.add(False)
    return frozenset(out)


class ManifestFilter:
    """Decides which manifests (and entries) a read of some partitions and buckets needs.

    ``predicate``: a predicate over partition columns only (None: every partition);
    ``partitions``: serialized partition rows wanted (None: every partition);
    ``buckets``: bucket ids wanted (None: every bucket). An entry is kept when all three admit it.
    """

    def __init__(
        self,
        codec: PartitionCodec,
        predicate: Predicate | None = None,
        partitions: Collection[bytes] | None = None,
        buckets: Collection[int] | None = None,
    ) -> None:
        self.codec = codec
        self.predicate = predicate
        self.partitions = frozenset(partitions) if partitions is not None else None
        self.buckets = frozenset(buckets) if buckets is not None else None
        self._partition_ok: dict[bytes, bool] = {}
        self._wanted_values = (
            [codec.from_bytes(p) for p in self.partitions]
            if self.partitions is not None and codec.is_partitioned
            else None
        )

    @property
    def is_trivial(self) -> bool:
        """Whether it keeps everything."""
        return self.buckets is None and (
            not self.codec.is_partitioned or (self.predicate is None and self.partitions is None)
        )

    def manifest_may_match(self, meta: ManifestFileMeta) -> bool:
        """False only when no entry of ``meta`` can be wanted (from the manifest list alone)."""
        lo, hi = meta.min_bucket, meta.max_bucket
        if (
            self.buckets is not None
            and lo is not None
            and hi is not None
            and not any(lo <= b <= hi for b in self.buckets)
        ):
            return False
        if not self.codec.is_partitioned or (self.predicate is None and self._wanted_values is None):
            return True
        ranges = column_ranges(meta, self.codec)
        if ranges is None:
            return True
        if self._wanted_values is not None and not any(
            _admits(ranges, self.codec.keys, values) for values in self._wanted_values
        ):
            return False
        if self.predicate is not None:
            found = outcomes(self.predicate, ranges)
            if found and found <= {False}:
                return False
        return True

    @cached_property
    def wanted_pairs(self) -> frozenset[tuple[bytes, int | None]] | None:
        """Every ``(partition, bucket)`` an entry may have to be wanted (bucket None: any), so
        manifest blocks holding none of them need not be decoded
        (:func:`~stratalake.spec.avro.decode_manifest_blocks`); None when the wanted partitions
        are not a small known set.

        Partitions are identified by their bytes, as Paimon's ``BinaryRow.equals`` does and as
        ``partitions`` here already is. A partition predicate yields pairs only when it pins
        every partition column to non-null values of a type whose encoding is one-to-one with
        its Python values (strings, integers, booleans, dates): never floats (``-0.0 == 0.0``),
        decimals (``1.0 == 1.00``), CHAR (padding) or timestamps.
        """
        wanted = self.partitions if self.partitions is not None else self._pinned_partitions()
        if wanted is None or len(wanted) > MAX_WANTED_PARTITIONS:
            return None
        if self.buckets is not None and len(wanted) * len(self.buckets) <= MAX_WANTED_PAIRS:
            return frozenset((p, b) for p in wanted for b in self.buckets)
        return frozenset((p, None) for p in wanted)

    def _pinned_partitions(self) -> frozenset[bytes] | None:
        """The encodings of every partition the predicate may admit, when it pins each column."""
        codec = self.codec
        if self.predicate is None or not codec.is_partitioned:
            return None
        combos = pinned_combinations(split_conjuncts(self.predicate), codec.keys, MAX_WANTED_PARTITIONS)
        if combos is None or not all(
            _one_to_one(t, v) for combo in combos for t, v in zip(codec.types, combo, strict=True)
        ):
            return None
        try:
            return frozenset(codec.to_bytes(list(values)) for values in combos)
        except Exception:  # a value the column cannot hold (out of range): read everything
            return None

    def entry_partition_ok(self, partition: bytes) -> bool:
        """Whether entries of ``partition`` are wanted (cached per partition)."""
        ok = self._partition_ok.get(partition)
        if ok is None:
            ok = self.partitions is None or partition in self.partitions
            if ok and self.predicate is not None and self.codec.is_partitioned:
                ok = self.predicate.eval_values(self.codec.to_dict(partition)) is not False
            self._partition_ok[partition] = ok
        return ok


_INTEGERS = (TinyIntType, SmallIntType, IntType, BigIntType)


def _one_to_one(dtype: DataType, value: Any) -> bool:
    """Whether ``value`` equals a partition value of ``dtype`` exactly when their encodings are
    equal (so a needle made from it cannot miss an equal partition)."""
    if isinstance(dtype, VarCharType):
        return type(value) is str
    if isinstance(dtype, _INTEGERS):
        return type(value) is int
    if isinstance(dtype, BooleanType):
        return type(value) is bool
    if isinstance(dtype, DateType):
        return type(value) is datetime.date
    return False


def _admits(ranges: Mapping[str, ColumnRange], keys: Sequence[str], values: Sequence[Any]) -> bool:
    for name, v in zip(keys, values, strict=True):
        r = ranges[name]
        if v is None:
            if not r.may_be_null:
                return False
            continue
        if not r.may_be_non_null:
            return False
        if r.low is None or r.high is None:
            continue
        try:
            if not (r.low <= v <= r.high):
                return False
        except TypeError:
            continue
    return True
