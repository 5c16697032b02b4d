"""Commit-time fault injection for ``tests/faults/spark_commit_app.py`` (every Python process).

With ``STRATALAKE_COMMIT_FAULT_FILE`` set, ``TableCommit.commit`` and ``commit_row_level`` run on
a table whose FileIO is ``tests.faults.faulty_io.FaultyFileIO``, failing as the control file
says: ``{"publish": n, "offset": k, "mode": "before"|"after", "span": s}`` places the fault
``k`` operations after the statement's ``n``-th snapshot publish. The control file is consumed
by the first commit that reads it (one fault per statement); what fired is appended to
``<control>.log``. Processes without the variable are untouched.
"""

from __future__ import annotations

import json
import os
from typing import Any


def _install(path: str) -> None:
    from tests.faults.faulty_io import FaultPlan, FaultyFileIO

    from stratalake.operation.commit import TableCommit
    from stratalake.table import Table

    def faulty(method: Any) -> Any:
        def wrapper(self: TableCommit, *args: Any, **kwargs: Any) -> Any:
            try:
                with open(path, encoding="utf-8") as f:
                    control = json.load(f)
                os.unlink(path)  # consumed: one fault per statement
            except (OSError, ValueError):
                return method(self, *args, **kwargs)
            plan = FaultPlan(
                None, control["mode"], span=control.get("span", 1),
                after_publish=(control.get("publish", 0), control.get("offset", 0)),
            )
            real = self.table
            self.table = Table(FaultyFileIO(plan), real.location, real.identifier, real.schema())
            plan.arm()
            try:
                return method(self, *args, **kwargs)
            finally:
                plan.disarm()
                with open(path + ".log", "a", encoding="utf-8") as f:
                    f.write(json.dumps({"fired": plan.fired, "ops": len(plan.ops)}) + "\n")

        return wrapper

    TableCommit.commit = faulty(TableCommit.commit)  # type: ignore[method-assign]
    TableCommit.commit_row_level = faulty(TableCommit.commit_row_level)  # type: ignore[method-assign]


_PATH = os.environ.get("STRATALAKE_COMMIT_FAULT_FILE")
if _PATH:
    _install(_PATH)
