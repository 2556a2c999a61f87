"""A HAR written from a browser log keeps the log's header sizes; a log alone has page times.

Review finding (2026-12-04): `wirefall export` of WebPageTest's amazon HAR opened alone wrote
``headersSize: 0`` on every request and response (HAR 1.2: "-1 if the info is not available";
the HAR itself says 682 and 589 for the first entry) and ``_header_bytes_wire`` 0, which read
back as "0 wire bytes, known".  And `wirefall stats` of the HAR alone gave no TTFB and no last
byte at all, where the HAR's own record has them.

Outside truth: the HAR's own JSON, read here with nothing but ``json``: each entry's
``request.headersSize``/``response.headersSize``, the page's ``_fullyLoaded`` (the last
response's end from the page's start), ``pageTimings.onLoad``, and the first entry's
``_ttfb_end`` (WebPageTest's ms from the page's start).
"""
from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest

from conftest import ROOT, shared

WPT = "hars/webpagetest-amazon.har.gz"


def _run(*args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "wirefall", *args], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _page1(src) -> tuple[dict, list[dict]]:
    log = json.loads(gzip.decompress(src.read_bytes()))["log"]
    page = log["pages"][0]
    return page, [e for e in log["entries"] if e.get("pageref") == page["id"]]


def test_export_keeps_the_logs_header_sizes_and_reads_back_unknown(tmp_path):
    src = shared(WPT)
    _page, entries = _page1(src)
    out = tmp_path / "out.har"
    _run("export", str(src), "-o", str(out))
    got = json.loads(out.read_text())["log"]["entries"]
    assert len(got) == len(entries) == 15
    want = sorted((e["request"]["url"], e["request"]["headersSize"], e["response"]["headersSize"]) for e in entries)
    have = sorted((e["request"]["url"], e["request"]["headersSize"], e["response"]["headersSize"]) for e in got)
    assert have == want  # (the browser's figures, as the log gave them: 682 and 589 for the HTML)
    assert all(e["request"]["headersSize"] != 0 for e in got)
    assert all(e["_header_bytes_wire"] == {"request": None, "response": None} for e in got)
    # read back: the wire's header bytes are unknown (null), the log's sizes kept beside them
    back = json.loads(_run("requests", "--json", str(out)))
    back = back if isinstance(back, list) else back["requests"]
    assert len(back) == 15
    for r in back:
        assert r["request_header_bytes_wire"] is None and r["response_header_bytes_wire"] is None
        assert r["sources"]["request_header_bytes_wire"] == "unknown"
    assert sorted((r["url"], r["browser"]["headers_size"]["request"], r["browser"]["headers_size"]["response"]) for r in back) == want


def test_stats_of_a_log_alone_counts_from_its_page_start():
    src = shared(WPT)
    page, entries = _page1(src)
    st = json.loads(_run("stats", "--json", str(src)))
    first = min(entries, key=lambda e: e["_load_start"])
    assert st["capture"]["ttfb"] == pytest.approx(first["_ttfb_end"] / 1000, abs=0.002)  # 144 ms
    assert st["capture"]["page_load_time"] == pytest.approx(page["_fullyLoaded"] / 1000, abs=0.002)  # 3716 ms
    assert st["browser_events"]["load_event"] == pytest.approx(page["pageTimings"]["onLoad"] / 1000, abs=0.002)  # 2701 ms
    text = _run("stats", str(src))
    line = " ".join(ln.strip() for ln in text.split("\n\n", 1)[0].splitlines()[1:])
    assert line.startswith("Page, from its start in the browser log (no packets): TTFB 144.0 ms"), line
    # (WebPageTest's Start Render too, its pageTimings._startRender: report 28; before its TTFB of
    # 144 ms, so marked the browser's own value since review 31)
    assert page["pageTimings"]["_startRender"] < 144
    assert (f"last response byte {page['_fullyLoaded']:.1f} ms; the browser's Start Render (HAR) "
            f"{page['pageTimings']['_startRender']:.1f} ms (before the page's first response byte: the browser's value, not checked), "
            f"Load event (HAR) {page['pageTimings']['onLoad']:.1f} ms") in line


def test_stats_of_a_log_alone_says_unknown_not_zero_for_what_only_the_wire_gives():
    """A HAR has no packets (HAR 1.2 has no field for them): stats printed "0 / 0" packets,
    wire bytes, payload, TLS overhead and retransmissions for each protocol and connection, and
    "0 packets, 0 bytes, 0.000 s" — read as a load that sent nothing.  Now "–" (unknown), and
    the first line says it is a browser log; the header-bytes table (wire sizes unknown) is
    left out.  A capture's stats are unchanged: pw-h2's rows carry tshark's packet count."""
    src = shared(WPT)
    text = _run("stats", str(src))
    first = text.splitlines()[0]
    assert "a browser log, no packets (what only the wire gives is unknown: –)" in first and "0 packets" not in first
    traffic = text.split("Traffic (", 1)[1].split("\n\n", 1)[0].splitlines()[3:]
    assert [ln.split()[0] for ln in traffic] == ["h2", "h3", "all"]
    for ln in traffic:
        cells = ln.split()
        assert cells[4:10] == ["–"] * 6 and "0 / 0" not in ln, ln
    conns = text.split("Connections (", 1)[1].split("\n\n", 1)[0].splitlines()[3:]
    assert len(conns) == 7 and all("0 / 0" not in ln for ln in conns)
    assert "Header bytes" not in text
    # a capture: numbers, as before (tshark's frame count for pw-h2)
    from conftest import SAMPLES, run_tool  # noqa: PLC0415

    cap = SAMPLES / "page" / "pw-h2.pcapng"
    n = int(run_tool("capinfos", "-c", "-M", str(cap)).split()[-1])
    ctext = _run("stats", str(cap), "--keylog", str(SAMPLES / "page" / "pw-h2.keys"))
    assert ctext.splitlines()[0].split(": ", 1)[1].startswith(f"{n:,} packets")
    assert "Header bytes" in ctext


def test_a_log_alone_says_no_packets_once_in_the_status_banner():
    """The TUI's and the web app's status line read "Incomplete: no packets: from a HAR · no
    packets: from a HAR, the browser's own log …": the headline's reason said twice."""
    from wirefall.analyzer.completeness import headline
    from wirefall.analyzer.pipeline import analyze
    from wirefall.ui.explain import banner

    an = analyze(str(shared(WPT)))
    assert headline(an) == "Incomplete: no packets: from a HAR"
    b = banner(an)
    assert b is not None and b.startswith("Incomplete · no packets: from a HAR, the browser's own log")
    assert b.count("no packets") == 1
    text = _run("stats", str(shared(WPT)))
    assert "Connections (TTFB: its first response byte from its own start, its connect start in the browser log)" in text


def test_web_statistics_of_a_log_alone_say_unknown_and_count_from_the_page_start():
    """The web app's Statistics summary of a HAR opened alone read packets 0, bytes 0,
    duration 0.0 ms, retransmissions 0 / 0, times "from the page's first packet", and the last
    response byte as "page load"; its bytes-by-protocol chart drew zero bars.  Now unknown
    (–), from the page's start in the log, "last response byte", TTFB and last byte those of
    `stats --json` (144 / 3716 ms: WebPageTest's own), and the chart says why it is empty."""
    pytest.importorskip("dash")
    from wirefall.ui.web import views
    from wirefall.ui.web.state import WebState

    src = shared(WPT)
    page, _entries = _page1(src)
    st = WebState(use_cache=False)
    try:
        e = st.add_file(str(src), [], name="webpagetest-amazon.har.gz")
        st.wait(e.id, 60)
        assert e.status == "done", e.error
        rows = dict(views.stats_summary(e))
        for k in ("packets", "bytes", "duration", "retransmissions c→s / s→c"):
            assert rows[k] == "– (a browser log: no packets)", (k, rows[k])
        assert rows["TTFB (first response byte, from the page's start in the browser log)"] == "144.0 ms"
        last = "last response byte (from the page's start in the browser log; not the browser's load event)"
        assert rows[last] == f"{page['_fullyLoaded']:.1f} ms"
        assert rows["Load event (HAR)"] == f"{page['pageTimings']['onLoad']:.1f} ms"
        fig = views.bytes_by_protocol_figure(e)
        assert not fig.data and "no packets" in fig.layout.annotations[0].text
        # Connections: started in 1970 (epoch ms from 0.0) with 0 / 0 packets; now from the page's start
        from datetime import datetime

        p0 = datetime.fromisoformat(page["startedDateTime"].replace("Z", "+00:00")).timestamp()
        summ = json.loads(_run("summary", str(src), "--json"))
        want = {c["id"]: round((c["start"] - p0) * 1000, 3) for c in summ["connections"]}
        rows_c = views.connection_rows(e)
        assert {r["id"]: r["start_ms"] for r in rows_c} == pytest.approx(want, abs=0.002)
        assert min(want.values()) >= 0 and all(r["packets"] == r["bytes"] == "–" for r in rows_c)
        assert views.connections_figure(e).layout.xaxis.title.text == "ms from the page's start (a browser log: no packets)"
    finally:
        st.close()


def test_a_hars_blocked_minus_one_is_no_queueing_not_zero():
    """HAR 1.2's timings.blocked -1 means "does not apply": the browser-log phases read "blocked
    (queued) 0.000 ms" (requests --detail, the TUI's and the web app's browser section) and
    requests --json browser.phases.blocked 0.0.  Now null where the HAR says -1 and its own times
    leave no gap; a NetLog's queueing (its own times) keeps its 0."""
    src = shared(WPT)
    _page, entries = _page1(src)
    got = json.loads(_run("requests", "--json", str(src)))
    got = got if isinstance(got, list) else got["requests"]
    by_url = {}
    for r in got:
        by_url.setdefault(r["url"], []).append(r)
    checked = 0
    for en in entries:
        if en["timings"].get("blocked", -1) != -1:
            continue
        r = by_url[en["request"]["url"]].pop(0)
        t = r["browser"]["times"]
        first = next(x for x in (t["dns_start"], t["connect_start"], t["send_start"]) if x is not None)
        if first == t["start"]:
            assert r["browser"]["phases"]["blocked"] is None, (en["request"]["url"], r["browser"]["phases"])
            checked += 1
    assert checked >= 10
    detail = _run("requests", str(src), "--detail", "4")
    assert "blocked (queued)" not in detail
