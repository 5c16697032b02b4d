"""A second process for the JDBC catalog tests: ``python -m tests.catalog.jdbc_child ACTION ...``.

* ``commit WAREHOUSE OPTIONS_JSON IDENT START COUNT``: COUNT commits of one row each (ids START..),
  printing ``done`` at the end;
* ``hold WAREHOUSE OPTIONS_JSON IDENT``: take the table's catalog lock, print ``held`` and sleep
  (the test kills it).
"""

from __future__ import annotations

import json
import sys
import time

import pyarrow as pa

import stratalake
from tests.catalog import racy_store  # noqa: F401  (registers racy://)


def main(argv: list[str]) -> None:
    action, warehouse, options = argv[0], argv[1], json.loads(argv[2])
    catalog = stratalake.Catalog(warehouse, options)
    ident = argv[3]
    if action == "commit":
        start, count = int(argv[4]), int(argv[5])
        table = catalog.get_table(ident)
        for i in range(start, start + count):
            table.write(pa.table({"id": pa.array([i], pa.int64()), "v": [f"row {i}"]}))
        print("done", flush=True)
    elif action == "hold":
        db, name = ident.split(".")
        with catalog.lock.hold(db, name):
            print("held", flush=True)
            time.sleep(3600)
    else:
        raise SystemExit(f"unknown action {action}")


if __name__ == "__main__":
    main(sys.argv[1:])
