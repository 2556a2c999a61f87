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
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench import WF_ENV, WIREFALL, corpus_list  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", help="comma-separated capture names")
    ap.add_argument("--commands", default="requests,frames,summary")
    ap.add_argument("-j", "--workers", default="1", help="wirefall --workers (1: the serial path; 2: the parallel one)")
    args = ap.parse_args()
    keep = set(args.only.split(",")) if args.only else None
    for name, cap, keys, _fields in corpus_list(make=False):
        if keep and name not in keep:
            continue
        for cmd in args.commands.split(","):
            h = hashlib.sha256()
            # this tree's code (PYTHONPATH), run by the interpreter's environment's wirefall
            # paths relative to the tree (summary's "file" is the path given): two trees'
            # digests compare (a corpus elsewhere: link it as benchmarks/corpus)
            rel = [str(x.relative_to(ROOT)) if x.is_relative_to(ROOT) else str(x) for x in (cap, keys)]
            p = subprocess.Popen([WIREFALL, cmd, rel[0], "--keylog", rel[1], "--json", "-j", args.workers],
                                 stdout=subprocess.PIPE, cwd=ROOT, env=dict(WF_ENV, PYTHONHASHSEED=os.environ.get("PYTHONHASHSEED", "0")))
            n = 0
            for chunk in iter(lambda p=p: p.stdout.read(1 << 20), b""):
                h.update(chunk)
                n += len(chunk)
            rc = p.wait()
            print(f"{name} {cmd} rc={rc} bytes={n} sha256={h.hexdigest()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
