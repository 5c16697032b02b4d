"""Apache Paimon's Java writer and stratalake commit to one table at once, and Paimon's publish
replaces the snapshot stratalake just created (issue #37), forced rather than hoped for.

Paimon publishes ``snapshot-N`` by checking that it does not exist and renaming a temp file onto
it; ``HookedFileIO.java`` pauses Paimon's real commit between those two steps. stratalake then
creates ``snapshot-N`` and lets Paimon go on, whose rename replaces it. stratalake must see that
the snapshot it created is no longer its own and commit again on top; both writers' rows must be
there exactly once, and every snapshot stratalake reported must hold stratalake's commit.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake.io import LocalFileIO
from stratalake.table import Table
from tests.interop_java.paimon_java import RELEASES, read_tables, write_command, write_table

pytestmark = pytest.mark.paimon_java


class _SignallingFileIO(LocalFileIO):
    """stratalake's FileIO: its snapshot create waits for Paimon's check, then lets Paimon rename."""

    def __init__(self, hook: Path) -> None:
        super().__init__()
        self.hook = hook
        self.armed = True

    def try_create_atomic(
        self, path: str, data: bytes, precondition: Callable[[], bool] | None = None
    ) -> bool:
        if not (self.armed and "/snapshot/snapshot-" in path):
            return super().try_create_atomic(path, data, precondition)
        self.armed = False
        _wait_for(self.hook / "checked")  # Paimon found the id free
        ok = super().try_create_atomic(path, data, precondition)
        (self.hook / "created").touch()
        # Deterministic: the settle check runs after Paimon's rename (its window is microseconds
        # in the JVM; the 5 ms settle time is what covers it in production).
        _wait_for(self.hook / "moved")
        return ok


def _wait_for(path: Path, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.001)


@pytest.mark.parametrize("primary_key", [True, False])
def test_paimon_java_replacing_a_snapshot_is_a_lost_race(tmp_path: Path, primary_key: bool) -> None:
    release = RELEASES[-1]
    wh = tmp_path / "wh"
    options = {"bucket": "1" if primary_key else "-1"}
    write_table(release, str(wh), "db.t", primary_key, range(0, 10), "base", options)
    hook = tmp_path / "hook"
    hook.mkdir()
    java = subprocess.Popen(
        write_command(release, f"hooked://{wh}", "db.t", primary_key, range(100, 110), "java", options),
        env={**os.environ, "STRATALAKE_HOOK_DIR": str(hook)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        location = str(wh / "db.db" / "t")
        ours = Table(_SignallingFileIO(hook), location, "db.t")
        reported = ours.write(pa.table({"id": pa.array(range(200, 210), pa.int64()), "v": ["s"] * 10}))
        _, err = java.communicate(timeout=300)
    finally:
        java.kill()
    assert java.returncode == 0, err[-3000:]
    # Paimon's rename took snapshot 2; stratalake noticed and committed as snapshot 3.
    assert reported == 3
    t = stratalake.Catalog(str(wh)).get_table("db.t")
    assert t.snapshot(3).commit_user != t.snapshot(2).commit_user
    ids = sorted(t.read().column("id").to_pylist())
    assert ids == [*range(0, 10), *range(100, 110), *range(200, 210)]
    # Paimon Java reads the same table: both writers' rows, each once.
    java_ids = sorted(int(row[0]) for row in read_tables(release, str(wh), ["db.t"])["db.t"])
    assert java_ids == ids
