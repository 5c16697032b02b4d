"""Reads of deletion-vector tables: level 0 skipped, files read one by one with vectors applied."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

import stratalake
from stratalake.catalog.schema_change import SchemaChange
from stratalake.expressions import field
from stratalake.read.scan import Split
from tests.deletion_vectors.helpers import batch, dv_entries, make, rows, with_vectors

BASE = 3000


def expected(base: int = BASE) -> list[tuple[object, ...]]:
    out = {k: (k, f"a{k}", 1) for k in range(base)}
    out.update({k: (k, f"b{k}", 1) for k in (1, 5, 9, base + 1)})
    out[5] = (5, "c5", 1)
    del out[7]
    return sorted(out.values())


def test_compaction_marks_superseded_rows_instead_of_rewriting(tmp_path: Path) -> None:
    t = with_vectors(tmp_path)
    assert rows(t) == expected()
    entries = dv_entries(t)
    assert len(entries) == 1 and entries[0].file_name.startswith("index-")
    (top,) = [f for s in t.new_scan().plan() for f in s.files if f.level == t.core_options.num_levels - 1]
    ranges = {r.data_file: r for r in entries[0].dv_ranges or ()}
    # Keys 1, 5, 9 were updated and 7 deleted: their rows in the untouched top file are masked.
    assert ranges[top.file_name].cardinality == 4
    assert top.row_count == BASE  # not rewritten


def test_batch_read_is_unmerged_and_skips_level0(tmp_path: Path) -> None:
    t = with_vectors(tmp_path, **{"write-only": "true"})
    # write-only leaves everything in level 0: a deletion-vector table shows nothing yet.
    assert rows(t) == []
    assert t.new_scan().plan() == []
    t.compact()
    assert rows(t) == expected()
    t.write(batch([2, 3], "late"))  # write-only again: invisible until compacted
    assert (2, "a2", 1) in rows(t)
    t.compact()
    assert (2, "late2", 1) in rows(t) and (3, "late3", 1) in rows(t)
    for split in t.new_scan().plan():
        assert not split.merge and all(f.level > 0 for f in split.files)


def test_merge_on_read_option_keeps_level0(tmp_path: Path) -> None:
    t = with_vectors(tmp_path, **{"write-only": "true", "deletion-vectors.merge-on-read": "true"})
    assert rows(t) == expected()


def test_splits_parallelise_within_a_bucket_and_pickle(tmp_path: Path) -> None:
    t = with_vectors(tmp_path, **{"source.split.target-size": "1 b", "source.split.open-file-cost": "0 b"})
    splits = t.new_scan().plan()
    assert len(splits) == len({f.file_name for s in splits for f in s.files}) > 1
    assert {s.bucket for s in splits} == {0}
    restored = [pickle.loads(pickle.dumps(s)) for s in splits]
    assert restored == splits and all(isinstance(s, Split) for s in restored)
    read = t.new_read()
    parts = [read.read_split_table(s) for s in restored]
    assert sorted(tuple(r.values()) for p in parts for r in p.to_pylist()) == expected()


def test_filters_and_projection_apply_after_vectors(tmp_path: Path) -> None:
    t = with_vectors(tmp_path)
    assert rows(t, filter=field("k") < 10) == [r for r in expected() if int(r[0]) < 10]  # type: ignore[call-overload]
    assert rows(t, filter=field("v") == "a7") == []
    assert rows(t, columns=["v"], filter=field("k") == 5) == [("c5",)]


def test_audit_log_applies_vectors(tmp_path: Path) -> None:
    t = with_vectors(tmp_path)
    log = t.audit_log()
    assert sorted((r["k"], r["v"]) for r in log.to_pylist()) == [(r[0], r[1]) for r in expected()]


def test_full_compaction_rewrites_files_with_vectors(tmp_path: Path) -> None:
    t = with_vectors(tmp_path)
    assert dv_entries(t)
    t.compact(full=True)
    assert dv_entries(t) == [] and t.latest_snapshot().index_manifest is None  # type: ignore[union-attr]
    assert rows(t) == expected()


def test_lookup_changelog_with_vectors(tmp_path: Path) -> None:
    t = with_vectors(tmp_path, **{"changelog-producer": "lookup"})
    assert rows(t) == expected()
    assert dv_entries(t)
    changes = t.changelog(start_snapshot=t.latest_snapshot().id - 2)  # type: ignore[union-attr]
    assert ("-D", 7) in {(r["_row_kind"], r["k"]) for r in changes.to_pylist()}


def test_options_paimon_refuses_with_vectors_fail_at_create(tmp_path: Path) -> None:
    for options, named in (
        ({"changelog-producer": "full-compaction"}, "full-compaction"),
        ({"merge-engine": "first-row", "ignore-delete": "true"}, "first-row"),
    ):
        with pytest.raises(stratalake.exceptions.InvalidOptionError, match=named):
            make(tmp_path / named, **options)


@pytest.mark.interop
def test_pypaimon_reads_the_same_rows(tmp_path: Path) -> None:
    from pypaimon import CatalogFactory

    t = with_vectors(tmp_path, **{"bucket": "2"})
    assert any(dv_entries(t))
    table = CatalogFactory.create({"warehouse": str(tmp_path / "wh")}).get_table("db.t")
    rb = table.new_read_builder()
    splits = rb.new_scan().plan().splits()
    assert any(getattr(s, "data_deletion_files", None) for s in splits)  # pypaimon saw the vectors
    got = rb.new_read().to_arrow(splits)
    assert sorted((r["k"], r["v"], r["n"]) for r in got.to_pylist()) == expected()


@pytest.mark.interop
def test_reads_index_files_serialized_by_pypaimon(tmp_path: Path) -> None:
    """Swap our index file for one whose vectors pypaimon serialized (run-optimized bitmaps, as
    Java writes them) at the same ranges' data files: the read must not change."""
    from pypaimon.deletionvectors.bitmap_deletion_vector import BitmapDeletionVector
    from pypaimon.utils.roaring_bitmap import RoaringBitmap

    from stratalake.lsm.deletion_vector import decode_index_file

    t = with_vectors(tmp_path)
    (entry,) = dv_entries(t)
    path = Path(t.location) / "index" / entry.file_name
    vectors = decode_index_file(path.read_bytes(), entry.dv_ranges or (), str(path))
    blob = b"\x01"
    offsets = {}
    for r in entry.dv_ranges or ():
        bm = RoaringBitmap()
        for p in vectors[r.data_file].positions.tolist():
            bm.add(p)
        data = BitmapDeletionVector(bm).serialize()
        offsets[r.data_file] = len(blob)
        blob += data
    assert all(offsets[r.data_file] == r.offset for r in entry.dv_ranges or ())  # same layout
    path.write_bytes(blob)
    from stratalake.lsm import deletion_vector

    deletion_vector._INDEX_CACHE = deletion_vector._IndexFileCache(1 << 20)  # drop the cached bytes
    assert rows(t) == expected()


def test_rows_in_level_zero_of_a_foreign_table_are_hidden(tmp_path: Path) -> None:
    """A table written without compaction (e.g. by pypaimon, which never compacts) and then
    switched to deletion vectors reads empty until compacted, as Paimon's batch scan does."""
    t = make(tmp_path, dv=False, **{"write-only": "true"})
    t.write(batch([1, 2], "a"))
    cat = stratalake.Catalog(str(tmp_path / "wh"))
    cat.alter_table(
        "db.t",
        [
            SchemaChange.set_option("deletion-vectors.modifiable", "true"),  # Paimon's opt-in to flip it
            SchemaChange.set_option("deletion-vectors.enabled", "true"),
            SchemaChange.set_option("write-only", "false"),
        ],
    )
    t = cat.get_table("db.t")
    assert rows(t) == []
    t.compact()
    assert rows(t) == [(1, "a1", 1), (2, "a2", 1)]
