"""Automatic tags after commits (maintenance/auto_tags.py), as Paimon's TagAutoCreation and
TagBatchCreation: names, periods, delay, completion, retention, and the batch mode."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from stratalake.maintenance import auto_tags
from stratalake.operation.commit import protocol
from tests.lifecycle.helpers import batch, make_table

UTC = {"sink.process-time-zone": "UTC"}


class Clock:
    """The commit clock (a snapshot's timeMillis), set by the test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = dt.datetime(2026, 1, 10, 10, 0, tzinfo=dt.UTC)
        monkeypatch.setattr(protocol.time, "time", lambda: self.now.timestamp())

    def at(self, *args: int) -> None:
        self.now = dt.datetime(*args, tzinfo=dt.UTC)  # type: ignore[misc]


def tags(t: object) -> dict[str, int]:
    return {n: s.id for n, s in t.tags().items()}  # type: ignore[attr-defined]


def test_daily_process_time_tags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock(monkeypatch)
    t = make_table(tmp_path, **{"tag.automatic-creation": "process-time", **UTC})
    t.write(batch([1], "a"))  # no automatic tag yet: the first snapshot tags the day before it
    assert tags(t) == {"2026-01-09": 1}
    clock.at(2026, 1, 10, 23, 0)
    t.write(batch([2], "b"))
    assert tags(t) == {"2026-01-09": 1}
    clock.at(2026, 1, 11, 0, 30)  # 2026-01-10 has ended: tagged with the first snapshot after it
    t.write(batch([3], "c"))
    assert tags(t) == {"2026-01-09": 1, "2026-01-10": 3}
    clock.at(2026, 1, 14, 8, 0)  # days without commits are skipped (no completion)
    t.write(batch([4], "d"))
    assert tags(t) == {"2026-01-09": 1, "2026-01-10": 3, "2026-01-13": 4}
    assert t.read(tag="2026-01-10").num_rows == 3


def test_delay_completion_and_retention(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock(monkeypatch)
    t = make_table(
        tmp_path,
        **{
            "tag.automatic-creation": "process-time",
            "tag.creation-delay": "1 h",
            "tag.automatic-completion": "true",
            "tag.num-retained-max": "2",
            "tag.default-time-retained": "7 d",
            **UTC,
        },
    )
    t.write(batch([1], "a"))
    t.create_tag("manual")
    assert tags(t) == {"2026-01-09": 1, "manual": 1}
    clock.at(2026, 1, 11, 0, 30)  # within the delay: not yet
    t.write(batch([2], "b"))
    assert "2026-01-10" not in tags(t)
    clock.at(2026, 1, 13, 2, 0)  # completion: the next missing day, one per snapshot
    t.write(batch([3], "c"))
    assert tags(t) == {"2026-01-09": 1, "2026-01-10": 3, "manual": 1}
    t.write(batch([4], "d"))
    # At most two automatic tags: the oldest goes; manual tags are not counted.
    assert tags(t) == {"2026-01-10": 3, "2026-01-11": 4, "manual": 1}
    retained = t.tag_manager.retention("2026-01-11")[1]
    assert retained == dt.timedelta(days=7)


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"tag.creation-period": "hourly"}, "2026-01-10 09"),
        ({"tag.creation-period": "hourly", "tag.period-formatter": "without_dashes"}, "20260110 09"),
        (
            {"tag.creation-period": "hourly", "tag.period-formatter": "without_dashes_and_spaces"},
            "2026011009",
        ),
        ({"tag.creation-period": "daily", "tag.period-formatter": "without_dashes"}, "20260109"),
        ({"tag.creation-period": "two-hours"}, "2026-01-10 08"),
        ({"tag.creation-period-duration": "15 min"}, "202601100945"),
    ],
)
def test_tag_names_follow_the_period_and_formatter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, str], name: str
) -> None:
    Clock(monkeypatch)
    t = make_table(tmp_path, **{"tag.automatic-creation": "process-time", **UTC, **options})
    t.write(batch([1], "a"))
    assert tags(t) == {name: 1}


def test_previous_period_start_counts_whole_periods_from_the_epoch() -> None:
    period = auto_tags.tag_period({"tag.creation-period-duration": "15 min"}.get, "db.t")
    assert period.previous_period_start(dt.datetime(2026, 1, 10, 10, 7)) == dt.datetime(2026, 1, 10, 9, 45)
    daily = auto_tags.tag_period({}.get, "db.t")
    assert daily.tag_to_time("2026-01-10") == dt.datetime(2026, 1, 10)
    assert daily.tag_to_time("manual") is None and daily.tag_to_time("2026-13-01") is None


def test_watermark_mode_waits_for_a_watermark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Clock(monkeypatch)
    t = make_table(tmp_path, **{"tag.automatic-creation": "watermark"})
    t.write(batch([1], "a"))
    assert tags(t) == {}  # snapshots without a watermark have no time in this mode


def test_batch_mode_tags_each_batch_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock(monkeypatch)
    t = make_table(tmp_path, **{"tag.automatic-creation": "batch", "tag.num-retained-max": "2", **UTC})
    t.write(batch([1], "a"))
    assert tags(t) == {"batch-write-2026-01-10": 1}
    t.write(batch([2], "b"))  # the same day: the tag moves to the newest batch write
    assert tags(t) == {"batch-write-2026-01-10": 2}
    t.compact(full=True)  # not a batch write
    assert tags(t) == {"batch-write-2026-01-10": 2}
    clock.at(2026, 1, 11, 9, 0)
    t.write(batch([3], "c"))
    clock.at(2026, 1, 12, 9, 0)
    t.write(batch([4], "d"))
    assert set(tags(t)) == {"batch-write-2026-01-11", "batch-write-2026-01-12"}


def test_batch_mode_customized_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Clock(monkeypatch)
    t = make_table(tmp_path, **{"tag.automatic-creation": "batch", "tag.batch.customized-name": "nightly"})
    t.write(batch([1], "a"))
    t.write(batch([2], "b"))
    assert tags(t) == {"nightly": 2}


def test_bad_period_options_are_named(tmp_path: Path) -> None:
    from stratalake.exceptions import InvalidOptionError

    with pytest.raises(InvalidOptionError, match=r"tag\.creation-period"):
        auto_tags.tag_period({"tag.creation-period": "weekly"}.get, "db.t")
