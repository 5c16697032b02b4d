"""Where the process runs: whether it is a Jupyter kernel (used by the Spark session and magics)."""

from __future__ import annotations


def in_notebook() -> bool:
    """True in a Jupyter kernel, whose cells show the JVM's stderr as text: Spark's console
    progress bar (carriage returns redrawing one terminal line) arrives there as a pile of
    lines, so the magics replace it with one updating display."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"
