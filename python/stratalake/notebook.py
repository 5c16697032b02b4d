"""Where the process runs: whether it is a Jupyter kernel (used by the Spark session and magics)."""

from __future__ import annotations

import sys


def in_notebook() -> bool:
    """True in a Jupyter kernel, whose cells show the JVM's stderr as text: Spark's console
    progress bar (carriage returns redrawing one terminal line) arrives there as a pile of
    lines, so the magics replace it with one updating display."""
    # A kernel has imported IPython before any user code runs; importing it here otherwise would
    # cost a plain script's driver ~6 MiB and 80 modules to learn that it is not one.
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"
