"""Consumers: Paimon's consumer files, and how they pin snapshots and changelogs against expiration."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pypaimon.consumer import Consumer as PyPaimonConsumer
from pypaimon.consumer import ConsumerManager as PyPaimonConsumerManager
from pypaimon.filesystem.local_file_io import LocalFileIO as PyPaimonLocalFileIO

from stratalake.exceptions import CorruptFileError, InvalidOptionError, SnapshotNotFoundError
from stratalake.maintenance.after_commit import expire_after_commit
from stratalake.maintenance.expire import ExpireConfig, expire_changelogs
from stratalake.table import Table
from tests.lifecycle.helpers import batch, disk_files, fresh, make_table, needed_files, rows


def _consumer_file(t: Table, consumer_id: str) -> Path:
    return Path(t.location) / "consumer" / f"consumer-{consumer_id}"


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def _write(t: Table, n: int) -> None:
    for i in range(n):
        t.write(batch([i], f"v{i}-"))


# -- the consumer manager ----------------------------------------------------------------------------
def test_layout_and_json_are_paimons(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.consumer_manager.reset_consumer("job-1", 7)
    # Jackson's pretty printer, as Paimon's Consumer.toJson writes it.
    assert _consumer_file(t, "job-1").read_bytes() == b'{\n  "nextSnapshot" : 7\n}'
    t.consumer_manager.reset_consumer("job-1", 9)  # replaced whole
    assert t.consumer_manager.consumer("job-1").next_snapshot == 9  # type: ignore[union-attr]
    assert t.consumer_manager.consumer("nobody") is None
    # Temp files of an interrupted write never count as consumers.
    (Path(t.location) / "consumer" / ".consumer-x.123.tmp").write_text('{"nextSnapshot": 1}')
    t.consumer_manager.reset_consumer("a", 3)
    assert t.consumers() == {"a": 3, "job-1": 9}
    assert t.consumer_manager.min_next_snapshot() == 3
    assert t.system_table("consumers").to_pylist() == [
        {"consumer_id": "a", "next_snapshot_id": 3},
        {"consumer_id": "job-1", "next_snapshot_id": 9},
    ]
    t.consumer_manager.delete_consumer("a")
    assert t.consumers() == {"job-1": 9}


def test_pypaimon_reads_ours_and_we_read_pypaimons(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.consumer_manager.reset_consumer("ours", 4)
    theirs = PyPaimonConsumerManager(PyPaimonLocalFileIO(), t.location)
    assert theirs.consumer("ours").next_snapshot == 4  # type: ignore[union-attr]
    theirs.reset_consumer("theirs", PyPaimonConsumer(11))
    assert t.consumers() == {"ours": 4, "theirs": 11}
    # Unknown fields are ignored, as Paimon's @JsonIgnoreProperties(ignoreUnknown = true).
    _consumer_file(t, "extra").write_text('{"nextSnapshot": 5, "somethingNew": [1]}')
    assert t.consumer_manager.consumer("extra").next_snapshot == 5  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", ["", "  ", "../x", "a/b", "a\\b", "a\x00b"])
def test_a_consumer_id_that_would_leave_the_directory_is_refused(tmp_path: Path, bad: str) -> None:
    t = make_table(tmp_path)
    _write(t, 1)
    with pytest.raises(InvalidOptionError, match="not a valid consumer id"):
        t.reset_consumer(bad, 1)
    with pytest.raises(InvalidOptionError, match="not a valid consumer id"):
        t.reset_consumer(bad)
    assert not (Path(t.location) / "consumer").exists()
    assert not (Path(t.location) / "x").exists()


def test_a_corrupt_consumer_file_is_named(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    (Path(t.location) / "consumer").mkdir()
    _consumer_file(t, "bad").write_text('{"nextSnapshot": "soon"}')
    with pytest.raises(CorruptFileError, match="consumer-bad"):
        t.consumers()


def test_reset_consumer_checks_the_snapshot_and_deletes_without_one(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    _write(t, 3)
    t.reset_consumer("c", 2)
    assert t.consumers() == {"c": 2}
    with pytest.raises(SnapshotNotFoundError, match=r"consumer 'c' to snapshot 9.*unchanged"):
        t.reset_consumer("c", 9)
    assert t.consumers() == {"c": 2}
    t.reset_consumer("c")
    assert t.consumers() == {}


def test_clear_consumers_matches_whole_ids(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    for cid in ("job", "job1", "job2", "other", "xjob"):
        t.consumer_manager.reset_consumer(cid, 1)
    # Java's Matcher.matches(): the whole id, so 'job' leaves 'job1' and 'xjob'.
    assert t.clear_consumers("job") == ["job"]
    assert t.clear_consumers("job.*", "job2") == ["job1"]
    assert sorted(t.consumers()) == ["job2", "other", "xjob"]
    with pytest.raises(InvalidOptionError, match="not a regular expression"):
        t.clear_consumers("(")
    assert t.clear_consumers() == ["job2", "other", "xjob"]  # no pattern: every consumer
    assert t.consumers() == {}


# -- expiration ------------------------------------------------------------------------------------
def test_a_consumer_pins_its_snapshots(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    _write(t, 6)
    before = {s.id: rows(t.read(snapshot_id=s.id)) for s in t.snapshots()}
    t.reset_consumer("reader", 3)
    assert t.expire_snapshots(retain_max=1, retain_min=1) == 2
    t = fresh(t)
    assert [s.id for s in t.snapshots()] == [3, 4, 5, 6]
    for sid in (3, 4, 5, 6):
        assert rows(t.read(snapshot_id=sid)) == before[sid]
    assert disk_files(t) == needed_files(t, t.snapshots())
    t.reset_consumer("reader", 5)
    assert t.expire_snapshots(retain_max=1, retain_min=1) == 2
    assert [s.id for s in fresh(t).snapshots()] == [5, 6]
    t.reset_consumer("reader")  # deleted: nothing pins any more
    assert t.expire_snapshots(retain_max=1, retain_min=1) == 1
    assert [s.id for s in fresh(t).snapshots()] == [6]


def test_an_expired_consumer_no_longer_pins(tmp_path: Path) -> None:
    t = make_table(tmp_path, **{"consumer.expiration-time": "1 h"})
    _write(t, 5)
    t.reset_consumer("stale", 1)
    t.reset_consumer("live", 3)
    _age(_consumer_file(t, "stale"), 2 * 3600)
    assert t.expire_snapshots(retain_max=1, retain_min=1) == 2  # 'live' still pins 3
    assert t.consumers() == {"live": 3}
    assert [s.id for s in fresh(t).snapshots()] == [3, 4, 5]


def test_without_expiration_time_an_old_consumer_stays(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    _write(t, 3)
    t.reset_consumer("old", 1)
    _age(_consumer_file(t, "old"), 10 * 24 * 3600)
    assert t.expire_snapshots(retain_max=1, retain_min=1) == 0
    assert t.consumers() == {"old": 1}


def test_expiry_after_commit_honours_and_expires_consumers(tmp_path: Path) -> None:
    opts = {
        "snapshot.num-retained.min": "1",
        "snapshot.num-retained.max": "1",
        "consumer.expiration-time": "1 h",
    }
    t = make_table(tmp_path, **opts)
    _write(t, 2)
    assert [s.id for s in fresh(t).snapshots()] == [2]
    t.reset_consumer("reader", 2)
    _write(t, 2)  # snapshots 3, 4: 2 is pinned by the consumer
    assert [s.id for s in fresh(t).snapshots()] == [2, 3, 4]
    _age(_consumer_file(t, "reader"), 2 * 3600)
    _write(t, 1)  # the commit's expiry deletes the stale consumer first, then expires 2..4
    assert t.consumers() == {}
    assert [s.id for s in fresh(t).snapshots()] == [5]


def test_changelog_only_consumers_pin_changelogs_not_snapshots(tmp_path: Path) -> None:
    opts = {
        "changelog-producer": "input",
        "changelog.num-retained.max": "100",
        "changelog.num-retained.min": "100",
        "consumer.changelog-only": "true",
    }
    t = make_table(tmp_path, **opts)
    _write(t, 5)
    t.reset_consumer("reader", 2)
    assert t.expire_snapshots(retain_max=1, retain_min=1) == 4  # snapshots are not pinned
    assert [c.id for c in t.changelog_manager.changelogs()] == [1, 2, 3, 4]
    t = fresh(t)
    # Changelog retention now allows expiring all of them; the consumer keeps 2 on.
    cfg = ExpireConfig(changelog_retain_min=1, changelog_retain_max=1, changelog_time_retain_ms=0)
    assert expire_changelogs(t, cfg) == 1
    assert [c.id for c in t.changelog_manager.changelogs()] == [2, 3, 4]
    t.reset_consumer("reader")
    assert expire_changelogs(t, cfg) == 3
    assert disk_files(t) == needed_files(t, t.snapshots())


def test_tags_stay_readable_beside_a_consumer(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    _write(t, 6)
    tagged = rows(t.read(snapshot_id=2))
    t.create_tag("keep", 2)
    t.reset_consumer("reader", 4)
    assert t.expire_snapshots(retain_max=1, retain_min=1) == 3
    t = fresh(t)
    assert [s.id for s in t.snapshots()] == [4, 5, 6]
    assert rows(t.read(tag="keep")) == tagged
    assert disk_files(t) == needed_files(t, [*t.snapshots(), t.tag_manager.tag("keep")])


def test_purge_files_deletes_consumers(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    _write(t, 3)
    t.reset_consumer("reader", 1)
    t.purge_files()
    assert t.consumers() == {}
    assert [s.id for s in fresh(t).snapshots()] == [4]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    n=st.integers(1, 6),
    consumers=st.lists(st.integers(1, 8), max_size=3),
    retain_min=st.integers(1, 4),
    max_deletes=st.integers(1, 8),
)
def test_expiration_matches_a_model(
    tmp_path_factory: pytest.TempPathFactory, n: int, consumers: list[int], retain_min: int, max_deletes: int
) -> None:
    t = make_table(tmp_path_factory.mktemp("m"))
    _write(t, n)
    for i, next_snapshot in enumerate(consumers):
        t.consumer_manager.reset_consumer(f"c{i}", next_snapshot)
    far_future = int(time.time() * 1000) + 10**9
    t.expire_snapshots(retain_max=retain_min, retain_min=retain_min, older_than_ms=far_future, max_deletes=max_deletes)
    # The model: ids below min(n - retain_min + 1, 1 + max_deletes, every nextSnapshot) expire.
    end = min(n - retain_min + 1, 1 + max_deletes, *consumers)
    assert [s.id for s in fresh(t).snapshots()] == list(range(max(end, 1), n + 1))


def test_expire_after_commit_is_quiet_on_a_corrupt_consumer(tmp_path: Path) -> None:
    t = make_table(tmp_path, **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    _write(t, 1)
    (Path(t.location) / "consumer").mkdir()
    _consumer_file(t, "bad").write_text("not json")
    expire_after_commit(t)  # the commit succeeded; the failure is logged, nothing expires
    _write(t, 1)
    assert [s.id for s in fresh(t).snapshots()] == [1, 2]


def test_orphan_removal_leaves_consumers_alone(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    _write(t, 2)
    t.reset_consumer("reader", 2)
    t.remove_orphan_files(older_than_ms=int(time.time() * 1000) + 10**9)
    assert t.consumers() == {"reader": 2}
