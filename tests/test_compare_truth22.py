"""compare and the lab's summary say what besides the protocol differs, what a side cannot know,
what the byte rows hold and what the page load time is — checked against outside truth: tshark's
own fields and flags, Chromium's NetLog, the lab manifest's record of the programs it ran, and a
WebPageTest HAR's own page record read straight from its JSON.

1. another server (the responses' ``server``), another client, header sets that differ: warned
   of; the lab's table prints the pairs' warnings and the programs as numbered notes;
2. a HAR side: packets, wire bytes, retransmissions, header bytes are unknown (null, "–"), never
   0 with a "100 %" saving; the HAR page's own _bytesIn/_bytesOut/_connections are rows of their
   own; which page of a two-page HAR, and why `stats` gives it no load time, are said;
3. the byte rows' retransmitted data (tshark's ``tcp.analysis.retransmission`` on page-h2, the
   bytes tshark's ``tcp.seq``/``tcp.len`` show carried twice on the lossy captures) and the
   bytes without it;
4. the page load time is the last response byte (so named); the browser's load event is a row of
   its own, placed as `stats --har` places it.
"""
from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES, SHARED, run_tool
from test_compare_truth19 import _need
from wirefall.analyzer.compare import NO_PACKETS, compare, render_text
from wirefall.analyzer.pipeline import analyze

PAGE = SAMPLES / "page"
LOSSY = SAMPLES / "lossy"
WPT_HAR = SHARED / "hars" / "webpagetest-amazon.har.gz"
AMAZON = SHARED / "pageload-amazon"




def _an(cap: Path, keys: Path | None = None):
    return analyze(str(cap), keylogs=[str(keys)] if keys else None)


def _page(p: str, d: Path = PAGE):
    return _an(d / f"page-{p}.pcapng", d / f"page-{p}.keys")


def tshark_fields(cap: Path, keys: Path | None, flt: str, *fields: str, extra: tuple[str, ...] = ()) -> list[list[str]]:
    opts = ["-o", f"tls.keylog_file:{keys}"] if keys else []
    out = run_tool("tshark", "-r", str(cap), *opts, *extra, "-Y", flt, "-T", "fields", "-E", "separator=\t", "-E", "aggregator=|",
                   *[x for f in fields for x in ("-e", f)])
    return [ln.split("\t") for ln in out.splitlines() if ln.strip()]


def server_port(cap: Path) -> int:
    rows = tshark_fields(cap, None, "tcp.flags.syn == 1 && tcp.flags.ack == 1", "tcp.srcport")
    (port,) = {int(r[0]) for r in rows}
    return port


def netlog_responses(path: Path) -> list[dict[str, str]]:
    """Chromium's own record of the responses' header blocks (``params.headers``, "name: value"),
    each block once."""
    d = json.loads(gzip.decompress(path.read_bytes()))
    seen, out = set(), []
    for ev in d["events"]:
        h = (ev.get("params") or {}).get("headers")
        if isinstance(h, list) and any(isinstance(x, str) and x.startswith(":status") for x in h):
            key = tuple(h)
            if key in seen:
                continue
            seen.add(key)
            out.append({x.split(": ", 1)[0].lower(): x.split(": ", 1)[1] for x in h if ": " in x[1:]})
    return out


def _kinds(res: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for w in res["warning_items"]:
        out.setdefault(w["kind"], []).append(w)
    return out


# ------------------------------------------------------------------ 1. another server, client, header set

def test_server_and_header_sets_h2_nginx_against_h3_aioquic_are_warned_of():
    _need(PAGE / "page-h2.pcapng", PAGE / "page-h3.pcapng", PAGE / "page-h3.netlog.json.gz")
    res = compare(_page("h2"), _page("h3"))
    # the oracle: tshark's HPACK-decoded `server` of page-h2, Chromium's NetLog of page-h3's responses
    h2 = PAGE / "page-h2.pcapng"
    tsrv = Counter(v for r in tshark_fields(h2, PAGE / "page-h2.keys", "http2.headers.server", "http2.headers.server")
                   for v in r[0].split("|"))
    nl = netlog_responses(PAGE / "page-h3.netlog.json.gz")
    assert len(nl) == 13
    nsrv = Counter(r["server"] for r in nl if "server" in r)
    assert res["a"]["server"] == tsrv.most_common(1)[0][0] == "nginx"
    assert res["b"]["server"] == nsrv.most_common(1)[0][0]
    assert res["b"]["servers"] == dict(nsrv)
    k = _kinds(res)
    (w,) = k["server_differs"]
    assert repr(res["a"]["server"]) in w["text"] and repr(res["b"]["server"]) in w["text"]
    # the response fields every h2 response has (tshark) and no h3 response has (NetLog) are named
    port = server_port(h2)
    blocks = [set(r[0].split("|")) for r in tshark_fields(h2, PAGE / "page-h2.keys", f"http2.type == 1 && tcp.srcport == {port}",
                                                           "http2.header.name")]
    every_h2 = set.intersection(*blocks) - {":status"}
    no_h3 = {n for n in every_h2 if not any(n in r for r in nl)}
    assert no_h3 == {"accept-ranges", "date", "last-modified"}
    (w,) = k["response_headers_differ"]
    assert f"{', '.join(sorted(no_h3))} ({len(no_h3)})" in w["text"]
    assert "request_headers_differ" not in k  # (the same Chromium on both sides)
    assert "user_agent_differs" not in k
    text = render_text(res)
    assert "warning: different servers" in text and "warning: different response headers" in text


def test_spdy_node_client_against_chromium_h1_names_client_server_and_request_headers():
    _need(PAGE / "page-h1.pcapng", PAGE / "page-spdy.pcapng")
    spdy = PAGE / "page-spdy.pcapng"
    port = server_port(spdy)
    dec = ("-d", f"tls.port=={port},spdy")
    rows = tshark_fields(spdy, PAGE / "page-spdy.keys", "spdy.header.name", "spdy.type", "spdy.header.name", "spdy.header.value",
                         extra=dec)
    syn = [dict(zip(r[1].split("|"), r[2].split("|"))) for r in rows if r[0].split("|")[0] == "1"]
    reply_names = {n for r in rows if r[0].split("|")[0] == "2" for n in r[1].split("|")}
    assert syn and "server" not in reply_names
    res = compare(_page("h1"), _page("spdy"))
    k = _kinds(res)
    assert res["b"]["user_agent"] == syn[0]["user-agent"]
    assert res["b"]["server"] is None and res["a"]["server"] == "nginx"
    assert "user_agent_differs" in k and "server_differs" in k
    assert "B's responses name no server" in k["server_differs"][0]["text"]
    # the request fields Chromium's h1 requests all send that the Node client's SYN_STREAMs never do
    h1 = PAGE / "page-h1.pcapng"
    h1_req = [set(n.lower() for n in r[0].split("|")) for r in
              tshark_fields(h1, PAGE / "page-h1.keys", "http.request", "http.request.line")]
    assert len(h1_req) == 13
    spdy_names = set().union(*[set(s) for s in syn])
    fields = {ln.split(":", 1)[0] for r in h1_req for ln in r}
    lacking = sorted(n for n in fields if sum(n in {x.split(":", 1)[0] for x in r} for r in h1_req) * 2 >= 13
                     and n not in spdy_names and n not in ("connection", "host"))
    (w,) = k["request_headers_differ"]
    assert f"({len(lacking)})" in w["text"] and all(n in w["text"] for n in lacking)


def test_lab_summary_prints_the_programs_and_every_pairs_warning_as_notes():
    """The whitepaper-style table of the shipped lossy run: spdy's Node client and server and
    h3's aioquic server (the manifest's runs[].client/server) are notes marked in the cells;
    no warning of a pair's comparison is dropped (the lab's own different-ports origin note apart)."""
    from wirefall.lab.run import render_summary, summarise

    m = json.loads((LOSSY / "manifest.json").read_text())
    s = summarise(m["conditions"], m["runs"], m["protocols"], m["baseline"])
    text = render_summary(s)
    lines = text.splitlines()
    notes = {int(ln[1:ln.index("]")]): ln for ln in lines if ln.startswith("[") and "]" in ln}
    by = {r["protocol"]: r for r in m["runs"]}
    head = next(ln for ln in lines if ln.startswith("rtt 30 ms"))
    for p in ("spdy", "h2", "h3"):
        cell = head.split(f"{by[p]['figures']['page_load_time']:.3f} / ")[1]
        marks = [int(x) for x in cell[cell.index("[") + 1:cell.index("]")].split(",")]
        mine = [notes[n] for n in marks]
        assert all(ln.startswith(f"[{n}] {p} vs h1") for n, ln in zip(marks, mine))
        for k in ("client", "server"):
            if by[p][k] != by["h1"][k]:
                assert any(f"another {k}" in ln and by[p][k] in ln and by["h1"][k] in ln for ln in mine), (p, k)
            else:
                assert not any(f"another {k}" in ln for ln in mine), (p, k)
        for w in by[p]["compare"]["warning_items"]:
            if w["kind"] in ("different_origins", "user_agent_differs", "server_differs"):
                continue  # (the lab's ports; the programs' notes say the other two)
            assert any(w["text"] in ln for ln in mine), (p, w["kind"])
    assert by["spdy"]["client"] != by["h1"]["client"] and by["h3"]["server"] != by["h1"]["server"]
    assert len(notes) == len(set(notes)) and set(notes) == set(range(1, len(notes) + 1))


# ------------------------------------------------------------------ 2. a HAR side

# (the ``amazon`` fixture: conftest.py)


def _wpt_pages() -> list[dict]:
    return json.loads(gzip.decompress(WPT_HAR.read_bytes()))["log"]["pages"]


def test_har_side_has_unknowns_not_zeros_and_its_own_page_figures(amazon):
    cap = _an(amazon / "amazon1.cap", amazon / "amazon1.key_log.txt")
    res = compare(cap, analyze(str(WPT_HAR)))
    pg = _wpt_pages()
    assert len(pg) == 2
    first = pg[0]
    page = res["page"]
    for k in NO_PACKETS + ("request_header_bytes_wire", "request_header_bytes_decoded", "response_header_bytes_wire",
                           "response_header_bytes_decoded", "request_header_compression"):
        assert page[k]["b"] is None and page[k]["diff"] is None and page[k]["speedup"] is None, k
    assert page["bytes_s2c"]["a"] > 0 and page["packets_s2c"]["a"] > 0
    # the HAR page's own record, read straight from the JSON
    assert page["log_bytes_in"]["b"] == first["_bytesIn"] == 573908
    assert page["log_bytes_out"]["b"] == first["_bytesOut"]
    assert page["log_connections"]["b"] == first["_connections"]
    assert page["log_bytes_in"]["a"] is None and page["log_bytes_in"]["diff"] is None
    assert page["requests"]["b"] == first["_requests"] and page["connections"]["b"] == first["_connections"]
    k = _kinds(res)
    assert "page 1" in k["log_page"][0]["text"] and first["title"] in k["log_page"][0]["text"]
    assert res["b"]["browser_log"]["page_number"] == 1
    assert "headersSize" in k["browser_log"][0]["text"] and f"_bytesIn {first['_bytesIn']:,}" in k["browser_log"][0]["text"]
    # times: from B's first row; the HAR's own onLoad and _fullyLoaded count from its page's start
    # (the last response of page 1 ends at _fullyLoaded): their difference is the HAR's own
    on, full = first["pageTimings"]["onLoad"], first["_fullyLoaded"]
    assert page["page_load_time"]["b"] - page["load_event"]["b"] == pytest.approx((full - on) / 1000, abs=0.002)
    assert f"onLoad {on:,} ms" in k["log_times"][0]["text"]
    assert "`wirefall stats` on the log alone counts its page's times from the same start" in k["log_times"][0]["text"]
    # `stats` on the HAR alone: the same page times, from the same start (the warning above)
    r = subprocess.run([sys.executable, "-m", "wirefall", "stats", str(WPT_HAR), "--json"], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    st = json.loads(r.stdout)
    assert st["capture"]["page_load_time"] == pytest.approx(page["page_load_time"]["b"], abs=1e-6)
    assert st["browser_events"]["load_event"] == pytest.approx(page["load_event"]["b"], abs=1e-6)
    assert st["capture"]["page_load_time"] == pytest.approx(full / 1000, abs=0.002)  # (WebPageTest's _fullyLoaded)
    text = render_text(res)
    row = next(ln for ln in text.splitlines() if ln.startswith("bytes server→client (wire"))
    assert row.split()[-3:] == ["–", "–", "–"] and "100.0 %" not in row


# ------------------------------------------------------------------ 3. retransmitted bytes

def dup_bytes(cap: Path, server: int) -> tuple[list[int], list[int]]:
    """The bytes tshark's TCP fields show carried twice, per direction [c2s, s2c]: (the segments'
    tcp.len, their frame.len) for each segment whose sequence range the capture had already
    carried whole (keep-alives apart)."""
    rows = tshark_fields(cap, None, "tcp.len > 0", "tcp.stream", "tcp.srcport", "tcp.seq_raw", "tcp.len", "frame.len")
    have: dict[tuple[str, str], list[tuple[int, int]]] = {}
    data, wire = [0, 0], [0, 0]
    for stream, sport, seq, ln, flen in rows:
        a, n = int(seq), int(ln)
        b = a + n
        ivs = have.setdefault((stream, sport), [])
        d = 0 if int(sport) != server else 1
        if any(x <= a and b <= y for x, y in ivs) and not (n == 1 and any(y == b for _x, y in ivs)):
            data[d] += n
            wire[d] += int(flen)
        else:
            ivs.append((a, b))
    return data, wire


def test_retransmission_rows_page_h1_h2_are_tsharks():
    _need(PAGE / "page-h1.pcapng", PAGE / "page-h2.pcapng")
    res = compare(_page("h1"), _page("h2"))
    page = res["page"]
    h2 = PAGE / "page-h2.pcapng"
    rt = tshark_fields(h2, None, "tcp.analysis.retransmission", "tcp.srcport", "tcp.len", "frame.len")
    port = server_port(h2)
    assert [int(r[1]) for r in rt if int(r[0]) == port] == [54272]
    assert page["retransmitted_bytes_s2c"]["b"] == sum(int(r[1]) for r in rt if int(r[0]) == port)
    # the wire bytes of the page's connection (the one with HEADERS), less the retransmitted frame
    streams = {r[0] for r in tshark_fields(h2, PAGE / "page-h2.keys", "http2.type == 1", "tcp.stream")}
    frames = tshark_fields(h2, None, "tcp", "tcp.stream", "tcp.srcport", "frame.len")
    s2c = sum(int(r[2]) for r in frames if r[0] in streams and int(r[1]) == port)
    assert page["bytes_s2c"]["b"] == s2c
    assert page["bytes_s2c_without_retransmissions"]["b"] == s2c - sum(int(r[2]) for r in rt if int(r[0]) == port) == 354505
    # h1: its one retransmission (client→server) is tshark's too
    h1 = PAGE / "page-h1.pcapng"
    rt1 = tshark_fields(h1, None, "tcp.analysis.retransmission", "tcp.dstport", "tcp.len", "frame.len")
    p1 = server_port(h1)
    assert page["retransmitted_bytes_c2s"]["a"] == sum(int(r[1]) for r in rt1 if int(r[0]) == p1) == 526
    assert page["bytes_c2s_without_retransmissions"]["a"] == page["bytes_c2s"]["a"] - sum(int(r[2]) for r in rt1)
    # the like-for-like verdict: h2 sends fewer bytes, not 12.7 % more
    assert page["bytes_s2c"]["speedup"] < 0 < page["bytes_s2c_without_retransmissions"]["speedup"]
    (w,) = _kinds(res)["retransmissions"]
    assert "54,272 server→client" in w["text"]
    text = render_text(res)
    assert any(ln.startswith("  data the capture carried twice server→client") and "54,272" in ln for ln in text.splitlines())


@pytest.mark.parametrize("proto", ["h1", "spdy", "h2"])
def test_retransmitted_bytes_lossy_are_the_bytes_tshark_shows_carried_twice(proto):
    """Under loss before the capture point tshark also marks the segments that fill a hole
    ``tcp.analysis.retransmission`` (they repeat no captured byte) and marks a true duplicate
    "out-of-order" when it comes quickly; the bytes carried twice are counted from tshark's
    sequence numbers."""
    cap = LOSSY / f"page-{proto}.pcapng"
    _need(cap)
    from wirefall.analyzer.compare import page_figures

    fig = page_figures(_an(cap, LOSSY / f"page-{proto}.keys"))
    data, wire = dup_bytes(cap, server_port(cap))
    assert [fig["retransmitted_bytes_c2s"], fig["retransmitted_bytes_s2c"]] == data
    assert fig["bytes_c2s"] - fig["bytes_c2s_without_retransmissions"] == wire[0]
    assert fig["bytes_s2c"] - fig["bytes_s2c_without_retransmissions"] == wire[1]


# ------------------------------------------------------------------ 4. last response byte and the load event

def test_page_load_is_named_and_the_load_event_is_stats_and_webpagetests(amazon):
    from wirefall.analyzer.browserlog import overlay
    from wirefall.analyzer.stats import compute

    a = _an(amazon / "amazon1.cap", amazon / "amazon1.key_log.txt")
    overlay(a, str(WPT_HAR))
    b = _an(amazon / "amazon1.cap", amazon / "amazon1.key_log.txt")
    res = compare(a, b)
    page = res["page"]
    st = compute(a)
    assert page["load_event"]["a"] == pytest.approx(st.browser_events["load_event"][1], abs=1e-9)
    assert page["page_load_time"]["a"] == pytest.approx(st.capture.page_load_time, abs=1e-9)
    assert page["load_event"]["b"] is None and page["load_event"]["diff"] is None
    # WebPageTest's own record of this load: the last response ends _fullyLoaded − onLoad after onload
    first = _wpt_pages()[0]
    gap = (first["_fullyLoaded"] - first["pageTimings"]["onLoad"]) / 1000
    assert page["page_load_time"]["a"] - page["load_event"]["a"] == pytest.approx(gap, abs=0.01)
    assert page["load_event"]["a"] < page["page_load_time"]["a"] - 0.9  # (the post-load beacon)
    text = render_text(res)
    assert any(ln.startswith("page load time: last response byte (s)") for ln in text.splitlines())
    assert any(ln.startswith("browser load event, onload (s)") and f"{page['load_event']['a']:.3f}" in ln
               for ln in text.splitlines())
    # the command line lays --har over A
    b2 = amazon / "amazon1b.cap"
    shutil.copy(amazon / "amazon1.cap", b2)
    r = subprocess.run([sys.executable, "-m", "wirefall", "compare", str(amazon / "amazon1.cap"), str(b2), "--keylog",
                        str(amazon / "amazon1.key_log.txt"), "--har", str(WPT_HAR), "--json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["page"]["load_event"]["a"] == pytest.approx(page["load_event"]["a"], abs=1e-9)
    assert j["page"]["load_event"]["b"] is None and "laid over A only" in r.stderr


def test_no_browser_log_no_load_event_row():
    _need(PAGE / "page-h1.pcapng", PAGE / "page-h2.pcapng")
    res = compare(_page("h1"), _page("h2"))
    assert res["page"]["load_event"] == {"a": None, "b": None, "diff": None, "speedup": None}
    text = render_text(res)
    assert "browser load event" not in text.split("(A − B) / A:")[0]
    assert "not the browser's load event" in text


def test_a_background_connection_without_requests_is_background_in_compare_as_everywhere(amazon):
    """amazon's connection 16 — Chrome's QUIC keep-alive to Google, joined mid-way, PING/ACK
    only — is what every command says it is: compare counted it among the page's "web
    connections without a request" and said 0 background connections (review 22).  Since
    2026-12-05 summary, stats and expert call it "joined mid-way, no request seen: whose it is is
    unknown" (the capture cannot tell it from a page's connection cut from its early requests:
    tests/test_completeness32b.py), and so does compare (``owner_unknown_connections``), neither
    the page's nor background; its bytes are tshark's UDP conversation's."""
    from wirefall.analyzer import completeness as C

    cap = _an(amazon / "amazon1.cap", amazon / "amazon1.key_log.txt")
    res = compare(cap, analyze(str(WPT_HAR)))
    page = res["page"]
    cc = C.compute(cap)
    unk = set(cc.owner_unknown_connections)
    conns = {c.id: c for c in cap.connections}
    quiet = sorted(cid for cid in unk if not any(e.connection == cid for e in cap.exchanges))
    assert [conns[cid].protocol for cid in quiet] == ["quic"] and not cc.background_connections
    c16 = conns[quiet[0]]
    # tshark's own count of that UDP conversation's bytes (frame lengths, both ways)
    rows = tshark_fields(amazon / "amazon1.cap", None, f"udp.port == {c16.client[1]} && udp.port == {c16.server[1]}", "frame.len")
    assert page["background_connections"]["a"] == 0
    assert page["owner_unknown_connections"]["a"] == 1
    assert page["owner_unknown_bytes"]["a"] == sum(int(r[0]) for r in rows) == 533
    web = {e.connection for e in cap.exchanges}
    idle = [c for c in cap.connections if c.id not in web and c.id not in unk and c.protocol not in (None, "dns")]
    assert page["connections_without_requests"]["a"] == len(idle) == 2
    assert page["bytes_without_requests"]["a"] == sum(c.stats[0].bytes + c.stats[1].bytes for c in idle)
