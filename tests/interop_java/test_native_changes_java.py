"""Change files Paimon Java wrote, read by Spark's Parquet reader (``spark/native_changes.py``):
an incremental ``$audit_log`` read returns the same records natively as through Python, and
replaying them gives the table Paimon Java reads.

Run by ``make test-paimon-java`` (marker ``paimon_java``); the jars are fetched by Maven on first use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.interop_java.paimon_java import RELEASES, read_tables, write_table
from tests.spark.test_native_changes import both

pytestmark = [pytest.mark.paimon_java, pytest.mark.spark]


@pytest.mark.parametrize("producer", ["input", "lookup"])
def test_change_files_paimon_java_wrote_read_natively(
    spark_lake: tuple[Any, str], producer: str, tmp_path: Path
) -> None:
    spark, wh = spark_lake
    release = RELEASES[-1]
    name = f"java_changes.ch_{producer}"
    options = {"bucket": "2", "changelog-producer": producer}
    for ids, prefix in ((range(0, 30), "j"), (range(20, 40), "k")):
        write_table(release, wh, name, True, ids, prefix, options)
    last = spark.sql(f"SELECT max(snapshot_id) FROM lake.java_changes.`ch_{producer}$snapshots`").first()[0]
    got, used = both(
        spark,
        f"SELECT rowkind, id, v FROM lake.java_changes.`ch_{producer}$audit_log` WITH ('incremental-between' = '0,{last}')",
    )
    assert used and got
    kinds = {r[0] for r in got}
    assert "+I" in kinds and (producer == "input" or {"-U", "+U"} <= kinds), kinds
    # Replaying the changes in snapshot order gives the table Paimon Java reads.
    ordered = spark.sql(
        f"SELECT rowkind, id, v FROM lake.java_changes.`ch_{producer}$audit_log` WITH ('incremental-between' = '0,{last}')"
    ).collect()
    state: dict[int, Any] = {}
    for kind, k, v in ordered:
        if kind in ("+I", "+U"):
            state[k] = v
        elif kind == "-D":
            state.pop(k, None)
    java = sorted((str(k), "null" if v is None else str(v)) for k, v in state.items())
    assert read_tables(release, wh, [name])[name] == java
