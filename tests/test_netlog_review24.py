"""Review 24 (a web-performance engineer on the real Chrome load pageload-amazon): the NetLog's
requests that never reached the network — a favicon served from the disk cache, a POST refused
before sending — are named (``summary --json``'s ``not_sent_requests``, the notice line over the
capture) and are rows of the log opened alone; and a QUIC session's connect end (and TLS end) is
the log's, not blank.  The oracle is the NetLog itself, read here with the standard json module."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, shared

CLI = [sys.executable, "-m", "wirefall"]
ENV = dict(os.environ, LC_ALL="C", PYTHONIOENCODING="utf-8")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=ROOT.parent, env=ENV, timeout=300)


def _amazon() -> tuple[Path, Path, Path]:
    d = shared("pageload-amazon")
    return d / "amazon1.cap.gz", d / "amazon1.key_log.txt.gz", d / "amazon1_netlog.json.gz"


def _netlog_truth(path: Path) -> dict:
    """From the raw NetLog: each URL_REQUEST's (first job's) url, method, start, whether it sent
    headers, read the HTTP cache, its net error; each QUIC session's begin, client Finished,
    HANDSHAKE_DONE — times in epoch seconds (timeTickOffset)."""
    d = json.loads(gzip.decompress(path.read_bytes()))
    c = d["constants"]
    ev = {v: k for k, v in c["logEventTypes"].items()}
    src = {v: k for k, v in c["logSourceType"].items()}
    ph = {v: k for k, v in c["logEventPhase"].items()}
    names = {v: k for k, v in c["netError"].items()}
    off = float(c["timeTickOffset"])
    reqs: dict[int, dict] = {}
    quic: dict[int, dict] = {}
    for e in d["events"]:
        sid, st, t = e["source"]["id"], src[e["source"]["type"]], (int(e["time"]) + off) / 1000.0
        name, phase, p = ev[e["type"]], ph[e["phase"]], e.get("params") or {}
        if st == "URL_REQUEST":
            r = reqs.setdefault(sid, {"sent": False, "cache": False, "error": None, "alive": None})
            if name == "REQUEST_ALIVE" and phase == "PHASE_BEGIN":
                r["alive"] = t
            elif name == "URL_REQUEST_START_JOB" and phase == "PHASE_BEGIN" and "url" not in r:
                r.update(url=p["url"], method=p["method"], start=r["alive"] if r["alive"] is not None else t)
            elif name.startswith("HTTP_TRANSACTION_") and name.endswith("SEND_REQUEST_HEADERS"):
                r["sent"] = True
            elif name in ("HTTP_CACHE_READ_INFO", "HTTP_CACHE_READ_DATA"):
                r["cache"] = True
            elif p.get("net_error") is not None and r["error"] is None and p["net_error"] < 0:
                r["error"] = p["net_error"]
        elif st == "QUIC_SESSION":
            q = quic.setdefault(sid, {})
            if name == "QUIC_SESSION" and phase == "PHASE_BEGIN":
                q["begin"] = t
            elif name == "QUIC_SESSION_CRYPTO_FRAME_SENT" and p.get("encryption_level") == "ENCRYPTION_HANDSHAKE":
                q.setdefault("finished", t)
            elif name == "QUIC_SESSION_HANDSHAKE_DONE_FRAME_RECEIVED":
                q.setdefault("done", t)
    unsent = {}
    for sid, r in reqs.items():
        if "url" not in r or r["sent"]:
            continue
        code = r["error"]
        reason = "cache" if r["cache"] and code is None else "cancelled" if code == -3 else "failed" if code is not None else None
        unsent[str(sid)] = dict(url=r["url"], method=r["method"], start=r["start"], reason=reason, code=code,
                                name=names.get(code) if code is not None else None)
    return {"unsent": unsent, "quic": quic, "requests": sum(1 for r in reqs.values() if "url" in r)}


@pytest.mark.slow
def test_not_sent_requests_named_in_summary_and_rows_of_the_log_alone():
    _cap, _keys, nl = _amazon()
    truth = _netlog_truth(nl)
    # the reviewer's two: favicon.ico from the disk cache, the checkin POST refused
    assert {k: (v["reason"], v["name"]) for k, v in truth["unsent"].items()} == {
        "347": ("cache", None), "198": ("failed", "ERR_CONNECTION_REFUSED")}
    s = json.loads(_run("summary", str(nl), "--json").stdout)
    log = s["browser"]["logs"][0]
    assert (log["requests"], log["sent"], log["not_sent"]) == (truth["requests"], truth["requests"] - 2, 2)
    assert log["not_sent_reasons"] == {"cache": 1, "failed": 1}
    got = {x["id"]: x for x in log["not_sent_requests"]}
    assert set(got) == set(truth["unsent"])
    for k, t in truth["unsent"].items():
        x = got[k]
        assert (x["url"], x["method"], x["reason"]) == (t["url"], t["method"], t["reason"])
        assert x["start"] == pytest.approx(t["start"], abs=1e-6)
        if t["code"] is None:
            assert x["net_error"] is None and x["cache"] == "disk"
        else:
            assert x["net_error"] == {"code": t["code"], "name": t["name"]} and x["cache"] is None
    # the log alone: every request a row, the two with no wire marked as such
    rq = json.loads(_run("requests", str(nl), "--json").stdout)
    rows = rq if isinstance(rq, list) else rq.get("exchanges") or rq.get("requests")
    assert len(rows) == truth["requests"]
    marked = {r["browser"]["id"]: r for r in rows if r["browser"].get("not_sent")}
    assert set(marked) == set(truth["unsent"])
    fav, post = marked["347"], marked["198"]
    assert fav["browser"]["not_sent"] == "disk cache" and fav["error"] is None and fav["response_end"] is not None
    assert post["browser"]["not_sent"] == "failed" and post["error"] == "ERR_CONNECTION_REFUSED"
    assert post["response_start"] is None and post["request_start"] == pytest.approx(truth["unsent"]["198"]["start"], abs=1e-6)
    assert {r["sources"]["request_start"] for r in marked.values()} == {"browser"}  # (a log alone's, as its sent rows)
    assert fav["connection"] == post["connection"]  # (one connection of no network, endpoints unknown)
    sent_conns = {r["connection"] for r in rows if not r["browser"].get("not_sent")}
    assert fav["connection"] not in sent_conns
    # the text views count them too (never a dropped row)
    out = _run("summary", str(nl)).stdout
    assert f"{truth['requests']} requests" in out.splitlines()[0]
    assert "unknown status" not in out  # (no response to know: not an unknown field of the log)
    # the requests table marks them as DevTools does, not a blank or <unknown> status
    table = _run("requests", str(nl)).stdout.splitlines()
    for k, t in truth["unsent"].items():
        want = "(disk cache)" if t["reason"] == "cache" else f"({t['reason']})"
        line = next(ln for ln in table if ln.split()[0] == str(marked[k]["id"]))
        assert want in line and t["url"] in line and "<unknown>" not in line, line


@pytest.mark.slow
def test_notice_over_the_capture_names_the_not_sent_and_quic_connect_end():
    cap, keys, nl = _amazon()
    truth = _netlog_truth(nl)
    run = _run("requests", str(cap), "--keylog", str(keys), "--netlog", str(nl), "--json")
    assert run.returncode == 0, run.stderr[-2000:]
    assert ("15 of 15 requests it sent matched, 0 not in the capture, 0 wire-only; 2 not sent: "
            "1 from the disk cache (favicon.ico), 1 failed (ERR_CONNECTION_REFUSED)") in run.stderr
    rows = json.loads(run.stdout)
    rows = rows if isinstance(rows, list) else rows.get("exchanges") or rows.get("requests")
    # QUIC: the request that opened each session has the log's connect end — the client's Finished
    # (Chrome's connect_end: TLS handshake complete), before the server's HANDSHAKE_DONE —, and TLS end = it
    summ = json.loads(_run("summary", str(cap), "--keylog", str(keys), "--json").stdout)
    conns = {c["id"]: c for c in summ["connections"]}
    quic_first = [r for r in rows if r["protocol"] == "h3" and r["browser"] and r["browser"]["offsets"]
                  and "connect_end" in r["browser"]["offsets"]]
    assert quic_first, "no QUIC request opened a session"
    for r in quic_first:
        o, wc = r["browser"]["offsets"], conns[r["connection"]]
        assert o["connect_end"] is not None and o["tls_end"] == pytest.approx(o["connect_end"], abs=1e-9)
        begin, end = wc["connect_start"] + o["connect_start"], wc["connect_end"] + o["connect_end"]
        q = next(q for q in truth["quic"].values() if abs(q.get("begin", 0.0) - begin) < 1e-6)
        assert end == pytest.approx(q["finished"], abs=1e-6) and q["finished"] <= q["done"]
    # request 7 (www.amazon.com over session 236): the --detail browser column, capture clock
    det = _run("requests", str(cap), "--keylog", str(keys), "--netlog", str(nl), "--detail", "7").stdout
    lines = {ln.split("  ")[1].strip(): ln for ln in det.splitlines() if ln.startswith("  connect") or ln.startswith("  TLS end")}
    q236 = truth["quic"][236]
    first = summ["first_time"]
    for label in ("connect end", "TLS end"):
        cells = lines[label].split()
        assert cells[-6] != "–" and float(cells[-4]) == pytest.approx((q236["finished"] - first) * 1000, abs=0.002)


def test_a_missing_connect_end_says_not_in_log():
    from wirefall.analyzer.browserlog import comparison as cmp
    from wirefall.analyzer.model import Connection, Exchange

    c = Connection(0, "udp", ("10.0.0.1", 5000), ("10.0.0.2", 443), connect_start=1.0, connect_end=1.05, tls_end=1.05)
    e = Exchange(id=1, connection=0, protocol="h3", stream_id=0, method="GET", url="https://a/", status=200)
    e.request_start = e.request_end = 1.1
    e.browser = {"source": "netlog", "times": {"connect_start": 0.99, "connect_end": None, "ssl_end": None},
                 "phases": {}, "offsets": {"connect_start": -0.01, "connect_end": None, "tls_end": None}}
    rows = {r.name: r for r in cmp.phase_comparison(e, c)}
    assert cmp.cells(rows["connect_end"], 0.0)[1] == "not in log" and rows["connect_end"].browser is None
    assert cmp.cells(rows["connect_start"], 0.0)[1] == "990.000 ms"


def _hostile_netlog(tmp_path: Path) -> Path:
    c = {"logEventTypes": {"REQUEST_ALIVE": 1, "URL_REQUEST_START_JOB": 2}, "logSourceType": {"URL_REQUEST": 1},
         "logEventPhase": {"PHASE_BEGIN": 1, "PHASE_END": 2, "PHASE_NONE": 0},
         "netError": {"ERR_\x1b[31mEVIL\x07" + "X" * 5000: -102}, "timeTickOffset": 1_700_000_000_000}
    url = "https://evil.test/\x1b]0;pwned\x07/" + "a" * 300_000 + "\r\nx"
    ev = []
    for i, (u, err) in enumerate(((url, -102), ("https://b.test/x\x00y", 10 ** 30), ("https://c.test/", "-3"),
                                  ("https://d.test/\u202e", -999999))):
        ev += [{"source": {"id": 10 + i, "type": 1}, "type": 1, "phase": 1, "time": str(1000 + i), "params": {"priority": "LOW"}},
               {"source": {"id": 10 + i, "type": 1}, "type": 2, "phase": 1, "time": str(1000 + i),
                "params": {"url": u, "method": "GET\x1b[2J"}},
               {"source": {"id": 10 + i, "type": 1}, "type": 2, "phase": 2, "time": str(1001 + i), "params": {"net_error": err}}]
    p = tmp_path / "hostile.netlog.json"
    p.write_text(json.dumps({"constants": c, "events": ev}))
    return p


@pytest.mark.slow
def test_hostile_not_sent_requests(tmp_path):
    p = _hostile_netlog(tmp_path)
    for cmd in (["summary", str(p)], ["requests", str(p)], ["summary", str(p), "--json"], ["requests", str(p), "--json"]):
        run = _run(*cmd)
        assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr[-2000:]
        if "--json" not in cmd:
            assert "\x1b" not in run.stdout and "\x07" not in run.stdout and "\x00" not in run.stdout
    log = json.loads(_run("summary", str(p), "--json").stdout)["browser"]["logs"][0]
    assert log["not_sent"] == 4 and len(log["not_sent_requests"]) == 4
    by = {x["id"]: x for x in log["not_sent_requests"]}
    assert by["10"]["reason"] == "failed" and by["10"]["net_error"]["code"] == -102
    assert len(by["10"]["net_error"]["name"]) <= 80  # (the log's own name, bounded)
    assert by["11"]["net_error"] is None or by["11"]["net_error"]["code"] is None  # 10**30 is no net error
    assert by["12"]["reason"] == "cancelled" and by["12"]["net_error"] == {"code": -3, "name": "ERR_ABORTED"}
    assert by["13"]["net_error"] == {"code": -999999, "name": "net error -999999"}
    # the notice's text over a capture: escaped and bounded
    from wirefall.analyzer.browserlog import comparison as cmp
    from wirefall.analyzer.safetext import printable

    line = printable(cmp.summary_line(dict(log, matched=0, unmatched=0, wire_only=0)))
    assert "\x1b" not in line and "\x07" not in line and len(line) < 1200
    assert "4 not sent:" in line and "1 cancelled (ERR_ABORTED)" in line


def test_a_har_s_cached_and_failed_entries_are_rows_as_the_netlog_s(tmp_path):
    """A HAR opened alone treats its not-sent entries as a NetLog's: rows marked ``not_sent``,
    named in its summary (the HAR's own ``_fromCache`` and ``_error`` as the oracle)."""
    from wirefall.analyzer.browserlog import open_any

    har = json.loads(gzip.decompress((ROOT / "sample_captures" / "page" / "pw-h2.har.gz").read_bytes()))
    ents = har["log"]["entries"]
    cached, failed = dict(ents[-1]), dict(ents[-2])
    cached["_fromCache"] = "disk"
    cached["timings"] = dict(cached["timings"], send=-1, wait=-1, receive=0, connect=-1, ssl=-1, dns=-1)
    failed["response"] = dict(failed["response"], status=0, _error="net::ERR_CONNECTION_REFUSED", bodySize=-1)
    failed["timings"] = {"blocked": 4, "dns": -1, "connect": -1, "ssl": -1, "send": -1, "wait": -1, "receive": -1}
    ents += [cached, failed]
    p = tmp_path / "x.har"
    p.write_text(json.dumps(har))
    an = open_any(str(p))
    log = an.browser["logs"][0]
    assert (log["not_sent"], log["not_sent_reasons"]) == (2, {"cache": 1, "failed": 1})
    rows = [e for e in an.exchanges if e.browser.get("not_sent")]
    assert sorted(e.browser["not_sent"] for e in rows) == ["disk cache", "failed"]
    f = next(x for x in log["not_sent_requests"] if x["reason"] == "failed")
    assert f["net_error"] == {"code": -102, "name": "net::ERR_CONNECTION_REFUSED"} and f["url"] == failed["request"]["url"]
    assert len(an.exchanges) == len(ents)
