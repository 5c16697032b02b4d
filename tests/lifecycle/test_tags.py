"""Tags: creation rules, files they protect from expiration, and deleting them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stratalake.exceptions import (
    InvalidOptionError,
    SnapshotNotFoundError,
    TagAlreadyExistsError,
    TagNotFoundError,
)
from stratalake.table.tags import read_tag
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
