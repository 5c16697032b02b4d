"""Package-graph check for the JVM shim (run by ``make lint``).

Reads every ``.java`` and ``.scala`` file under ``jvm-shim/src/main/{java,scala}``, finds which
shim packages each one uses (``import org.stratalake.spark.<pkg>...`` lines, and references
written out in full, ``org.stratalake.spark.<pkg>.Name``, anywhere in the code), and fails when:

- a package uses a package of a higher layer (see :data:`JAVA_LAYERS`);
- packages use each other in a circle (even within one layer);
- a package is not placed in any layer (new packages must be given a place).

Comments are skipped, so a doc comment naming a class of another package is no dependency.
A file's package is its ``package`` line. Standard library only.

Usage: ``python tools/check_java_packages.py [ROOT]`` (ROOT holds ``src/main``; default
``jvm-shim/``). ``--graph`` prints the package graph, ``--layers`` the layer list.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# One cycle finder for both layout checks: check_imports' (tools/ is put on the path here, so it
# resolves however this file is loaded: as a script, or by file path from the tests).
sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_imports import find_cycles

BASE = "org.stratalake.spark"

# Layers from the bottom up, as in tools/check_imports.py: a package may use packages of its own
# layer or lower ones, never a higher one, and no two packages may use each other (directly or
# round a circle). Names are relative to org.stratalake.spark ("" is that package itself).
JAVA_LAYERS: list[tuple[str, list[str]]] = [
    # The Python worker behind one pipe, the typed messages, errors.
    ("bridge", ["bridge"]),
    # Leaf helpers with no stratalake dependency: local-filesystem rules, Catalyst functions.
    ("leaf", ["fs", "functions"]),
    # The Python data source and the view of a table that scans and writes take (LakeTable).
    ("source", ["source"]),
    # DSv2 scans and writes of one table.
    ("io", ["scan", "write"]),
    # SQL extensions: parser, WITH rewriting, row-level rewrites (they build writes).
    ("sql", ["sql"]),
    # The catalogs and the DSv2 table they serve (it builds scans and writes).
    ("catalog", ["catalog"]),
    # The classes users name in Spark conf.
    ("entry", [""]),
]

_CHAR = re.compile(r"'(?:\\(?:u+[0-9a-fA-F]{4}|[0-7]{1,3}|.)|[^'\\\n])'")
_PACKAGE = re.compile(r"^\s*package\s+([\w.]+)\s*;?", re.M)
_REFERENCE = re.compile(re.escape(BASE) + r"((?:\.[a-z_][a-z0-9_]*)*)(?:\.[A-Z_{*]|\s*;|\s*$)", re.M)


@dataclass(frozen=True)
class Use:
    """One reference from a source file to a shim package."""

    source: str  # file, relative to the root
    line: int
    package: str  # the using file's package, relative to BASE
    target: str  # the package used, relative to BASE


def _relative(package: str) -> str | None:
    if package == BASE:
        return ""
    if package.startswith(BASE + "."):
        return package[len(BASE) + 1:]
    return None


def _strip(text: str) -> str:
    """The code without comments and string or character literals (each left as a blank), line
    breaks kept so line numbers still count."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif text.startswith('"""', i):  # a Java text block or a Scala multi-line string
            end = text.find('"""', i + 3)
            end = n if end < 0 else end + 3
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
        elif text[i] == "'":
            char = _CHAR.match(text, i)  # else a Scala symbol or variance tick: kept as code
            out.append("''" if char else "'")
            i = char.end() if char else i + 1
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = min(j + 1, n)
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def collect(root: Path) -> tuple[set[str], list[Use], list[str]]:
    """The shim packages under ``root/src/main``, every use of one package from another, and the
    files whose uses cannot be read."""
    packages: set[str] = set()
    uses: list[Use] = []
    unreadable: list[str] = []
    for path in sorted((root / "src" / "main").rglob("*")):
        if path.suffix not in (".java", ".scala"):
            continue
        code = _strip(path.read_text(encoding="utf-8"))
        declared = _PACKAGE.search(code)
        me = _relative(declared.group(1)) if declared else None
        if me is None:
            continue
        packages.add(me)
        rel = str(path.relative_to(root))
        if len(_PACKAGE.findall(code)) > 1:
            # Chained Scala package clauses make the outer packages' members visible by short
            # name (`bridge.Messages`), which this check would not see.
            unreadable.append(f"{rel}: chained package clauses: write one package clause, so "
                              "that every use of another shim package names it in full")
        for m in _REFERENCE.finditer(code):
            target = (m.group(1) or ".")[1:]
            line = code.count("\n", 0, m.start()) + 1
            uses.append(Use(rel, line, me, target))
    return packages, uses, unreadable


def _known(target: str, packages: set[str]) -> str:
    """The longest shim package a dotted name starts with (a Scala import may name members)."""
    name = target
    while name and name not in packages:
        name = name.rpartition(".")[0]
    return name


def layer_index(package: str) -> int | None:
    for i, (_, members) in enumerate(JAVA_LAYERS):
        if package in members:
            return i
    return None


def package_edges(packages: set[str], uses: Sequence[Use]) -> dict[tuple[str, str], Use]:
    """One witness use per (using package, used package) pair."""
    edges: dict[tuple[str, str], Use] = {}
    for use in uses:
        target = _known(use.target, packages)
        if target != use.package:
            edges.setdefault((use.package, target), use)
    return edges


def _show(package: str) -> str:
    return f"{BASE}.{package}" if package else BASE


def check(root: Path) -> list[str]:
    """Every violation of the layering under ``root`` (empty when it holds)."""
    packages, uses, unreadable = collect(root)
    errors = list(unreadable)
    for package in sorted(packages):
        if layer_index(package) is None:
            errors.append(f"{_show(package)}: not placed in any layer "
                          "(add it to JAVA_LAYERS in tools/check_java_packages.py)")
    edges = package_edges(packages, uses)
    for (a, b), use in sorted(edges.items()):
        la, lb = layer_index(a), layer_index(b)
        if la is not None and lb is not None and lb > la:
            errors.append(f"{use.source}:{use.line}: {_show(a)} ({JAVA_LAYERS[la][0]}) uses "
                          f"{_show(b)} ({JAVA_LAYERS[lb][0]}), a higher layer")
    for comp in find_cycles(packages, edges):
        members = set(comp)
        witnesses = [f"{u.source}:{u.line} -> {_show(b)}" for (a, b), u in sorted(edges.items())
                     if a in members and b in members]
        errors.append(f"JVM packages use each other in a circle: {', '.join(map(_show, comp))} ("
                      + "; ".join(witnesses) + ")")
    return errors


def layers_block() -> str:
    """The layer list, top layer first, one line each: its name, then its packages."""
    width = max(len(name) for name, _ in JAVA_LAYERS)
    lines = [f"{name.ljust(width)}  {' '.join(_show(m) for m in members)}"
             for name, members in reversed(JAVA_LAYERS)]
    return "\n".join(["```", *lines, "```"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parent.parent / "jvm-shim"))
    parser.add_argument("--graph", action="store_true", help="print the package graph and exit")
    parser.add_argument("--layers", action="store_true",
                        help="print the layers, top first, as ARCHITECTURE.md shows them, and exit")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if args.layers:
        print(layers_block())
        return 0
    if args.graph:
        packages, uses, _ = collect(root)
        for (a, b), use in sorted(package_edges(packages, uses).items()):
            print(f"{_show(a)} -> {_show(b)}    ({use.source}:{use.line})")
        return 0
    if not (root / "src" / "main").is_dir():
        print(f"check_java_packages: no src/main under {root}", file=sys.stderr)
        return 1
    errors = check(root)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"check_java_packages: {len(errors)} problem(s)", file=sys.stderr)
        return 1
    print("check_java_packages: layout ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
