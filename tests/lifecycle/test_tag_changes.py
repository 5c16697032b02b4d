"""Renaming and replacing tags, tagging and rolling back by commit time, and the tag procedures'
arguments (Paimon's rename_tag, replace_tag, create_tag_from_timestamp, rollback_to_timestamp)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import stratalake
from stratalake.exceptions import (
    InvalidOptionError,
    SnapshotNotFoundError,
    TagAlreadyExistsError,
    TagNotFoundError,
)
from stratalake.maintenance.tags import read_tag
from stratalake.spark import procedures
from tests.lifecycle.helpers import batch, build_history, disk_files, fresh, make_table, needed_files, rows


def test_rename_keeps_the_tag_file_and_refuses_clashes(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.write(batch([1], "a"))
    t.write(batch([2], "b"))
    t.create_tag("v1", snapshot_id=1, time_retained="1 d")
    t.create_tag("v2")
    before = (Path(t.location) / "tag" / "tag-v1").read_bytes()
    assert t.rename_tag("v1", "first").id == 1
    assert (Path(t.location) / "tag" / "tag-first").read_bytes() == before  # retention kept
    assert set(t.tags()) == {"first", "v2"}
    with pytest.raises(TagAlreadyExistsError, match=r"table db\.t: cannot rename tag 'first' to 'v2'"):
        t.rename_tag("first", "v2")
    with pytest.raises(TagNotFoundError, match=r"table db\.t: tag 'nope' does not exist"):
        t.rename_tag("nope", "x")
    with pytest.raises(InvalidOptionError, match="not a valid tag name"):
        t.rename_tag("first", "12")
    assert {n: s.id for n, s in t.tags().items()} == {"first": 1, "v2": 2}


def test_replace_moves_the_tag_and_frees_what_only_it_held(tmp_path: Path) -> None:
    t = make_table(tmp_path, **{"manifest.merge-min-count": "3"})
    build_history(t)
    at2, at7 = rows(t.read(snapshot_id=2)), rows(t.read())
    t.create_tag("v", snapshot_id=2)
    with pytest.raises(
        TagNotFoundError, match=r"table db\.t: tag 'w' does not exist, so it cannot be replaced"
    ):
        t.replace_tag("w")
    t.expire_snapshots(retain_max=1, retain_min=1)
    t = fresh(t)
    assert rows(read_tag(t, "v")) == at2
    held_by_tag = needed_files(t, [t.tags()["v"]]) - needed_files(t, t.snapshots())
    assert held_by_tag and held_by_tag <= disk_files(t)
    assert t.replace_tag("v", time_retained="2 h").id == 7  # default: the latest snapshot
    t = fresh(t)
    assert rows(read_tag(t, "v")) == at7
    assert json.loads((Path(t.location) / "tag" / "tag-v").read_text())["tagTimeRetained"] == 7200
    # The files only the old target held are gone; everything still referenced is there.
    assert not held_by_tag & disk_files(t)
    assert disk_files(t) == needed_files(t, [*t.snapshots(), *t.tags().values()])


def test_tag_and_roll_back_by_commit_time(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    for i in range(4):
        t.write(batch([i], f"v{i}"))
        time.sleep(0.002)  # distinct commit times
    times = {s.id: s.time_millis for s in t.snapshots()}
    assert t.create_tag_from_timestamp("a", times[1] - 1).id == 1
    assert t.create_tag_from_timestamp("b", times[3]).id == 3
    with pytest.raises(
        SnapshotNotFoundError, match=r"table db\.t: no snapshot or tag was committed at or after"
    ):
        t.create_tag_from_timestamp("c", times[4] + 1)
    # Snapshot 1 expires; tag "a" still holds it, so a time before snapshot 2 finds the tag's copy.
    t.expire_snapshots(retain_max=3, retain_min=3)
    t = fresh(t)
    assert t.snapshot_manager.earliest_snapshot_id() == 2
    assert t.create_tag_from_timestamp("a2", times[1]).id == 1
    assert rows(read_tag(t, "a2")) == [(0, "v00", "d1")]

    assert t.rollback_to_timestamp(times[3]).id == 3
    t = fresh(t)
    assert t.latest_snapshot().id == 3  # type: ignore[union-attr]
    assert rows(t.read()) == [(0, "v00", "d1"), (1, "v11", "d1"), (2, "v22", "d1")]
    with pytest.raises(SnapshotNotFoundError, match=r"table db\.t: no snapshot at or before timestamp"):
        t.rollback_to_timestamp(times[2] - 10_000)
    assert t.latest_snapshot().id == 3  # type: ignore[union-attr]


def _call(tmp_path: Path, name: str, **args: Any) -> list[list[Any]]:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    rows_: list[list[Any]] = procedures.call(cat, name, {"table": "db.t", **args}, {})["rows"]
    return rows_


def test_tag_procedures_answer_as_paimon_and_refuse_bad_arguments(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.write(batch([1], "a"))
    t.write(batch([2], "b"))
    snap1 = t.snapshot(1)
    assert _call(tmp_path, "create_tag_from_timestamp", tag="t1", timestamp=snap1.time_millis) == [
        ["t1", 1, snap1.time_millis, "null"]
    ]
    assert _call(tmp_path, "create_tag", tag="t1", if_not_exists=True) == [[True]]  # already there: kept
    assert _call(tmp_path, "replace_tag", tag="t1", snapshot=2) == [[True]]
    assert _call(tmp_path, "replace_tag", tag="t2", snapshot=1, create_if_missing=True) == [[True]]
    assert _call(tmp_path, "rename_tag", tag="t2", target_tag="t3") == [[True]]
    assert {n: s.id for n, s in fresh(t).tags().items()} == {"t1": 2, "t3": 1}
    # A list with a missing tag deletes nothing unless if_exists is given.
    with pytest.raises(
        TagNotFoundError, match=r"table db\.t: tag\(s\) 'nope' do not exist, so nothing was deleted"
    ):
        _call(tmp_path, "delete_tag", tag="t1, nope")
    assert set(fresh(t).tags()) == {"t1", "t3"}
    assert _call(tmp_path, "delete_tag", tag="t1,nope", if_exists=True) == [[True]]
    assert set(fresh(t).tags()) == {"t3"}
    with pytest.raises(InvalidOptionError, match=r"create_tag_from_timestamp of table db\.t needs 'timestamp'"):
        _call(tmp_path, "create_tag_from_timestamp", tag="x")
    assert _call(tmp_path, "rollback_to_timestamp", timestamp=snap1.time_millis) == [
        ["Success roll back to snapshot: 1 ."]
    ]
    assert fresh(t).latest_snapshot().id == 1  # type: ignore[union-attr]
    for name, params in (
        ("rename_tag", ["table", "tag", "target_tag"]),
        ("replace_tag", ["table", "tag", "snapshot", "time_retained", "create_if_missing"]),
        ("create_tag_from_timestamp", ["table", "tag", "timestamp", "time_retained"]),
        ("rollback_to_timestamp", ["table", "timestamp"]),
    ):
        assert [p["name"] for p in procedures.PROCEDURES[name].describe()["parameters"]] == params


def test_tag_default_time_retained_applies_to_tags_created_without_one(tmp_path: Path) -> None:
    """Paimon's createTag: a tag given no retention takes 'tag.default-time-retained'; one given a
    retention keeps its own; replace_tag takes only what it is given."""
    t = make_table(tmp_path, **{"tag.default-time-retained": "2 h"})
    t.write(batch([1], "a"))
    t.create_tag("plain")
    t.create_tag("own", time_retained="1 d")
    tag_dir = Path(t.location) / "tag"
    assert json.loads((tag_dir / "tag-plain").read_text())["tagTimeRetained"] == 7200
    assert json.loads((tag_dir / "tag-own").read_text())["tagTimeRetained"] == 86400
    t.replace_tag("plain")
    assert "tagTimeRetained" not in json.loads((tag_dir / "tag-plain").read_text())
