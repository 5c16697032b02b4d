"""Partition expiration (operation/commit/partition_expire.py), as Paimon's NormalPartitionExpire
with the values-time strategy: after commits when due, and its limits."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from stratalake.exceptions import UnsupportedError
from stratalake.operation.commit import partition_expire
from stratalake.operation.commit.partition_expire import partition_time
from tests.lifecycle.helpers import batch, make_table

OLD = ("2020-01-01", "2020-01-02", "2020-01-03")
# Tomorrow's partition: never older than a day, even when the module is imported before midnight
# and the tests run after it (today's date taken at import expired in a run crossing midnight).
TODAY = (dt.date.today() + dt.timedelta(days=1)).isoformat()


def partitions(t: object) -> list[str]:
    return sorted({r["dt"] for r in t.read().to_pylist()})  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _fresh_checks() -> None:
    partition_expire._LAST_CHECK.clear()


def test_partition_time_as_paimon_extracts_it() -> None:
    assert partition_time(["dt"], ["2024-1-5"], None, None) == dt.datetime(2024, 1, 5)
    assert partition_time(["dt"], ["2024-01-05 7:08:09.5"], None, None) == dt.datetime(
        2024, 1, 5, 7, 8, 9, 500000
    )
    assert partition_time(["dt"], ["20240105"], None, "yyyyMMdd") == dt.datetime(2024, 1, 5)
    # Longer keys first: $dt1 is not $dt followed by "1".
    assert partition_time(["dt", "dt1"], ["x", "2024-01-05"], "$dt1", None) == dt.datetime(2024, 1, 5)
    assert partition_time(["dt", "hh"], ["2024-01-05", "07"], "$dt $hh:00:00", None) == dt.datetime(
        2024, 1, 5, 7
    )
    assert partition_time(["dt"], ["not-a-day"], None, None) is None
    assert partition_time(["dt"], [None], None, None) is None


def test_a_commit_expires_old_partitions_when_the_check_is_due(tmp_path: Path) -> None:
    t = make_table(
        tmp_path, **{"partition.expiration-time": "1 d", "partition.expiration-check-interval": "0 s"}
    )
    t.write(batch([1], "a", dt=TODAY))
    t.write(batch([2], "b", dt=OLD[0]))  # expires with the commit that wrote it
    assert partitions(t) == [TODAY]
    assert t.latest_snapshot().commit_kind.value == "OVERWRITE"


def test_the_first_check_of_a_process_waits_a_random_part_of_the_interval(tmp_path: Path) -> None:
    t = make_table(tmp_path, **{"partition.expiration-time": "1 d"})  # check interval 1 h
    t.write(batch([1], "a", dt=OLD[0]))
    assert partitions(t) == [OLD[0]]  # as in Paimon: a short batch job does not expire
    e = make_table(
        tmp_path, "e", **{"partition.expiration-time": "1 d", "end-input.check-partition-expire": "true"}
    )
    e.write(batch([1], "a", dt=OLD[0]))
    e.write(batch([2], "b", dt=TODAY))
    assert partitions(e) == [TODAY]


def test_max_num_and_batch_size(tmp_path: Path) -> None:
    t = make_table(
        tmp_path,
        **{
            "partition.expiration-time": "1 d",
            "partition.expiration-max-num": "2",
            "partition.expiration-batch-size": "1",
            "write-only": "true",  # no check after commits: the expiry below runs alone
        },
    )
    for i, day in enumerate(OLD):
        t.write(batch([i], "a", dt=day))
    before = t.latest_snapshot().id
    done = partition_expire.expire_partitions(
        t, lambda specs: t.new_commit().commit([], overwrite=True, overwrite_partitions=specs), "1 d"
    )
    assert [s["dt"] for s in done] == list(OLD[:2])  # the oldest first, at most max-num
    assert t.latest_snapshot().id == before + 2  # one OVERWRITE commit per batch
    assert partitions(t) == [OLD[2]]


def test_write_only_tables_do_not_expire_after_commits(tmp_path: Path) -> None:
    t = make_table(
        tmp_path,
        **{
            "partition.expiration-time": "1 d",
            "partition.expiration-check-interval": "0 s",
            "write-only": "true",
        },
    )
    t.write(batch([1], "a", dt=OLD[0]))
    assert partitions(t) == [OLD[0]]


def test_other_strategies_are_refused_by_name(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.write(batch([1], "a", dt=OLD[0]))
    with pytest.raises(UnsupportedError, match="'update-time' is not supported"):
        partition_expire.expired_partitions(t, "1 d", expire_strategy="update-time")
