"""The browser's view of a request (the thin bar under a row, ``waterfall.browser_phases``) shows
its TLS handshake, as Chrome's NetLog times it.

A NetLog gives a socket's TCP_CONNECT and then its SSL_CONNECT; wirefall's record of it has
``connect_end`` at TCP_CONNECT's end (= ``ssl_start``) and ``ssl_end``.  The phases went
connect → "blocked" from ``connect_end``, so the TLS phase (which began at the same moment)
had no length and its 43 ms were drawn grey as blocked (reviewer, session 28).  Truth: the
NetLog's own SSL_CONNECT and TCP_CONNECT events, read here without wirefall.
"""
from __future__ import annotations

import gzip
import json

from conftest import shared

from wirefall.analyzer import waterfall
from wirefall.analyzer.browserlog import overlay
from wirefall.analyzer.pipeline import analyze


def _connects(netlog) -> list[tuple[float, float]]:
    """(TCP_CONNECT ms, SSL_CONNECT ms) of each socket that did both, in the order they began."""
    d = json.load(gzip.open(netlog))
    names = {v: k for k, v in d["constants"]["logEventTypes"].items()}
    begin, end = d["constants"]["logEventPhase"]["PHASE_BEGIN"], d["constants"]["logEventPhase"]["PHASE_END"]
    at: dict[tuple[int, str, int], int] = {}
    order: list[int] = []
    for e in d["events"]:
        n = names.get(e["type"])
        if n in ("TCP_CONNECT", "SSL_CONNECT") and e.get("phase") in (begin, end):
            sid = e["source"]["id"]
            at[(sid, n, e["phase"])] = int(e["time"])
            if n == "TCP_CONNECT" and e["phase"] == begin:
                order.append(sid)
    return [(at[(s, "TCP_CONNECT", end)] - at[(s, "TCP_CONNECT", begin)], at[(s, "SSL_CONNECT", end)] - at[(s, "SSL_CONNECT", begin)])
            for s in order if (s, "SSL_CONNECT", end) in at]


def test_netlog_tls_is_drawn_as_tls_not_blocked():
    base = shared("pageload-amazon")
    netlog = base / "amazon1_netlog.json.gz"
    truth = _connects(netlog)
    assert truth[0] == (17, 43)  # the document's socket
    an = analyze(str(base / "amazon1.cap.gz"), [str(base / "amazon1.key_log.txt.gz")])
    overlay(an, str(netlog))
    seen = []
    for e in an.exchanges:
        ph = {n: round((b - a) * 1000) for n, a, b in waterfall.browser_phases(e.browser)}
        if "connect" in ph and (e.protocol or "").startswith("h2"):
            seen.append((ph["connect"], ph.get("tls")))
    assert seen and all(s in truth for s in seen), (seen, truth)
    assert seen[0] == (17, 43)  # www.amazon.com/: 43 ms of TLS, not "blocked"
