"""Item 8 of issue 36: a tag name is checked wherever it becomes a path, not only at create.

On main, ``delete_tag('/../../../other/snapshot/snapshot-1')`` deleted another table's snapshot
file (its JSON is a valid "tag"): the name was joined as ``tag/tag-/../../../other/snapshot/...``.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import stratalake
from stratalake.exceptions import InvalidOptionError
from stratalake.maintenance.tags import read_tag

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
# tag/tag-<name> as LocalFileIO normalises it: tag/tag-/.. is tag/, then up through t/ to db.db/.
TRAVERSAL = "/../../../other/snapshot/snapshot-1"


def _tables(tmp_path: Path) -> tuple[stratalake.Table, stratalake.Table]:
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    out = []
    for name in ("t", "other"):
        t = cat.create_table(f"db.{name}", schema=SCHEMA, primary_key=["id"], options={"bucket": "1"})
        t.write(pa.table({"id": pa.array([1], pa.int64()), "v": [name]}))
        out.append(t)
    return out[0], out[1]


@pytest.mark.parametrize("name", [TRAVERSAL, "..\\..\\x", "a\x00b", "  "])
def test_tag_names_that_leave_the_tag_directory_are_refused(tmp_path: Path, name: str) -> None:
    t, other = _tables(tmp_path)
    victim = Path(other.snapshot_manager.snapshot_path(1))
    assert victim.exists()
    with pytest.raises(InvalidOptionError, match=r"table db\.t: .* is not a valid tag name"):
        t.delete_tag(name)
    for use in (t.tag_manager.exists, t.tag_manager.tag, lambda n: read_tag(t, n)):
        with pytest.raises(InvalidOptionError, match="not a valid tag name"):
            use(name)
    with pytest.raises(InvalidOptionError, match="not a valid tag name"):
        t.create_tag(name)
    assert victim.exists()
    assert other.read().num_rows == 1


def test_create_still_refuses_numbers_and_control_characters(tmp_path: Path) -> None:
    t, _ = _tables(tmp_path)
    for name in ("12", "a\nb"):
        with pytest.raises(InvalidOptionError, match="not a valid tag name"):
            t.create_tag(name)
    t.create_tag("release-1.0")
    assert list(t.tags()) == ["release-1.0"]
    assert t.delete_tag("release-1.0") == []
