#!/usr/bin/env python3
"""The longest functions and the biggest modules of wirefall's code (the folders the
``wirefall`` package links: analyzer, dissectors, ui, lab, oracle), as the closing notes of
refactoring issues report them.

    python scripts/sizes.py [-n 10]

A function's length is its source lines from ``def`` to its last statement (decorators and
nested functions included); a module's size is its line count.
"""
from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("analyzer", "dissectors", "ui", "lab", "oracle")


def sources() -> list[Path]:
    return sorted(p for f in FOLDERS for p in (ROOT / f).rglob("*.py"))


def functions(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    out: list[tuple[int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                out.append(((child.end_lineno or child.lineno) - child.lineno + 1, f"{name} ({child.lineno})"))
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
    visit(tree, "")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=10)
    a = ap.parse_args()
    funcs = []
    mods = []
    for p in sources():
        rel = p.relative_to(ROOT)
        mods.append((len(p.read_text().splitlines()), str(rel)))
        funcs += [(n, f"{rel}: {name}") for n, name in functions(p)]
    print(f"{a.n} longest functions (lines):")
    for n, name in sorted(funcs, reverse=True)[: a.n]:
        print(f"  {n:5d}  {name}")
    print(f"{a.n} biggest modules (lines):")
    for n, name in sorted(mods, reverse=True)[: a.n]:
        print(f"  {n:5d}  {name}")


if __name__ == "__main__":
    main()
