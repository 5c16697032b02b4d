"""Damaged or missing metadata and data files: a clear error naming the file, never a wrong answer.

Torn files cannot come from stratalake's own writers (snapshots, hints and manifests are published
atomically; see test_crash.py), so these are outside damage. What must hold: the reader names the
broken file in a :class:`CorruptFileError`, snapshots that do not use it stay readable, a writer
refuses to commit on top of a broken latest snapshot, and stale hints are simply corrected.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from stratalake.exceptions import CorruptFileError, StrataLakeError
from stratalake.table import Table
from tests.reliability.workload import batch, check_rows, create_table, open_table


@pytest.fixture
def table(tmp_path: Path) -> Table:
    t = create_table(str(tmp_path / "wh"))
    for c in range(4):
        t.write(batch(0, c, 20))
    return t


def _truncate(path: Path, rng: random.Random) -> int:
    data = path.read_bytes()
    cut = rng.randrange(0, max(len(data) - 1, 1))
    path.write_bytes(data[:cut])
    return cut


def _latest_files(t: Table) -> tuple[Path, Path, Path, Path]:
    snap = t.latest_snapshot()
    assert snap is not None
    root = Path(t.location)
    delta = t.manifest_io.read_list(snap.delta_manifest_list)
    entry = t.live_entries(snap)[0]
    data = root / f"bucket-{entry.bucket}" / entry.file.file_name
    return (
        root / "snapshot" / f"snapshot-{snap.id}",
        root / "manifest" / snap.delta_manifest_list,
        root / "manifest" / delta[0].file_name,
        data,
    )


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("which", ["snapshot", "manifest list", "manifest"])
def test_truncated_metadata_names_the_file(tmp_path: Path, which: str, seed: int) -> None:
    t = create_table(str(tmp_path / "wh"))
    for c in range(3):
        t.write(batch(0, c, 20))
    snapshot, manifest_list, manifest, _ = _latest_files(t)
    target = {"snapshot": snapshot, "manifest list": manifest_list, "manifest": manifest}[which]
    _truncate(target, random.Random(seed))
    from stratalake.store import manifests

    manifests._CACHE._data.clear()  # a new process would not have the decoded file cached
    t = open_table(str(tmp_path / "wh"))
    latest = int(snapshot.name.split("-")[1])
    with pytest.raises(CorruptFileError, match=target.name):
        t.read()
    # The snapshot before it does not use the damaged file and still reads.
    assert check_rows(t.read(snapshot_id=latest - 1)) == {0: 1}
    # No commit is built on top of a snapshot that cannot be read.
    with pytest.raises(CorruptFileError, match=target.name):
        t.write(batch(0, 3, 5))
    assert t.snapshot_manager.latest_snapshot_id() == latest


def test_missing_and_truncated_data_files(table: Table) -> None:
    _, _, _, data = _latest_files(table)
    original = data.read_bytes()
    data.unlink()
    with pytest.raises(CorruptFileError, match=f"{data.name} is missing"):
        table.read()
    for cut in (0, 4, len(original) // 2, len(original) - 1):
        data.write_bytes(original[:cut])
        with pytest.raises(CorruptFileError, match=data.name):
            table.read()
    data.write_bytes(original)
    assert check_rows(table.read()) == {0: 3}


def test_corrupt_schema_file_names_it(table: Table, tmp_path: Path) -> None:
    schema = Path(table.location) / "schema" / "schema-0"
    schema.write_text(schema.read_text()[:40])
    with pytest.raises(CorruptFileError, match="schema-0"):
        open_table(str(tmp_path / "wh"))


@pytest.mark.parametrize(
    "hint", [b"1", b"2", b"999", b"", b"garbage", b"\xff\xfe", b"\xc2\xb2", b"-3", b" 4 \n"]
)
def test_stale_or_garbled_latest_hint(table: Table, tmp_path: Path, hint: bytes) -> None:
    latest = table.snapshot_manager.latest_snapshot_id()
    (Path(table.location) / "snapshot" / "LATEST").write_bytes(hint)
    (Path(table.location) / "snapshot" / "EARLIEST").write_bytes(hint)
    t = open_table(str(tmp_path / "wh"))
    assert t.snapshot_manager.latest_snapshot_id() == latest
    assert t.snapshot_manager.earliest_snapshot_id() == 1
    assert check_rows(t.read()) == {0: 3}
    assert latest is not None and t.write(batch(0, 4, 5)) >= latest + 1  # (+ its compaction)
    assert t.snapshot(latest + 1).commit_kind.value == "APPEND"
    assert check_rows(t.read()) == {0: 4}


def test_missing_hints_and_hint_pointing_at_an_expired_snapshot(table: Table, tmp_path: Path) -> None:
    root = Path(table.location) / "snapshot"
    (root / "LATEST").unlink()
    (root / "EARLIEST").write_text("1")
    table.expire_snapshots(retain_max=2, retain_min=1)
    (root / "EARLIEST").write_text("1")  # stale: snapshot 1 is gone
    t = open_table(str(tmp_path / "wh"))
    assert t.snapshot_manager.earliest_snapshot_id() == 3
    assert t.snapshot_manager.latest_snapshot_id() == 4
    with pytest.raises(StrataLakeError, match="expired"):
        t.read(snapshot_id=1)
    assert check_rows(t.read()) == {0: 3}


def test_snapshot_file_with_wrong_id_or_types(table: Table, tmp_path: Path) -> None:
    root = Path(table.location) / "snapshot"
    text = (root / "snapshot-4").read_text()
    (root / "snapshot-4").write_text(text.replace('"id": 4', '"id": 3'))
    t = open_table(str(tmp_path / "wh"))
    with pytest.raises(CorruptFileError, match="snapshot-4"):
        t.read()
    (root / "snapshot-4").write_text(text.replace('"schemaId": 0', '"schemaId": "0"'))
    t = open_table(str(tmp_path / "wh"))
    with pytest.raises(CorruptFileError, match=r"snapshot-4.*schemaId"):
        t.read()
    (root / "snapshot-4").write_text(text)
    assert check_rows(open_table(str(tmp_path / "wh")).read()) == {0: 3}
