#!/usr/bin/env python3
"""Digests of ``wirefall requests --json`` and ``frames --json`` on every corpus capture.

An optimisation must leave the JSON identical: run this before and after and compare.

    .venv/bin/python benchmarks/digest.py > before.txt
    ... change ...
    .venv/bin/python benchmarks/digest.py | diff before.txt -
"""
from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench import corpus_list  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", help="comma-separated capture names")
    ap.add_argument("--commands", default="requests,frames,summary")
    args = ap.parse_args()
    keep = set(args.only.split(",")) if args.only else None
    for name, cap, keys, _fields in corpus_list(make=False):
        if keep and name not in keep:
            continue
        for cmd in args.commands.split(","):
            h = hashlib.sha256()
            p = subprocess.Popen([str(ROOT / ".venv" / "bin" / "wirefall"), cmd, str(cap), "--keylog", str(keys), "--json"],
                                 stdout=subprocess.PIPE)
            n = 0
            for chunk in iter(lambda p=p: p.stdout.read(1 << 20), b""):
                h.update(chunk)
                n += len(chunk)
            rc = p.wait()
            print(f"{name} {cmd} rc={rc} bytes={n} sha256={h.hexdigest()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
