"""A HAR opened alone is drawn from its page's start, with the DNS lookups it records.

Review finding (2026-12-04): opened alone, WebPageTest's amazon HAR read 56 ms early — the
load event at 2645 ms where its onLoad says 2701, the HTML's first byte at 88 ms where
``_ttfb_end`` says 144 — because the zero was the first connect (entry 1's DNS, 2–56 ms from
the page's start, fell before it), and no row had a DNS phase.

Outside truth: the HAR's own JSON, read here with nothing but ``json``: the page's
``startedDateTime`` and ``pageTimings.onLoad``, WebPageTest's page ``_fullyLoaded`` and, of
each entry, ``timings`` and WebPageTest's times in ms from the page's start (``_load_start``
the send, ``_ttfb_end`` the first byte, ``_download_end`` the last, ``_dns_start``/``_dns_end``,
``_connect_start``, ``_ssl_start``/``_ssl_end``, ``_all_start``).  (On the amazon capture of
the same run, tshark: fls-na's DNS query at 2334.8 ms and its SYN at 2450.4 ms from the
first packet, which is ~2 ms after the page's start: WebPageTest's ``_dns_start`` 2338 and
``_connect_start`` 2451, not the lengths of ``timings`` laid back to back before the send.)
"""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES, shared

from wirefall.analyzer.browserlog import open_any
from wirefall.analyzer.waterfall import build

WPT = "hars/webpagetest-amazon.har.gz"
PW = SAMPLES / "page/pw-h2.har.gz"
MS = 0.001  # within 1 ms (the HAR's own resolution)


def _epoch(s: str) -> float:
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def _raw(p: Path) -> dict:
    return json.loads(gzip.decompress(p.read_bytes()))["log"]


def _cli(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "wirefall", *map(str, args)], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=300)
    if p.returncode != 0:
        raise AssertionError(p.stderr)
    return p


def _page1(raw: dict) -> tuple[dict, float, list[dict]]:
    pg = raw["pages"][0]
    return pg, _epoch(pg["startedDateTime"]), [en for en in raw["entries"] if en["pageref"] == pg["id"]]


def _pair(exchanges: list, entries: list[dict], start: float, send) -> list[tuple]:
    """(exchange, entry) by URL, the entry whose send (ms from the page's start) is nearest."""
    by_url: dict[str, list] = {}
    for en in entries:
        by_url.setdefault(en["request"]["url"], []).append(en)
    out = []
    for e in exchanges:
        en = min(by_url[e["url"]], key=lambda x: abs(start + x["_load_start"] / 1000.0 - send(e)))
        by_url[e["url"]].remove(en)
        out.append((e, en))
    return out


def test_wpt_har_alone_times_are_from_the_page_start():
    p = shared(WPT)
    pg, start, mine = _page1(_raw(p))
    an = open_any(str(p))
    assert an.packets == 0
    assert an.start_time == pytest.approx(start, abs=MS)  # the page's startedDateTime, not the first connect (56 ms)
    # `requests --json`: every time from the page's start as WebPageTest has it
    rows = json.loads(_cli("requests", p, "--json").stdout)
    assert len(rows) == 15
    dns_rows = 0
    for e, en in _pair(rows, mine, start, lambda e: e["request_start"]):
        rel = lambda t: (t - start) * 1000.0
        assert rel(e["request_start"]) == pytest.approx(en["_load_start"], abs=1), e["url"]
        assert rel(e["response_start"]) == pytest.approx(en["_ttfb_end"], abs=1), e["url"]
        assert rel(e["response_end"]) == pytest.approx(en["_download_end"], abs=1), e["url"]
        ph = e["phases"]
        assert (e["response_start"] - e["request_end"]) * 1000.0 == pytest.approx(en["_ttfb_ms"], abs=1)
        if en["timings"]["dns"] > 0:  # the DNS the HAR records is a phase of the row, where WebPageTest puts it
            dns_rows += 1
            assert ph["dns"] * 1000.0 == pytest.approx(en["timings"]["dns"], abs=1), e["url"]
            assert (en["_dns_end"] - en["_dns_start"]) == en["timings"]["dns"]
            assert rel(ph["start"]) == pytest.approx(en["_dns_start"], abs=1), e["url"]
            assert rel(ph["start"]) == pytest.approx(en["_all_start"], abs=1), e["url"]
            assert ph["tls"] * 1000.0 == pytest.approx(en["timings"]["ssl"], abs=1), e["url"]
        else:
            assert ph["dns"] is None, e["url"]
        assert rel(ph["end"]) == pytest.approx(en["_download_end"], abs=1), e["url"]
    assert dns_rows == 4  # www.amazon.com/, the challenge host, images-na, fls-na


def test_wpt_har_alone_waterfall_milestones_and_rows():
    """The waterfall of the HAR alone: its zero the page's start, the load event at onLoad,
    the HTML's first byte at entry 1's ``_ttfb_end``, the last byte at ``_fullyLoaded``; the
    rows of a new connection begin with their DNS and connect where WebPageTest has them."""
    p = shared(WPT)
    pg, start, mine = _page1(_raw(p))
    an = open_any(str(p))
    wf = build(an)
    ms = {m.name: (m.time - an.start_time) * 1000.0 for m in wf.milestones}
    assert "first_packet" not in ms
    assert ms["load_event"] == pytest.approx(pg["pageTimings"]["onLoad"], abs=1)  # 2701 (was 2645)
    assert ms["page_load"] == pytest.approx(pg["_fullyLoaded"], abs=1)  # 3716 (was 3660)
    assert ms["html_first_byte"] == pytest.approx(mine[0]["_ttfb_end"], abs=1)  # 144 (was 88)
    assert wf.t0 == pytest.approx(start, abs=MS)
    by_send = {(en["request"]["url"], round((start + en["_load_start"] / 1000.0) * 1000)): en for en in mine}
    seen = 0
    for r in wf.rows:
        en = by_send.pop((r.url, round(r.browser["times"]["send_start"] * 1000)))
        ph = {n: ((a - start) * 1000.0, (b - start) * 1000.0) for n, a, b in r.phases}
        if en["timings"]["dns"] > 0:
            seen += 1
            assert ph["dns"] == pytest.approx((en["_dns_start"], en["_dns_end"]), abs=1), r.url
            assert ph["connect"][0] == pytest.approx(en["_connect_start"], abs=1), r.url
            assert ph["tls"] == pytest.approx((en["_ssl_start"], en["_ssl_end"]), abs=1), r.url
        else:
            assert "dns" not in ph, r.url
        assert (r.start - start) * 1000.0 == pytest.approx(en["_all_start"] if "connect" in ph else en["_load_start"], abs=1), r.url
        assert (r.end - start) * 1000.0 == pytest.approx(en["_download_end"], abs=1), r.url
    assert seen == 4
    # entry 1 (the review's row 1): 147 ms from its DNS to its last byte, WebPageTest's _all_ms
    first = wf.rows[0]
    assert (first.end - first.start) * 1000.0 == pytest.approx(mine[0]["_all_ms"], abs=1)


def test_har_alone_detail_says_it_is_from_the_page_start():
    """The request detail of a HAR alone does not speak of packets it does not have."""
    out = _cli("requests", shared(WPT), "--detail", "1").stdout
    assert "since the first packet" not in out and "[None]" not in out
    assert "ms since the page's start" in out
    assert "DNS lookup                54.000 ms" in out


def test_playwright_har_alone_from_its_page_start():
    """A plain DevTools-style HAR (Playwright's, no WebPageTest fields): its entries as
    written, the zero its page's startedDateTime (28 ms before the first entry), the load
    event and DOMContentLoaded at its pageTimings; its dns 0 makes no DNS phase."""
    raw = _raw(PW)
    pg = raw["pages"][0]
    start = _epoch(pg["startedDateTime"])
    an = open_any(str(PW))
    assert an.start_time == pytest.approx(start, abs=MS)
    wf = build(an)
    ms = {m.name: (m.time - an.start_time) * 1000.0 for m in wf.milestones}
    assert ms["load_event"] == pytest.approx(pg["pageTimings"]["onLoad"], abs=1)
    assert ms["dom_content_loaded"] == pytest.approx(pg["pageTimings"]["onContentLoad"], abs=1)
    firsts = sorted(_epoch(en["startedDateTime"]) for en in raw["entries"])
    assert min(r.start for r in wf.rows) == pytest.approx(firsts[0], abs=MS)
    assert all(n != "dns" for r in wf.rows for n, _a, _b in r.phases)


def test_har_without_pages_starts_at_its_first_entry_dns_included(tmp_path):
    """Without ``log.pages`` the zero is the first entry's startedDateTime, where its DNS
    begins (HAR 1.2: blocked, dns, connect follow the start), and the DNS is the row's first
    phase — not before zero."""
    raw = _raw(PW)
    entries = json.loads(json.dumps(raw["entries"]))
    for en in entries:
        en.pop("pageref", None)
    entries[0]["timings"]["dns"] = 12.5
    har = tmp_path / "nopages.har"
    har.write_text(json.dumps({"log": dict(raw, pages=[], entries=entries)}))
    an = open_any(str(har))
    t0 = _epoch(entries[0]["startedDateTime"])
    assert an.start_time == pytest.approx(t0, abs=MS)
    wf = build(an)
    row = min(wf.rows, key=lambda r: r.start)
    assert row.phases[0][0] == "dns"
    assert (row.phases[0][1] - t0, row.phases[0][2] - t0) == pytest.approx((0.0, 0.0125), abs=1e-6)
    assert all(r.start >= an.start_time - 1e-9 for r in wf.rows)
