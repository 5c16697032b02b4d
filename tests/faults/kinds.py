"""The statements the fault sweep runs, one per write or maintenance kind (Python API).

Each kind builds a table holding data (``setup``, through a plain FileIO) and then runs one
statement (``run``) on a handle whose FileIO injects the fault. ``rerun`` says whether running
the statement again after a fault must reach the statement's clean result (idempotent upserts,
a streaming batch by its identifier, maintenance); an append write that did commit must not be
re-run, so the sweep re-runs it only when the table shows the state from before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from stratalake import Catalog
from stratalake.table import Table

IDENTIFIER = "db.t"
STREAM_USER = "stream-user-1"


@dataclass(frozen=True)
class Kind:
    name: str
    options: dict[str, str]
    primary_key: tuple[str, ...] = ("id",)
    partitioned: bool = False
    setup: Callable[[Table], None] = lambda t: None
    run: Callable[[Table], Any] = lambda t: None
    rerun: bool = True
    # pypaimon (the second reader) reads it; False where pypaimon lacks the feature.
    pypaimon: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])


def rows(ids: range | list[int], v: str, dt: str = "p0") -> pa.Table:
    ids = list(ids)
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "dt": [dt] * len(ids), "v": [f"{v}{i}" for i in ids]},
        schema=SCHEMA,
    )


def create(warehouse: str, kind: Kind) -> Table:
    cat = Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    pk = list(kind.primary_key) if kind.primary_key else None
    return cat.create_table(
        IDENTIFIER,
        schema=SCHEMA,
        primary_key=pk,
        partition_keys=["dt"] if kind.partitioned else None,
        options=kind.options,
    )


def _two_writes(t: Table) -> None:
    t.write(rows(range(0, 20), "a"))
    t.write(rows(range(10, 30), "b"))


def _upsert(t: Table) -> Any:
    return t.write(rows(range(15, 40), "c"))


def _append(t: Table) -> Any:
    return t.write(rows(range(100, 120), "c"))


def _overwrite(t: Table) -> Any:
    return t.write(rows(range(0, 5), "o", "p1"), overwrite=True, overwrite_partitions=[{"dt": "p1"}])


def _partitioned_setup(t: Table) -> None:
    t.write(rows(range(0, 10), "a", "p0"))
    t.write(rows(range(10, 20), "a", "p1"))


def _cross_partition_move(t: Table) -> Any:
    # keys 5..14 move to partition p1 (and 15..19 arrive there)
    return t.write(rows(range(5, 20), "m", "p1"))


def _stream_batch(t: Table) -> Any:
    with t.new_write(STREAM_USER) as w:
        w.write(rows(range(100, 110), "s"))
        return w.commit(commit_identifier=7)


def _compact(t: Table) -> Any:
    return t.compact(full=True)


def _expire(t: Table) -> Any:
    return t.expire_snapshots(retain_max=1, retain_min=1, older_than_ms=int(time.time() * 1000) + 60_000)


def _tag_setup(t: Table) -> None:
    _two_writes(t)
    t.create_tag("t1", 1)
    t.write(rows(range(0, 30), "z"))
    t.compact(full=True)
    t.expire_snapshots(retain_max=1, retain_min=1, older_than_ms=int(time.time() * 1000) + 60_000)


def _delete_tag(t: Table) -> Any:
    return t.delete_tag("t1")


def _create_tag(t: Table) -> Any:
    return t.create_tag("t2", 2)


def _rollback(t: Table) -> Any:
    return t.rollback_to(1)


def _four_writes(t: Table) -> None:
    for i in range(4):
        t.write(rows(range(i * 10, i * 10 + 15), f"w{i}"))


def _append_delete(t: Table) -> Any:
    """A DELETE the table evaluates (its units run in this process, as in the bridge)."""
    from stratalake.append.dml import delete_rows
    from stratalake.expressions import field

    return delete_rows(t, field("id") < 25)


def _expire_changelogs(t: Table) -> Any:
    from stratalake.maintenance.expire import ExpireConfig, expire_changelogs

    cfg = ExpireConfig(changelog_retain_min=1, changelog_retain_max=1, changelog_time_retain_ms=0)
    return expire_changelogs(t, cfg)


def _orphan_setup(t: Table) -> None:
    _two_writes(t)
    # A failed writer's leftover: a data file no snapshot references.
    w = t.new_write()
    w.write(rows(range(500, 510), "x"))
    w.prepare_commit()


def _orphans(t: Table) -> Any:
    return t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 60_000)


PK = {"bucket": "1"}

KINDS: dict[str, Kind] = {
    k.name: k
    for k in [
        Kind("pk_write", dict(PK), setup=_two_writes, run=_upsert),
        Kind("pk_deletion_vectors", {**PK, "deletion-vectors.enabled": "true"}, setup=_two_writes, run=_upsert),
        Kind("pk_lookup_changelog", {**PK, "changelog-producer": "lookup"}, setup=_two_writes, run=_upsert),
        Kind(
            "pk_full_compaction_changelog",
            {**PK, "changelog-producer": "full-compaction"},
            setup=_two_writes,
            run=_upsert,
        ),
        Kind("append_write", {"bucket": "-1"}, primary_key=(), setup=_two_writes, run=_append, rerun=False),
        Kind(
            "insert_overwrite",
            dict(PK),
            primary_key=("id", "dt"),
            partitioned=True,
            setup=_partitioned_setup,
            run=_overwrite,
        ),
        Kind("dynamic_bucket", {"bucket": "-1"}, setup=_two_writes, run=_upsert),
        Kind(
            "cross_partition",
            {"bucket": "-1"},
            partitioned=True,
            setup=_partitioned_setup,
            run=_cross_partition_move,
        ),
        Kind("streaming_batch", dict(PK), setup=_two_writes, run=_stream_batch),
        Kind("compact_job", dict(PK), setup=_two_writes, run=_compact),
        Kind("append_compact", {"bucket": "-1"}, primary_key=(), setup=_four_writes, run=_compact),
        Kind("append_delete", {"bucket": "-1"}, primary_key=(), setup=_four_writes, run=_append_delete),
        Kind(
            "append_delete_dv",
            {"bucket": "-1", "deletion-vectors.enabled": "true"},
            primary_key=(),
            setup=_four_writes,
            run=_append_delete,
        ),
        Kind(
            "expire_changelogs",
            {
                **PK,
                "changelog-producer": "input",
                "snapshot.num-retained.min": "1",
                "snapshot.num-retained.max": "1",
                "changelog.num-retained.min": "1",
                "changelog.num-retained.max": "10",
            },
            setup=_four_writes,
            run=_expire_changelogs,
        ),
        Kind("expire", dict(PK), setup=_two_writes, run=_expire),
        Kind("delete_tag", dict(PK), setup=_tag_setup, run=_delete_tag, rerun=False),
        Kind("create_tag", dict(PK), setup=_two_writes, run=_create_tag, rerun=False),
        Kind("rollback", dict(PK), setup=_two_writes, run=_rollback),
        Kind("remove_orphans", dict(PK), setup=_orphan_setup, run=_orphans),
    ]
}
