#!/usr/bin/env python3
"""Markdown tables of a `wirefall lab` sweep (RUNS_DIR/compare.json + manifest.json), as in docs/LAB.md:
medians with quartiles and the number of runs (compare.json's "median"/"q1"/"q3"/"n").

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


def iqr(pr, key="page_load_time", scale=ms):
    st = pr["stats"][key]
    if st["median"] is None:
        return "–"
    return f"{scale(st['median'])} [{scale(st['q1'])}–{scale(st['q3'])}]"


def main(argv=None) -> int:
    d = Path((argv or sys.argv[1:])[0])
    s = json.loads((d / "compare.json").read_text())
    m = json.loads((d / "manifest.json").read_text())
    protos, base = s["protocols"], s["baseline"]
    others = [p for p in protos if p != base]
    conds = {c["id"]: c for c in m["conditions"]}
    head = ["RTT ms", "loss %", "down/up Mbit/s", "buffer", "n", f"{base} ms median [q1–q3]"]
    for p in others:
        head += [f"{p} ms median [q1–q3]", f"{p} speedup"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for c in s["conditions"]:
        pr = c["protocols"]
        down, up = c.get("down_mbit"), c.get("up_mbit")
        row = [f"{c['rtt_ms']:g}", f"{c['loss_pct']:g}", f"{down or '–'}/{up or '–'}", str(c.get("buffer") or "–"),
               "/".join(str(pr[p]["n"]["page_load_time"]) for p in protos), iqr(pr[base])]
        for p in others:
            row += [iqr(pr[p]), pct(c["vs_baseline"][p]["page_load_time"]["speedup"])]
        print("| " + " | ".join(row) + " |")
    print()
    # conditions verified, and packets per load (the whitepaper's "SPDY sends ~40 % fewer packets")
    head = ["RTT ms", "loss %", "probe RTT ms (min)", "probe loss c2s / s2c %", "loads missed"] + [f"{p} packets" for p in protos]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for c in s["conditions"]:
        me = c["measured"] or {}
        pr = c["protocols"]
        row = [f"{c['rtt_ms']:g}", f"{c['loss_pct']:g}", f"{me.get('rtt_ms_min')}", f"{me.get('loss_c2s_pct')} / {me.get('loss_s2c_pct')}",
               f"{sum(pr[p].get('missed', 0) for p in protos)} of {sum(pr[p]['runs'] for p in protos)}"]
        for p in protos:
            a, b = pr[p]["median"]["packets_c2s"], pr[p]["median"]["packets_s2c"]
            row.append("–" if a is None or b is None else f"{a + b:.0f}")
        print("| " + " | ".join(row) + " |")
    print()
    # the servers' own time (lab/measure.server_time; QUIC: the handshake's excess over the RTT)
    head = ["RTT ms", "loss %"] + [f"{p} think, first request ms" for p in protos] + ["h3 handshake beyond RTT ms"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for c in s["conditions"]:
        pr = c["protocols"]

        def one(p, k, pr=pr):
            st = pr[p]["stats"].get(k) if p in pr else None
            return "–" if not st or st["median"] is None else f"{st['median']:.1f} [{st['q1']:.1f}–{st['q3']:.1f}]"
        row = [f"{c['rtt_ms']:g}", f"{c['loss_pct']:g}"] + [one(p, "think_first_ms") for p in protos] + [one("h3", "server_handshake_ms")]
        print("| " + " | ".join(row) + " |")
    n = len(m["runs"])
    ok = sum(1 for r in m["runs"] if r["decode"]["ok"])
    print(f"\n{ok} of {n} captures decoded with every page resource a 200 request; "
          f"relay counters: " + ", ".join(
              f"{cid}: c2s {c['relay_counters']['c2s']['dropped']}/{c['relay_counters']['c2s']['offered']}, "
              f"s2c {c['relay_counters']['s2c']['dropped']}/{c['relay_counters']['s2c']['offered']} dropped"
              for cid, c in conds.items() if c.get("relay_counters")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
