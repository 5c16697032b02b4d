"""Changelog producers: applying the changelog of snapshots 1..n to an empty table gives the table
at snapshot n, wherever the producer has caught up (input: always; lookup: no level-0 file left;
full-compaction: everything in the top level)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import stratalake
from stratalake.lsm.data_file import bucket_dir, read_kv_file
from stratalake.spec.manifest import FileKind
from stratalake.spec.snapshot import CommitKind, Snapshot

KINDS = ("+I", "-U", "+U", "-D")
Record = tuple[str, int, Any]


def make(tmp: Path, producer: str, **options: str) -> stratalake.Table:
    cat = stratalake.Catalog(str(tmp / "wh"))
    cat.create_database("db", ignore_if_exists=True)
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    opts = {"bucket": "2", "changelog-producer": producer, **options}
    return cat.create_table("db.t", schema=schema, primary_key=["k"], options=opts)


def changelog(t: stratalake.Table, snap: Snapshot, value: str = "v") -> list[Record]:
    """Records of the snapshot's changelog files, read directly, in manifest order."""
    if not snap.changelog_manifest_list:
        return []
    mio, codec = t.manifest_io, t.partition_codec
    out: list[Record] = []
    for m in mio.read_list(snap.changelog_manifest_list):
        for e in mio.read_entries(m.file_name):
            assert e.kind is FileKind.ADD
            path = f"{bucket_dir(t.location, codec.path(codec.from_bytes(e.partition)), e.bucket)}/{e.file.file_name}"
            kv = read_kv_file(t.file_io, path, t.file_schema(e.file.schema_id), t.schema())
            out += [(KINDS[r["_VALUE_KIND"]], r["k"], r[value]) for r in kv.to_pylist()]
    assert snap.changelog_record_count == len(out)
    return out


def apply(state: dict[int, Any], records: list[Record], strict: bool) -> None:
    """Apply changelog records; ``strict`` also checks they are a proper changelog of ``state``."""
    for kind, k, v in records:
        if strict:
            if kind == "+I":
                assert k not in state, f"+I of present key {k}"
            elif kind in ("-U", "-D"):
                assert state.get(k) == v, f"{kind} {k}={v!r} but the state holds {state.get(k)!r}"
        if kind in ("+I", "+U"):
            state[k] = v
        else:
            state.pop(k, None)


def caught_up(t: stratalake.Table, snap: Snapshot, producer: str) -> bool:
    files = [e.file for e in t.live_entries(snap)]
    if producer == "lookup":
        return all(f.level > 0 for f in files)
    if producer == "full-compaction":
        return all(f.level == t.core_options.num_levels - 1 for f in files)
    return True


def check_invariant(t: stratalake.Table, producer: str, value: str = "v") -> int:
    """Replay every snapshot's changelog; compare where caught up. Returns how many matched."""
    state: dict[int, Any] = {}
    checked = 0
    for snap in t.snapshots():
        apply(state, changelog(t, snap, value), strict=producer != "input")
        if caught_up(t, snap, producer):
            expected = {r["k"]: r[value] for r in t.read(snapshot_id=snap.id).to_pylist()}
            assert state == expected, f"snapshot {snap.id} ({snap.commit_kind.value})"
            checked += 1
    return checked


def test_lookup_second_insert_is_an_update(tmp_path: Path) -> None:
    t = make(tmp_path, "lookup")
    t.write(pa.table({"k": [1], "v": ["1"]}))
    t.write(pa.table({"k": [1], "v": ["2"]}))
    # Each new run is merged straight into the level its compaction would choose (written once),
    # and committed as Paimon's writer commits it: the APPEND snapshot adds it at level 0, the
    # COMPACT snapshot upgrades it and carries the changelog (Paimon 1.0 reads it only there).
    snaps = t.snapshots()
    assert [s.commit_kind for s in snaps] == [CommitKind.APPEND, CommitKind.COMPACT] * 2
    assert all(e.file.level > 0 for e in t.live_entries(t.latest_snapshot()))
    assert all(
        e.file.level == 0
        for e in t.live_entries(snaps[2])
        if e.file.file_name not in {x.file.file_name for x in t.live_entries(snaps[1])}
    )
    logs = [changelog(t, s) for s in snaps]
    assert logs == [[], [("+I", 1, "1")], [], [("-U", 1, "1"), ("+U", 1, "2")]]
    t.write(pa.table({"k": [1], "v": ["x"], "op": ["-D"]}), row_kind="op")
    assert changelog(t, t.latest_snapshot()) == [("-D", 1, "2")]
    if hasattr(t, "changelog"):  # the reading API, when present, sees the same records
        got = t.changelog().to_pylist()
        assert [(r["_row_kind"], r["k"], r["v"]) for r in got] == [
            ("+I", 1, "1"),
            ("-U", 1, "1"),
            ("+U", 1, "2"),
            ("-D", 1, "2"),
        ]


def test_lookup_row_deduplicate_skips_unchanged_rows(tmp_path: Path) -> None:
    t = make(tmp_path, "lookup", **{"changelog-producer.row-deduplicate": "true"})
    t.write(pa.table({"k": [1, 2], "v": ["a", "b"]}))
    t.write(pa.table({"k": [1, 2], "v": ["a", "c"]}))
    assert changelog(t, t.latest_snapshot()) == [("-U", 2, "b"), ("+U", 2, "c")]


def test_lookup_finds_old_values_in_higher_levels(tmp_path: Path) -> None:
    # Many commits push data through several levels; old values must still be found.
    t = make(tmp_path, "lookup", bucket="1", **{"num-sorted-run.compaction-trigger": "3"})
    for i in range(8):
        t.write(pa.table({"k": [i, 0], "v": [f"n{i}", f"z{i}"]}))
    assert {e.file.level for e in t.live_entries(t.latest_snapshot())} - {0} != set()
    assert check_invariant(t, "lookup") == 8  # every COMPACT snapshot


def test_lookup_with_aggregation_changelog_carries_merged_values(tmp_path: Path) -> None:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table(
        "db.agg",
        schema=pa.schema([("k", pa.int64()), ("n", pa.int64())]),
        primary_key=["k"],
        options={
            "bucket": "1",
            "changelog-producer": "lookup",
            "merge-engine": "aggregation",
            "fields.n.aggregate-function": "sum",
            "num-sorted-run.compaction-trigger": "2",
        },
    )
    for n in (5, 3, 2, 10):
        t.write(pa.table({"k": [1], "n": [n]}))
    records = [r for s in t.snapshots() for r in changelog(t, s, "n")]
    assert records == [
        ("+I", 1, 5),
        ("-U", 1, 5),
        ("+U", 1, 8),
        ("-U", 1, 8),
        ("+U", 1, 10),
        ("-U", 1, 10),
        ("+U", 1, 20),
    ]
    assert t.read().to_pylist() == [{"k": 1, "n": 20}]


def test_full_compaction_every_delta_commits(tmp_path: Path) -> None:
    t = make(tmp_path, "full-compaction", **{"full-compaction.delta-commits": "2"})
    t.write(pa.table({"k": [1, 2], "v": ["a", "b"]}))
    assert [s.commit_kind for s in t.snapshots()] == [CommitKind.APPEND]
    t.write(pa.table({"k": [1, 3], "v": ["c", "d"]}))
    assert [s.commit_kind for s in t.snapshots()][-1] is CommitKind.COMPACT
    assert sorted(changelog(t, t.latest_snapshot())) == [("+I", 1, "c"), ("+I", 2, "b"), ("+I", 3, "d")]
    t.write(pa.table({"k": [1], "v": ["e"], "op": ["-D"]}), row_kind="op")
    t.write(pa.table({"k": [2], "v": ["f"]}))
    assert sorted(changelog(t, t.latest_snapshot())) == [("+U", 2, "f"), ("-D", 1, "c"), ("-U", 2, "b")]
    assert check_invariant(t, "full-compaction") == 2


def test_full_compaction_default_is_every_commit_and_job_produces_it_too(tmp_path: Path) -> None:
    t = make(tmp_path, "full-compaction")
    t.write(pa.table({"k": [1], "v": ["a"]}))
    assert changelog(t, t.latest_snapshot()) == [("+I", 1, "a")]
    w = make(tmp_path / "w", "full-compaction", **{"write-only": "true"})
    w.write(pa.table({"k": [1], "v": ["a"]}))
    w.write(pa.table({"k": [1], "v": ["b"]}))
    assert not any(s.changelog_manifest_list for s in w.snapshots())
    w.compact(full=True)
    assert changelog(w, w.latest_snapshot()) == [("+I", 1, "b")]


def test_input_changelog_holds_every_input_record(tmp_path: Path) -> None:
    t = make(tmp_path, "input")
    t.write(pa.table({"k": [1, 1], "v": ["a", "b"]}))
    assert changelog(t, t.latest_snapshot()) == [("+I", 1, "a"), ("+I", 1, "b")]


ops = st.lists(
    st.tuples(
        st.sampled_from(["+I", "+U", "-D", "+I"]), st.integers(0, 12), st.sampled_from(["a", "b", "c"])
    ),
    min_size=1,
    max_size=40,
)


@pytest.mark.parametrize("producer", ["input", "lookup", "full-compaction"])
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    history=ops,
    cuts=st.lists(st.integers(1, 40), max_size=6),
    jobs=st.lists(st.tuples(st.integers(0, 6), st.booleans()), max_size=3),
    trigger=st.sampled_from(["2", "4"]),
    delta=st.sampled_from([None, "1", "3"]),
    row_dedup=st.booleans(),
    buckets=st.sampled_from(["1", "2"]),
    write_only=st.booleans(),
)
def test_changelog_replays_to_table_state(
    tmp_path_factory: pytest.TempPathFactory,
    producer: str,
    history: list[tuple[str, int, str]],
    cuts: list[int],
    jobs: list[tuple[int, bool]],
    trigger: str,
    delta: str | None,
    row_dedup: bool,
    buckets: str,
    write_only: bool,
) -> None:
    options = {
        "num-sorted-run.compaction-trigger": trigger,
        "changelog-producer.row-deduplicate": str(row_dedup).lower(),
        "bucket": buckets,
        "write-only": str(write_only).lower(),  # then only the compaction job produces changelog
    }
    if delta is not None and producer == "full-compaction":
        options["full-compaction.delta-commits"] = delta
    t = make(tmp_path_factory.mktemp("cl"), producer, **options)
    bounds = sorted({c for c in cuts if c < len(history)} | {0, len(history)})
    for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        part = history[lo:hi]
        t.write(
            pa.table({"k": [o[1] for o in part], "v": [o[2] for o in part], "op": [o[0] for o in part]}),
            row_kind="op",
        )
        for when, full in jobs:
            if when == i:
                t.compact(full=full)
    t.compact(full=True)  # whatever the options, the producer has caught up afterwards
    assert check_invariant(t, producer) >= 1


@pytest.mark.parametrize(
    ("engine", "kinds"),
    [
        ({}, ("+I", "+U", "-D")),
        ({"merge-engine": "partial-update"}, ("+I",)),
        ({"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"}, ("+I", "+I", "-D")),
        ({"merge-engine": "first-row"}, ("+I",)),
    ],
    ids=["deduplicate", "partial-update", "aggregation", "first-row"],
)
@pytest.mark.parametrize("key_type", ["int", "string"])  # binary search / semi join lookups
def test_new_runs_merged_directly_equal_level0_compaction(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    engine: dict[str, str],
    kinds: tuple[str, ...],
    key_type: str,
) -> None:
    """A lookup writer merges each new run straight into the level its compaction would pick;
    Paimon writes it to level 0 and compacts it right away. Same rows, same changelog, and the
    same snapshots: APPEND at level 0, then a COMPACT snapshot that carries the changelog."""
    from stratalake.changelog.lookup import LookupChangelogRewriter

    rng = np.random.default_rng(11)
    batches = []
    for c in range(6):
        n = 40
        batches.append(
            pa.table(
                {
                    "k": [int(k) if key_type == "int" else f"key-{k:02d}" for k in rng.integers(0, 30, n)],
                    "v": [None if x == 0 else f"v{c}-{x}" for x in rng.integers(0, 5, n)],
                    "n": rng.integers(0, 100, n),
                    "op": list(rng.choice(kinds, n)),
                }
            )
        )

    def run(tmp: Path) -> tuple[stratalake.Table, list[dict[str, Any]], list[dict[str, Any]]]:
        cat = stratalake.Catalog(str(tmp))
        cat.create_database("db")
        key = pa.int64() if key_type == "int" else pa.string()
        schema = pa.schema([("k", key), ("v", pa.string()), ("n", pa.int64())])
        opts = {"bucket": "2", "changelog-producer": "lookup", "num-sorted-run.compaction-trigger": "3"}
        t = cat.create_table("db.t", schema=schema, primary_key=["k"], options={**opts, **engine})
        for b in batches:
            t.write(b, row_kind="op")
        rows = sorted(t.read().to_pylist(), key=lambda r: r["k"])
        log = t.changelog().to_pylist()  # in commit order, by bucket, by sequence number
        return t, rows, log

    direct, direct_rows, direct_log = run(tmp_path / "direct")
    with monkeypatch.context() as m:
        m.setattr(LookupChangelogRewriter, "merges_new_runs", lambda self: False)
        level0, level0_rows, level0_log = run(tmp_path / "level0")
    assert direct_rows == level0_rows and direct_rows
    assert direct_log == level0_log
    assert {s.commit_kind for s in level0.snapshots()} == {CommitKind.APPEND, CommitKind.COMPACT}
    assert [s.commit_kind for s in direct.snapshots()[:2]] == [CommitKind.APPEND, CommitKind.COMPACT]
    assert all(
        s.changelog_manifest_list is None for s in direct.snapshots() if s.commit_kind is CommitKind.APPEND
    )
    assert all(e.file.level > 0 for e in direct.live_entries(direct.latest_snapshot()))


def _files_of(t: stratalake.Table, snap: Snapshot, changelog_files: bool = False) -> dict[str, Any]:
    """File name -> meta of the snapshot's delta (or changelog) manifests' added files."""
    mio = t.manifest_io
    listed = snap.changelog_manifest_list if changelog_files else snap.delta_manifest_list
    out: dict[str, Any] = {}
    for m in mio.read_list(listed) if listed else ():
        for e in mio.read_entries(m.file_name):
            if e.kind is FileKind.ADD:
                out[e.file.file_name] = (e.partition, e.bucket, e.file)
    return out


def test_lookup_upgrades_level0_in_place_and_copies_a_changelog_of_inserts(tmp_path: Path) -> None:
    """Paimon's upgrade without rewrite (deletion vectors, deduplicate): the level-0 file moves up
    under its own name; a changelog that is all of its rows as inserts (a first load) is the file
    copied; updates still get -U/+U, and a file with retractions is rewritten."""
    t = make(tmp_path, "lookup", bucket="1", **{"deletion-vectors.enabled": "true"})
    t.write(pa.table({"k": list(range(50)), "v": [f"a{i}" for i in range(50)]}))
    append, compact = t.snapshots()
    assert (append.commit_kind, compact.commit_kind) == (CommitKind.APPEND, CommitKind.COMPACT)
    (level0,) = _files_of(t, append).values()
    upgraded = _files_of(t, compact)
    assert list(upgraded) == [level0[2].file_name] and upgraded[level0[2].file_name][2].level > 0
    (copied,) = _files_of(t, compact, changelog_files=True).values()
    directory = bucket_dir(t.location, t.partition_codec.path(t.partition_codec.from_bytes(copied[0])), 0)
    data_bytes = t.file_io.read_bytes(f"{directory}/{level0[2].file_name}")
    assert t.file_io.read_bytes(f"{directory}/{copied[2].file_name}") == data_bytes
    assert copied[2].row_count == 50 and copied[2].file_name.startswith("changelog-")
    assert changelog(t, compact) == [("+I", i, f"a{i}") for i in range(50)]

    # Updates of stored keys and a new key: upgraded in place again, the changelog encoded.
    t.write(pa.table({"k": [3, 7, 60], "v": ["b3", "b7", "b60"]}))
    append, compact = t.snapshots()[-2:]
    (level0,) = _files_of(t, append).values()
    assert list(_files_of(t, compact)) == [level0[2].file_name]
    assert changelog(t, compact) == [
        ("-U", 3, "a3"),
        ("+U", 3, "b3"),
        ("-U", 7, "a7"),
        ("+U", 7, "b7"),
        ("+I", 60, "b60"),
    ]

    # A retraction: rewritten (the -D record is dropped on the way up, the old row masked).
    t.write(pa.table({"k": [5, 8], "v": ["x", "c8"], "op": ["-D", "+I"]}), row_kind="op")
    append, compact = t.snapshots()[-2:]
    (level0,) = _files_of(t, append).values()
    assert level0[2].file_name not in _files_of(t, compact)
    assert changelog(t, compact) == [("-D", 5, "a5"), ("-U", 8, "a8"), ("+U", 8, "c8")]
    expected = {i: f"a{i}" for i in range(50) if i != 5} | {3: "b3", 7: "b7", 60: "b60", 8: "c8"}
    assert {r["k"]: r["v"] for r in t.read().to_pylist()} == expected
    assert check_invariant(t, "lookup") == 3

    # As many changelog records as rows, yet not the rows: one key updated, one unchanged.
    options = {"deletion-vectors.enabled": "true", "changelog-producer.row-deduplicate": "true"}
    u = make(tmp_path / "dedup", "lookup", bucket="1", **options)
    u.write(pa.table({"k": list(range(50)), "v": [f"a{i}" for i in range(50)]}))
    u.write(pa.table({"k": [3, 7], "v": ["b3", "a7"]}))
    append, compact = u.snapshots()[-2:]
    assert list(_files_of(u, compact)) == list(_files_of(u, append))  # upgraded in place
    assert changelog(u, compact) == [("-U", 3, "a3"), ("+U", 3, "b3")]


_ENGINES = {
    "deduplicate": ({}, ("+I", "+U", "-D")),
    "inserts": ({}, ("+I",)),
    "partial-update": ({"merge-engine": "partial-update"}, ("+I",)),
    "aggregation": (
        {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
        ("+I", "+I", "-D"),
    ),
    "first-row": ({"merge-engine": "first-row"}, ("+I",)),
    "sequence-field": ({"sequence.field": "n"}, ("+I", "+U")),
}


@pytest.mark.parametrize(
    ("engine", "kinds", "vectors"),
    [
        pytest.param(*_ENGINES[name], vectors, id=f"{name}-{'dv' if vectors else 'no-dv'}")
        for name in _ENGINES
        for vectors in (True, False)
        if not (vectors and name == "first-row")  # first-row tables take no deletion vectors
    ],
)
def test_level0_upgrades_in_place_equal_rewrites(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    engine: dict[str, str],
    kinds: tuple[str, ...],
    vectors: bool,
) -> None:
    """Moving level-0 files up without rewriting them (and copying a changelog of inserts) gives
    the rows and changelog that rewriting every such file gives, engine by engine."""
    from stratalake.changelog.lookup import LookupChangelogRewriter

    rng = np.random.default_rng(5)
    batches = [
        pa.table(
            {
                "k": rng.integers(c * 10, c * 10 + 40, 30),  # new keys and stored ones
                "v": [f"v{c}-{x}" for x in rng.integers(0, 5, 30)],
                "n": rng.integers(0, 100, 30),
                "op": list(rng.choice(kinds, 30)),
            }
        )
        for c in range(6)
    ]

    def run(tmp: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        cat = stratalake.Catalog(str(tmp))
        cat.create_database("db")
        schema = pa.schema([("k", pa.int64()), ("v", pa.string()), ("n", pa.int64())])
        opts = {
            "bucket": "2",
            "changelog-producer": "lookup",
            "num-sorted-run.compaction-trigger": "3",
            "deletion-vectors.enabled": str(vectors).lower(),
        }
        t = cat.create_table("db.t", schema=schema, primary_key=["k"], options={**opts, **engine})
        for b in batches:
            t.write(b, row_kind="op")
        return sorted(t.read().to_pylist(), key=lambda r: r["k"]), t.changelog().to_pylist()

    with monkeypatch.context() as m:  # every level-0 file goes through the upgrade
        m.setattr(LookupChangelogRewriter, "merges_new_runs", lambda self: False)
        in_place = run(tmp_path / "in-place")
        m.setattr(LookupChangelogRewriter, "_rewrites_on_upgrade", lambda self, level, f: True)
        rewritten = run(tmp_path / "rewritten")
    assert in_place[0] and in_place == rewritten
