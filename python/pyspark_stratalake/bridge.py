"""Driver-side Python worker answering the JVM catalog (``org.stratalake.spark.StrataLakeCatalog``).

Spark starts it through ``PythonPlannerRunner`` (its daemon only imports modules whose name starts
with ``pyspark``, hence this package). One request in, one answer out, both JSON strings of
the messages :mod:`stratalake.spark.bridge_contract` lists; errors are part of the answer, see
:mod:`stratalake.spark.bridge_handlers`.
"""

from __future__ import annotations

import struct
from typing import IO

from pyspark.sql.worker.utils import worker_run
from pyspark.worker_util import get_sock_file_to_executor

from stratalake.spark.worker_gc import freeze_imports


def _read_utf(stream: IO[bytes]) -> str:
    # Spark's PythonWorkerUtils.writeUTF: a big-endian int length, then UTF-8 bytes.
    (length,) = struct.unpack("!i", stream.read(4))
    return stream.read(length).decode("utf-8")


def _main(infile: IO[bytes], outfile: IO[bytes]) -> None:
    request = _read_utf(infile)
    # Imported here, inside worker_run: a failure to import the handlers (all of stratalake)
    # reaches the JVM as this request's error, which worker_run reports, not as a dead worker.
    from stratalake.spark.bridge_handlers import handle_to

    handle_to(request, outfile)


def main(infile: IO[bytes], outfile: IO[bytes]) -> None:
    worker_run(_main, infile, outfile)
    freeze_imports()


if __name__ == "__main__":
    with get_sock_file_to_executor() as sock_file:
        main(sock_file, sock_file)
