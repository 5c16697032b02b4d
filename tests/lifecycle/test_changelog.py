"""Changelog reads for the none and input producers, and long-lived (decoupled) changelogs."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratalake.exceptions import SnapshotNotFoundError
from stratalake.table import Table
from tests.lifecycle.helpers import batch, disk_files, fresh, make_table, needed_files, rows


def _records(cl: pa.Table) -> list[tuple[Any, ...]]:
    return [tuple(r.values()) for r in cl.to_pylist()]


def test_changelog_of_producer_none_is_the_folded_delta(tmp_path: Path) -> None:
    t = make_table(tmp_path, bucket="1")
    t.write(batch([3, 1, 2], "a"))  # 1
    t.write(
        pa.table({"id": [1, 1, 2], "v": ["b", "c", "x"], "dt": ["d1"] * 3, "k": ["+U", "+U", "-D"]}),
        row_kind="k",
    )  # 2: one folded record per key
    t.write(batch([9], "o"), overwrite=True)  # 3: an overwrite is no changelog
    cl = t.changelog()
    assert cl.column_names == ["_row_kind", "id", "v", "dt"]
    s1 = [("+I", 1, "a1", "d1"), ("+I", 2, "a2", "d1"), ("+I", 3, "a3", "d1")]
    s2 = [("+U", 1, "c", "d1"), ("-D", 2, "x", "d1")]
    assert _records(cl) == s1 + s2
    assert _records(t.changelog(1, 2)) == s2
    assert _records(t.changelog(0, 1)) == s1
    assert _records(t.changelog(2, 3)) == []
    assert _records(t.changelog(1)) == s2


def test_changelog_of_producer_input_is_every_record_in_order(tmp_path: Path) -> None:
    t = make_table(tmp_path, bucket="1", **{"changelog-producer": "input"})
    first = pa.table(
        {"id": [1, 1, 2, 1], "v": ["a", "b", "c", "d"], "dt": ["d1"] * 4, "k": ["+I", "+U", "+I", "-D"]}
    )
    with t.new_write() as w:
        w.write(first, row_kind="k")
        w.write(
            pa.table({"id": [2, 3], "v": ["e", "f"], "dt": ["d1", "d1"], "k": ["-U", "+I"]}), row_kind="k"
        )
        w.commit()
    t.write(batch([3], "g"))
    assert _records(t.changelog()) == [
        ("+I", 1, "a", "d1"),
        ("+U", 1, "b", "d1"),
        ("+I", 2, "c", "d1"),
        ("-D", 1, "d", "d1"),
        ("-U", 2, "e", "d1"),
        ("+I", 3, "f", "d1"),
        ("+I", 3, "g3", "d1"),
    ]
    assert rows(t.read()) == [(3, "g3", "d1")]


def test_changelog_range_errors(tmp_path: Path) -> None:
    t = make_table(tmp_path, **{"changelog-producer": "input"})
    assert t.changelog().num_rows == 0  # empty table
    for i in range(4):
        t.write(batch([i], "a"))
    with pytest.raises(SnapshotNotFoundError, match=r"\(3, 2\]"):
        t.changelog(3, 2)
    with pytest.raises(SnapshotNotFoundError):
        t.changelog(0, 5)
    t.expire_snapshots(retain_max=2, retain_min=1)
    assert _records(t.changelog()) == [("+I", 2, "a2", "d1"), ("+I", 3, "a3", "d1")]
    with pytest.raises(SnapshotNotFoundError, match=r"changelog\.num-retained\.min"):
        t.changelog(1, 4)


def _apply(state: dict[tuple[Any, ...], tuple[Any, ...]], cl: pa.Table) -> None:
    for r in cl.to_pylist():
        kind = r.pop("_row_kind")
        key = (r["id"], r["dt"])
        if kind in ("+I", "+U"):
            state[key] = tuple(r.values())
        else:
            state.pop(key, None)


_op = st.tuples(st.integers(0, 6), st.sampled_from(["d1", "d2"]), st.sampled_from(["+I", "+U", "-U", "-D"]))
_commits = st.lists(st.lists(_op, min_size=1, max_size=10), min_size=1, max_size=5)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commits=_commits)
def test_replaying_the_input_changelog_rebuilds_the_table(commits: list[list[tuple[int, str, str]]]) -> None:
    with tempfile.TemporaryDirectory() as d:
        # Writers compact on their own here (trigger 3): COMPACT snapshots carry no input changelog.
        t = make_table(Path(d), **{"changelog-producer": "input", "num-sorted-run.compaction-trigger": "3"})
        state: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        previous = 0
        for n, ops in enumerate(commits, start=1):
            data = pa.table(
                {
                    "id": [o[0] for o in ops],
                    "v": [f"v{n}-{i}" for i in range(len(ops))],
                    "dt": [o[1] for o in ops],
                    "k": [o[2] for o in ops],
                }
            )
            latest = t.write(data, row_kind="k")
            assert latest is not None
            cl = t.changelog(previous, latest)
            assert cl.num_rows == len(ops)  # every input record, none folded away
            _apply(state, cl)
            assert sorted(state.values()) == rows(t.read(snapshot_id=latest))
            previous = latest
        replayed: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        _apply(replayed, t.changelog(0, previous))
        assert sorted(replayed.values()) == rows(t.read())


@pytest.mark.parametrize("producer", ["none", "input"])
def test_long_lived_changelogs_outlive_snapshots(tmp_path: Path, producer: str) -> None:
    opts = {
        "changelog-producer": producer,
        "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "2",
        "changelog.num-retained.max": "4",
    }
    t = make_table(tmp_path, **opts)
    per_snapshot = {}
    for n in range(1, 7):
        t.write(batch([n, n + 10], f"s{n}-"))
        per_snapshot[n] = _records(t.changelog(n - 1, n))
    t = fresh(t)
    assert [s.id for s in t.snapshots()] == [5, 6]
    assert [c.id for c in t.changelog_manager.changelogs()] == [3, 4]
    assert (Path(t.location) / "changelog" / "changelog-3").exists()
    assert _records(t.changelog()) == [r for n in range(3, 7) for r in per_snapshot[n]]
    assert _records(t.changelog(3, 4)) == per_snapshot[4]
    with pytest.raises(SnapshotNotFoundError):
        t.changelog(1, 6)
    with pytest.raises(SnapshotNotFoundError):
        t.read(snapshot_id=4)  # the snapshot itself is gone
    assert disk_files(t) == needed_files(t, t.snapshots(), t.changelog_manager.changelogs())
    # Once changelogs expire too, their files go.
    assert t.expire_snapshots() == 0
    from stratalake.maintenance.expire import ExpireConfig, expire_changelogs

    cfg = ExpireConfig(
        snapshot_retain_min=1, snapshot_retain_max=2, changelog_retain_min=1, changelog_retain_max=2
    )
    assert expire_changelogs(t, cfg) == 2
    t = fresh(t)
    assert t.changelog_manager.changelogs() == []
    assert disk_files(t) == needed_files(t, t.snapshots())
    assert _records(t.changelog()) == per_snapshot[5] + per_snapshot[6]


def test_table_changelog_helpers_are_wired(tmp_path: Path) -> None:
    t: Table = make_table(tmp_path)
    t.write(batch([1], "a"))
    assert t.changelog().num_rows == 1


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_compaction_changelog_replays_to_the_compacted_state(tmp_path: Path, producer: str) -> None:
    t = make_table(tmp_path, **{"changelog-producer": producer})
    t.write(batch(range(10), "a"))
    t.write(batch(range(5), "b"))
    t.write(batch([1, 2], "x", kinds=["-D", "-D"]), row_kind="k")
    t.compact(full=True)
    t.write(batch(range(3), "c", dt="d2"))
    t.write(batch([3], "y", kinds=["-D"]), row_kind="k")
    t.compact(full=True)
    state: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    _apply(state, t.changelog())
    assert sorted(state.values()) == rows(t.read())
