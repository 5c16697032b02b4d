"""ARCHITECTURE.md tells the truth about two things the code can check: the layer list (the one
``tools/check_imports.py`` enforces) and the tests named as holding each format fact the JVM
executes to Python."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "ARCHITECTURE.md").read_text()


def _check_imports() -> object:
    spec = importlib.util.spec_from_file_location("check_imports", ROOT / "tools" / "check_imports.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("check_imports", module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_layer_picture_is_the_checked_one() -> None:
    block = _check_imports().layers_block()  # type: ignore[attr-defined]
    assert block in DOC, "ARCHITECTURE.md's layer block differs from `python tools/check_imports.py --layers`"


def test_every_layer_is_described() -> None:
    layers = [name for name, _ in _check_imports().LAYERS]  # type: ignore[attr-defined]
    described = set(re.findall(r"^\| ([\w-]+) \| ", DOC.split("## The JVM shim")[0], re.M))
    assert set(layers) <= described, set(layers) - described


def test_every_parity_test_named_for_a_jvm_fact_exists() -> None:
    section = DOC.split("## Format facts the JVM executes")[1].split("\n## ")[0]
    named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", section)
    assert len(named) >= 10
    for path, name in named:
        source = (ROOT / path).read_text()
        assert re.search(rf"^def {name}\(", source, re.M), f"{path}::{name} does not exist"
    # and each Java class named exists
    for java in re.findall(r"`((?:scan|write|functions|fs|bridge|catalog|sql)/\w+)", section):
        matches = list((ROOT / "jvm-shim" / "src" / "main").rglob(f"{java.split('/')[1]}.*"))
        assert matches, f"{java} is not in the shim"
