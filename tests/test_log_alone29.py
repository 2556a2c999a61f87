"""A browser log opened alone, as ``summary`` and the web app's connections table show it.

Before: a NetLog's QUIC session that began before the log and carried none of its requests
had no time at all (start and end 0.0, the epoch): ``summary`` printed every connection's
start as epoch seconds beside it (and, counted from the page's start, that session at
-1.77e9 s); the web app's table put it 56 years before the page.  ``summary``'s first line read
"0 packets, 0 bytes, 0.000 s" — a load that sent nothing — where ``stats`` and the web app
say "a browser log, no packets".  The truth here is the NetLog itself, read with json alone."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest

from conftest import ROOT

NETLOG = ROOT.parent / "shared" / "captures" / "pageload-amazon" / "amazon1_netlog.json.gz"
HAR = ROOT.parent / "shared" / "captures" / "hars" / "webpagetest-amazon.har.gz"

pytestmark = pytest.mark.skipif(not NETLOG.exists() or not HAR.exists(), reason="third-party captures not present")


def _netlog_sessions(path) -> dict[str, tuple[float, float]]:
    """Each QUIC session's peer address -> its first and last event (epoch s), read with json alone."""
    d = json.loads(gzip.decompress(path.read_bytes()))
    c = d["constants"]
    src = {v: k for k, v in c["logSourceType"].items()}
    ev = {v: k for k, v in c["logEventTypes"].items()}
    off = float(c["timeTickOffset"])
    times: dict[int, list[float]] = {}
    peer: dict[int, str] = {}
    for e in d["events"]:
        if src.get(e["source"]["type"]) != "QUIC_SESSION":
            continue
        sid = e["source"]["id"]
        times.setdefault(sid, []).append((int(e["time"]) + off) / 1000.0)
        p = e.get("params") or {}
        if ev[e["type"]] == "QUIC_SESSION_PACKET_RECEIVED" and sid not in peer:
            peer[sid] = p["peer_address"]
    return {peer[s]: (min(t), max(t)) for s, t in times.items() if s in peer}


def _netlog_first_request(path) -> float:
    """The NetLog's first URL request's start (REQUEST_ALIVE begins), epoch s."""
    d = json.loads(gzip.decompress(path.read_bytes()))
    c = d["constants"]
    src = {v: k for k, v in c["logSourceType"].items()}
    ev = {v: k for k, v in c["logEventTypes"].items()}
    off = float(c["timeTickOffset"])
    return min((int(e["time"]) + off) / 1000.0 for e in d["events"]
               if src.get(e["source"]["type"]) == "URL_REQUEST" and ev[e["type"]] == "REQUEST_ALIVE" and e["phase"] == 1)


def _run(*args: str) -> str:
    p = subprocess.run([sys.executable, "-m", "wirefall.ui.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_a_netlog_session_that_began_before_the_log_spans_its_own_events_and_is_not_the_page_start():
    sessions = _netlog_sessions(NETLOG)
    summ = json.loads(_run("summary", str(NETLOG), "--json"))
    by_server = {c["server"]: c for c in summ["connections"] if c["transport"] == "udp"}
    bg = by_server["[2001:4860:4829:7700::]:443"]  # the session the capture shows joining mid-way
    assert (bg["start"], bg["end"]) == pytest.approx(sessions["[2001:4860:4829:7700::]:443"], abs=1e-6)
    assert bg["start"] > 1e9  # (it was 0.0: the epoch)
    # it carried no request of the log, so the page's times do not start at it
    reqs = json.loads(_run("requests", str(NETLOG), "--json"))
    assert not any(r["connection"] == bg["id"] for r in reqs)
    text = _run("summary", str(NETLOG))
    line = next(ln for ln in text.splitlines() if "[2001:4860:4829:7700::]:443" in ln)
    t0 = _netlog_first_request(NETLOG)  # the page's start: its first request's (REQUEST_ALIVE begins)
    assert f"{bg['start'] - t0:.3f}" in line.split() and f"{bg['end'] - t0:.3f}" in line.split()
    assert bg["start"] < t0  # (began before the page: a negative start, counted from the page's)


def test_summary_of_a_log_alone_says_no_packets_not_zero():
    for src in (NETLOG, HAR):
        text = _run("summary", str(src))
        first = text.splitlines()[0]
        assert "a browser log, no packets (what only the wire gives is unknown: –)" in first, first
        assert "0 packets" not in first and "0.000 s" not in first
        summ = json.loads(_run("summary", str(src), "--json"))
        for c in summ["connections"]:
            line = next(ln for ln in text.splitlines() if ln.split() and ln.split()[0] == str(c["id"]))
            assert "0/0" not in line and "–" in line
        # times from the page's start, not epoch seconds
        cells = [ln.split() for ln in text.splitlines() if ln.split() and ln.split()[0].isdigit()]
        assert cells and all(abs(float(x)) < 1e6 for row in cells for x in row if _is_time(x))


def _is_time(x: str) -> bool:
    try:
        return "." in x and float(x) == float(x) and x.count(".") == 1 and len(x.split(".")[1]) == 3
    except ValueError:
        return False


def test_web_connections_of_a_netlog_alone_start_from_the_page():
    pytest.importorskip("dash")
    from wirefall.ui.web import views
    from wirefall.ui.web.state import WebState

    sessions = _netlog_sessions(NETLOG)
    st = WebState(use_cache=False)
    try:
        e = st.add_file(str(NETLOG), [], name=NETLOG.name)
        st.wait(e.id, 60)
        assert e.status == "done", e.error
        rows = views.connection_rows(e)
        assert all(abs(r["start_ms"]) < 60_000 for r in rows), [r["start_ms"] for r in rows]
        summ = json.loads(_run("summary", str(NETLOG), "--json"))
        bg = next(c for c in summ["connections"] if c["server"] == "[2001:4860:4829:7700::]:443")
        s, end = sessions["[2001:4860:4829:7700::]:443"]
        r = next(r for r in rows if r["id"] == bg["id"])
        assert r["duration_ms"] == pytest.approx((end - s) * 1000, abs=0.002)
    finally:
        st.close()


def test_stats_of_a_log_alone_explains_no_wire_column_it_leaves_empty():
    """A HAR's Traffic table shows "–" in every wire column (packets, bytes, payload, TLS overhead,
    framing, retrans): their notes ("payload: TCP/UDP length from the headers, as tshark's
    tcp.len" …) explained numbers that are not there.  A capture keeps them."""
    text = _run("stats", str(HAR))
    notes = text.split("Traffic (", 1)[1].split("\n\nBodies", 1)[0]
    assert "first byte, last byte:" in notes
    for gone in ("payload: TCP/UDP length", "TLS overhead: every TLS record", "retrans: the TCP segments"):
        assert gone not in notes, gone
    cap = ROOT / "sample_captures" / "page" / "page-h2.pcapng"
    ctext = _run("stats", str(cap), "--keylog", str(cap.with_suffix(".keys")))
    assert "payload: TCP/UDP length" in ctext and "retrans: the TCP segments" in ctext


def test_a_logs_post_of_no_body_size_is_unknown_not_empty(tmp_path):
    """WebPageTest's HAR gives every request ``bodySize`` -1 (unknown) and its POSTs' postData
    no text: the POSTs read as bodies of 0 bytes.  A request of a method that may carry a body
    (not GET, HEAD …) whose size the log does not give is now unknown: requests --json null, the
    HAR export -1 (read back the same), the request view "unknown"; a GET stays 0."""
    har = json.loads(gzip.decompress(HAR.read_bytes()))
    page = har["log"]["pages"][0]["id"]
    truth = [(e["request"]["method"], e["request"]["bodySize"]) for e in har["log"]["entries"] if e["pageref"] == page]
    reqs = json.loads(_run("requests", str(HAR), "--json"))
    assert [(r["method"]) for r in reqs] == [m for m, _ in truth] and {b for _, b in truth} == {-1}
    assert [r["request_body_bytes"] for r in reqs] == [None if m == "POST" else 0 for m, _ in truth]
    out = tmp_path / "back.har"
    _run("export", str(HAR), "-o", str(out))
    back = json.loads(out.read_text())
    assert [e["request"]["bodySize"] for e in back["log"]["entries"]] == [-1 if m == "POST" else 0 for m, _ in truth]
    again = json.loads(_run("requests", str(out), "--json"))
    assert [r["request_body_bytes"] for r in again] == [r["request_body_bytes"] for r in reqs]
    post = next(r for r in reqs if r["method"] == "POST")
    detail = _run("requests", str(HAR), "--detail", str(post["id"]))
    assert "  request body      unknown\n" in detail
