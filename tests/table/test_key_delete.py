"""``table/key_delete.live_listed_keys`` against a model: the live keys of a table that holds
level-0 files with retractions (merged splits), deletion-vector files (read without a merge), keys
in several partitions, and key lists with absent, duplicate and null keys, with and without the
partition column."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratalake.table.key_delete import live_listed_keys
from tests.lifecycle.helpers import make_table

PARTS = ("d1", "d2", "d3")
# Writes: (ids, partition, kind); kind "-D" retracts.
WRITES = st.lists(
    st.tuples(st.lists(st.integers(0, 40), min_size=1, max_size=15), st.sampled_from(PARTS), st.sampled_from(["+I", "-D"])),
    min_size=1,
    max_size=6,
)
LISTS = st.lists(st.one_of(st.none(), st.integers(-2, 45)), max_size=30)


def _apply(t: Any, writes: list[tuple[list[int], str, str]]) -> set[tuple[int, str]]:
    live: set[tuple[int, str]] = set()
    for ids, part, kind in writes:
        t.write(
            pa.table({"id": ids, "v": [f"v{i}" for i in ids], "dt": [part] * len(ids), "_k": [kind] * len(ids)}),
            row_kind="_k",
        )
        for i in ids:
            (live.discard if kind == "-D" else live.add)((i, part))
    return live


@pytest.mark.parametrize("options", [{}, {"deletion-vectors.enabled": "true"}], ids=["merged", "dv"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=WRITES, listed=LISTS, part=st.one_of(st.none(), st.sampled_from(PARTS)))
def test_live_listed_keys_match_a_model(
    tmp_path_factory: pytest.TempPathFactory,
    options: dict[str, str],
    writes: list[tuple[list[int], str, str]],
    listed: list[int | None],
    part: str | None,
) -> None:
    t = make_table(tmp_path_factory.mktemp("kd"), "t", **options)
    live = _apply(t, writes)
    columns: dict[str, Any] = {"id": pa.array(listed, pa.int64())}
    if part is not None:  # the list names the partition too
        columns["dt"] = pa.array([part] * len(listed))
    found = live_listed_keys(t, pa.table(columns))
    assert found.column_names == ["id", "dt"]
    got = sorted(zip(found.column("id").to_pylist(), found.column("dt").to_pylist(), strict=True))
    wanted = {i for i in listed if i is not None}
    assert got == sorted(k for k in live if k[0] in wanted and (part is None or k[1] == part))


def test_a_key_list_without_the_bucket_key_is_refused(tmp_path: Path) -> None:
    t = make_table(tmp_path, "t")
    with pytest.raises(ValueError, match=r"db\.t: a key list needs the columns \['id'\]"):
        live_listed_keys(t, pa.table({"dt": ["d1"]}))
