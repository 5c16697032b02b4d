"""Run one statement with a fault at operation k, then check what must hold whatever k was.

Invariants after every fault (:func:`check_after_fault`):

1. every file that any snapshot or tag references exists (a published snapshot never loses a
   file), walked here from the snapshot and tag files themselves;
2. the table reads, and the rows are those from before the statement or those after it (a
   commit is all or nothing); pypaimon reads the same rows;
3. an error after the statement's commit landed says so (``CommitStateUnknownError`` or a note
   that the data IS committed); an error that says so names a commit that is there;
4. re-running the statement (where that is what a user would do) gives the clean result, and a
   streaming batch is not applied twice;
5. ``remove_orphan_files`` deletes only files nothing references, and leaves none behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stratalake.exceptions import CommitStateUnknownError
from stratalake.io import LocalFileIO
from stratalake.spec.manifest import FileKind
from stratalake.spec.snapshot import Snapshot
from stratalake.table import Table
from tests.faults.faulty_io import EXIT_CODE, FaultPlan, FaultyFileIO
from tests.faults.kinds import IDENTIFIER, KINDS, Kind, create

ROOT = Path(__file__).resolve().parents[2]


def table_path(warehouse: Path) -> Path:
    db, name = IDENTIFIER.split(".")
    return warehouse / f"{db}.db" / name


def open_table(warehouse: Path, file_io: LocalFileIO | None = None) -> Table:
    return Table(file_io or LocalFileIO(), str(table_path(warehouse)), IDENTIFIER)


def sorted_rows(t: Table) -> list[tuple[Any, ...]]:
    data = t.read()
    cols = [data.column(n).to_pylist() for n in ("id", "dt", "v")]
    return sorted(zip(*cols, strict=True))


# -- what metadata references -----------------------------------------------------------------
def _snapshots_and_tags(t: Table) -> list[tuple[Snapshot, bool]]:
    """Every retained snapshot, tag and long-lived changelog (all are snapshot documents), with
    whether it is a long-lived changelog."""
    out = []
    for d, prefix in (("snapshot", "snapshot-"), ("tag", "tag-"), ("changelog", "changelog-")):
        for st in t.file_io.list_status(f"{t.location}/{d}"):
            if st.name.startswith(prefix) and not st.name.endswith(".tmp"):
                out.append((Snapshot.from_json(t.file_io.read_text(st.path), origin=st.path), d == "changelog"))
    return out


def referenced_files(t: Table, mentioned: set[str] | None = None) -> set[str]:
    """Paths relative to the table of every file a snapshot or tag references (manifest lists,
    manifests, live data files, changelog files, the index manifest and its index files).
    ``mentioned`` collects, besides, the data files that DELETE entries name: orphan removal
    keeps those too (as Paimon's does), so they may stay."""
    mio, codec = t.manifest_io, t.partition_codec
    out: set[str] = set()

    def data_path(partition: bytes, bucket: int, name: str) -> str:
        part = codec.path(codec.from_bytes(partition))
        return f"{part + '/' if part else ''}bucket-{bucket}/{name}"

    for snap, long_lived in _snapshots_and_tags(t):
        live: dict[tuple[bytes, int, str], bool] = {}
        lists = [
            (snap.base_manifest_list, False),
            (snap.delta_manifest_list, False),
            (snap.changelog_manifest_list, True),
        ]
        if long_lived:  # a long-lived changelog keeps only what a changelog read opens
            if snap.changelog_manifest_list is not None:
                lists = [(snap.changelog_manifest_list, True)]
            elif snap.commit_kind.name == "APPEND":
                lists = [(snap.delta_manifest_list, True)]  # (no producer: the APPEND's files)
            else:
                lists = []
        for lst, is_changelog in lists:
            if lst is None:
                continue
            out.add(f"manifest/{lst}")
            for meta in mio.read_list(lst):
                out.add(f"manifest/{meta.file_name}")
                for e in mio.read_entries(meta.file_name):
                    key = (e.partition, e.bucket, e.file.file_name)
                    if mentioned is not None:
                        mentioned.add(data_path(*key))
                    if is_changelog:
                        out.add(data_path(*key))
                    elif e.kind is FileKind.ADD:
                        live[key] = True
                    else:
                        live.pop(key, None)
        out |= {data_path(*key) for key in live}
        if snap.index_manifest is not None and not long_lived:
            out.add(f"manifest/{snap.index_manifest}")
            entries = mio.read_index(snap.index_manifest)
            gone = {e.file_name for e in entries if e.kind is FileKind.DELETE}
            out |= {f"index/{e.file_name}" for e in entries if e.kind is FileKind.ADD and e.file_name not in gone}
    return out


def disk_files(t: Table) -> set[str]:
    """Files under the table that orphan removal may judge (not schema, snapshot and tag files)."""
    root = Path(t.location)
    out = set()
    for dirpath, _dirs, files in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        top = rel.parts[0] if rel.parts else ""
        for f in files:
            if top in ("schema", "snapshot", "tag", "changelog", "consumer") and not f.endswith(".tmp"):
                continue
            out.add(str(rel / f))
    return out


# -- one run ----------------------------------------------------------------------------------
@dataclass
class Outcome:
    error: BaseException | None
    fired: tuple[str, str] | None
    ops: int


def run_with_fault(kind: Kind, warehouse: Path, fail_at: int | None, mode: str) -> Outcome:
    plan = FaultPlan(fail_at, mode)
    t = open_table(warehouse, FaultyFileIO(plan))
    plan.arm()
    error: BaseException | None = None
    try:
        kind.run(t)
    except Exception as e:
        error = e
    finally:
        plan.disarm()
    return Outcome(error, plan.fired, len(plan.ops))


def run_in_child(kind: Kind, warehouse: Path, fail_at: int, mode: str) -> int:
    """The statement in a new process that ends (os._exit) at operation ``fail_at``."""
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    proc = subprocess.run(
        [sys.executable, "-m", "tests.faults.child", kind.name, str(warehouse), str(fail_at), mode],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode in (0, EXIT_CODE, 1), proc.stderr[-3000:]
    return proc.returncode


@dataclass
class Template:
    """A table after the kind's setup, the rows before and after a clean run, the op count."""

    path: Path
    before: list[tuple[Any, ...]]
    after: list[tuple[Any, ...]]
    ops: int


def make_template(kind: Kind, root: Path) -> Template:
    template = root / "template"
    t = create(str(template), kind)
    kind.setup(t)
    before = sorted_rows(open_table(template))
    clean = root / "clean"
    shutil.copytree(template, clean)
    outcome = run_with_fault(kind, clean, None, "before")
    assert outcome.error is None, outcome.error
    after = sorted_rows(open_table(clean))
    shutil.rmtree(clean)
    return Template(template, before, after, outcome.ops)


def applied(kind: Kind, t: Table, template: Template, got: list[tuple[Any, ...]]) -> bool:
    """Whether the statement's effect is visible."""
    if kind.name == "create_tag":
        return "t2" in t.tags()
    if kind.name == "delete_tag":
        return "t1" not in t.tags()
    if template.before == template.after:
        return False  # maintenance that changes no rows: its effect is not in the rows
    return got == template.after


def _says_committed(e: BaseException) -> bool:
    notes = " ".join(getattr(e, "__notes__", ()))
    return isinstance(e, CommitStateUnknownError) or "IS committed" in notes


WRITES = {
    "pk_write",
    "pk_deletion_vectors",
    "pk_lookup_changelog",
    "pk_full_compaction_changelog",
    "append_write",
    "insert_overwrite",
    "dynamic_bucket",
    "cross_partition",
    "streaming_batch",
}


def check_after_fault(kind: Kind, warehouse: Path, template: Template, error: BaseException | None, where: str) -> None:
    t = open_table(warehouse)
    # 1. nothing referenced is missing
    root = Path(t.location)
    refs = referenced_files(t)
    missing = sorted(p for p in refs if not (root / p).exists())
    assert not missing, f"{where}: files referenced by a snapshot or tag are missing: {missing[:5]} (error: {error!r})"
    # 2. the table reads, all or nothing, and pypaimon agrees
    got = sorted_rows(t)
    assert got in (template.before, template.after), f"{where}: a partial state is visible (error: {error!r})"
    if kind.pypaimon:
        from tests.interop.paimon_oracle import paimon_read

        theirs = paimon_read(str(warehouse), IDENTIFIER)
        cols = [theirs.column(n).to_pylist() for n in ("id", "dt", "v")]
        assert sorted(zip(*cols, strict=True)) == got, f"{where}: pypaimon reads other rows"
    done = applied(kind, t, template, got)
    # 3. errors tell the truth about the commit
    if error is not None and kind.name in WRITES:
        if done:
            assert _says_committed(error), f"{where}: the commit landed but the error does not say so: {error!r}"
        else:
            notes = " ".join(getattr(error, "__notes__", ()))
            assert "IS committed" not in notes, f"{where}: the error claims a commit that is not there: {error!r}"
    # 4. re-running gives the clean result (never applies a batch twice)
    if kind.rerun or not done:
        kind.run(open_table(warehouse))
        t = open_table(warehouse)
        assert sorted_rows(t) == template.after, f"{where}: re-running the statement gave other rows"
        assert applied(kind, t, template, template.after) or template.before == template.after
    # 5. orphan removal removes exactly what nothing references
    t = open_table(warehouse)
    mentioned: set[str] = set()
    refs = referenced_files(t, mentioned)
    rows_now = sorted_rows(t)
    t.remove_orphan_files(older_than_ms=2**62)
    t = open_table(warehouse)
    left = disk_files(t)
    missing = sorted(p for p in refs if not (root / p).exists())
    assert not missing, f"{where}: remove_orphan_files deleted referenced files: {missing[:5]}"
    stray = sorted(left - refs - mentioned)
    assert not stray, f"{where}: unreferenced files survived remove_orphan_files: {stray[:5]}"
    assert sorted_rows(t) == rows_now, f"{where}: remove_orphan_files changed the rows"


def points_to_try(template_ops: int, every: bool, ops: list[tuple[str, str]] | None = None) -> list[int]:
    """All operations, or a sample: the first, the snapshot publish and its neighbours, the last."""
    if every:
        return list(range(template_ops))
    picks = {0, template_ops - 1, template_ops // 2}
    if ops is not None:
        for i, (kind, path) in enumerate(ops):
            if kind == "publish" and "/snapshot/" in path:
                picks |= {i, i + 1, min(i + 2, template_ops - 1)}
                break
    return sorted(p for p in picks if 0 <= p < template_ops)


def dry_ops(kind: Kind, template: Template, root: Path) -> list[tuple[str, str]]:
    wh = root / "dry"
    shutil.copytree(template.path, wh)
    plan = FaultPlan(None)
    t = open_table(wh, FaultyFileIO(plan))
    plan.arm()
    kind.run(t)
    plan.disarm()
    shutil.rmtree(wh)
    return plan.ops


__all__ = [
    "KINDS",
    "Template",
    "check_after_fault",
    "dry_ops",
    "make_template",
    "points_to_try",
    "run_in_child",
    "run_with_fault",
]

