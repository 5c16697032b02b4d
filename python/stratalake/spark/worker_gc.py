"""Keeping the Python worker's garbage collection short (see :func:`freeze_imports`)."""

from __future__ import annotations

import gc
import sys

_frozen_modules = 0


def freeze_imports() -> None:
    """Hides long-lived objects from the cyclic garbage collector whenever new modules loaded.

    Spark's Python daemon runs a full ``gc.collect()`` after every request a reused worker
    serves (bridge calls, data source planning, tasks). With pyspark, pyarrow and stratalake
    loaded that walks every live object (~35 ms), and the worker cannot take its next request
    meanwhile, so the next round trip waits for it. Module contents live as long as the process:
    they are moved to the permanent generation (``gc.freeze``) each time the set of imported
    modules grew (a few times per worker); objects created afterwards are collected as usual.
    """
    global _frozen_modules
    count = len(sys.modules)
    if count != _frozen_modules:
        _frozen_modules = count
        gc.freeze()
