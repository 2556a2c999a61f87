"""CPU accounting of ``wirefall requests FILE --keylog K --json`` with 1 and with N workers
(issue 24's scaling target), for a shared host where the wall clock says little.

Each run is a fresh process that does what ``ui/cli.py``'s ``cmd_requests`` does, timing
every step in CPU seconds (``time.process_time``; the interpreter's start-up and imports by
``getrusage``): start-up and imports, the analysis, the post-pass (``page_of``, the
phases) and the JSON written to /dev/null, as ``parallel.requests_json`` makes them.  For N workers the analysis is broken
down by ``analyzer/parallel.py``'s own accounting (``analysis.__dict__["_wf_parallel_times"]``):
the parent's set-up (key log, fork), its scan (the scanned mode's demultiplexing, before the
fork), its pass (worker 0's share in the scanned mode; reading and demultiplexing in the
streamed one), reading and unpickling the workers' parts, the merge; each worker's pass,
building and pickling its part.

The critical path on an idle host with ``--cores`` cores is then

    start-up + set-up + scan + pass + read parts + merge + post-pass + JSON

where ``pass`` is what the parent's and the workers' passes take when they run at once:
the longest of them, and no less than their sum spread over the cores (a worker's chain is
its pass, its part and its pickling; the parent's, its pass and its reading of the parts but
the last chunk's, which is the "read parts" after it); with N workers the post-pass and the JSON are
``parallel.requests_json``'s: the parent's plan and ``page_of``, then the longer of the
parent's JSON and what is left of the child's (which began at the fork).  Serial CPU over the critical path is the speed-up an
idle host would show; each figure is the least of ``--repeat`` runs (a loaded host only adds
time; the runs with 1 and N workers take turns, and start-up, post-pass and JSON, the same work
on the same model either way, are the least over both).  ``--wall`` also times the real commands (wall clock) and prints the load average.

    PYTHONPATH=$PWD python benchmarks/parallel_accounting.py benchmarks/corpus/h2-small.pcap ...
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = r"""
import resource, sys, time, os, json, gc
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
from wirefall.ui import cli  # noqa: F401 - what the command imports
from wirefall.analyzer.pipeline import analyze
c_imp = cpu()
path, keys, j = sys.argv[1], sys.argv[2], int(sys.argv[3])
gc.disable()
an = analyze(path, keylogs=[keys] if keys else None, workers=j, listing=False)  # (requests' lean pass, as cli.cmd_requests)
c_an = cpu()
gc.freeze()
gc.enable()
exs = sorted(an.exchanges, key=lambda e: (e.request_start or e.response_start or 0.0, e.id))
from wirefall.analyzer.parallel import requests_json
with open(os.devnull, "w") as f:  # what the command runs (analyzer/parallel.py): with -j 1, serial
    requests_json(an, exs, j, f)
out = an.__dict__.get("_wf_output_times")
c_post = c_json = cpu()  # (with -j 1 the post-pass and the JSON are one step: "json")
print(json.dumps({"import": c_imp, "analyze": c_an - c_imp, "post": c_post - c_an, "json": c_json - c_post,
                  "how": an.__dict__.get("_wf_parallel"), "times": an.__dict__.get("_wf_parallel_times"), "out": out}))
"""


def _run(path: str, keys: str, j: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("WF_PARALLEL_TIMES", None)
    p = subprocess.run([sys.executable, "-c", _CHILD, path, keys, str(j)], capture_output=True, text=True, env=env, timeout=900)
    if p.returncode:
        raise SystemExit(p.stderr)
    return json.loads(p.stdout.strip().splitlines()[-1])


def _least(runs: list[dict]) -> dict:
    """Per step, the least of the runs (workers' steps: per worker, per step)."""
    out = {k: min(r[k] for r in runs) for k in ("import", "analyze", "post", "json")}
    out["how"] = runs[0]["how"]
    if runs[0].get("out"):
        out["out"] = {k: min(r["out"][k] for r in runs) for k in runs[0]["out"]}
    if runs[0]["times"]:
        t = {k: min(r["times"][k] for r in runs) for k in runs[0]["times"] if k != "workers"}
        t["workers"] = [{k: min(r["times"]["workers"][i][k] for r in runs) for k in w}
                        for i, w in enumerate(runs[0]["times"]["workers"])]
        out["times"] = t
    return out


def critical_path(r: dict, cores: int) -> dict:
    t = r["times"]
    chains = [w["pass"] + w["part"] + w["pickle"] for w in t["workers"]]
    # the parts' chunks are made objects while the workers still build and pickle the next
    # (analyzer/parallel.py _read_chunks): only the last chunk's (``tail``) comes after them
    tail = max((w["tail"] for w in t["workers"] if "tail" in w), default=t["read_parts"])
    mine = t["parent_pass"] + t["read_parts"] - tail
    par = max(mine, *chains, (mine + sum(chains)) / cores)
    o = r.get("out")
    if o:  # requests_json: the parent plans and forks (``phases``), computes page_of (``page``), then encodes
        # its chunks and copies the child's; the child encodes its chunks from the fork on (``json_child``)
        post = o["phases"] + o["page"]
        js = max(o["json_parent"], o["json_child"] - o["page"])
        out_sum = post + o["json_parent"] + o["json_child"]
    else:
        post, js = r["post"], r["json"]
        out_sum = post + js
    scan = t.get("scan", 0.0)  # (scanned mode: the parent's demultiplexing, before the fork)
    steps = {"start-up": r["import"], "set-up": t["setup"] - scan, "scan": scan, "pass": par, "read parts": tail,
             "merge": t["merge"], "post-pass": post, "json": js}
    return {"steps": steps, "total": sum(steps.values()), "parent_pass": t["parent_pass"], "scan": scan, "chains": chains,
            "workers": t["workers"], "out": o, "cpu_sum": r["import"] + r["analyze"] + sum(chains) + out_sum}


def account(cap: str, keys: str, workers: int = 2, cores: int = 2, repeat: int = 3) -> dict:
    """The accounting of one capture (module docstring): serial CPU, the critical path with
    ``workers`` workers on ``cores`` cores, and their ratio (``speedup``)."""
    runs1, runsn = [], []
    for _ in range(repeat):  # taking turns: both see the same load
        runs1.append(_run(cap, keys, 1))
        runsn.append(_run(cap, keys, workers))
    serial, par = _least(runs1), _least(runsn)
    for k in ("import",) if par.get("out") else ("import", "post", "json"):  # the same work either way: least of all runs
        serial[k] = par[k] = min(serial[k], par[k])
    s_total = serial["import"] + serial["analyze"] + serial["post"] + serial["json"]
    row = {"capture": Path(cap).stem, "serial": serial, "parallel": par, "serial_total": s_total}
    if par.get("times"):
        cp = critical_path(par, cores)
        row["critical"] = cp
        row["speedup"] = s_total / cp["total"]
    return row


def wall(path: str, keys: str, j: int, repeat: int) -> tuple[float, float]:
    """Best wall time of the real command, and the 1-minute load average before the best run."""
    best, load = float("inf"), 0.0
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "wirefall", "requests", path, "--json", "-j", str(j)] + (["--keylog", keys] if keys else [])
    for _ in range(repeat):
        la = os.getloadavg()[0]
        t = time.monotonic()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, env=env, check=True, timeout=900)
        dt = time.monotonic() - t
        if dt < best:
            best, load = dt, la
    return best, load


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("captures", nargs="+", help="capture files (the key log: the same name with .keys, if it exists)")
    ap.add_argument("-j", "--workers", type=int, default=2)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--wall", action="store_true", help="also time the real commands (wall clock) with the load average")
    ap.add_argument("--json", action="store_true", help="the figures as JSON")
    a = ap.parse_args()
    rows = []
    for cap in a.captures:
        keys = str(Path(cap).with_suffix(".keys")) if Path(cap).with_suffix(".keys").exists() else ""
        row = account(cap, keys, a.workers, a.cores, a.repeat)
        if a.wall:
            row["wall_1"], row["load_1"] = wall(cap, keys, 1, a.repeat)
            row["wall_n"], row["load_n"] = wall(cap, keys, a.workers, a.repeat)
        rows.append(row)
        if not a.json:
            _print(row, a.workers)
    if a.json:
        print(json.dumps(rows, indent=1))
    return 0


def _print(r: dict, n: int) -> None:
    s = r["serial"]
    print(f"== {r['capture']}: serial CPU {r['serial_total']:.2f} s (start-up {s['import']:.2f}, analysis {s['analyze']:.2f}, "
          f"post-pass and JSON {s['post'] + s['json']:.2f})")
    if "critical" not in r:
        print(f"   -j{n}: {r['parallel']['how']}")
        return
    cp = r["critical"]
    print(f"   -j{n} critical path {cp['total']:.2f} s: " + ", ".join(f"{k} {v:.2f}" for k, v in cp["steps"].items()))
    print(f"      parent: scan {cp['scan']:.2f}, pass {cp['parent_pass']:.2f}; workers (pass, part, pickle | unpickled by the parent): "
          + ", ".join(f"({w['pass']:.2f}, {w['part']:.2f}, {w['pickle']:.2f} | {w['unpickle']:.2f}; {w['bytes'] / 1e6:.0f} MB)"
                      for w in cp["workers"]))
    if cp.get("out"):
        o = cp["out"]
        print(f"      output: plan and page_of (parent) {o['phases'] + o['page']:.2f}, then its JSON {o['json_parent']:.2f} "
              f"|| the child's JSON {o['json_child']:.2f}")
    print(f"      CPU summed over processes {cp['cpu_sum']:.2f} s; computed speed-up on an idle host: {r['speedup']:.2f}x")
    if "wall_1" in r:
        print(f"   wall: -j1 {r['wall_1']:.2f} s (load {r['load_1']:.1f}), -j{n} {r['wall_n']:.2f} s (load {r['load_n']:.1f}): "
              f"{r['wall_1'] / r['wall_n']:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
