"""Starting and reaping the worker processes of :mod:`tests.reliability.workload`, bounded in time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.reliability.workload import ROOT, read_log


class Worker:
    def __init__(self, role: str, cfg: Mapping[str, Any], log: Path) -> None:
        self.role, self.log = role, log
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "python"), env.get("PYTHONPATH", "")])
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.workload", role, json.dumps({**cfg, "log": str(log)})],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def wait(self, timeout: float) -> int:
        """The exit code; kills the process (and fails) if it outlives ``timeout`` seconds."""
        try:
            _, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.role} did not finish within {timeout}s") from None
        self.stderr = err.decode(errors="replace")
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # SIGKILL, this process only
        self.proc.wait(timeout=30)

    def records(self) -> list[dict[str, Any]]:
        return read_log(self.log)


def wait_all(workers: list[Worker], deadline_s: float) -> dict[str, int]:
    end = time.monotonic() + deadline_s
    codes = {}
    try:
        for w in workers:
            codes[w.log.stem] = w.wait(max(end - time.monotonic(), 1.0))
    finally:
        for w in workers:
            w.kill()
    return codes
