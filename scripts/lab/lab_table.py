#!/usr/bin/env python3
"""Markdown tables of a `wirefall lab` sweep (RUNS_DIR/compare.json + manifest.json), as in docs/LAB.md.

    python scripts/lab/lab_table.py RUNS_DIR
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def ms(v):
    return "–" if v is None else f"{1000 * v:.0f}"


def pct(v):
    return "–" if v is None else f"{100 * v:.1f} %"


def main(argv=None) -> int:
    d = Path((argv or sys.argv[1:])[0])
    s = json.loads((d / "compare.json").read_text())
    m = json.loads((d / "manifest.json").read_text())
    protos, base = s["protocols"], s["baseline"]
    others = [p for p in protos if p != base]
    head = ["RTT ms", "loss %", "measured RTT ms (min)", "measured loss c2s / s2c %", f"{base} ms"]
    for p in others:
        head += [f"{p} ms", f"{p} speedup"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for c in s["conditions"]:
        me = c["measured"] or {}
        row = [f"{c['rtt_ms']:g}", f"{c['loss_pct']:g}", f"{me.get('rtt_ms_min')}",
               f"{me.get('loss_c2s_pct')} / {me.get('loss_s2c_pct')}",
               ms(c["protocols"][base]["mean"]["page_load_time"])]
        for p in others:
            row += [ms(c["protocols"][p]["mean"]["page_load_time"]), pct(c["vs_baseline"][p]["page_load_time"]["speedup"])]
        print("| " + " | ".join(row) + " |")
    print()
    # spread over runs, and packets per load (the whitepaper's "SPDY sends ~40 % fewer packets")
    head = ["RTT ms", "loss %"] + [f"{p} PLT min–max ms" for p in protos] + [f"{p} packets" for p in protos]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for c in s["conditions"]:
        row = [f"{c['rtt_ms']:g}", f"{c['loss_pct']:g}"]
        for p in protos:
            xs = [x for x in c["protocols"][p]["page_load_time"] if x is not None]
            row.append(f"{ms(min(xs))}–{ms(max(xs))}" if xs else "–")
        for p in protos:
            mean = c["protocols"][p]["mean"]
            row.append(f"{(mean['packets_c2s'] or 0) + (mean['packets_s2c'] or 0):.0f}")
        print("| " + " | ".join(row) + " |")
    n = len(m["runs"])
    ok = sum(1 for r in m["runs"] if r["decode"]["ok"])
    print(f"\n{ok} of {n} captures decoded with every page resource a 200 request; "
          f"relay counters: " + ", ".join(
              f"{c['id']}: c2s {c['relay_counters']['c2s']['dropped']}/{c['relay_counters']['c2s']['offered']}, "
              f"s2c {c['relay_counters']['s2c']['dropped']}/{c['relay_counters']['s2c']['offered']} dropped"
              for c in m["conditions"] if c.get("relay_counters")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
