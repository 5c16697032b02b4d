"""``scan.fallback-branch`` against pypaimon 2.1.0, which reads and writes branches but does not
implement fallback reads (it only knows the option's name): pypaimon writes both branches of a
table stratalake set the option on, and stratalake's read equals pypaimon's reads of the two
branches combined partition by partition as Paimon's ``FallbackReadFileStoreTable`` combines them
(main's partitions from main, the others from the fallback branch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import stratalake

from .paimon_oracle import paimon_create_table, paimon_read, paimon_table, paimon_write

pytestmark = pytest.mark.interop

SCHEMA = pa.schema(
    [pa.field("dt", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False), ("v", pa.string())]
)


def batch(dt: str, ks: list[int], v: str) -> pa.Table:
    return pa.table({"dt": [dt] * len(ks), "k": ks, "v": [f"{v}{k}" for k in ks]}, schema=SCHEMA)


def rows(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted((r["dt"], r["k"], r["v"]) for r in t.to_pylist())


@pytest.mark.parametrize("keyed", [False, True])
def test_fallback_read_combines_pypaimon_branch_reads(tmp_path: Path, keyed: bool) -> None:
    wh = tmp_path / "wh"
    options = {"bucket": "2"} if keyed else {"bucket": "-1"}
    paimon_create_table(wh, "db.t", SCHEMA, ["dt", "k"] if keyed else [], ["dt"], options)
    paimon_table(wh, "db.t").branch_manager().create_branch("fb")
    paimon_write(wh, "db.t$branch_fb", pa.concat_tables([batch("d1", [1, 2], "f"), batch("d2", [1, 2], "f")]))
    paimon_write(wh, "db.t$branch_fb", batch("d3", [5], "f"))
    cat = stratalake.Catalog(str(wh))
    t = cat.alter_table("db.t", [stratalake.SchemaChange.set_option("scan.fallback-branch", "fb")])
    paimon_write(wh, "db.t", batch("d1", [3], "m"))
    paimon_write(wh, "db.t", batch("d3", [5, 6], "m"))
    if keyed:
        paimon_write(wh, "db.t$branch_fb", batch("d2", [2], "g"))  # a newer version in the branch
    main, other = rows(paimon_read(wh, "db.t")), rows(paimon_read(wh, "db.t$branch_fb"))
    own = {r[0] for r in main}
    expected = sorted(main + [r for r in other if r[0] not in own])
    got = rows(cat.get_table("db.t").read())
    assert got == expected
    assert got == [
        ("d1", 3, "m3"),
        ("d2", 1, "f1"),
        ("d2", 2, "g2" if keyed else "f2"),
        ("d3", 5, "m5"),
        ("d3", 6, "m6"),
    ]
    # pypaimon 2.1 reads the table's own branch only (it does not implement the option).
    assert main == [("d1", 3, "m3"), ("d3", 5, "m5"), ("d3", 6, "m6")]
    assert t.options()["scan.fallback-branch"] == "fb"
