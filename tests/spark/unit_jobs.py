"""Which Spark jobs a statement ran: statements run under a job group, then the tasks of the
shim's jobs of units (``spark/delete_job.py``) read back from Spark's status tracker."""

from __future__ import annotations

from typing import Any


def run_in_group(spark: Any, group: str, *statements: str) -> None:
    """Run ``statements`` with Spark's job group set to ``group`` (cleared afterwards)."""
    spark.sparkContext.setJobGroup(group, group)
    try:
        for statement in statements:
            spark.sql(statement)
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)


def unit_job_tasks(spark: Any, group: str) -> list[int]:
    """The number of tasks of every job of units run under ``group`` (the shim collects their
    results: ``collectAsList``; a statement's own scan is not one)."""
    tracker = spark.sparkContext.statusTracker()
    out = []
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info is not None else []:
            stage_info = tracker.getStageInfo(stage)
            if stage_info is not None and stage_info.name.startswith("collectAsList"):
                out.append(stage_info.numTasks)
    return out


#: Where :func:`end_the_job_at` ends a job during one task attempt.
ATTEMPT_POINTS = ("before the record", "before it runs", "after it wrote")


def end_the_job_at(monkeypatch: Any, module: Any, run: str, point: str, end: Any) -> None:
    """Make the next task attempt of ``module``'s job reader call ``end`` (the driver ending the
    job) at ``point``: as it names its files (``module.FileNamer``, before its record), before its
    work (``module.<run>``), or after that work wrote."""
    real_namer, real_run = module.FileNamer, getattr(module, run)

    def namer(*args: Any) -> Any:
        if point == "before the record":
            end()
        return real_namer(*args)

    def work(*args: Any) -> Any:
        if point == "before it runs":
            end()
        out = real_run(*args)
        if point == "after it wrote":
            end()
        return out

    monkeypatch.setattr(module, "FileNamer", namer)
    monkeypatch.setattr(module, run, work)
