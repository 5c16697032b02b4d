"""Every write and maintenance kind, with a fault at each file-system operation of its statement.

By default each kind tries a sample of operations (the first, the snapshot publish and the two
after it, the middle, the last) in both in-process modes, and one process death; with
``STRATALAKE_FAULT_SWEEP=all`` (``make test-faults``, run by CI) every operation, both modes,
and process deaths at a spread of operations. See ``sweep.py`` for the invariants.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.faults.faulty_io import EXIT_MODES, MODES
from tests.faults.sweep import (
    KINDS,
    check_after_fault,
    dry_ops,
    make_template,
    points_to_try,
    run_in_child,
    run_with_fault,
)

EVERY = os.environ.get("STRATALAKE_FAULT_SWEEP", "") == "all"


@pytest.mark.parametrize("name", sorted(KINDS))
def test_fault_at_every_operation(name: str, tmp_path: Path) -> None:
    kind = KINDS[name]
    template = make_template(kind, tmp_path)
    ops = dry_ops(kind, template, tmp_path)
    assert any(op == "publish" or op in ("delete", "write") for op, _ in ops), ops
    tried = 0
    for k in points_to_try(len(ops), EVERY, ops):
        for mode in MODES:
            wh = tmp_path / f"{mode}-{k}"
            shutil.copytree(template.path, wh)
            outcome = run_with_fault(kind, wh, k, mode)
            where = f"{name}: fault {mode} op {k} {outcome.fired}"
            check_after_fault(kind, wh, template, outcome.error, where)
            shutil.rmtree(wh)
            tried += 1
    assert tried >= 2


@pytest.mark.parametrize("name", sorted(KINDS))
def test_process_death_at_operations(name: str, tmp_path: Path) -> None:
    kind = KINDS[name]
    template = make_template(kind, tmp_path)
    ops = dry_ops(kind, template, tmp_path)
    sample = points_to_try(len(ops), False, ops)
    if EVERY:
        stride = max(1, len(ops) // 12)
        sample = sorted(set(sample) | set(range(0, len(ops), stride)))
    else:
        publish = [i for i, (op, p) in enumerate(ops) if op == "publish" and "/snapshot/" in p]
        sample = publish[:1] or sample[-1:]
    for k in sample:
        mode = EXIT_MODES[k % 2]
        wh = tmp_path / f"{mode}-{k}"
        shutil.copytree(template.path, wh)
        code = run_in_child(kind, wh, k, mode)
        check_after_fault(kind, wh, template, None, f"{name}: process death {mode} at op {k} (exit {code})")
        shutil.rmtree(wh)
