"""Spark errors back into stratalake exceptions.

Errors raised by the Python catalog reach Spark as ``[STRATALAKE:<ErrorClass>] message`` (the
JVM shim's ``StrataLakeException``); errors raised inside Spark tasks or the write commit reach
it as Python tracebacks naming ``stratalake.exceptions.<ErrorClass>``. :func:`translate` maps both
back to the typed exception, so Python callers can catch what the core raised::

    with stratalake_errors():
        spark.sql("CREATE TABLE lake.db.t (id INT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket'='x')")
    # raises stratalake.exceptions.InvalidOptionError
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from stratalake import exceptions

_CATALOG_ERROR = re.compile(r"\[STRATALAKE:(\w+)\] (.*)", re.DOTALL)
_TASK_ERROR = re.compile(r"stratalake\.exceptions\.(\w+): (.*?)(?:\n\n|\n\s*at |\Z)", re.DOTALL)


def _error_class(name: str) -> type[exceptions.StrataLakeError] | None:
    cls = getattr(exceptions, name, None)
    if isinstance(cls, type) and issubclass(cls, exceptions.StrataLakeError):
        return cls
    return None


def translate(error: BaseException) -> BaseException:
    """The stratalake exception an error from Spark carries, or ``error`` itself."""
    text = str(error)
    for pattern in (_CATALOG_ERROR, _TASK_ERROR):
        m = pattern.search(text)
        if m:
            cls = _error_class(m.group(1))
            if cls is not None:
                translated = cls(m.group(2).strip())
                translated.__cause__ = error
                return translated
    return error


@contextmanager
def stratalake_errors() -> Iterator[None]:
    """Re-raises errors from Spark as the stratalake exceptions they carry."""
    try:
        yield
    except Exception as e:
        translated = translate(e)
        if translated is e:
            raise
        raise translated from e
