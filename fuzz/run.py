"""Longer fuzzing with atheris (libFuzzer), seeded from real captures.

    .venv/bin/python fuzz/run.py --target h2 --runs 200000 --seconds 120
    .venv/bin/python fuzz/run.py --all --runs 100000 --seconds 120 [--summary out.json]

Targets: the sans-IO dissectors (``http1 h2 spdy tls quic quic_frames h3 gquic dns``; inputs
are the serialised op lists of ``fuzz/corpus.py``, seeded with what the pipeline fed each
dissector on real sample captures), ``capture`` (the pcap/pcapng reader on mutated file
bytes), ``pipeline`` (``analyze()`` on mutated small captures, with their key logs) and
``detail`` (the same inputs, then what the TUI and the web app show for each packet: the detail
tree, the bytes pane and the packet list's Info, every node checked: ``fuzz/corpus.py``
``detail_check``).

Every input is bounded: libFuzzer's ``-timeout`` (seconds per input, a hang is a failure)
and ``-rss_limit_mb``; a run is bounded by ``--runs`` and ``--seconds``.  A Python
exception is a crash: libFuzzer writes the input to ``<workdir>/<target>/crash-*``; turn
it into a regression test in ``tests/test_fuzz_regressions.py`` (``detail``: a generator in
``scripts/hostile/detail_inputs.py`` and a test in ``tests/test_fuzz_detail37.py``; its broken
invariants are recorded once per kind and node name, and the input's other packets are still
checked).  ``--all`` runs each target in its own process, one after the other, and prints a
table (inputs, crashes, hangs, peak RSS per target).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGETS = ["http1", "h2", "spdy", "tls", "quic", "quic_frames", "h3", "gquic", "dns", "capture", "pipeline", "detail"]
# the packages atheris instruments for coverage, fully qualified (tests/test_fuzz.py checks they
# exist): they were "dissectors" and "analyzer", which no module is named since the code imports
# as wirefall.*, so nothing was instrumented and libFuzzer ran blind ("no interesting inputs
# were found so far", corpus 1 input of 1 byte, 300 k runs adding none)
INSTRUMENT = ("wirefall.dissectors", "wirefall.analyzer")
CAPTURE_TARGETS = ("capture", "pipeline", "detail")  # inputs are capture files (64 KiB at most by default)
DEFAULT_WORKDIR = Path(os.environ.get("WIREFALL_FUZZ_DIR", "/tmp/wirefall-fuzz"))


def write_seeds(target: str, d: Path) -> int:
    from fuzz import corpus

    d.mkdir(parents=True, exist_ok=True)
    n = 0
    if target in CAPTURE_TARGETS:
        # pipeline, detail: the first byte picks the key log (the seed's own), the rest is the capture
        for i, (name, raw, _keys) in enumerate(corpus.small_captures(12 if target == "capture" else 24)):
            blob = raw if target == "capture" else bytes([i]) + raw
            (d / f"seed-{name.replace('/', '_')}").write_bytes(blob)
            n += 1
        return n
    for i, ops in enumerate(corpus.seeds()[target]):
        (d / f"seed-{i}").write_bytes(corpus.encode(target, ops))
        n += 1
        if len(ops) > 4:  # short prefixes too: libFuzzer mutates small inputs faster
            (d / f"seed-{i}-head").write_bytes(corpus.encode(target, ops[:4]))
            n += 1
    return n


def _atheris():
    """The atheris module, or exit 2 saying how to get it (it is the ``fuzz`` extra, not a
    dependency: a missing module made every target "rc=1, 0 inputs" with no word of why)."""
    try:
        import atheris
    except ImportError as e:
        raise SystemExit(f"fuzz/run.py: atheris is not installed ({e}); install it with: pip install -e '.[fuzz]'") from None
    return atheris


def fuzz_one(target: str, runs: int, seconds: int, workdir: Path, timeout: int, rss_mb: int, max_len: int,
             keep_going: bool = False) -> None:
    """Run libFuzzer on one target in this process (does not return normally)."""
    atheris = _atheris()

    with atheris.instrument_imports(include=list(INSTRUMENT)):
        from wirefall.analyzer.capture import CaptureError, CaptureInfo, read_capture
        from fuzz import corpus
        import wirefall.analyzer.pipeline  # noqa: F401  (instrumented before first use)
        import wirefall.dissectors.http1, wirefall.dissectors.http2, wirefall.dissectors.spdy, wirefall.dissectors.tls  # noqa: E401,F401
        import wirefall.dissectors.quic, wirefall.dissectors.http3, wirefall.dissectors.gquic, wirefall.dissectors.dns  # noqa: E401,F401
        import wirefall.analyzer.sessions.tls, wirefall.analyzer.sessions.http1, wirefall.analyzer.sessions.http2  # noqa: E401,F401
        import wirefall.analyzer.sessions.spdy, wirefall.analyzer.sessions.quic, wirefall.analyzer.sessions.dns  # noqa: E401,F401
        if target == "detail":  # what a selected packet shows: the tree, its protocol hooks, Info, the filter's fields
            import wirefall.analyzer.detail, wirefall.analyzer.packet_record, wirefall.analyzer.info  # noqa: E401,F401
            import wirefall.analyzer.fields, wirefall.analyzer.tcp_analysis  # noqa: E401,F401
            import wirefall.analyzer.protocols.tls, wirefall.analyzer.protocols.quic, wirefall.analyzer.protocols.http2  # noqa: E401,F401
            import wirefall.analyzer.protocols.http1, wirefall.analyzer.protocols.http3, wirefall.analyzer.protocols.spdy  # noqa: E401,F401
            import wirefall.analyzer.protocols.gquic, wirefall.analyzer.protocols.dns  # noqa: E401,F401

    keys = [k for _, _, k in corpus.small_captures(1)] if target in ("pipeline", "detail") else []
    tmp = Path("/dev/shm" if os.path.isdir("/dev/shm") else workdir) / f"wirefall-fuzz-{os.getpid()}.pcap"

    seen: set = set()
    current = [b""]

    def record(site: str, what: str, data: bytes, tb: bool) -> None:
        """Each distinct crash site once: its input saved, one line (and the traceback)."""
        import hashlib
        import traceback

        if site in seen:
            return
        seen.add(site)
        h = hashlib.sha1(data).hexdigest()
        (workdir / target / f"crash-{h}").write_bytes(data)
        print(f"WIREFALL CRASH {site}: {what:.300} input=crash-{h}", flush=True)
        if tb:
            traceback.print_exc()

    def broken(msg: str) -> None:
        # (the detail target's invariants, in keep-going mode: one site per invariant and node
        # label, numbers left out, and the input's other packets still checked)
        what = re.sub(r"""node (['"])(.{0,40}?)[:,(\[].*?\1 """, r"node '\2…' ", msg.split(": ", 1)[-1])
        record("DetailBroken " + re.sub(r"0x[0-9a-f]+|\d+", "N", what)[:90], msg, current[0], False)

    def one(data: bytes) -> None:
        if not keep_going:
            return _one(data)
        current[0] = data
        try:
            _one(data)
        except Exception as e:  # keep fuzzing past a known bug: record each distinct crash site once
            import traceback

            tb = traceback.extract_tb(e.__traceback__)
            site = f"{type(e).__name__} at " + " < ".join(f"{Path(f.filename).name}:{f.lineno}" for f in reversed(tb[-3:]))
            record(site, repr(e), data, True)

    def _one(data: bytes) -> None:
        if target == "capture":
            tmp.write_bytes(data)
            try:
                for _ in read_capture(str(tmp), CaptureInfo()):
                    pass
            except CaptureError:
                pass  # "not a capture" is the documented answer
        elif target == "pipeline":
            if not data:
                return
            k = keys[data[0] % len(keys)] if keys else None
            try:
                corpus.analyze_bytes(data[1:], k)
            except CaptureError:
                pass
        elif target == "detail":
            if not data:
                return
            corpus.detail_bytes(data[1:], keys[data[0] % len(keys)] if keys else None,  # (CaptureError: 0 packets)
                                report=broken if keep_going else None)
        else:
            corpus.replay(target, corpus.decode(target, data))

    d = workdir / target
    write_seeds(target, d / "corpus")
    args = [sys.argv[0], str(d / "corpus"), f"-runs={runs}", f"-max_total_time={seconds}", f"-timeout={timeout}",
            f"-rss_limit_mb={rss_mb}", f"-max_len={max_len}", f"-artifact_prefix={d}/", "-print_final_stats=1"]
    atheris.Setup(args, one)
    atheris.Fuzz()


def parse_log(text: str) -> dict:
    runs = re.findall(r"Done (\d+) runs in (\d+) second", text)
    stat_runs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", text)
    rss = [int(x) for x in re.findall(r"rss: (\d+)Mb", text)] + [int(x) for x in re.findall(r"stat::peak_rss_mb:\s*(\d+)", text)]
    last_exec = re.findall(r"#(\d+)\s+(?:pulse|NEW|REDUCE|DONE|INITED)", text)
    n = int(stat_runs[-1]) if stat_runs else (int(runs[-1][0]) if runs else (int(last_exec[-1]) if last_exec else 0))
    return {
        "inputs": n,
        "seconds": int(runs[-1][1]) if runs else None,
        "crashes": len(re.findall(r"==\d+== ERROR: libFuzzer: deadly signal|Uncaught Python exception|^WIREFALL CRASH", text, re.M)),
        "crash_sites": re.findall(r"^WIREFALL CRASH (.*?): ", text, re.M),
        "hangs": len(re.findall(r"ERROR: libFuzzer: timeout", text)),
        "oom": len(re.findall(r"ERROR: libFuzzer: out-of-memory", text)),
        "peak_rss_mb": max(rss) if rss else None,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", choices=TARGETS)
    ap.add_argument("--all", action="store_true", help="every target, one process after the other")
    ap.add_argument("--targets", help="comma-separated subset for --all")
    ap.add_argument("--runs", type=int, default=100_000, help="inputs per target")
    ap.add_argument("--seconds", type=int, default=120, help="time per target")
    ap.add_argument("--timeout", type=int, default=10, help="seconds one input may take (a hang)")
    ap.add_argument("--rss-mb", type=int, default=2048, help="memory limit per target process")
    ap.add_argument("--max-len", type=int, default=0, help="max input size (0: 16 KiB, 64 KiB for capture/pipeline)")
    ap.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR)
    ap.add_argument("--stop-on-crash", action="store_true",
                    help="stop a target at its first exception (default: record each distinct crash site once and go on)")
    ap.add_argument("--summary", type=Path, help="write the per-target figures as JSON here")
    a = ap.parse_args(argv)
    if a.target and not a.all:
        ml = a.max_len or (65536 if a.target in CAPTURE_TARGETS else 16384)
        fuzz_one(a.target, a.runs, a.seconds, a.workdir, a.timeout, a.rss_mb, ml, keep_going=not a.stop_on_crash)
        return 0
    if not a.all:
        ap.error("--target or --all")
    _atheris()  # (before running a target process per target, each to fail alike)
    targets = a.targets.split(",") if a.targets else TARGETS
    results = {}
    for t in targets:
        a.workdir.joinpath(t).mkdir(parents=True, exist_ok=True)
        log = a.workdir / t / "log.txt"
        cmd = [sys.executable, __file__, "--target", t, "--runs", str(a.runs), "--seconds", str(a.seconds),
               "--timeout", str(a.timeout), "--rss-mb", str(a.rss_mb), "--workdir", str(a.workdir)]
        if a.max_len:
            cmd += ["--max-len", str(a.max_len)]
        if a.stop_on_crash:
            cmd.append("--stop-on-crash")
        t0 = time.monotonic()
        with open(log, "w") as f:
            rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
        r = parse_log(log.read_text(errors="replace"))
        r.update(rc=rc, wall=round(time.monotonic() - t0, 1), log=str(log),
                 artifacts=sorted(str(p) for p in (a.workdir / t).glob("*-*") if p.name.split("-")[0] in ("crash", "timeout", "oom", "leak")))
        results[t] = r
        print(f"{t:12s} inputs={r['inputs']:>9} crashes={r['crashes']} hangs={r['hangs']} oom={r['oom']} "
              f"peak_rss={r['peak_rss_mb']}MB rc={rc} wall={r['wall']}s", flush=True)
        for site in r["crash_sites"]:
            print(f"{'':12s} crash: {site}", flush=True)
        if rc and not r["inputs"]:  # (the target never ran: say why, from its log)
            tail = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()][-3:]
            for ln in tail:
                print(f"{'':12s} {ln[:300]}", flush=True)
        if a.summary:
            a.summary.write_text(json.dumps(results, indent=1))
    total = sum(r["inputs"] for r in results.values())
    print(f"total inputs {total}; crashes {sum(r['crashes'] for r in results.values())}; "
          f"hangs {sum(r['hangs'] for r in results.values())}", flush=True)
    return 1 if any(r["rc"] or r["crashes"] or r["hangs"] or r["oom"] for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
