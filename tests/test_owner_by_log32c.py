"""Whose a connection joined mid-way with no request seen is, by a browser log laid over the capture
(analyzer/browserlog/matching.py ``matched_connections``, analyzer/completeness.py ``_log_owners``).

The amazon load cut at packet 549 (tests/test_completeness32b.py): the awswaf QUIC connection
(10.20.0.3:38863) carries no request in the capture and was "whose it is is unknown" even with the
NetLog laid over, though Chrome's NetLog — QUIC session 220, that client address — shows the page's
``inputs`` and ``mp_verify`` requests on it, keyed to the page's site.  Now the log's match is kept
(``browser.logs[].matched_connections``) and says it: ``whose`` "page", its tie naming the session
and its key.  Chrome's keep-alive to Google in the whole capture: the NetLog's session to
[2001:4860:4829:7700::]:443 began before logging (no QUIC_SESSION begin event, so no
network_anonymization_key) and no request is bound to it: the log does not say whose it is, so it
stays "unknown" (the match said).  A session whose requests the log sets apart (a NetLog whose
requests on session 220 are made the browser's own) is background traffic, with the log's reason.

Truth: the NetLog's own events read with json; captures cut in tmp_path (editcap).
"""
from __future__ import annotations

import gzip
import json
import subprocess
from functools import cache
from pathlib import Path

import pytest

from conftest import need_tool, shared

from wirefall.analyzer import completeness as C
from wirefall.analyzer.browserlog import overlay
from wirefall.analyzer.browserlog.netlog import BG_BROWSER
from wirefall.analyzer.pipeline import analyze

GOOGLE = "[2001:4860:4829:7700::]:443"


@cache
def _netlog() -> dict:
    return json.loads(gzip.decompress((shared("pageload-amazon") / "amazon1_netlog.json.gz").read_bytes()))


@cache
def _truth() -> dict:
    """From the NetLog's own events: per QUIC_SESSION source {self, peer, key (its begin event's
    network_anonymization_key, None without one), begun, requests: {URL_REQUEST id: (url, key)}},
    and the page's sites (the top-frame sites of main-frame requests)."""
    d = _netlog()
    names = {v: k for k, v in d["constants"]["logEventTypes"].items()}
    sources = {v: k for k, v in d["constants"]["logSourceType"].items()}
    sessions: dict[int, dict] = {}
    starts: dict[int, dict] = {}
    bound: dict[int, list[int]] = {}
    for ev in d["events"]:
        sid, t, p = ev["source"]["id"], names[ev["type"]], ev.get("params") or {}
        if sources[ev["source"]["type"]] == "QUIC_SESSION":
            s = sessions.setdefault(sid, {"key": None, "begun": False})
            if t == "QUIC_SESSION" and ev["phase"] == d["constants"]["logEventPhase"]["PHASE_BEGIN"]:
                s["key"], s["begun"] = p.get("network_anonymization_key"), True
            elif t == "QUIC_SESSION_PACKET_RECEIVED" and "self" not in s:
                s["self"], s["peer"] = p["self_address"], p["peer_address"]
        elif t == "URL_REQUEST_START_JOB" and "url" in p:
            starts[sid] = p
        elif t == "HTTP_STREAM_REQUEST_BOUND_TO_QUIC_SESSION":
            bound.setdefault(p["source_dependency"]["id"], []).append(sid)
    for sid, s in sessions.items():
        s["requests"] = {r: (starts[r]["url"], starts[r].get("network_isolation_key")) for r in bound.get(sid, [])}
    sites = {p["network_isolation_key"].split()[0] for p in starts.values() if p.get("request_type") == "main frame"}
    return {"sessions": sessions, "sites": sites}


def _cut(tmp: Path, netlog: Path | None = None, cut: str | None = "549-999999"):
    d = shared("pageload-amazon")
    cap = tmp / "amazon1.cap"
    cap.write_bytes(gzip.decompress((d / "amazon1.cap.gz").read_bytes()))
    if cut is not None:
        out = tmp / "cut.pcap"
        subprocess.run([need_tool("editcap"), "-r", str(cap), str(out), cut], check=True, capture_output=True)
        cap = out
    an = analyze(str(cap), keylogs=[str(d / "amazon1.key_log.txt.gz")])
    if netlog is not None:
        overlay(an, str(netlog))
    return an


def _wire(an, addr: str):
    """The wire connection whose server (or client) is ``addr`` as the NetLog writes it."""
    def fmt(ep):
        return f"[{ep[0]}]:{ep[1]}" if ":" in str(ep[0]) else f"{ep[0]}:{ep[1]}"
    (c,) = [c for c in an.connections if c.transport == "udp" and addr in (fmt(c.client), fmt(c.server))]
    return c


def _issue(comp, cid):
    (i,) = [i for i in comp.issues if i.connection == cid]
    return i


@pytest.mark.slow
def test_cut_549_the_netlog_says_the_awswaf_connection_is_the_page(tmp_path):
    s = _truth()["sessions"][220]
    (site,) = _truth()["sites"]
    assert s["self"] == "10.20.0.3:38863" and s["begun"]
    keys = {k for _u, k in s["requests"].values()}
    assert keys == {f"{site} {site}"}  # (every request on it keyed to the page's site)
    urls = [u for u, _k in s["requests"].values()]
    assert any("/inputs?" in u for u in urls) and any(u.endswith("/mp_verify") for u in urls)

    # without the NetLog: unknown, as before
    an = _cut(tmp_path)
    c = _wire(an, s["self"])
    assert f"{c.server[0]}:{c.server[1]}" == s["peer"] and not [e for e in an.exchanges if e.connection == c.id]
    i = _issue(C.compute(an), c.id)
    assert (i.kind, i.whose, i.tie, i.log) == ("joined_midway", "unknown", None, None)

    # with it: the page's, by the log's word
    an = _cut(tmp_path, shared("pageload-amazon") / "amazon1_netlog.json.gz")
    c = _wire(an, s["self"])
    comp = C.compute(an)
    i = _issue(comp, c.id)
    assert (i.kind, i.whose, i.background) == ("joined_midway", "page", False)
    assert i.tie == (f"Chrome's NetLog matched it: QUIC session 220, isolation key {site} {site} (the page's site {site}), "
                     f"{len(s['requests'])} of the page's requests on it in the log")
    assert i.log is not None and i.log["source_id"] == 220 and i.log["wire"] == [c.id] and i.log["kind"] == "netlog"
    assert sorted(i.log["request_ids"]) == sorted(str(r) for r in s["requests"])
    assert i.log["isolation_keys"] == sorted(keys) and i.log["page_requests"] == len(s["requests"])
    assert c.id not in comp.owner_unknown_connections and c.id not in comp.background_connections
    assert "it carried them before the capture" in i.detail
    head = C.headline(an)
    assert "1 with no request seen, the page's by Chrome's NetLog" in head and "whose it is is unknown" in head, head
    (j,) = [j for j in C.to_dict(comp)["issues"] if j["connection"] == c.id]
    assert j["whose"] == "page" and j["tie"] == i.tie and j["log"]["log_connection"] == "quic session 220"
    # the overlay's summary keeps the match of every session the capture holds
    (m,) = [m for m in an.browser["logs"][0]["matched_connections"] if m["log_connection"] == "quic session 220"]
    assert m["wire"] == [c.id] and m["whose"] == "page"


@pytest.mark.slow
def test_whole_capture_google_connection_is_what_its_netlog_session_says(tmp_path):
    (sid,) = [k for k, s in _truth()["sessions"].items() if s.get("peer") == GOOGLE]
    s = _truth()["sessions"][sid]
    # the NetLog: the session began before logging (no QUIC_SESSION begin, so no key of its own) and
    # no request is bound to it: the log does not say whose it is
    assert (s["begun"], s["key"], s["requests"]) == (False, None, {})
    an = _cut(tmp_path, shared("pageload-amazon") / "amazon1_netlog.json.gz", cut=None)
    c = _wire(an, GOOGLE)
    comp = C.compute(an)
    i = _issue(comp, c.id)
    assert (i.kind, i.whose, i.background, i.tie) == ("joined_midway", "unknown", False, None)
    assert i.log is not None and (i.log["source_id"], i.log["requests"], i.log["whose"]) == (sid, 0, None)
    assert f"Chrome's NetLog matched it: QUIC session {sid}, no request on it in the log" in i.detail
    assert comp.owner_unknown_connections == [c.id] and comp.page_complete
    assert C.headline(an).endswith("; 1 QUIC connection joined mid-way, no request seen: whose it is is unknown")


@pytest.mark.slow
def test_a_session_whose_requests_the_log_sets_apart_is_background(tmp_path):
    """The NetLog with session 220's requests made the browser's own (initiator "not an origin",
    Google's key): the awswaf connection is background traffic, with the log's own reason."""
    d = json.loads(json.dumps(_netlog()))
    names = {v: k for k, v in d["constants"]["logEventTypes"].items()}
    ids = set(_truth()["sessions"][220]["requests"])
    key = "https://google.com https://google.com"
    for ev in d["events"]:
        p = ev.get("params") or {}
        if ev["source"]["id"] in ids and names[ev["type"]] == "URL_REQUEST_START_JOB" and "url" in p:
            p["initiator"], p["network_isolation_key"] = "not an origin", key
    nl = tmp_path / "own.json"
    nl.write_text(json.dumps(d))
    an = _cut(tmp_path, nl)
    c = _wire(an, "10.20.0.3:38863")
    comp = C.compute(an)
    i = _issue(comp, c.id)
    reason = BG_BROWSER.format(key=key, pages=f"the page's site {next(iter(_truth()['sites']))}")
    assert (i.kind, i.whose, i.background) == ("joined_midway", None, True)
    assert i.detail.endswith(f"background traffic, not the page's: Chrome's NetLog matched it: QUIC session 220, isolation key "
                             f"{key}, every one of its {len(ids)} requests in the log set apart by it: {reason}"), i.detail
    assert c.id in comp.background_connections and c.id not in comp.owner_unknown_connections
    head = C.headline(an)
    assert "background traffic (not the page's): 1 QUIC connection joined mid-way (began before the capture, no request on it)" in head


@pytest.mark.slow
def test_cut_560_a_preconnect_the_log_opened_under_the_pages_key_is_the_page(tmp_path):
    """Cut at packet 560, the page's preconnect (NetLog QUIC session 265) carried no request of the
    log: its session's own key — the QUIC_SESSION begin event's network_anonymization_key,
    "https://amazon.com same_site" — has the page's site: the page's (it stayed "unknown" when only
    requests' keys were read)."""
    t = _truth()
    s = t["sessions"][265]
    assert s["begun"] and not s["requests"] and s["key"].split()[0] in t["sites"]
    an = _cut(tmp_path, shared("pageload-amazon") / "amazon1_netlog.json.gz", cut="560-999999")
    c = _wire(an, s["self"])
    i = _issue(C.compute(an), c.id)
    assert i.kind == "joined_midway" and i.whose == "page" and not i.background, i
    assert i.log["source_id"] == 265 and i.log["session_key"] == s["key"] and i.log["requests"] == 0
    assert f"opened under the key {s['key']}" in i.tie and "a preconnect of the page" in i.tie
    # without the log: unknown, as the capture alone cannot say
    (tmp_path / "bare").mkdir()
    j = _issue(C.compute(_cut(tmp_path / "bare", None, cut="560-999999")), c.id)
    assert j.whose == "unknown"
