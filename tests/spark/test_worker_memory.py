"""The Arrow pool of Spark's Python workers (stratalake.spark.worker_memory): jemalloc unless the
environment names one. Each case runs in a new interpreter: the default pool is process-wide."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pytest

PROBE = """
import pyarrow as pa
from stratalake.spark.worker_memory import use_worker_allocator
before = pa.default_memory_pool().backend_name
use_worker_allocator()
pa.set_memory_pool(pa.system_memory_pool()) if {reset} else None
use_worker_allocator()  # once per process: a later change of the pool is left alone
print(before, pa.default_memory_pool().backend_name)
"""


def _probe(env_pool: str | None, reset: bool = False) -> tuple[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if env_pool is not None:
        env["ARROW_DEFAULT_MEMORY_POOL"] = env_pool
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(reset=reset)], env=env, check=True, capture_output=True, text=True
    )
    before, after = out.stdout.split()
    return before, after


def _has_jemalloc() -> bool:
    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        return False
    return True


@pytest.mark.skipif(not _has_jemalloc(), reason="this pyarrow is built without jemalloc")
def test_worker_uses_jemalloc() -> None:
    assert _probe(None)[1] == "jemalloc"  # pyarrow 19's own default is mimalloc


def test_the_environment_choice_is_kept() -> None:
    assert _probe("system") == ("system", "system")


def test_chosen_once_per_process() -> None:
    assert _probe("system", reset=True)[1] == "system"
    if _has_jemalloc():
        assert _probe(None, reset=True)[1] == "system"
