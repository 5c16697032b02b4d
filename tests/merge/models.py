"""Plain-Python models of each merge engine: a dict per key, fed one record at a time in merge order.

They restate the engines' documented semantics record by record (Paimon's ``add`` loop), independent
of the vectorized implementation, so the model tests can compare the two.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Row = dict[str, Any]


@dataclass
class Record:
    pos: int  # input position = _SEQUENCE_NUMBER
    kind: str
    values: Row

    @property
    def retract(self) -> bool:
        return self.kind in ("-U", "-D")


def _null_first(v: Any) -> tuple[int, Any]:
    return (0, 0) if v is None else (1, v)


def merge_order(
    records: Sequence[Record], key: str, seq_fields: Sequence[str] = (), descending: bool = False
) -> dict[Any, list[Record]]:
    """Records grouped by key, each group in merge order: sequence fields (nulls oldest, numeric
    values), then input position."""

    def order(r: Record) -> tuple[Any, ...]:
        parts: list[Any] = []
        for f in seq_fields:
            v = r.values[f]
            parts.append((0, 0) if v is None else (1, -v if descending else v))
        return (*parts, r.pos)

    by_key: dict[Any, list[Record]] = {}
    for r in records:
        by_key.setdefault(r.values[key], []).append(r)
    for recs in by_key.values():
        recs.sort(key=order)
    return by_key


def dedup_model(groups: Mapping[Any, list[Record]], ignore_delete: bool) -> dict[Any, Row]:
    out: dict[Any, Row] = {}
    for k, recs in groups.items():
        if ignore_delete:
            recs = [r for r in recs if not r.retract]
        if recs and not recs[-1].retract:
            out[k] = dict(recs[-1].values)
    return out


def first_row_model(groups: Mapping[Any, list[Record]]) -> dict[Any, Row]:
    out: dict[Any, Row] = {}
    for k, recs in groups.items():
        adds = [r for r in recs if not r.retract]
        if adds:
            out[k] = dict(adds[0].values)
    return out


def partial_update_model(
    groups: Mapping[Any, list[Record]],
    columns: Sequence[str],
    ignore_delete: bool = False,
    remove_on_delete: bool = False,
) -> dict[Any, Row]:
    """Partial update without sequence groups."""
    out: dict[Any, Row] = {}
    for k, recs in groups.items():
        row: Row = dict.fromkeys(columns)
        live = False
        seen = False
        for r in recs:
            if r.retract:
                if ignore_delete or r.kind == "-U":
                    continue
                assert remove_on_delete
                row, live, seen = dict(r.values), False, True
                continue
            seen = live = True
            for c in columns:
                if r.values[c] is not None:
                    row[c] = r.values[c]
        if seen and live:
            out[k] = row
    return out


@dataclass
class Group:
    sequence: tuple[str, ...]
    fields: tuple[str, ...]
    removes: bool = False
    aggregates: dict[str, Callable[[list[tuple[bool, Any]]], Any]] = field(default_factory=dict)


def seq_group_model(
    groups: Mapping[Any, list[Record]], columns: Sequence[str], key: str, seq_groups: Sequence[Group]
) -> dict[Any, Row]:
    """Partial update with sequence groups (retractions allowed)."""
    grouped = {c for g in seq_groups for c in (*g.sequence, *g.fields)}
    free = [c for c in columns if c not in grouped and c != key]
    out: dict[Any, Row] = {}
    for k, recs in groups.items():
        row: Row = dict.fromkeys(columns)
        row[key] = k
        cur: list[Any] = [None] * len(seq_groups)
        agg_inputs: list[list[tuple[Any, int, bool, Row]]] = [[] for _ in seq_groups]
        has_add = False
        for r in recs:
            if not r.retract:
                has_add = True
                for c in free:
                    if r.values[c] is not None:
                        row[c] = r.values[c]
            for gi, g in enumerate(seq_groups):
                s = tuple(r.values[c] for c in g.sequence)
                if all(v is None for v in s):
                    continue
                sk = tuple(_null_first(v) for v in s)
                winner = cur[gi] is None or sk >= cur[gi]
                agg_inputs[gi].append((sk, r.pos, r.retract, r.values))
                if not winner:
                    continue
                if r.kind == "-D" and g.removes:
                    row = dict(r.values)
                    cur = [
                        None
                        if all(r.values[c] is None for c in gg.sequence)
                        else tuple(_null_first(r.values[c]) for c in gg.sequence)
                        for gg in seq_groups
                    ]
                    base = (tuple((-1, 0) for _ in range(1)), -1, False, r.values)
                    agg_inputs = [[base] for _ in seq_groups]
                    has_add = False
                    break
                cur[gi] = sk
                for c in g.sequence:
                    row[c] = r.values[c]
                for c in g.fields:
                    if c not in g.aggregates:
                        row[c] = None if r.retract else r.values[c]
        for gi, g in enumerate(seq_groups):
            ordered = sorted(agg_inputs[gi], key=lambda t: (t[0], t[1]))
            for c, fn in g.aggregates.items():
                row[c] = fn([(retract, vals[c]) for _, _, retract, vals in ordered])
        if has_add:
            out[k] = row
    return out


# --------------------------------------------------------------------------- aggregate functions
# Sequential (Paimon-style) accumulators: fold a list of (is_retract, value) in order.


def agg_sum(items: list[tuple[bool, Any]]) -> Any:
    acc = None
    for retract, v in items:
        if v is None:
            continue
        acc = (-v if retract else v) if acc is None else (acc - v if retract else acc + v)
    return acc


def agg_extreme(largest: bool) -> Callable[[list[tuple[bool, Any]]], Any]:
    def fold(items: list[tuple[bool, Any]]) -> Any:
        acc = None
        for retract, v in items:
            if retract or v is None:
                continue
            acc = v if acc is None else (max(acc, v) if largest else min(acc, v))
        return acc

    return fold


def agg_last_non_null(items: list[tuple[bool, Any]]) -> Any:
    acc = None
    for retract, v in items:
        if v is not None:
            acc = None if retract else v
    return acc


def agg_last_value(items: list[tuple[bool, Any]]) -> Any:
    acc = None
    for retract, v in items:
        acc = None if retract else v
    return acc


def agg_first_non_null(items: list[tuple[bool, Any]]) -> Any:
    for retract, v in items:
        if not retract and v is not None:
            return v
    return None


def agg_listagg(delim: str = ",", distinct: bool = False) -> Callable[[list[tuple[bool, Any]]], Any]:
    def fold(items: list[tuple[bool, Any]]) -> Any:
        parts: list[str] = []
        for retract, v in items:
            if retract or v is None or not v.strip():
                continue
            if distinct:
                parts += [t for t in v.split(delim) if t.strip() and t not in parts]
            else:
                parts.append(v)
        return delim.join(parts) if parts else None

    return fold


def agg_collect(items: list[tuple[bool, Any]]) -> Any:
    acc: list[Any] | None = None
    for retract, v in items:
        if v is None:
            continue
        if retract:
            if acc is not None:
                for e in v:
                    if e in acc:
                        acc.remove(e)
        else:
            acc = list(v) if acc is None else acc + list(v)
    return acc


def agg_merge_map(items: list[tuple[bool, Any]]) -> Any:
    acc: dict[Any, Any] | None = None
    for retract, v in items:
        if v is None:
            continue
        entries = dict(v)
        if retract:
            if acc is not None:
                for key in entries:
                    acc.pop(key, None)
        else:
            acc = {**(acc or {}), **entries}
    return acc


def agg_count(items: list[tuple[bool, Any]]) -> Any:
    acc = None
    for retract, v in items:
        step = 0 if v is None else (-1 if retract else 1)
        acc = step if acc is None else acc + step
    return acc


def agg_bool_or(items: list[tuple[bool, Any]]) -> Any:
    vals = [v for retract, v in items if not retract and v is not None]
    return any(vals) if vals else None


def aggregation_model(
    groups: Mapping[Any, list[Record]],
    key: str,
    functions: Mapping[str, Callable[[list[tuple[bool, Any]]], Any]],
    ignore_retract: Sequence[str] = (),
    remove_on_delete: bool = False,
) -> dict[Any, Row]:
    out: dict[Any, Row] = {}
    for k, recs in groups.items():
        items = list(recs)
        live = True
        if remove_on_delete:
            deletes = [i for i, r in enumerate(items) if r.kind == "-D"]
            if deletes:
                # The newest -D seeds the row with its own values (counted as an add).
                last = deletes[-1]
                items = [Record(items[last].pos, "+I", items[last].values), *items[last + 1 :]]
                live = last != len(recs) - 1
        row: Row = {key: k}
        for c, fn in functions.items():
            row[c] = fn([(r.retract, r.values[c]) for r in items if not (r.retract and c in ignore_retract)])
        if live:
            out[k] = row
    return out
