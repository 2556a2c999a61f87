"""A browser log laid over a capture keeps the log's requests that never reached the network
(served from the disk cache, failed before sending) as rows, made as the log alone makes them:
in the requests table, ``requests --json``, the waterfall and the HAR export — before, only the
summary line named them (DevTools and WebPageTest list them as rows).

The oracle is the NetLog itself, read here with the standard json module: each URL_REQUEST's
REQUEST_ALIVE start, URL, method, whether it sent headers (``HTTP_TRANSACTION_*SEND_REQUEST*``),
read the HTTP cache (``HTTP_CACHE_READ_*``), the net error its REQUEST_ALIVE ended with (named
from the log's own ``constants.netError``) and the body bytes its job read
(``URL_REQUEST_JOB_FILTERED_BYTES_READ``); and the same rows of the log opened alone."""
from __future__ import annotations

import gzip
import json
import os
import statistics
import subprocess
import sys
from datetime import datetime, UTC
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES, shared
from netlog_truth import netlog_unsent

from wirefall.analyzer.browserlog import overlay
from wirefall.analyzer.model import not_sent_of
from wirefall.analyzer.pipeline import analyze

CLI = [sys.executable, "-m", "wirefall"]
ENV = dict(os.environ, LC_ALL="C", PYTHONIOENCODING="utf-8", PYTHONPATH=str(ROOT))
# the fields of a row that are the log's own, the same over a capture as alone
SAME = ("method", "url", "status", "protocol", "stream_id", "error", "request_body_bytes", "response_body_bytes",
        "response_body_decoded_bytes", "content_type", "request_headers", "response_headers", "background")
TIMES = ("request_start", "request_end", "response_start", "response_end", "response_headers_end")


def _run(*args) -> subprocess.CompletedProcess:
    p = subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return p


def _amazon() -> tuple[Path, Path, Path]:
    d = shared("pageload-amazon")
    return d / "amazon1.cap.gz", d / "amazon1.key_log.txt.gz", d / "amazon1_netlog.json.gz"


@pytest.fixture(scope="module")
def amazon():
    cap, keys, nl = _amazon()
    over = json.loads(_run("requests", cap, "--keylog", keys, "--netlog", nl, "--json").stdout)
    wire = json.loads(_run("requests", cap, "--keylog", keys, "--json").stdout)
    alone = json.loads(_run("requests", nl, "--json").stdout)
    summ = json.loads(_run("summary", cap, "--keylog", keys, "--netlog", nl, "--json").stdout)
    return dict(cap=cap, keys=keys, nl=nl, truth=netlog_unsent(nl), over=over, wire=wire, alone=alone, summ=summ)


def test_the_netlogs_not_sent_requests_are_rows_over_the_capture(amazon):
    truth, over, wire, alone = amazon["truth"], amazon["over"], amazon["wire"], amazon["alone"]
    # the NetLog's own two: the checkin POST refused, favicon.ico read from the disk cache
    assert sorted((t["method"], t["url"].rsplit("/", 1)[-1], t["reason"], t["error"]) for t in truth.values()) == [
        ("GET", "favicon.ico", "cache", None), ("POST", "checkin", "failed", "ERR_CONNECTION_REFUSED")]
    rows = {r["browser"]["id"]: r for r in over if r["browser"] and r["browser"].get("not_sent")}
    solo = {r["browser"]["id"]: r for r in alone if r["browser"].get("not_sent")}
    assert set(rows) == set(solo) == set(truth)  # (before: none over the capture)
    # the capture's rows are the capture's, unchanged; the log's follow them, in the log's start order
    assert sorted(r["id"] for r in wire) == list(range(1, len(wire) + 1))
    assert sorted(r["id"] for r in over if r["id"] <= len(wire)) == sorted(r["id"] for r in wire)
    by_start = sorted(truth, key=lambda sid: truth[sid]["start"])
    assert [rows[sid]["id"] for sid in by_start] == [len(wire) + 1, len(wire) + 2]
    wire_conns = {r["connection"] for r in wire}
    assert len({r["connection"] for r in rows.values()}) == 1 and not {r["connection"] for r in rows.values()} & wire_conns
    # browser − capture: the log's clock offset, the median browser − wire at the response's end
    # of its matched rows (as its page events are placed)
    ends = [r["browser"]["offsets"]["response_end"] for r in over if r["browser"] and not r["browser"].get("not_sent")
            and r["browser"]["offsets"]["response_end"] is not None]
    off = statistics.median(ends)
    for sid, t in truth.items():
        r, a = rows[sid], solo[sid]
        b = r["browser"]
        assert (r["method"], r["url"]) == (t["method"], t["url"])
        assert b["not_sent"] == ("disk cache" if t["reason"] == "cache" else "failed")
        assert b["cache"] == ("disk" if t["reason"] == "cache" else None)
        assert r["error"] == t["error"]
        assert b["times"]["start"] == pytest.approx(t["start"], abs=1e-6)
        assert r["response_body_decoded_bytes"] == (t["body"] if t["reason"] == "cache" else None)
        assert b["clock_offset"] == pytest.approx(off, abs=1e-9)
        assert r["request_start"] == pytest.approx(t["start"] - off, abs=2e-6)  # (the log's start, on the capture's clock)
        # row for row as the log alone makes it: its own fields the same, its times shifted by the offset
        for k in SAME:
            assert r[k] == a[k], k
        for k in TIMES:
            assert (r[k] is None) == (a[k] is None), k
            if r[k] is not None:
                assert r[k] == pytest.approx(a[k] - off, abs=2e-6), k
        assert r["phases"]["total"] == pytest.approx(a["phases"]["total"], abs=2e-6)
        assert {k: v for k, v in b.items() if k != "clock_offset"} == a["browser"]  # (offsets, durations null: no wire)
        assert r["sources"] == a["sources"]
        assert all(r[k] is None for k in ("request_start_packet", "request_end_packet", "response_start_packet", "response_end_packet"))
        # as alone: the favicon the page's; the check-in, Chrome's own by the NetLog's initiator and
        # isolation key, background (review 31: it was the page's; tests/test_netlog_page31.py)
        assert r["background"] == a["background"] == (t["reason"] != "cache")


def test_summary_counts_stay_the_capture_s(amazon):
    truth, over, wire = amazon["truth"], amazon["over"], amazon["wire"]
    log = amazon["summ"]["browser"]["logs"][0]
    assert (log["matched"], log["wire_only"], log["unmatched"]) == (len(wire), 0, 0)
    assert (log["not_sent"], log["not_sent_rows"]) == (len(truth), len(truth))
    rows = {r["browser"]["id"]: r["id"] for r in over if r["browser"] and r["browser"].get("not_sent")}
    assert {x["id"]: x["row"] for x in log["not_sent_requests"]} == rows
    alone = json.loads(_run("summary", amazon["nl"], "--json").stdout)["browser"]["logs"][0]
    ids = {r["browser"]["id"]: r["id"] for r in amazon["alone"] if r["browser"].get("not_sent")}
    assert {x["id"]: x["row"] for x in alone["not_sent_requests"]} == ids and alone["not_sent_rows"] == len(truth)


def test_the_requests_table_lists_them(amazon):
    out = _run("requests", amazon["cap"], "--keylog", amazon["keys"], "--netlog", amazon["nl"]).stdout
    lines = {ln.split()[0]: ln for ln in out.splitlines()[2:] if ln.strip()}
    rows = {r["id"]: r for r in amazon["over"]}
    for sid, t in amazon["truth"].items():
        r = next(r for r in rows.values() if r["browser"] and r["browser"]["id"] == sid)
        ln = lines[str(r["id"])]
        assert t["url"] in ln and t["method"] in ln.split()
        assert ("(disk cache)" if t["reason"] == "cache" else "(failed)") in ln


def test_the_waterfall_draws_them(amazon):
    from wirefall.analyzer.waterfall import build
    from wirefall.ui.figures_marks import mark

    an = analyze(str(amazon["cap"]), keylogs=[str(amazon["keys"])])
    overlay(an, str(amazon["nl"]))
    wf = build(an)
    drawn = {r.exchange: r for r in wf.rows}
    for sid, t in amazon["truth"].items():
        e = next(e for e in an.exchanges if e.browser and e.browser["id"] == sid)
        r = drawn[e.id]
        assert (r.url, r.method) == (t["url"], t["method"]) and r.background == (t["reason"] != "cache")  # (the check-in: Chrome's own)
        assert mark(r).endswith("disk cache" if t["reason"] == "cache" else "failed")
        assert r.start == pytest.approx(t["start"] - e.browser["clock_offset"], abs=2e-6)
    # the page's load is still its last response byte, its start the capture's
    wf0 = build(analyze(str(amazon["cap"]), keylogs=[str(amazon["keys"])]))
    assert wf.page_load_time == wf0.page_load_time and wf.page_start == wf0.page_start


def test_the_har_export_has_them_as_the_log_alone_does(amazon, tmp_path):
    over, alone = tmp_path / "over.har", tmp_path / "alone.har"
    _run("export", amazon["cap"], "--keylog", amazon["keys"], "--netlog", amazon["nl"], "-o", over)
    _run("export", amazon["nl"], "-o", alone)
    o, a = (json.loads(p.read_text())["log"]["entries"] for p in (over, alone))
    wire = json.loads(_run("requests", amazon["cap"], "--keylog", amazon["keys"], "--json").stdout)
    assert len(o) == len(wire) + len(amazon["truth"])
    rows = {r["id"]: r for r in amazon["over"]}
    for sid, t in amazon["truth"].items():
        r = next(r for r in rows.values() if r["browser"] and r["browser"]["id"] == sid)
        en = next(x for x in o if x["_exchange"] == r["id"])
        al = next(x for x in a if x["request"]["url"] == t["url"] and x.get("_not_sent"))
        assert en["request"]["method"] == t["method"]
        if t["reason"] == "cache":  # the page's favicon; the check-in is Chrome's own: background, no pageref
            assert en["pageref"] == "page_1"
        else:
            assert "pageref" not in en and en["_background"] is True
        assert en["_not_sent"] == al["_not_sent"] == ("disk cache" if t["reason"] == "cache" else "failed")
        if t["reason"] == "cache":  # Chrome's HAR convention for a cache hit
            assert en["_fromCache"] == "disk" and en["response"]["content"]["size"] == t["body"]
        else:
            assert en["_error"] == t["error"] and "_fromCache" not in en
        started = datetime.fromisoformat(en["startedDateTime"].replace("Z", "+00:00"))
        assert started == datetime.fromtimestamp(round(r["request_start"], 6), UTC)
        for k in ("time", "timings", "response", "_priority", "_content_class"):
            assert en.get(k) == al.get(k), k


def test_the_log_over_a_cached_analysis(amazon, tmp_path, monkeypatch):
    """The analysis cache stores the capture's analysis, never an overlay's rows: laid over an
    analysis reopened from the cache the log gives the same rows, and the entry stays the capture's."""
    from wirefall.analyzer.cache import analyze_cached

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cap, keys = str(amazon["cap"]), [str(amazon["keys"])]
    an, hit = analyze_cached(cap, keys)
    assert not hit
    an, hit = analyze_cached(cap, keys)
    assert hit
    overlay(an, str(amazon["nl"]))
    got = {e.browser["id"]: (e.id, e.request_start) for e in an.exchanges if not_sent_of(e.browser)}
    want = {r["browser"]["id"]: (r["id"], r["request_start"]) for r in amazon["over"] if r["browser"] and r["browser"].get("not_sent")}
    assert got == want and len(got) == len(amazon["truth"])
    again, hit = analyze_cached(cap, keys)
    assert hit and len(again.exchanges) == len(amazon["wire"]) and not any(e.browser for e in again.exchanges)


def test_two_logs_of_one_load_give_one_row_each(amazon):
    an = analyze(str(amazon["cap"]), keylogs=[str(amazon["keys"])])
    first = overlay(an, str(amazon["nl"]))
    n = len(an.exchanges)
    second = overlay(an, str(amazon["nl"]))
    assert len(an.exchanges) == n == len(amazon["wire"]) + len(amazon["truth"])
    assert second["matched"] == first["matched"] == len(amazon["wire"]) and second["wire_only"] == first["wire_only"] == 0
    assert [x["row"] for x in second["not_sent_requests"]] == [x["row"] for x in first["not_sent_requests"]]


def test_a_log_of_another_load_gives_no_rows():
    """The amazon NetLog over page-h2: none of its requests matched, no clock offset places it
    (its page events are not placed either), so none of its not-sent requests is a row."""
    _cap, _keys, nl = _amazon()
    an = analyze(str(SAMPLES / "page/page-h2.pcapng"), keylogs=[str(SAMPLES / "page/page-h2.keys")])
    n = len(an.exchanges)
    s = overlay(an, str(nl))
    assert s["matched"] == 0 and s["not_sent"] == 2 and s["not_sent_rows"] == 0
    assert [x["row"] for x in s["not_sent_requests"]] == [None, None] and len(an.exchanges) == n


def test_a_shared_no_network_connection_ties_none_to_the_page(tmp_path):
    """pw-h2's NetLog with its last request (Chrome's own ListAccounts POST, failed after the
    load) made a failed favicon of the page's host: that row goes to a host of the page and is
    the page's, but the connection the not-sent rows share must not tie Chrome's failed look-ups
    before the document to the page (the page's start and its background stay the capture's)."""
    nl = SAMPLES / "page/pw-h2.netlog.json.gz"
    d = json.loads(gzip.decompress(nl.read_bytes()))
    truth = netlog_unsent(nl)
    last = max(truth, key=lambda sid: truth[sid]["start"])
    page_host = "https://127.0.0.1:32807"
    for e in d["events"]:
        p = e.get("params")
        if str(e["source"]["id"]) == last and isinstance(p, dict) and "url" in p:
            p["url"] = f"{page_host}/favicon.ico"
            if "network_isolation_key" in p:  # (the page's own request, as the page's favicon is logged)
                p["initiator"], p["network_isolation_key"] = page_host, "https://127.0.0.1 https://127.0.0.1"
    path = tmp_path / "pw-h2-favicon.netlog.json"
    path.write_text(json.dumps(d))
    from wirefall.analyzer.waterfall import page_of

    an = analyze(str(SAMPLES / "page/pw-h2.pcapng"), keylogs=[str(SAMPLES / "page/pw-h2.keys")])
    p0 = page_of(an)
    overlay(an, str(path))
    p1 = page_of(an)
    rows = {e.browser["id"]: e for e in an.exchanges if not_sent_of(e.browser)}
    assert set(rows) == set(truth)
    assert rows[last].url == f"{page_host}/favicon.ico" and rows[last].id not in p1.background
    doc = min(e.request_start for e in an.exchanges if e.url == f"{page_host}/" and e.request_start is not None)
    before = [sid for sid in truth if rows[sid].request_start < doc]
    assert len(before) == 3  # (update.googleapis.com twice, accounts.google.com: before the navigation)
    assert all(rows[sid].id in p1.background for sid in before)
    assert p1.start == p0.start and p1.end == p0.end


def test_stats_and_completeness_count_them_apart(amazon):
    cap, keys, nl = amazon["cap"], amazon["keys"], amazon["nl"]
    s0 = json.loads(_run("stats", cap, "--keylog", keys, "--json").stdout)
    s1 = json.loads(_run("stats", cap, "--keylog", keys, "--netlog", nl, "--json").stdout)
    assert s1["not_sent_requests"] == len(amazon["truth"]) and s0["not_sent_requests"] == 0
    assert s1["capture"]["requests"] == s0["capture"]["requests"] == len(amazon["wire"])
    assert set(s1["protocols"]) == set(s0["protocols"])
    c0, c1 = s0["completeness"], s1["completeness"]
    assert c1["complete"] == c0["complete"] and c1["joined_midway"] == c0["joined_midway"]  # (its QUIC keep-alive: background)
    assert [i["kind"] for i in c1["issues"]] == [i["kind"] for i in c0["issues"]]


def test_compare_names_them_apart(amazon):
    cap, keys, nl = amazon["cap"], amazon["keys"], amazon["nl"]
    res = json.loads(_run("compare", cap, cap, "--keylog", keys, "--keylog-b", keys, "--netlog", nl, "--json").stdout)
    assert res["comparable"] is True
    # the page's: the favicon; the check-in, Chrome's own (the NetLog's initiator and isolation key), is background
    assert res["a"]["not_sent_requests"] == len(amazon["truth"]) - 1 and res["b"]["not_sent_requests"] == 0
    assert res["page"]["requests"]["a"] == res["page"]["requests"]["b"] == len(amazon["wire"])
    assert res["page"]["connections"]["a"] == res["page"]["connections"]["b"]
    got = {e["url"]: e["reason"] for e in res["only_a"] if e["response"] == "not_sent"}
    want = {t["url"]: "not sent by the browser (from the disk cache)" for t in amazon["truth"].values() if t["reason"] == "cache"}
    assert got == want
    # the check-in: background (page_of's reason, docs/JSON.md), listed apart as not sent
    bg = [e for e in res["background_a"] if e["response"] == "not_sent"]
    assert [e["url"] for e in bg] == [t["url"] for t in amazon["truth"].values() if t["reason"] != "cache"]
    assert bg[0]["reason"].startswith("the browser's own request")
