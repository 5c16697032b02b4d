"""The notebook magics' progress display (issue 18): rendering, and the updating display driven
by a running Spark statement (the shared SparkSession)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from stratalake.magics import Progress, StageProgress, in_notebook


def test_stage_progress_renders_one_line_and_clears() -> None:
    p = StageProgress([(3, 40, 10, 2), (4, 10, 0, 0)], elapsed=12.4)
    assert repr(p) == "[######>.......................] 10/50 tasks (2 running), stages 3, 4, 12 s"
    assert '<progress value="10" max="50"' in p._repr_html_()
    assert repr(StageProgress([])) == "" and StageProgress([])._repr_html_() == ""
    assert not in_notebook()  # a plain test process: the magics leave Spark's console bar alone


class _Handle:
    def __init__(self, shown: list[Any]) -> None:
        self.shown = shown

    def update(self, obj: Any) -> None:
        self.shown.append(obj)


@pytest.mark.spark
def test_progress_updates_one_display_while_a_statement_runs(spark: Any) -> None:
    from pyspark.sql.functions import udf

    slow = udf(lambda x: (time.sleep(0.4), x)[1], "long")

    shown: list[Any] = []

    def display(obj: Any) -> _Handle:
        shown.append(obj)
        return _Handle(shown)

    with Progress(spark, enabled=True, delay=0.3, interval=0.1, display=display) as progress:
        # collect(), not count(): Spark would prune the (deterministic) UDF out of a count
        rows = spark.range(0, 8, 1, 4).select(slow("id").alias("x")).collect()  # type: ignore[attr-defined]
        assert sorted(r.x for r in rows) == list(range(8))
    assert progress.updates >= 2, shown
    running = [p for p in shown if p.stages]
    assert running and all("tasks" in repr(p) for p in running)
    assert shown[-1].stages == []  # removed when the cell is done
    assert Progress(spark).enabled is False  # outside a notebook: off by default
