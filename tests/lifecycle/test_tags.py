"""Tags: creation rules, files they protect from expiration, and deleting them."""

from __future__ import annotations

import datetime
import json
import os
import re
import time
from decimal import Decimal
from pathlib import Path

import pytest

from stratalake.exceptions import (
    InvalidOptionError,
    SnapshotNotFoundError,
    TagAlreadyExistsError,
    TagNotFoundError,
)
from stratalake.maintenance.tags import expire_tags, read_tag, tag_scan
from tests.lifecycle.helpers import batch, build_history, disk_files, fresh, make_table, needed_files, rows


def test_tag_file_is_a_snapshot_copy(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    with pytest.raises(SnapshotNotFoundError, match="empty table"):
        t.create_tag("none-yet")
    t.write(batch([1], "a"))
    t.write(batch([2], "b"))
    snap = t.create_tag("first", snapshot_id=1)
    assert snap.id == 1
    assert t.create_tag("latest").id == 2
    on_disk = json.loads((Path(t.location) / "tag" / "tag-first").read_text())
    # Paimon's Tag: the snapshot plus tagCreateTime (Jackson's LocalDateTime array).
    created = on_disk.pop("tagCreateTime")
    assert isinstance(created, list) and 5 <= len(created) <= 7
    assert on_disk == json.loads(t.snapshot(1).to_json())
    assert {n: s.id for n, s in t.tags().items()} == {"first": 1, "latest": 2}
    with pytest.raises(TagAlreadyExistsError, match="first"):
        t.create_tag("first", snapshot_id=2)
    for bad in ("", " ", "12", "a/b"):
        with pytest.raises(InvalidOptionError, match="tag name"):
            t.create_tag(bad)
    with pytest.raises(TagNotFoundError, match="nope"):
        t.delete_tag("nope")
    with pytest.raises(SnapshotNotFoundError):
        t.create_tag("missing", snapshot_id=9)
    # The tagged snapshot still exists: deleting the tag deletes no file.
    files = disk_files(t)
    assert t.delete_tag("first") == []
    assert disk_files(t) == files
    assert set(t.tags()) == {"latest"}


def test_tags_protect_their_files_from_expiration(tmp_path: Path) -> None:
    t = make_table(tmp_path, **{"manifest.merge-min-count": "3"})
    build_history(t)
    at2, at4 = rows(t.read(snapshot_id=2)), rows(t.read(snapshot_id=4))
    t.create_tag("v2", snapshot_id=2)
    t.create_tag("v4", snapshot_id=4)

    assert t.expire_snapshots(retain_max=1, retain_min=1) == 6
    t = fresh(t)
    with pytest.raises(SnapshotNotFoundError):
        t.create_tag("late", snapshot_id=3)
    assert rows(read_tag(t, "v2")) == at2
    assert rows(read_tag(t, "v4")) == at4
    assert disk_files(t) == needed_files(t, [*t.snapshots(), *t.tags().values()])

    deleted = t.delete_tag("v2")
    assert deleted
    t = fresh(t)
    assert all(not Path(p).exists() for p in deleted)
    assert disk_files(t) == needed_files(t, [*t.snapshots(), *t.tags().values()])
    assert rows(read_tag(t, "v4")) == at4

    t.delete_tag("v4")
    t = fresh(t)
    assert disk_files(t) == needed_files(t, t.snapshots())
    assert t.tags() == {}


def test_time_retained_is_stored_as_paimon_does_and_expires_at_commit(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.write(batch([1], "a"))
    t.create_tag("day", time_retained="1 d")
    t.create_tag("short", time_retained=datetime.timedelta(seconds=3661, microseconds=500000))
    t.create_tag("forever")
    raw = (Path(t.location) / "tag" / "tag-day").read_text()
    # Jackson's Duration: decimal seconds with nine fraction digits; Paimon reads it back as 1 day.
    assert re.search(r'"tagTimeRetained": 86400\.000000000\b', raw)
    on_disk = json.loads(raw)
    assert isinstance(on_disk.pop("tagCreateTime"), list)
    on_disk.pop("tagTimeRetained")
    assert on_disk == json.loads(t.snapshot(1).to_json())
    created, retained = t.tag_manager.retention("short")
    assert retained == datetime.timedelta(seconds=3661.5) and created is not None
    assert t.tag_manager.tag_times("short")[1] == "PT1H1M1.5S"
    assert t.tag_manager.retention("forever")[1] is None
    for bad in ("soon", "0 s"):
        with pytest.raises(InvalidOptionError, match="time_retained"):
            t.create_tag("bad", time_retained=bad)
    assert "bad" not in t.tags()

    # Nothing is due yet: a commit keeps every tag.
    t.write(batch([2], "b"))
    assert set(fresh(t).tags()) == {"day", "short", "forever"}
    # Past "short"'s retention only it expires.
    assert expire_tags(t, now=created + datetime.timedelta(hours=2)) == ["short"]
    assert set(fresh(t).tags()) == {"day", "forever"}

    # Paimon's TagTimeExpire runs after every commit: a tag created two days ago expires there.
    t.expire_snapshots(retain_max=1, retain_min=1)  # the tagged snapshot 1 is gone: files only the tag keeps
    path = Path(t.location) / "tag" / "tag-day"
    raw_day = json.loads(path.read_text(), parse_float=Decimal)
    raw_day["tagCreateTime"] = [2020, 1, 1, 0, 0]
    path.write_text(json.dumps(raw_day, default=str).replace('"86400.000000000"', "86400.000000000"))
    assert fresh(t).tag_manager.retention("day")[1] == datetime.timedelta(days=1)
    only_day = needed_files(fresh(t), [fresh(t).tags()["day"]]) - needed_files(fresh(t), fresh(t).snapshots())
    assert only_day and only_day <= disk_files(t)
    fresh(t).write(batch([3], "c"))
    t = fresh(t)
    assert set(t.tags()) == {"forever"}
    assert not (only_day - needed_files(t, [*t.snapshots(), *t.tags().values()])) & disk_files(t)
    assert rows(t.read()) == [(1, "a1", "d1"), (2, "b2", "d1"), (3, "c3", "d1")]
    # "forever" points at expired snapshot 1: its scan plans from the tag's own copy.
    assert not Path(t.snapshot_manager.snapshot_path(1)).exists()
    assert rows(t.new_read().read_splits(tag_scan(t, "forever").plan())) == [(1, "a1", "d1")]


def test_write_only_tables_keep_expired_tags(tmp_path: Path) -> None:
    t = make_table(tmp_path, **{"write-only": "true"})
    t.write(batch([1], "a"))
    t.create_tag("old", time_retained="1 ms")
    time.sleep(0.01)
    t.write(batch([2], "b"))  # write-only: no expiration after commits (a dedicated job does it)
    assert set(fresh(t).tags()) == {"old"}
    assert expire_tags(fresh(t)) == ["old"]
    assert fresh(t).tags() == {}


def test_expire_tags_older_than_and_without_create_time(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.write(batch([1], "a"))
    t.create_tag("a")
    t.create_tag("b", time_retained="1 h")
    # A tag written without tagCreateTime (older Paimon) counts from its file's modification time.
    path = Path(t.location) / "tag" / "tag-b"
    raw = json.loads(path.read_text(), parse_float=Decimal)
    del raw["tagCreateTime"]
    path.write_text(json.dumps(raw, default=str).replace('"3600.000000000"', "3600.000000000"))
    old = time.time() - 7200
    os.utime(path, (old, old))
    now = datetime.datetime.now()
    assert expire_tags(t, now=now) == ["b"]
    assert expire_tags(t, now=now, older_than=now - datetime.timedelta(minutes=5)) == []
    assert expire_tags(t, now=now, older_than=now + datetime.timedelta(minutes=5)) == ["a"]
    assert t.tags() == {}


def test_table_read_by_tag_after_its_snapshot_expired(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.write(batch([1, 2], "a"))
    t.create_tag("first")
    t.write(batch([1, 3], "z"))
    t.write(batch([4], "d"))
    assert t.expire_snapshots(retain_max=1, retain_min=1) == 2
    assert rows(t.read(tag="first")) == rows(read_tag(t, "first"))
    assert sorted(t.read(tag="first", columns=["id"]).column("id").to_pylist()) == [1, 2]
    with pytest.raises(ValueError, match="not both"):
        t.read(tag="first", snapshot_id=3)
