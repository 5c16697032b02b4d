"""Row filters for reads: a small predicate language that can prune files and filter rows.

Build predicates with :func:`field`::

    from stratalake.expressions import field
    t.read(filter=(field("dt") == "2024-01-01") & (field("n") > 10))
    t.read(filter=field("id").isin([1, 2, 3]) | field("v").is_null())

``filter=`` also accepts a list of ``(column, op, value)`` tuples, ANDed, with ops
``= == != < <= > >= in not in`` and ``is null`` / ``is not null`` (value ignored).

A predicate is evaluated three ways: on partition values (partition pruning), on min/max/null-count
statistics (file pruning: "may any row match?"), and on Arrow data (row filtering).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow.compute as pc

from stratalake.exceptions import StrataLakeError


class Predicate:
    """Base class of all predicates. Combine with ``&``, ``|`` and ``~``."""

    def __and__(self, other: Predicate) -> Predicate:
        return And((self, other))

    def __or__(self, other: Predicate) -> Predicate:
        return Or((self, other))

    def __invert__(self) -> Predicate:
        return Not(self)

    def columns(self) -> set[str]:
        raise NotImplementedError

    def to_arrow(self) -> pc.Expression:
        """The equivalent pyarrow compute expression (for row filtering)."""
        raise NotImplementedError

    def eval_values(self, values: Mapping[str, Any]) -> bool | None:
        """Evaluate on a single row of known values; None when a column is unknown."""
        raise NotImplementedError

    def may_match(self, stats: Mapping[str, ColumnStats]) -> bool:
        """False only if no row described by ``stats`` can match (columns missing -> True)."""
        raise NotImplementedError


@dataclass(frozen=True)
class ColumnStats:
    """Min/max/null count of one column over a set of rows (min/max None when unknown)."""

    min: Any
    max: Any
    null_count: int | None
    row_count: int


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@dataclass(frozen=True)
class Compare(Predicate):
    column: str
    op: str  # one of _COMPARE
    value: Any

    def columns(self) -> set[str]:
        return {self.column}

    def to_arrow(self) -> pc.Expression:
        f = pc.field(self.column)
        v = pc.scalar(self.value)
        return {
            "=": f == v,
            "!=": f != v,
            "<": f < v,
            "<=": f <= v,
            ">": f > v,
            ">=": f >= v,
        }[self.op]

    def eval_values(self, values: Mapping[str, Any]) -> bool | None:
        if self.column not in values:
            return None
        x = values[self.column]
        if x is None or self.value is None:
            return False
        try:
            return bool(_COMPARE[self.op](x, self.value))
        except TypeError:
            return None

    def may_match(self, stats: Mapping[str, ColumnStats]) -> bool:
        s = stats.get(self.column)
        if s is None or self.value is None:
            return True
        if s.null_count is not None and s.null_count >= s.row_count:
            return False  # only nulls: no comparison is true
        lo, hi, v = s.min, s.max, self.value
        if lo is None or hi is None:
            return True
        try:
            if self.op == "=":
                return bool(lo <= v <= hi)
            if self.op == "!=":
                return not (lo == hi == v)
            if self.op == "<":
                return bool(lo < v)
            if self.op == "<=":
                return bool(lo <= v)
            if self.op == ">":
                return bool(hi > v)
            return bool(hi >= v)
        except TypeError:
            return True


@dataclass(frozen=True)
class In(Predicate):
    column: str
    values: tuple[Any, ...]

    def columns(self) -> set[str]:
        return {self.column}

    def to_arrow(self) -> pc.Expression:
        return pc.field(self.column).isin(list(self.values))

    def eval_values(self, values: Mapping[str, Any]) -> bool | None:
        if self.column not in values:
            return None
        return values[self.column] in self.values

    def may_match(self, stats: Mapping[str, ColumnStats]) -> bool:
        return any(Compare(self.column, "=", v).may_match(stats) for v in self.values if v is not None)


@dataclass(frozen=True)
class IsNull(Predicate):
    column: str

    def columns(self) -> set[str]:
        return {self.column}

    def to_arrow(self) -> pc.Expression:
        return pc.field(self.column).is_null()

    def eval_values(self, values: Mapping[str, Any]) -> bool | None:
        if self.column not in values:
            return None
        return values[self.column] is None

    def may_match(self, stats: Mapping[str, ColumnStats]) -> bool:
        s = stats.get(self.column)
        return s is None or s.null_count is None or s.null_count > 0


@dataclass(frozen=True)
class IsNotNull(Predicate):
    column: str

    def columns(self) -> set[str]:
        return {self.column}

    def to_arrow(self) -> pc.Expression:
        return pc.field(self.column).is_valid()

    def eval_values(self, values: Mapping[str, Any]) -> bool | None:
        if self.column not in values:
            return None
        return values[self.column] is not None

    def may_match(self, stats: Mapping[str, ColumnStats]) -> bool:
        s = stats.get(self.column)
        return s is None or s.null_count is None or s.null_count < s.row_count


@dataclass(frozen=True)
class And(Predicate):
    children: tuple[Predicate, ...]

    def columns(self) -> set[str]:
        return set().union(*(c.columns() for c in self.children))

    def to_arrow(self) -> pc.Expression:
        out = self.children[0].to_arrow()
        for c in self.children[1:]:
            out = out & c.to_arrow()
        return out

    def eval_values(self, values: Mapping[str, Any]) -> bool | None:
        results = [c.eval_values(values) for c in self.children]
        if any(r is False for r in results):
            return False
        return None if any(r is None for r in results) else True

    def may_match(self, stats: Mapping[str, ColumnStats]) -> bool:
        return all(c.may_match(stats) for c in self.children)


@dataclass(frozen=True)
class Or(Predicate):
    children: tuple[Predicate, ...]

    def columns(self) -> set[str]:
        return set().union(*(c.columns() for c in self.children))

    def to_arrow(self) -> pc.Expression:
        out = self.children[0].to_arrow()
        for c in self.children[1:]:
            out = out | c.to_arrow()
        return out

    def eval_values(self, values: Mapping[str, Any]) -> bool | None:
        results = [c.eval_values(values) for c in self.children]
        if any(r is True for r in results):
            return True
        return None if any(r is None for r in results) else False

    def may_match(self, stats: Mapping[str, ColumnStats]) -> bool:
        return any(c.may_match(stats) for c in self.children)


@dataclass(frozen=True)
class Not(Predicate):
    child: Predicate

    def columns(self) -> set[str]:
        return self.child.columns()

    def to_arrow(self) -> pc.Expression:
        return ~self.child.to_arrow()

    def eval_values(self, values: Mapping[str, Any]) -> bool | None:
        r = self.child.eval_values(values)
        return None if r is None else not r

    def may_match(self, stats: Mapping[str, ColumnStats]) -> bool:
        return True  # statistics cannot refute a negation in general


class FieldRef:
    """A column reference: ``field("a") == 1`` builds a :class:`Predicate`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, value: object) -> Predicate:  # type: ignore[override]
        return Compare(self.name, "=", value)

    def __ne__(self, value: object) -> Predicate:  # type: ignore[override]
        return Compare(self.name, "!=", value)

    def __lt__(self, value: object) -> Predicate:
        return Compare(self.name, "<", value)

    def __le__(self, value: object) -> Predicate:
        return Compare(self.name, "<=", value)

    def __gt__(self, value: object) -> Predicate:
        return Compare(self.name, ">", value)

    def __ge__(self, value: object) -> Predicate:
        return Compare(self.name, ">=", value)

    def __hash__(self) -> int:
        return hash(self.name)

    def isin(self, values: Iterable[Any]) -> Predicate:
        return In(self.name, tuple(values))

    def is_null(self) -> Predicate:
        return IsNull(self.name)

    def is_not_null(self) -> Predicate:
        return IsNotNull(self.name)


def field(name: str) -> FieldRef:
    """Reference a column by name to build a predicate."""
    return FieldRef(name)


FilterLike = Predicate | Sequence[tuple[Any, ...]] | None


def to_predicate(filter: FilterLike) -> Predicate | None:
    """Normalize the ``filter=`` argument of reads into a :class:`Predicate` (or None)."""
    if filter is None or isinstance(filter, Predicate):
        return filter
    if isinstance(filter, (list, tuple)):
        parts: list[Predicate] = []
        for item in filter:
            if not isinstance(item, (list, tuple)) or len(item) not in (2, 3):
                raise StrataLakeError(f"filter item {item!r} must be a (column, op, value) tuple")
            column, op = str(item[0]), str(item[1]).strip().lower()
            value: Any = item[2] if len(item) == 3 else None
            if op == "==":
                op = "="
            if op in _COMPARE:
                parts.append(Compare(column, op, value))
            elif op == "in":
                parts.append(In(column, tuple(value)))
            elif op == "not in":
                parts.append(Not(In(column, tuple(value))))
            elif op == "is null":
                parts.append(IsNull(column))
            elif op == "is not null":
                parts.append(IsNotNull(column))
            else:
                raise StrataLakeError(f"filter item {item!r}: unknown operator '{op}'")
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else And(tuple(parts))
    raise StrataLakeError(f"filter must be a stratalake Predicate or a list of tuples, got {type(filter)}")


def split_conjuncts(p: Predicate | None) -> list[Predicate]:
    """The top-level AND parts of a predicate."""
    if p is None:
        return []
    if isinstance(p, And):
        return [q for c in p.children for q in split_conjuncts(c)]
    return [p]


def pinned_combinations(
    conjuncts: Iterable[Predicate], columns: Sequence[str], limit: int
) -> list[tuple[Any, ...]] | None:
    """Every tuple of values of ``columns`` that rows matching ``conjuncts`` may have, when
    ``=`` and ``IN`` conjuncts pin each column to a finite set (several on one column: the
    values all of them admit); None when a column is not pinned or there are over ``limit``
    tuples. Other conjuncts only narrow the rows further, so they are ignored."""
    pinned: dict[str, list[Any]] = {}
    for c in conjuncts:
        if isinstance(c, Compare) and c.op == "=":
            values = [c.value]
        elif isinstance(c, In):
            values = list(dict.fromkeys(c.values))
        else:
            continue
        if c.column in pinned:
            values = [v for v in pinned[c.column] if v in values]
        pinned[c.column] = values
    combos: list[tuple[Any, ...]] = [()]
    for column in columns:
        if column not in pinned:
            return None
        combos = [(*combo, v) for combo in combos for v in pinned[column]]
        if len(combos) > limit:
            return None
    return combos


def conjunction(parts: Sequence[Predicate]) -> Predicate | None:
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else And(tuple(parts))
