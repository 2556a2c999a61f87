#!/usr/bin/env python3
"""Fill in what a `wirefall lab` run folder lacks from `wirefall batch`'s requests.parquet, and
write compare.txt / compare.json again.

    wirefall batch RUNS -o OUT            # (or wirefall lab ... --batch)
    python scripts/lab/resummarise.py RUNS [OUT]      (OUT defaults to RUNS/batch)

Each run's ``server_time`` (lab/measure.server_time: the server's think time per request,
response's first packet − request's last − the condition's probe RTT) is computed from the batch's
request rows of its capture when the manifest does not have it (a sweep made before the lab
recorded it). The batch's rows are the same exchanges the lab's own analysis has (the batch test
checks every row against ``wirefall requests --json``).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    runs = Path(args[0])
    out = Path(args[1]) if len(args) > 1 else runs / "batch"
    import pyarrow.dataset as ds

    from wirefall.lab.measure import server_time
    from wirefall.lab.run import _write_json, render_summary, summarise

    m = json.loads((runs / "manifest.json").read_text())
    t = ds.dataset(str(out / "requests.parquet"), format="parquet").to_table(
        columns=["capture", "pushed", "request_start", "request_end", "response_start"]).to_pylist()
    by: dict[str, list] = {}
    for r in t:
        by.setdefault(os.path.realpath(r["capture"]), []).append(SimpleNamespace(**r))
    probe = {c["id"]: (c.get("measured") or {}).get("rtt_ms_min") for c in m["conditions"]}
    filled = 0
    for r in m["runs"]:
        if r.get("server_time"):
            continue
        cap = os.path.realpath(runs / r["dir"] / r["files"]["capture"])
        if cap in by:
            r["server_time"] = server_time(by[cap], probe.get(r["condition"]))
            filled += 1
    _write_json(runs / "manifest.json", m)
    s = summarise(m["conditions"], m["runs"], m["protocols"], m["baseline"])
    _write_json(runs / "compare.json", s)
    (runs / "compare.txt").write_text(render_summary(s))
    print(f"server_time filled for {filled} of {len(m['runs'])} runs from {out / 'requests.parquet'}; "
          f"wrote {runs / 'compare.json'}, {runs / 'compare.txt'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
