"""``wirefall lab``: the same page over HTTP/1.1, SPDY/3.1, HTTP/2 and HTTP/3, from real servers
and clients, under set RTT, loss and rate, captured with keys, decoded and compared.

A thin orchestrator. The servers, clients and capture of one page load are
``scripts/lab/serve_and_capture.py``'s ``Lab`` (imported from the checkout: the lab needs the
checkout's scripts, page generator and npm packages anyway); the network conditions are
``lab/net.py`` (namespaces, veth or TUN relay, tbf, probes); decoding is
``analyzer.pipeline.analyze`` and the tables are ``analyzer.compare``.

RUNS_DIR/
  manifest.json                     conditions (asked and measured), every run and its files
  compare.txt, compare.json         every protocol against HTTP/1.1, per condition (medians, quartiles, n
                                    over the runs whose page is whole and fetched: the others counted, with why)
  <condition>/run<k>/page-<p>.*     capture (pcapng), key log, NetLog / client+server logs
  <condition>/run<k>/compare-<p>-vs-h1.txt   the request-by-request comparison of that run
"""
from __future__ import annotations

import datetime
import importlib.util
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
LAB_DIR = REPO / "scripts" / "lab"
PROTOCOLS = ("h1", "spdy", "h2", "h3")
SCHEMA = "wirefall-lab/1"
EXTRA_TOOLS = ["ip", "tc", "ethtool"]
EXTRA_PACKAGES = {"ip": "iproute2", "tc": "iproute2", "ethtool": "ethtool"}


HANDSHAKE_BYTES = 60  # a SYN or SYN/ACK with Linux's options (MSS, SACK, timestamps, window scale)
RTT_TRIES = 3


class LabError(Exception):
    pass


# Chromium's QUIC takes a stalled path (no ACK for a few PTOs: a busy host, e.g. CI's load) for a
# degrading one and moves the connection to a new UDP port (port migration, on by default); when
# the new path fails it closes the session and reconnects with 0-RTT. The lab's link never
# changes, so a migration only says the host was busy, and it splits one connection into two UDP
# flows, the server's half of the new one beyond what tshark 4.0 can follow (Chromium's own
# connection IDs are empty), or adds a second connection for the origin. Off, through the
# parameter Chromium's network_session_configurator reads from the QUIC field trial; the NetLog's
# activeFieldTrialGroups shows the trial in force ("*": activated, so listed there; runs[].quic,
# lab.measure.netlog_quic).
QUIC_FIELD_TRIAL = "WirefallLab"
CHROMIUM_QUIC_FLAGS = [f"--force-fieldtrials=*QUIC/{QUIC_FIELD_TRIAL}",
                       f"--force-fieldtrial-params=QUIC.{QUIC_FIELD_TRIAL}:allow_port_migration/false"]


def lab_class(sac):
    """serve_and_capture's ``Lab`` with ``CHROMIUM_QUIC_FLAGS`` on every Chromium that speaks QUIC."""

    class Lab(sac.Lab):
        def chromium(self, name: str, url: str, extra: list[str]) -> dict:
            if "--enable-quic" in extra:
                extra = [*extra, *CHROMIUM_QUIC_FLAGS]
            return super().chromium(name, url, extra)

    return Lab


def _scripts():
    """scripts/lab/serve_and_capture.py as a module (scripts/ is not an installed package)."""
    name = "wirefall_lab_serve_and_capture"
    if name in sys.modules:
        return sys.modules[name]
    path = LAB_DIR / "serve_and_capture.py"
    if not path.exists():
        raise LabError(f"{path} not found: `wirefall lab` runs from a wirefall checkout")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def condition_id(rtt: float, loss: float, rate: float | None, down: float | None = None, up: float | None = None,
                 buffer: str | None = None, burst: float | None = None) -> str:
    s = f"rtt{rtt:g}ms-loss{loss:g}pct"
    if burst and burst > 1 and loss:
        s += f"-burst{burst:g}"
    if down or up:
        s += f"-down{down or rate or 0:g}-up{up or rate or 0:g}mbit"
    elif rate:
        s += f"-rate{rate:g}mbit"
    if buffer and (down or up or rate):
        s += f"-buf{str(buffer).lower()}"
    return s


def asked_link(rtt: float, loss: float, rate: float | None, down: float | None, up: float | None,
               buffer: str | None, burst: float | None) -> dict:
    """What one condition asks of the link, with the queue limit resolved (lab/net.queue_limits)."""
    from .net import parse_buffer, queue_limits

    down, up = down or rate, up or rate
    a: dict[str, Any] = {"rtt_ms": rtt, "loss_pct": loss, "loss_burst": burst if burst and burst > 1 and loss else None,
                         "down_mbit": down, "up_mbit": up, "buffer": buffer, "buffer_ms": None, "buffer_packets": None}
    # a TCP handshake also pays the SYN's and the SYN/ACK's transmission at the set rates (60-byte
    # IP packets: 1.3 ms at 375 kbit/s): what the probes and the per-load check compare against
    a["rtt_serialisation_ms"] = round(sum(8 * HANDSHAKE_BYTES / (r * 1e6) * 1000 for r in (up, down) if r), 3)
    if down or up:
        packets, limit_s = queue_limits(parse_buffer(buffer), rtt)
        if limit_s is None:
            a["buffer_packets"] = packets
        else:
            a["buffer_ms"] = a["up_buffer_ms"] = round(1000 * limit_s, 3)
    return a


def loss_in_force(asked_pct: float, measured_pct: float | None, n: int) -> bool:
    """Measured loss within 4 standard deviations (binomial, n probes) plus one probe of the set value."""
    if measured_pct is None:
        return False
    p = asked_pct / 100
    tol = 4 * (p * (1 - p) / max(n, 1)) ** 0.5 + 1 / max(n, 1)
    return abs(measured_pct / 100 - p) <= tol


def rtt_in_force(asked_ms: float, measured_ms: float | None) -> bool:
    """Shortest TCP connect time (the path's RTT without queueing or CPU stalls) within
    max(1.5 ms, 15 %) of the set RTT."""
    return measured_ms is not None and abs(measured_ms - asked_ms) <= max(1.5, 0.15 * asked_ms)


def _key(url: str, multi: bool) -> str:
    """A request's identity: its path (one-origin pages) or https://host/path (several origins)."""
    u = urlsplit(url)
    path = u.path or "/"
    return f"https://{(u.hostname or '').lower()}{path}" if multi else path


def check_requests(an, requests: list[str], pushable: list[str] | None = None,
                   origins: dict[str, str] | None = None) -> dict:
    """Every path the page needs, as a decoded request with status 200; a push counts only for
    the paths the server was set to push (``pushable``), and ``pushed`` counts those. With
    ``origins`` (host → address; ``requests`` are then URLs) each request must also have been
    answered by its own origin's address (``wrong_address``: URL → the address it came from)."""
    multi = bool(origins)
    got: dict[str, list] = {}
    pushed = 0
    wrong: dict[str, str] = {}
    conns = {c.id: c for c in an.connections} if multi else {}
    for e in an.exchanges:
        if not e.url:
            continue
        path = _key(e.url, multi)
        if e.pushed:
            if path not in (pushable or ()) and urlsplit(e.url).path not in (pushable or ()):
                continue
            pushed += 1
        if multi:
            host = (urlsplit(e.url).hostname or "").lower()
            c = conns.get(e.connection)
            if c is not None and origins is not None and c.server[0] != origins.get(host):
                wrong[path] = c.server[0]
        got.setdefault(path, []).append(e.status)
    missing = [p for p in requests if p not in got]
    not_ok = {p: got[p] for p in requests if p in got and 200 not in got[p]}
    wrong = {k: v for k, v in wrong.items() if k in requests}
    return {"expected": len(requests), "decoded": sum(len(v) for v in got.values()),
            "status_200": sum(1 for p in requests if 200 in got.get(p, [])),
            "pushed": pushed, "missing": missing, "not_200": not_ok, "wrong_address": wrong,
            "ok": not missing and not not_ok and not wrong}


def check_origins(an, origins: dict[str, str]) -> dict:
    """The lookups and connections a page with several origins made: per origin the DNS queries
    for its name seen in the capture (with their answers), and the connections to its address
    that carried requests."""
    from wirefall.analyzer.waterfall import dns_lookups

    looked = dns_lookups(an)
    web = {e.connection for e in an.exchanges}
    out: dict[str, Any] = {}
    for host, ip in origins.items():
        mine = [d for d in looked if (d.name or "").lower().rstrip(".") == host]
        out[host] = {"address": ip, "dns_queries": len(mine), "dns_answered": sum(1 for d in mine if d.response_time is not None),
                     "dns_addresses": sorted({a for d in mine for a in d.addresses}),
                     "connections": sum(1 for c in an.connections if c.id in web and c.server[0] == ip)}
    missing = [h for h, v in out.items() if not v["dns_queries"] or origins[h] not in v["dns_addresses"]]
    return {"origins": out, "dns_missing": missing, "ok": not missing}


# what the summary says of each kind of gap in a load's page, in this order: the analyzer's
# completeness issue kinds (analyzer/completeness.py), the page's responses whose end the capture
# does not hold (analyzer.compare's response states) and a capture with no request of a page
GAP_WORDS = {
    "not_decrypted": "connection not decrypted",
    "joined_midway": "connection joined mid-way",
    "no_requests": "no request of the page seen",
    "responses_missing": "response not in the capture",
    "responses_cut": "response cut before its end",
    "cut_short": "frame cut by the capture's end",
    "bytes_lost": "bytes lost",
    "unknown_fields": "request fields unknown",
    "budget": "budget ran out",
    "capture_damaged": "capture damaged",
}


def page_completeness(an) -> dict:
    """Whether one load's page is whole in its capture — the verdict ``wirefall compare`` withholds
    a side on (``analyzer.compare.page_gaps``, its ``withheld`` kinds ``incomplete`` and
    ``no_requests``), not derived again here: the completeness model's issues of the page
    (``completeness.compute``; background traffic's and a browser log's "no packets" are not the
    page's) and the page's responses whose end the capture does not hold. Of an incomplete page
    the figures count only what the capture holds (its load time is a lower bound)."""
    from wirefall.analyzer.compare import page_gaps

    g = page_gaps(an)
    page_exs, issues = g["page_exchanges"], g["issues"]  # (the issues counted against the page, as typed facts)
    kinds = {i.kind for i in issues}
    if g["responses_missing"]:
        kinds.add("responses_missing")
    if g["responses_cut"]:
        kinds.add("responses_cut")
    if not page_exs:
        kinds.add("no_requests")
    ok = bool(g["page_complete"]) and bool(page_exs)
    if not ok and not kinds:  # (a reason the analyzer gave that this list does not know: never a page called whole)
        kinds.add("incomplete")
    return {"page_complete": ok,
            "kinds": sorted(kinds, key=lambda k: (list(GAP_WORDS).index(k) if k in GAP_WORDS else len(GAP_WORDS), k)),
            "issues": [{"kind": i.kind, "connection": i.connection, "count": i.count} for i in issues],
            "responses_missing": len(g["responses_missing"]), "responses_cut": len(g["responses_cut"]),
            "incomplete": g["incomplete"] if page_exs else "no request of a page in the capture"}


def analyse_load(an, requests: list[str], pushable: list[str] | None = None, origins: dict[str, str] | None = None) -> dict:
    """What the lab records of one load from its analysis: the decode check (``check_requests``),
    for a page with origins ``origins`` (``check_origins``), whether the page is whole
    (``page_complete`` and ``completeness``: ``page_completeness``) and the page figures."""
    from wirefall.analyzer.compare import page_figures

    rec: dict[str, Any] = {"decode": check_requests(an, requests, pushable, origins)}
    if origins:
        rec["origins"] = check_origins(an, origins)
    comp = page_completeness(an)
    rec["page_complete"] = comp["page_complete"]
    rec["completeness"] = comp
    rec["figures"] = page_figures(an)
    return rec


def exclusion(r: dict) -> list[str]:
    """Why a run is left out of the medians: ``page_incomplete`` (its page is not whole in its
    capture: ``page_complete`` false), ``decode`` (not every resource of the page a 200:
    ``decode.ok`` false); [] for a run in them. A run recorded before the lab recorded
    ``page_complete`` is not left out for it (``unchecked`` in the summary)."""
    why = []
    if r.get("page_complete") is False:
        why.append("page_incomplete")
    if not (r.get("decode") or {}).get("ok", True):
        why.append("decode")
    return why


def exclusion_text(r: dict) -> str:
    """An excluded run's reasons in words: "page incomplete (connection not decrypted)"."""
    out = []
    for why in exclusion(r):
        if why == "page_incomplete":
            kinds = (r.get("completeness") or {}).get("kinds") or []
            out.append("page incomplete" + (f" ({', '.join(GAP_WORDS.get(k, k.replace('_', ' ')) for k in kinds)})" if kinds else ""))
        else:
            out.append("not every resource a 200")
    return ", ".join(out)


def push_paths(spec: str | None, page: dict) -> list[str]:
    """``--push``: ``css,js`` style kinds (by extension: css, js, jpg, png, json, images), or
    paths (``/a.css,/b.js``); [] without it."""
    if not spec:
        return []
    if page.get("origins"):  # several origins: the document's origin pushes its own resources
        doc = page["origins"][0]
        page = {"requests": [urlsplit(u).path or "/" for u in page["requests"] if (urlsplit(u).hostname or "") == doc]}
    kinds = {"css": (".css",), "js": (".js",), "jpg": (".jpg", ".jpeg"), "png": (".png",), "json": (".json",),
             "images": (".jpg", ".jpeg", ".png", ".gif", ".webp")}
    out: list[str] = []
    for item in (x.strip() for x in spec.split(",")):
        if item.startswith("/"):
            cand = [item] if item in page["requests"] else []
        elif item in kinds:
            cand = [p for p in page["requests"] if p.lower().endswith(kinds[item])]
        else:
            raise LabError(f"--push {item}: give paths of the page (/x.css) or kinds ({', '.join(kinds)})")
        out += [p for p in cand if p not in out and p != "/"]
    return out


def _describe(xs) -> dict[str, Any]:
    """Median, quartiles (linear interpolation at (n − 1)·p, as ``wirefall batch`` and numpy) and
    the number of values; runs without the figure are left out of it only."""
    from wirefall.analyzer.batch.summary import describe

    d = describe([x for x in xs if x is not None])
    return {k: d[k] for k in ("n", "median", "q1", "q3", "min", "max")}


SERVER_ROWS = [
    ("think_first_ms", "server think, first request (ms)"),
    ("think_median_ms", "server think, median request (ms)"),
    ("server_handshake_ms", "QUIC server handshake beyond RTT (ms)"),
]


def server_figures(r: dict) -> dict:
    """A run's server-time figures (lab/measure.server_time, link_check's server_handshake_ms)."""
    st = r.get("server_time") or {}
    return {"think_first_ms": st.get("think_first_ms"), "think_median_ms": st.get("think_median_ms"),
            "server_handshake_ms": (r.get("link_check") or {}).get("server_handshake_ms")}


def software(runs: list[dict], protos: list[str]) -> dict[str, dict[str, list[str]]]:
    """Per protocol, the client and server programs its runs used (the manifest's
    ``runs[].client`` and ``runs[].server``, as the lab started them), each distinct one once."""
    out: dict[str, dict[str, list[str]]] = {}
    for p in protos:
        sw: dict[str, list[str]] = {"client": [], "server": []}
        for r in runs:
            if r.get("protocol") != p:
                continue
            for k in ("client", "server"):
                v = r.get(k)
                if isinstance(v, str) and v and v not in sw[k]:
                    sw[k].append(v)
        out[p] = sw
    return out


# warnings of the runs' comparisons the summary does not repeat: each protocol's server listens on
# a port of its own, so every pair loads the page from "different origins" by design
SAID = frozenset({"different_origins"})


def notes(s: dict) -> tuple[list[str], dict[tuple[str, str], list[int]]]:
    """The footnotes of the summary: what besides the protocol differs between a protocol's
    loads and the baseline's — another client or server program (``software``), and each
    distinct warning of the runs' comparisons (``pairs[].warnings``: other clients, servers,
    header sets, links, retransmissions …), with the runs it came from.  Returns the notes'
    texts (note k is ``texts[k - 1]``) and (condition id, protocol) -> its notes' numbers."""
    base = s["baseline"]
    texts: list[str] = []
    where: dict[tuple[str, str], list[int]] = {}

    def note(cid: str, p: str, text: str) -> None:
        if text not in texts:
            texts.append(text)
        k = texts.index(text) + 1
        ks = where.setdefault((cid, p), [])
        if k not in ks:
            ks.append(k)

    for c in s["conditions"]:
        sw = c.get("software") or {}
        b = sw.get(base) or {}
        for p in s["protocols"]:
            if p == base:
                continue
            mine = sw.get(p) or {}
            for k in ("client", "server"):
                if mine.get(k) and b.get(k) and mine[k] != b[k]:
                    note(c["id"], p, f"{p} vs {base}: another {k} — {p}: {', '.join(mine[k])}; {base}: {', '.join(b[k])}")
        runs: dict[tuple[str, str], list[int]] = {}
        for pr in c.get("pairs") or ():
            p = pr.get("protocol")
            mine, said = sw.get(p) or {}, set()
            for k, kind in (("client", "user_agent_differs"), ("server", "server_differs")):
                if mine.get(k) and b.get(k) and mine[k] != b[k]:
                    said.add(kind)  # (the software note above says it)
            items = pr.get("warning_items")
            ws = ([w["text"] for w in items if isinstance(w, dict) and w.get("kind") not in SAID | said]
                  if isinstance(items, list) else list(pr.get("warnings") or ()))
            for w in ws:
                runs.setdefault((p, w), []).append(pr.get("run"))
        for (p, w), ks in runs.items():
            if p in s["protocols"]:
                rn = ", ".join(str(k) for k in sorted(k for k in ks if k is not None))
                note(c["id"], p, f"{p} vs {base} (run{'s' * (len(ks) != 1)} {rn}): {w}")
    return texts, where


def _marks(ks: list[int] | None) -> str:
    return " [" + ",".join(str(k) for k in ks) + "]" if ks else ""


def summarise(conditions: list[dict], runs: list[dict], protos: list[str], baseline: str) -> dict:
    """Per condition: each protocol's page figures over the runs (median, quartiles, n; means are
    not used: one retransmission timeout in three runs moves a mean by a third of a second), and
    every protocol's medians against the baseline's (the whitepaper's A/B/difference/speedup with
    A = baseline)."""
    from wirefall.analyzer.compare import PAGE_ROWS

    out = []
    for c in conditions:
        every = [r for r in runs if r["condition"] == c["id"] and r.get("figures")]
        # a load that did not fetch the whole page, or whose page its capture does not hold whole
        # (its load time only a lower bound: a median with it is biased low), is no page load's
        # figure: out of the medians, counted and said why (``exclusion``)
        rs = [r for r in every if not exclusion(r)]
        prot: dict[str, dict[str, Any]] = {}
        for p in protos:
            mine = [r for r in rs if r["protocol"] == p]
            theirs = [r for r in every if r["protocol"] == p]
            left = [r for r in theirs if exclusion(r)]
            fs = [r["figures"] for r in mine]
            stats = {k: _describe([f.get(k) for f in fs]) for k, _ in PAGE_ROWS}  # (a key older runs lack: n 0)
            stats.update({k: _describe([server_figures(r)[k] for r in mine]) for k, _ in SERVER_ROWS})
            reasons: dict[str, int] = {}
            kinds: dict[str, int] = {}
            for r in left:
                for why in exclusion(r):
                    reasons[why] = reasons.get(why, 0) + 1
                if r.get("page_complete") is False:
                    for k in (r.get("completeness") or {}).get("kinds") or ():
                        kinds[k] = kinds.get(k, 0) + 1
            prot[p] = {"runs": len(fs), "page_load_time": [f["page_load_time"] for f in fs],
                       "missed": sum(1 for r in mine if (r.get("link_check") or {}).get("ok") is False),
                       "incomplete": sum(1 for r in theirs if not (r.get("decode") or {}).get("ok", True)),
                       "runs_total": len(theirs), "excluded": len(left), "excluded_reasons": reasons, "excluded_kinds": kinds,
                       "excluded_runs": [{"run": r.get("run"), "reasons": exclusion(r),
                                          "kinds": list((r.get("completeness") or {}).get("kinds") or ()) if r.get("page_complete") is False else [],
                                          "text": exclusion_text(r)} for r in left],
                       "unchecked": sum(1 for r in mine if "page_complete" not in r),
                       "median": {k: v["median"] for k, v in stats.items()},
                       "q1": {k: v["q1"] for k, v in stats.items()}, "q3": {k: v["q3"] for k, v in stats.items()},
                       "n": {k: v["n"] for k, v in stats.items()}, "stats": stats}
        vs: dict[str, dict[str, dict[str, Any]]] = {}
        base = prot.get(baseline, {}).get("median", {})
        for p in protos:
            if p == baseline:
                continue
            vs[p] = {}
            for k, _ in PAGE_ROWS:
                a, b = base.get(k), prot[p]["median"].get(k)
                vs[p][k] = {"a": a, "b": b, "diff": None if a is None or b is None else b - a,
                            "speedup": None if k.endswith("compression") or not a or b is None else (a - b) / a}
        out.append({"id": c["id"], "rtt_ms": c["rtt_ms"], "loss_pct": c["loss_pct"], "rate_mbit": c.get("rate_mbit"),
                    **{k: c.get(k) for k in ("down_mbit", "up_mbit", "buffer", "loss_burst")},
                    "measured": c.get("measured"), "protocols": prot, "vs_baseline": vs,
                    "pairs": [r["compare"] for r in rs if r.get("compare")],
                    "software": software(rs, protos)})
    return {"schema": SCHEMA, "statistic": "median", "baseline": baseline, "protocols": protos, "conditions": out}


def _fmt(key: str, v) -> str:
    from wirefall.analyzer.compare import _fmt as cfmt

    if isinstance(v, float) and key not in ("page_load_time",) and not key.endswith("compression"):
        return f"{v:,.0f}" if v.is_integer() else f"{v:,.1f}"  # a median of an even number of counts
    return cfmt(key, v)


def _fmt_iqr(key: str, st: dict) -> str:
    """``median [q1–q3]`` (just the median for one run)."""
    if st["median"] is None:
        return "–"
    if st["n"] < 2:
        return f"{st['median']:.1f}" if key.endswith("_ms") else _fmt(key, st["median"])
    if key == "page_load_time":  # seconds, one unit for the three
        return f"{st['median']:.3f} [{st['q1']:.3f}–{st['q3']:.3f}]"
    if key.endswith("_ms"):
        return f"{st['median']:.1f} [{st['q1']:.1f}–{st['q3']:.1f}]"
    return f"{_fmt(key, st['median'])} [{_fmt(key, st['q1'])}–{_fmt(key, st['q3'])}]"


def _condition_label(c: dict) -> str:
    s = f"rtt {c['rtt_ms']:g} ms, loss {c['loss_pct']:g} %"
    if c.get("loss_burst"):
        s += f" (bursts of {c['loss_burst']:g})"
    down, up = c.get("down_mbit"), c.get("up_mbit")
    if down is None and up is None and c.get("rate_mbit"):
        down = up = c["rate_mbit"]
    if down or up:
        s += f", {down or '∞'}/{up or '∞'} Mbit/s"
    if c.get("buffer"):
        s += f", buffer {c['buffer']}"
    return s


NO_COMPLETE = "no complete run"


def _no_complete(pr: dict) -> bool:
    """Runs of the protocol were made, none of them in the medians."""
    return not pr.get("runs") and bool(pr.get("runs_total"))


def excluded_line(pr: dict) -> str | None:
    """What of one protocol × condition is not in its medians: "n 9 of 10; 1 excluded: page
    incomplete (connection not decrypted) (run 4)", and runs in them whose completeness was not
    recorded; None when every run is in them, checked."""
    n, total = pr.get("runs", 0), pr.get("runs_total", pr.get("runs", 0))
    parts = []
    ex = pr.get("excluded_runs") or []
    if ex:
        groups: dict[str, list] = {}
        for x in ex:
            groups.setdefault(x.get("text") or "", []).append(x.get("run"))
        parts.append(f"{len(ex)} excluded: " + "; ".join(
            f"{t} (run{'s' * (len(ks) != 1)} {', '.join(str(k) for k in ks)})" for t, ks in groups.items()))
    if pr.get("unchecked"):
        u = pr["unchecked"]
        parts.append(f"{u} in the medians unchecked (recorded before the lab recorded a run's page_complete)")
    if not parts:
        return None
    return "; ".join([f"n {n} of {total}" + (f"; {NO_COMPLETE}" if not n else "")] + parts)


def render_summary(s: dict) -> str:
    from wirefall.analyzer.compare import OPTIONAL_ROWS, PAGE_ROWS

    protos, base = s["protocols"], s["baseline"]
    texts, where = notes(s)
    lines = [f"wirefall lab: every protocol against {base} (median [quartiles] over n runs; "
             f"speedup = ({base} − X) / {base} of the medians; [k]: note k below, what besides the protocol differs)", ""]
    # the whitepaper's form: one row per condition, page load time per protocol and speedup
    head = ["condition", "runs"] + [f"{p} PLT (s)" if p == base else f"{p} PLT (s) / speedup" for p in protos]
    rows = [head]
    for c in s["conditions"]:
        pr = c["protocols"]
        missed = sum(pr[p].get("missed", 0) for p in protos)
        excluded = sum(pr[p].get("excluded", pr[p].get("incomplete", 0)) for p in protos)
        cell = [_condition_label(c),
                "/".join(str(pr[p]["runs"]) for p in protos) + (f" ({missed} missed)" if missed else "")
                + (f" ({excluded} excluded)" if excluded else "")]
        for p in protos:
            st = pr[p]["stats"]["page_load_time"]
            if _no_complete(pr[p]):  # (not a number: there is none to give)
                cell.append(NO_COMPLETE + _marks(where.get((c["id"], p))))
            elif p == base:
                cell.append(_fmt_iqr("page_load_time", st))
            else:
                sp = c["vs_baseline"][p]["page_load_time"]["speedup"]
                cell.append(f"{_fmt_iqr('page_load_time', st)} / " + ("–" if sp is None else f"{100 * sp:.1f} %")
                            + _marks(where.get((c["id"], p))))
        rows.append(cell)
    w = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for i, r in enumerate(rows):
        lines.append("  ".join([r[0].ljust(w[0])] + [r[j].rjust(w[j]) for j in range(1, len(r))]))
        if i == 0:
            lines.append("  ".join("-" * x for x in w))
    lines += ["", "runs: loads per protocol in the medians (" + "/".join(protos) + "); missed: loads whose measured link "
              "conditions missed the asked ones (manifest runs[].link_check); excluded: loads left out of the medians, "
              "below with why — a page its capture does not hold whole (runs[].completeness, wirefall's completeness "
              "model: its load time only a lower bound) or not every resource a 200 (runs[].decode)",
              "page load time: the page's last response byte from its first row (not the browser's load event)"]
    said = [f"  {_condition_label(c)}, {p}: {ln}" for c in s["conditions"] for p in protos
            if (ln := excluded_line(c["protocols"][p]))]
    if said:
        lines += ["", "left out of the medians, or in them unchecked:"] + said
    if texts:
        lines += ["", "notes (the speedups include these differences; runs[].compare.file has each comparison):"]
        lines += [f"[{k}] {t}" for k, t in enumerate(texts, 1)]
    for c in s["conditions"]:
        m = c.get("measured") or {}
        lines += ["", f"== {c['id']}: measured RTT {m.get('rtt_ms_min', '–')} ms (min; median {m.get('rtt_ms', '–')}), loss c2s {m.get('loss_c2s_pct', '–')} %, "
                      f"s2c {m.get('loss_s2c_pct', '–')} % ({m.get('udp_sent', 0)} UDP probes)"]
        head = ["", "n"] + [f"{p} ({NO_COMPLETE})" if _no_complete(c["protocols"][p]) else p for p in protos] \
            + [f"speedup {p}{_marks(where.get((c['id'], p)))}" for p in protos if p != base]
        rows = [head]
        for k, label in PAGE_ROWS + SERVER_ROWS:
            if k in OPTIONAL_ROWS and not any(c["protocols"][p]["n"].get(k) for p in protos):
                continue  # (a browser log's row: no run has it)
            r = [label, "/".join(str(c["protocols"][p]["n"][k]) for p in protos)]
            r += [_fmt_iqr(k, c["protocols"][p]["stats"][k]) for p in protos]
            for p in protos:
                if p != base:
                    sp = c["vs_baseline"][p][k]["speedup"] if k in c["vs_baseline"][p] else None
                    r.append("–" if sp is None else f"{100 * sp:.1f} %")
            rows.append(r)
        w = [max(len(r[i]) for r in rows) for i in range(len(head))]
        for i, r in enumerate(rows):
            lines.append("  ".join([r[0].ljust(w[0])] + [r[j].rjust(w[j]) for j in range(1, len(r))]))
            if i == 0:
                lines.append("  ".join("-" * x for x in w))
    return "\n".join(lines) + "\n"


def _write_json(path: Path, obj) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=str) + "\n")
    os.replace(tmp, path)


def run_lab(protos, rtts, losses, rate, runs, page_dir, out: Path, keylogs=(), count=12, log=print,
            down=None, up=None, buffer=None, burst=None, push=None, page_spec=None, h3_server="auto") -> dict:
    """Do the whole lab; returns the manifest (also written to out/manifest.json)."""
    from wirefall.analyzer.compare import compare, render_text
    from .measure import check as check_link
    from .measure import measure_capture, netlog_quic, relay_delta, server_time
    from .net import CLIENT_IP, LabNet
    from wirefall.analyzer.pipeline import analyze

    sac = _scripts()
    if os.geteuid() != 0:
        raise LabError("run as root: the lab makes network namespaces and captures with tcpdump")
    missing = [t for t in EXTRA_TOOLS if not shutil.which(t)]
    if missing:
        raise LabError("missing tools: " + ", ".join(f"{t} (apt-get install {EXTRA_PACKAGES[t]})" for t in missing))
    extra = list(EXTRA_TOOLS)
    multi = page_spec is not None and len(page_spec.origins) >= 1
    if multi or (page_dir and (Path(page_dir) / "page.json").is_file()
                 and json.loads((Path(page_dir) / "page.json").read_text()).get("origins")):
        extra.append("dnsmasq")
    if "h3" in protos and sac.h3_server_kind(h3_server) in ("caddy", "ngtcp2"):
        extra.append({"caddy": "caddy", "ngtcp2": "gtlsserver"}[sac.h3_server_kind(h3_server)])
    try:
        tools = sac.check_tools(list(protos), extra=extra)
    except SystemExit as e:  # the script's die()
        raise LabError(str(e).replace("serve_and_capture: ", "")) from None
    out.mkdir(parents=True, exist_ok=True)
    baseline = "h1" if "h1" in protos else protos[0]
    work = Path(tempfile.mkdtemp(prefix="wirefall-lab-"))
    os.chmod(work, 0o755)
    procs = sac.Procs()
    net = LabNet(procs)
    manifest: dict = {}
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)  # also when started in the background (SIGINT ignored)
    try:
        lab = lab_class(sac)(out, work, count, net=net, site=Path(page_dir) if page_dir else None, procs=procs,
                                page_spec=page_spec, h3=h3_server)
        page = {k: lab.page.get(k) for k in ("count", "seed", "requests", "files", "name", "source", "origins", "bytes", "notes")
                if k in lab.page or k in ("count", "seed", "requests", "files")}
        if lab.origins:
            page["addresses"] = lab.origins
            page["resources"] = [{k: r[k] for k in ("url", "kind", "content_type", "bytes", "parent", "har_url")}
                                 for r in lab.page.get("resources", [])]
        lab.push = push_paths(push, page)
        manifest = {
            "schema": SCHEMA,
            "created": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": "wirefall lab " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["lab"] else None,
            "protocols": list(protos), "baseline": baseline, "runs_per_condition": runs,
            "page": page, "page_dir": str(page_dir) if page_dir else None,
            "push": {"asked": push, "paths": lab.push, "servers": ["h2 (nginx http2_push)", "spdy (npm spdy res.push)"] if lab.push else []},
            "tools": sac.tool_versions(list(tools) + extra), "host_kernel": os.uname().release,
            "h3_server": lab.h3,
            "conditions": [], "runs": [],
        }
        for ci, (rtt, loss) in enumerate([(r, lo) for r in rtts for lo in losses]):
            cid = condition_id(rtt, loss, rate, down, up, buffer, burst)
            log(f"[{cid}] setting up the link", flush=True)
            asked = asked_link(rtt, loss, rate, down, up, buffer, burst)
            cond = {"id": cid, "rtt_ms": rtt, "loss_pct": loss, "rate_mbit": rate, "seed": ci + 1,
                    **{k: asked[k] for k in ("down_mbit", "up_mbit", "buffer", "loss_burst")}, "asked": asked}
            cond["link"] = net.up(rtt, loss, rate, ci + 1, work, down_mbit=down, up_mbit=up, buffer=buffer, burst=burst)
            want = rtt + asked["rtt_serialisation_ms"]
            m = net.measure(work)
            for _ in range(RTT_TRIES - 1):  # again, in case the host was busy
                if rtt_in_force(want, m.get("rtt_ms_min")):
                    break
                m = net.measure(work)
            cond["measured"] = m
            cond["rtt_in_force"] = rtt_in_force(want, m.get("rtt_ms_min"))
            n = m.get("udp_sent", 0)
            cond["loss_in_force"] = (loss_in_force(loss, m.get("loss_c2s_pct"), n)
                                     and loss_in_force(loss, m.get("loss_s2c_pct"), m.get("udp_received_by_server") or 0))
            log(f"[{cid}] measured RTT {m.get('rtt_ms_min')}/{m.get('rtt_ms')} ms min/median (asked {rtt:g}), loss c2s {m.get('loss_c2s_pct')} % "
                f"s2c {m.get('loss_s2c_pct')} % (asked {loss:g})", flush=True)
            manifest["conditions"].append(cond)
            if not cond["rtt_in_force"]:
                # a loaded host (probes woken late) or a broken link: the loads go on and each is
                # checked on its own capture (link_check); a link that is not there at all stops
                if m.get("rtt_ms_min") is None:
                    raise LabError(f"{cid}: the link does not carry TCP (no probe connected)")
                log(f"[{cid}] warning: probe RTT {m.get('rtt_ms_min')} ms after {RTT_TRIES} tries, not the {want:g} ms "
                    "asked for; each load's own check says whether it met the RTT", flush=True)
            if not cond["loss_in_force"]:
                log(f"[{cid}] warning: measured loss is far from {loss:g} % (recorded in the manifest)", flush=True)
            for k in range(1, runs + 1):
                rdir = out / cid / f"run{k}"
                rdir.mkdir(parents=True, exist_ok=True)
                lab.out = rdir
                lab.linger = max(0.5, 3 * rtt / 1000)
                order = list(protos[(k - 1) % len(protos):]) + list(protos[:(k - 1) % len(protos)])  # rotate
                analyses = {}
                for p in order:
                    t0 = time.time()
                    before = net.snapshot()  # also resets the queue's peaks: what this load meets
                    r = lab.run(p)
                    relay = relay_delta(before, net.snapshot())
                    rec = {"protocol": p, "rtt_ms": rtt, "loss_pct": loss, "rate_mbit": rate, "run": k,
                           **{x: asked[x] for x in ("down_mbit", "up_mbit", "buffer", "loss_burst")},
                           "condition": cid, "dir": str(rdir.relative_to(out)),
                           "made": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                           "files": {x: r[x] for x in ("capture", "keys", "netlog", "server_log", "client_log", "dns_log")
                                     if r.get(x)}, **{x: r[x] for x in ("client", "server", "command", "port", "keys_from")
                                                      if x in r}}
                    keys = [str(rdir / r["keys"])] if r.get("keys") else []
                    an = analyze(str(rdir / r["capture"]), keylogs=keys + list(keylogs or []))
                    pushable = lab.push if p in ("h2", "spdy") else None
                    if lab.origins and pushable:
                        pushable = [f"https://{lab.doc_host}{x}" for x in pushable]
                    rec.update(analyse_load(an, page["requests"], pushable, lab.origins or None))
                    measured = measure_capture(str(rdir / r["capture"]), CLIENT_IP)
                    rec["link_measured"] = {**measured, "relay": relay}
                    rec["link_check"] = lc = check_link(asked, measured, relay)
                    rec["server_time"] = server_time(an.exchanges, m.get("rtt_ms_min"))
                    if p == "h3" and r.get("netlog"):
                        rec["quic"] = netlog_quic(rdir / r["netlog"])
                    analyses[p] = an
                    manifest["runs"].append(rec)
                    d = rec["decode"]
                    log(f"[{cid} run {k}] {p}: {d['status_200']}/{d['expected']} requests 200, page load "
                        f"{rec['figures']['page_load_time'] or 0:.3f} s, {rec['figures']['connections']} connection(s) "
                        f"({time.time() - t0:.1f} s)", flush=True)
                    q = measured.get("queueing") or {}
                    log(f"[{cid} run {k}] {p}: measured RTT {measured['rtt_ms']} ms ({measured['rtt_source']}), busiest second "
                        f"down {measured['down_mbit']} up {measured['up_mbit']} Mbit/s, queueing max {q.get('max_ms', '–')} ms"
                        + ("" if lc["ok"] else f"; MISSED {', '.join(lc['missed'])}"), flush=True)
                    if not d["ok"]:
                        log(f"[{cid} run {k}] {p}: warning: missing {d['missing']} not 200 {d['not_200']} "
                            f"wrong address {d['wrong_address']}", flush=True)
                    if not rec["page_complete"]:
                        log(f"[{cid} run {k}] {p}: warning: page incomplete in the capture ({rec['completeness']['incomplete']}): "
                            "left out of the medians", flush=True)
                    moved = {h: n for h, n in (rec.get("quic") or {}).get("port_migrations", {}).items() if n}
                    if moved:
                        log(f"[{cid} run {k}] {p}: warning: Chromium moved QUIC connections to another UDP port {moved}", flush=True)
                    if rec.get("origins"):
                        o = rec["origins"]
                        log(f"[{cid} run {k}] {p}: connections per origin "
                            + ", ".join(f"{h} {v['connections']}" for h, v in o["origins"].items())
                            + ("" if o["ok"] else f"; NO DNS lookup for {o['dns_missing']}"), flush=True)
                    _write_json(out / "manifest.json", manifest)
                if baseline in analyses:
                    for p in protos:
                        if p == baseline or p not in analyses:
                            continue
                        res = compare(analyses[baseline], analyses[p])
                        (rdir / f"compare-{p}-vs-{baseline}.txt").write_text(render_text(res) + "\n")
                        rec = next(x for x in manifest["runs"] if x["condition"] == cid and x["run"] == k and x["protocol"] == p)
                        rec["compare"] = {"run": k, "protocol": p, "file": f"{rdir.relative_to(out)}/compare-{p}-vs-{baseline}.txt",
                                          "match_mode": res["match_mode"], "matched": len(res["matched"]),
                                          "only_a": len(res["only_a"]), "only_b": len(res["only_b"]),
                                          "page": res["page"], "warnings": res["warnings"]}
                analyses.clear()
            cond["relay_counters"] = net.relay_stats()
            net.down()
            s = summarise(manifest["conditions"], manifest["runs"], list(protos), baseline)
            _write_json(out / "compare.json", s)
            (out / "compare.txt").write_text(render_summary(s))
            _write_json(out / "manifest.json", manifest)
        return manifest
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the clean-up short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        procs.stop_all()
        net.down()
        for _ in range(30):
            shutil.rmtree(work, ignore_errors=True)
            time.sleep(0.05)
            if not work.exists():
                break
        for s_, h in old.items():
            signal.signal(s_, h)


def main(args) -> int:
    """``wirefall lab`` (called from ui/cli.py)."""
    protos = [p.strip() for p in (args.protocols or "").split(",") if p.strip()]
    bad = [p for p in protos if p not in PROTOCOLS]
    if bad or not protos:
        print(f"wirefall: lab: unknown protocol(s) {bad}; choose from {','.join(PROTOCOLS)}", file=sys.stderr)
        return 2
    rtts = args.rtt or [0.0]
    losses = args.loss or [0.0]
    down, up, buffer, burst = (getattr(args, k, None) for k in ("down", "up", "buffer", "loss_burst"))
    if any(r < 0 or r > 10_000 for r in rtts) or any(lo < 0 or lo >= 50 for lo in losses) \
            or any(x is not None and not 0 < x <= 1000 for x in (args.rate, down, up)) or args.runs < 1 \
            or (burst is not None and burst < 1):
        print("wirefall: lab: need 0 ≤ RTT ≤ 10000 ms, 0 ≤ loss < 50 %, 0 < rate ≤ 1000 Mbit/s, runs ≥ 1, "
              "loss burst ≥ 1", file=sys.stderr)
        return 2
    if buffer is not None:
        from .net import parse_buffer

        try:
            kind, _ = parse_buffer(buffer) or ("", 0)
        except ValueError as e:
            print(f"wirefall: lab: {e}", file=sys.stderr)
            return 2
        if not (args.rate or down or up):
            print("wirefall: lab: --buffer is the bottleneck's queue: give a rate (--down/--up or --rate)", file=sys.stderr)
            return 2
        if kind == "bdp" and any(r <= 0 for r in rtts):
            print("wirefall: lab: --buffer bdp needs every --rtt above 0", file=sys.stderr)
            return 2
    page_dir, page_spec = None, None
    if args.page:
        from .pages import PageError, resolve

        try:
            got = resolve(args.page)
        except (PageError, OSError) as e:
            print(f"wirefall: lab: {e}", file=sys.stderr)
            return 2
        if isinstance(got, Path):
            page_dir = got
            if not (got / "index.html").is_file() and not (got / "page.json").is_file():
                print(f"wirefall: lab: {args.page} has no index.html", file=sys.stderr)
                return 2
        else:
            page_spec = got
    out = Path(args.output)
    try:
        run_lab(protos, rtts, losses, args.rate, args.runs, page_dir, out, keylogs=args.keylog or [],
                down=down, up=up, buffer=buffer, burst=burst, push=getattr(args, "push", None),
                page_spec=page_spec, h3_server=getattr(args, "h3_server", None) or "auto")
    except LabError as e:
        print(f"wirefall: lab: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("wirefall: lab: interrupted; every process stopped, namespaces removed", file=sys.stderr)
        return 130
    except SystemExit as e:  # serve_and_capture's die(): one run failed
        print(f"wirefall: lab: {e}", file=sys.stderr)
        return 1
    print((out / "compare.txt").read_text())
    print(f"wrote {out / 'manifest.json'}, {out / 'compare.txt'}, {out / 'compare.json'}", file=sys.stderr)
    return 0
