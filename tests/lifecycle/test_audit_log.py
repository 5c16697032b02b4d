"""``audit_log``: merged rows with their row kind, as Paimon's ``$audit_log`` batch read."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from stratalake import field
from tests.lifecycle.helpers import batch, make_table, rows


def test_audit_log_keeps_retracted_keys_with_their_kind(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    t.write(batch([1, 2, 3], "a"))
    t.write(pa.table({"id": [2, 4], "v": ["b", "c"], "dt": ["d1", "d2"], "k": ["+U", "+I"]}), row_kind="k")
    t.write(batch([3], "x", kinds=["-D"]), row_kind="k")

    log = t.audit_log()
    assert log.column_names == ["rowkind", "id", "v", "dt"]
    assert rows(log) == [
        ("+I", 1, "a1", "d1"),
        ("+I", 4, "c", "d2"),
        ("+U", 2, "b", "d1"),
        ("-D", 3, "x3", "d1"),
    ]
    # The live rows are exactly what a normal read returns.
    live = log.filter(pa.compute.is_in(log.column("rowkind"), pa.array(["+I", "+U"]))).drop_columns(
        ["rowkind"]
    )
    assert rows(live) == rows(t.read())

    assert rows(t.audit_log(snapshot_id=1)) == [("+I", i, f"a{i}", "d1") for i in (1, 2, 3)]
    assert rows(t.audit_log(filter=field("id") >= 3)) == [("+I", 4, "c", "d2"), ("-D", 3, "x3", "d1")]
    assert rows(t.audit_log(filter=field("v") == "b")) == [("+U", 2, "b", "d1")]


def test_audit_log_of_an_empty_table(tmp_path: Path) -> None:
    t = make_table(tmp_path)
    log = t.audit_log()
    assert log.num_rows == 0
    assert log.column_names == ["rowkind", "id", "v", "dt"]
