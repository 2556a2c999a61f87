#!/usr/bin/env python3
"""Digests of wirefall's JSON outputs, to prove a refactoring changed no output.

Two sets of inputs:

``--samples`` (the default): every capture and browser log in ``sample_captures/`` and in
``../shared/captures/`` (beside the checkout), each with its key log when it has one, through
``wirefall summary|requests|frames|packets FILE --json``: one sha256 per (file, command).
They run in this process through ``ui.cli.main`` itself (stdout captured; the analysis of a file
is made once and shared by its four commands, which only read it; ``-j 1``; no
``$SSLKEYLOGFILE``; paths relative to the checkout, as the JSON ``file`` field shows them).
``--workers N`` runs them with ``-j N`` instead (the parallel path, analyzer/parallel.py): its
digests must be the very same, e.g. ``digest.py --workers 2 --check tests/data/json_digests.json``.
``tests/test_digest.py`` recomputes them and compares with ``tests/data/json_digests.json``;
when an output change is intended, regenerate that file and commit it with the change:

    PYTHONPATH=$PWD .venv/bin/python benchmarks/digest.py --write tests/data/json_digests.json
    PYTHONPATH=$PWD .venv/bin/python benchmarks/digest.py --check tests/data/json_digests.json

``--corpus``: the benchmark corpus (``benchmarks/bench.py``; made captures only when present),
one ``wirefall`` process per (capture, command), printed one line each; compare two runs with
``diff``:

    .venv/bin/python benchmarks/digest.py --corpus > before.txt
    ... change ...
    .venv/bin/python benchmarks/digest.py --corpus | diff before.txt -
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "captures"
SAMPLES = ROOT / "sample_captures"
COMMANDS = ("summary", "requests", "frames", "packets")
CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap.gz")
# browser logs opened as a capture (analyzer.browserlog): HAR, Chrome NetLog, qlog
LOG_SUFFIXES = (".har.gz", ".netlog.json.gz", ".qlog")
# captures left out, with the reason (none: every one runs in well under 30 s)
SKIPPED: dict[str, str] = {}
WORKERS = "1"  # -j of every run (--workers)


def _rel(p: Path) -> str:
    return os.path.relpath(p, ROOT)


def _keylog_of(cap: Path) -> Path | None:
    """The key log recorded beside a capture: NAME.keys (sample_captures), keylog.txt
    (shared folders of one capture) or amazon1.key_log.txt.gz (pageload-amazon)."""
    name = cap.name
    for suf in CAPTURE_SUFFIXES:
        if name.endswith(suf):
            name = name[: -len(suf)]
            break
    for cand in (cap.with_name(name + ".keys"), cap.with_name("keylog.txt"), cap.with_name(name + ".key_log.txt.gz")):
        if cand.is_file():
            return cand
    return None


def sample_inputs() -> list[tuple[str, str | None]]:
    """(file, key log or None) of every sample capture and browser log, paths relative to the
    checkout, sorted."""
    out = []
    for base in (SAMPLES, SHARED):
        if not base.is_dir():
            continue
        for p in sorted(base.rglob("*")):
            if not p.is_file() or _rel(p) in SKIPPED:
                continue
            if p.name.endswith(CAPTURE_SUFFIXES):
                k = _keylog_of(p)
                out.append((_rel(p), _rel(k) if k else None))
            elif p.name.endswith(LOG_SUFFIXES) or p.parent.name == "hars" and p.name.endswith(".json.gz"):
                out.append((_rel(p), None))
    return out


@contextlib.contextmanager
def _in_checkout():
    old_cwd, old_env = os.getcwd(), os.environ.pop("SSLKEYLOGFILE", None)
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(old_cwd)
        if old_env is not None:
            os.environ["SSLKEYLOGFILE"] = old_env


def digest_file(path: str, keylog: str | None, commands=COMMANDS) -> dict[str, dict]:
    """{command: {"sha256", "bytes", "rc"}} of ``wirefall COMMAND path --json`` (in this
    process; the commands share one analysis, ``requests`` its own without the frame
    listing, as ``cli.load`` makes them). Call inside ``_in_checkout()``."""
    import gc

    from wirefall.ui import cli

    real_load = cli.load
    memo: dict = {}

    def load_once(args, listing: bool = True):
        # (one analysis with the frame listing for the commands that read it, one without for
        # `requests`, as each command makes it: the lean model's output is checked too)
        if listing not in memo:
            memo[listing] = real_load(args, listing=listing)
        return memo[listing]

    out = {}
    cli.load = load_once
    try:
        for cmd in commands:
            argv = [cmd, path, "--json", "-j", WORKERS] + (["--keylog", keylog] if keylog else [])
            buf = io.BytesIO()
            text = io.TextIOWrapper(buf, encoding="utf-8", write_through=True)
            err = io.StringIO()
            with contextlib.redirect_stdout(text), contextlib.redirect_stderr(err):
                rc = cli.main(argv)
            text.flush()
            data = buf.getvalue()
            out[cmd] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data), "rc": rc}
            if rc:  # refused: the one-line message is the output
                out[cmd]["stderr"] = err.getvalue()
    finally:
        cli.load = real_load
        memo.clear()
        gc.unfreeze()  # cli.load froze the model; let it go
        gc.collect()
    return out


def compute(inputs=None, progress=None) -> dict[str, dict]:
    """{file: {"keylog": …, command: {…}}} for ``inputs`` (default: ``sample_inputs()``)."""
    res = {}
    with _in_checkout():
        for path, keylog in inputs if inputs is not None else sample_inputs():
            t = time.perf_counter()
            res[path] = {"keylog": keylog, **digest_file(path, keylog)}
            if progress:
                progress(path, time.perf_counter() - t)
    return res


def compare(expected: dict, got: dict) -> list[str]:
    """Human-readable differences (empty when equal)."""
    diffs = []
    for f in sorted(set(expected) | set(got)):
        if f not in got:
            diffs.append(f"{f}: in the digest file, not found now")
            continue
        if f not in expected:
            diffs.append(f"{f}: new input, not in the digest file")
            continue
        for k in sorted(set(expected[f]) | set(got[f])):
            if expected[f].get(k) != got[f].get(k):
                diffs.append(f"{f} {k}: expected {expected[f].get(k)}, got {got[f].get(k)}")
    return diffs


def _corpus(args) -> int:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench import corpus_list

    keep = set(args.only.split(",")) if args.only else None
    exe = ROOT / ".venv" / "bin" / "wirefall"
    base = [str(exe)] if exe.exists() else [sys.executable, "-m", "wirefall"]
    for name, cap, keys, _fields in corpus_list(make=False):
        if keep and name not in keep:
            continue
        for cmd in args.commands.split(","):
            h = hashlib.sha256()
            p = subprocess.Popen(base + [cmd, str(cap), "--keylog", str(keys), "--json"]
                                 + (["-j", args.workers] if "--workers" in sys.argv or "-j" in sys.argv else []), stdout=subprocess.PIPE)
            assert p.stdout is not None
            n = 0
            for chunk in iter(lambda p=p: p.stdout.read(1 << 20), b""):
                h.update(chunk)
                n += len(chunk)
            rc = p.wait()
            print(f"{name} {cmd} rc={rc} bytes={n} sha256={h.hexdigest()}", flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", action="store_true", help="the benchmark corpus, one process per run, printed")
    ap.add_argument("--only", help="comma-separated capture names (--corpus) or file paths (samples)")
    ap.add_argument("--commands", default="requests,frames,summary", help="with --corpus")
    ap.add_argument("--workers", "-j", default="1", help="-j of every run (default 1; with --corpus: -j auto unless given)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--write", metavar="JSON", help="write the sample digests to JSON")
    g.add_argument("--check", metavar="JSON", help="compare the sample digests with JSON; exit 1 on a difference")
    args = ap.parse_args()
    global WORKERS
    WORKERS = args.workers
    if args.corpus:
        return _corpus(args)
    inputs = sample_inputs()
    if args.only:
        keep = set(args.only.split(","))
        inputs = [i for i in inputs if i[0] in keep]

    def progress(path, secs):
        print(f"{secs:7.2f} s  {path}", file=sys.stderr, flush=True)

    got = compute(inputs, progress=progress)
    if args.check:
        expected = json.loads(Path(args.check).read_text())["digests"]
        if args.only:
            expected = {k: v for k, v in expected.items() if k in got}
        diffs = compare(expected, got)
        print("\n".join(diffs) or "digests equal")
        return 1 if diffs else 0
    text = json.dumps({"comment": "sha256 of `wirefall CMD FILE --json` per sample; regenerate with "
                                  "benchmarks/digest.py --write (see its docstring) only for an intended output change",
                       "skipped": SKIPPED, "digests": got}, indent=1, sort_keys=True) + "\n"
    if args.write:
        Path(args.write).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
