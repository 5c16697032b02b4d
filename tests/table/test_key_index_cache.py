"""The per-process cache of cross-partition key indexes (``bucket/key_index_cache.py``): a writer
after the first takes the index the previous one bootstrapped and advances it by the data files
added since, reading nothing else of the table's data; where that cannot be exact (an overwrite,
expired snapshots, a rollback, a changed key) it bootstraps afresh. Checked against a fresh
writer's routing and a dict model of the table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stratalake
from stratalake.bucket.cross_partition import CrossPartitionAssigner, key_slices
from stratalake.bucket.key_index_cache import CACHE, SortedKeyIndex, fixed_keys
from stratalake.io import LocalFileIO
from stratalake.table.table import Table

PARTS = ("a", "b", "c", "d")


class Counting(LocalFileIO):
    """Records the data files read (paths under ``bucket-``)."""

    def __init__(self) -> None:
        super().__init__()
        self.data: list[str] = []

    def read_bytes(self, path: str) -> bytes:
        if "/bucket-" in path:
            self.data.append(path)
        return super().read_bytes(path)

    def open_input_file(self, path: str) -> Any:
        if "/bucket-" in path:
            self.data.append(path)
        return super().open_input_file(path)


def _table(d: Path, **options: str) -> Table:
    cat = stratalake.Catalog(str(d))
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table(
        "db.t",
        schema=pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())]),
        primary_key=["id"],
        partition_keys=["p"],
        options={"bucket": "-1", "dynamic-bucket.target-row-num": "7", **options},
    )


def _rows(ids: Any, v: str, parts: Any) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [v] * len(ids), "p": list(parts)})


def _counting(t: Table) -> tuple[Table, Counting]:
    io = Counting()
    return Table(io, t.location, t.identifier), io


def _added_files(t: Table, snapshot_id: int) -> set[str]:
    snap = t.snapshot(snapshot_id)
    mio = t.manifest_io
    return {
        e.file.file_name
        for m in mio.read_list(snap.delta_manifest_list)
        for e in mio.read_entries(m.file_name)
    }


def _contents(t: Table) -> dict[int, tuple[str, str]]:
    out: dict[int, tuple[str, str]] = {}
    for r in t.refresh().read().to_pylist():
        assert r["id"] not in out, f"key {r['id']} stored twice"
        out[r["id"]] = (r["p"], r["v"])
    return out


@pytest.fixture(autouse=True)
def _fresh_cache() -> Any:
    CACHE.clear()
    yield
    CACHE.clear()


def test_cdc_batches_read_only_the_previous_batch_files(tmp_path: Path) -> None:
    """The CDC shape scaled down: a table of 6000 keys in 8 partitions written by 6 commits, then
    micro-batches of 300 upserts (a third moving partition): every batch after the first reads
    exactly the data files the batch before it added, never the table's other files."""
    t = _table(tmp_path, **{"dynamic-bucket.target-row-num": "500", "write-only": "true"})
    parts = [f"p{i}" for i in range(8)]
    for start in range(0, 6000, 1000):
        ids = np.arange(start, start + 1000)
        t.write(_rows(ids, "init", [parts[i % 8] for i in ids]))
    total_files = len(t.live_entries(t.latest_snapshot()))  # type: ignore[arg-type]
    model = {int(i): (parts[i % 8], "init") for i in range(6000)}
    rng = np.random.default_rng(7)
    previous: int | None = None
    CACHE.clear()  # the batches run in a new process
    for batch in range(5):
        ids = rng.choice(6000 + 100 * batch, size=300, replace=False)
        new_parts = [parts[(i + (batch + 1) * (i % 3 == 0)) % 8] for i in ids.tolist()]
        counted, io = _counting(t)
        sid = counted.write(_rows(ids, f"b{batch}", new_parts))
        assert sid is not None
        read = {p.rsplit("/", 1)[1] for p in io.data}
        if previous is None:
            assert len(read) >= total_files  # the first writer bootstraps from every live file
        else:
            assert read == _added_files(t, previous), batch  # only what the previous batch added
        previous = sid
        for i, p in zip(ids.tolist(), new_parts, strict=True):
            model[i] = (p, f"b{batch}")
    assert CACHE.stats["hit"] == 4 and CACHE.stats["miss"] == 1
    assert _contents(t) == model


def test_fallbacks_bootstrap_afresh(tmp_path: Path) -> None:
    """An overwrite, expired snapshots in the gap, a rollback: the cached index is not advanced
    across them; the writer bootstraps afresh and places keys where a fresh writer would."""
    t = _table(tmp_path)
    t.write(_rows(range(40), "x", [PARTS[i % 4] for i in range(40)]))
    t.write(_rows(range(10), "y", ["a"] * 10))
    t.write(_rows(range(20), "o", ["b"] * 20), overwrite=True)
    t.write(_rows(range(5), "z", ["c"] * 5))
    assert CACHE.stats["fallback:overwrite"] == 1
    t.rollback_to(2)
    t.write(_rows(range(30, 35), "r", ["d"] * 5))  # snapshot 3 again: not the one cached
    assert CACHE.stats["fallback:rollback"] == 1
    model = {i: (PARTS[i % 4], "x") for i in range(40)}
    model.update({i: ("a", "y") for i in range(10)})
    model.update({i: ("d", "r") for i in range(30, 35)})
    assert _contents(t) == model


def test_budget_evicts_least_recently_used(tmp_path: Path) -> None:
    one = _table(tmp_path / "one")
    two = _table(tmp_path / "two", **{"stratalake.key-index-cache.max-memory": "1 kb"})
    one.write(_rows(range(50), "x", ["a"] * 50))
    one.write(_rows(range(5), "y", ["b"] * 5))
    assert CACHE.nbytes() > 1024
    two.write(_rows(range(5), "x", ["a"] * 5))
    two.write(_rows(range(5), "y", ["b"] * 5))  # two's budget: one's index goes
    assert CACHE.stats["evicted"] == 1 and 0 < CACHE.nbytes() <= 1024
    two.write(_rows(range(100, 150), "z", ["b"] * 50))
    two.write(_rows(range(5), "w", ["c"] * 5))  # now larger than its budget: not kept
    assert CACHE.stats["too_large"] == 1 and CACHE.nbytes() == 0
    off = _table(tmp_path / "off", **{"stratalake.key-index-cache.max-memory": "0"})
    off.write(_rows(range(50), "x", ["a"] * 50))
    w = off.new_write()
    w.write(_rows(range(5), "y", ["b"] * 5))
    assert w._cross is not None and w._cross._cache is None
    w.abort()


def _route(t: Table, rows: pa.Table, kinds: pa.Array | None, cached: bool, n: int) -> list[Any]:
    """Each slice's routing of ``rows`` (as n Spark tasks would)."""
    out = []
    slices = key_slices(t, rows, n)
    for s in range(n):
        mine = rows.filter(pa.array(slices == s))
        if not mine.num_rows:
            continue
        k = kinds.filter(pa.array(slices == s)) if kinds is not None else None
        a = CrossPartitionAssigner(t, num_assigners=n if n > 1 else None, cache=CACHE if cached else None)
        routed, rk, buckets = a.route(mine, k)
        out.append((routed.to_pylist(), None if rk is None else rk.to_pylist(), buckets.tolist()))
    return out


_op = st.one_of(
    st.tuples(
        st.just("upsert"),
        st.lists(st.tuples(st.integers(0, 40), st.sampled_from(PARTS)), min_size=1, max_size=25),
    ),
    st.tuples(
        st.just("delete"),
        st.lists(st.tuples(st.integers(0, 40), st.sampled_from(PARTS)), min_size=1, max_size=6),
    ),
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(
        st.just("overwrite"), st.lists(st.tuples(st.integers(0, 40), st.sampled_from(PARTS)), max_size=10)
    ),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_op, min_size=2, max_size=8), n=st.sampled_from([1, 2]))
def test_model_cached_routing_matches_a_fresh_bootstrap(
    tmp_path_factory: Any, ops: list[Any], n: int
) -> None:
    """Random statements through cached writers: each routes as a writer bootstrapping afresh (as n
    slice writers too), and the table reads back as a dict model."""
    CACHE.clear()
    t = _table(tmp_path_factory.mktemp("model"))
    model: dict[int, tuple[str, str]] = {}
    # The first statement fills the table, the last follows another write: a cached index serves it.
    spread = ("upsert", [(i, PARTS[i % 4]) for i in range(0, 40, 3)])
    for step, (kind, arg) in enumerate([spread, *ops, spread, spread]):
        v = f"s{step}"
        if kind == "compact":
            t.compact(full=arg)
            continue
        rows = _rows([i for i, _ in arg], v, [p for _, p in arg])
        if kind == "overwrite":
            t.write(rows, overwrite=True)
            model = {}
            for i, p in arg:
                model[i] = (p, v)
            assert _contents(t) == model
            t = t.refresh()
            continue
        kinds = pa.array(["-D" if kind == "delete" else "+I"] * rows.num_rows)
        data = rows.append_column("k", kinds)
        typed = pa.array([3 if kind == "delete" else 0] * rows.num_rows, pa.int8())
        assert _route(t, rows, typed, True, n) == _route(t, rows, typed, False, n), (step, kind)
        t.write(data, row_kind="k")
        for i, p in arg:
            if kind == "delete":
                model.pop(i, None)
            else:
                model[i] = (p, v)
        assert _contents(t) == model, (step, kind)
        t = t.refresh()
    assert CACHE.stats["hit"] > 0


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.booleans(),
            st.dictionaries(
                st.binary(min_size=0, max_size=20),
                st.tuples(st.integers(0, 5), st.integers(0, 9)),
                max_size=12,
            ),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_sorted_key_index_is_a_dict(steps: list[tuple[bool, dict[bytes, tuple[int, int]]]]) -> None:
    """Puts and removals of keys of mixed lengths (trailing zero bytes too) against a dict; keys
    are compared zero padded (as BinaryRows of one table, which never differ by padding alone)."""

    def norm(k: bytes) -> bytes:
        return k.rstrip(b"\x00")

    model: dict[bytes, tuple[int, int]] = {}
    index = SortedKeyIndex.empty()
    for remove, entries in steps:
        entries = {norm(k): v for k, v in entries.items()}
        keys = fixed_keys(pa.array(list(entries), pa.binary()))
        if remove:
            index = index.without(keys)
            for k in entries:
                model.pop(k, None)
        else:
            index = index.put(keys, [p for p, _ in entries.values()], [b for _, b in entries.values()])
            model.update(entries)
        assert index.num_rows == len(model)
        probe = [*model, b"\x01" * 25]  # longer than any key
        part, bucket = index.lookup(fixed_keys(pa.array(probe, pa.binary())))
        assert list(zip(part.tolist(), bucket.tolist(), strict=True)) == [*model.values(), (-1, -1)]


def test_expired_snapshots_in_the_gap_bootstrap_afresh(tmp_path: Path) -> None:
    """Another process (here: writers without the cache) wrote and expired the snapshots after the
    cached one: the index is not advanced over the gap but bootstrapped afresh."""
    t = _table(tmp_path)
    t.write(_rows(range(30), "x", [PARTS[i % 4] for i in range(30)]))
    t.write(_rows(range(5), "y", ["a"] * 5))  # bootstraps at snapshot 1: cached
    other = t.copy({"stratalake.key-index-cache.max-memory": "0"})
    for step in range(3):
        other.write(_rows(range(10 + step, 20), f"o{step}", ["d"] * (10 - step)))
    assert t.refresh().expire_snapshots(retain_max=1, retain_min=1) > 0
    t.refresh().write(_rows(range(12, 14), "z", ["b"] * 2))
    assert CACHE.stats["fallback:expired"] == 1
    model = {i: (PARTS[i % 4], "x") for i in range(30)}
    model.update({i: ("a", "y") for i in range(5)})
    for step in range(3):
        model.update({i: ("d", f"o{step}") for i in range(10 + step, 20)})
    model.update({i: ("b", "z") for i in range(12, 14)})
    assert _contents(t) == model


@pytest.mark.parametrize("engine", ["partial-update", "aggregation"])
def test_engines_that_keep_keys_in_place_advance_too(tmp_path: Path, engine: str) -> None:
    """Partial-update and aggregation keep a key in its partition: the cached index advances
    over their files (no retractions) and routes as a fresh bootstrap does."""
    options = {"merge-engine": engine}
    if engine == "aggregation":
        options["fields.v.aggregate-function"] = "max"
    t = _table(tmp_path, **options)
    t.write(_rows(range(30), "a", [PARTS[i % 4] for i in range(30)]))
    for step in range(3):
        rows = _rows(
            range(step * 5, step * 5 + 20), f"b{step}", [PARTS[(i + step + 1) % 4] for i in range(20)]
        )
        assert _route(t, rows, None, True, 1) == _route(t, rows, None, False, 1)
        t.write(rows)
        t = t.refresh()
    assert CACHE.stats["hit"] >= 3 and not any(k.startswith("fallback") for k in CACHE.stats)
    located = _contents(t)
    # Every key stays in the partition it was first written to.
    assert {i: p for i, (p, _) in located.items()} == {i: PARTS[i % 4] for i in range(30)}
