"""The live files of the partitions a commit touches, kept per process from commit to commit.

A commit checks its conflicts against the live files of the partitions and buckets it touches,
which it folds from every manifest whose partition statistics admit them. Merged manifests hold
many partitions each, so that fold walked thousands of entries per small commit and grew with
the table (issue 33's metadata bench: 6,000 entries per commit at 100,000 files). Here the fold
of a set of partitions at snapshot N is kept, and the next commit of the same partitions
advances it by the delta manifests of the snapshots after N (each lists exactly what it added and
deleted), as a commit's own retry does (``TableCommit._advance``).

Nothing is trusted blindly: the advance re-reads snapshot N and refuses (the caller folds again)
when it changed, when a snapshot in between is gone (expired) or unreadable, or when more than
:data:`MAX_GAP` snapshots passed. Memory is bounded by :data:`MAX_ENTRIES` entries in all.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable

from stratalake.operation.commit.conflicts import LiveEntries
from stratalake.spec.snapshot import Snapshot
from stratalake.store.manifest_filter import ManifestFilter

#: Entries held over all cached folds; a single fold larger than a quarter of it is not kept.
MAX_ENTRIES = 500_000
#: Snapshots an advance may walk; past it, folding the manifests again is cheaper.
MAX_GAP = 100

Key = tuple[str, frozenset[bytes]]

_lock = threading.Lock()
_folds: OrderedDict[Hashable, tuple[Snapshot, LiveEntries]] = OrderedDict()
_held = 0


def key(snapshot_dir: str, scope: ManifestFilter | None) -> Key | None:
    """The cache key of a commit scope (its partitions, whatever its buckets), or None for a
    scope that is not kept: the whole table, or one with a predicate."""
    if scope is None or scope.partitions is None or scope.predicate is not None:
        return None
    return (snapshot_dir, scope.partitions)


def widen(scope: ManifestFilter) -> ManifestFilter:
    """What is folded and kept for ``scope``: all buckets of its partitions (so commits to other
    buckets of the same partitions reuse it)."""
    return ManifestFilter(scope.codec, None, scope.partitions, None)


def narrow(live: LiveEntries, scope: ManifestFilter) -> LiveEntries:
    """A caller's own copy of ``live`` restricted to ``scope``'s buckets."""
    if scope.buckets is None:
        return dict(live)
    buckets = scope.buckets
    return {k: e for k, e in live.items() if k[1] in buckets}


def get(k: Key) -> tuple[Snapshot, LiveEntries] | None:
    """The kept fold of ``k`` and the snapshot it describes (never to be modified), or None."""
    with _lock:
        held = _folds.get(k)
        if held is not None:
            _folds.move_to_end(k)
        return held


def put(k: Key, snapshot: Snapshot, live: LiveEntries) -> None:
    """Keep ``live`` (owned by the cache from now on) as the fold of ``k`` at ``snapshot``."""
    global _held
    with _lock:
        old = _folds.pop(k, None)
        if old is not None:
            _held -= len(old[1])
        if len(live) > MAX_ENTRIES // 4:
            return
        _folds[k] = (snapshot, live)
        _held += len(live)
        while _held > MAX_ENTRIES and _folds:
            _, (_, dropped) = _folds.popitem(last=False)
            _held -= len(dropped)


def clear() -> None:
    """Forget every fold (tests)."""
    global _held
    with _lock:
        _folds.clear()
        _held = 0
