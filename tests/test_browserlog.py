"""Browser logs as inputs and overlays (analyzer/browserlog): HAR, Chrome NetLog, qlog.

Outside truth: the logs made by real tools (Chromium's NetLogs next to the lab's page
captures, Playwright/Chromium HARs and aioquic's qlog recorded with their captures by
scripts/browser/, WebPageTest's HAR, the Amazon page load with Chrome's NetLog), tshark on
the captures, and the raw JSON events of the logs read here with nothing but ``json``.
Hostile logs are made by scripts/hostile/browserlog_inputs.py.
"""
from __future__ import annotations

import gzip
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES, need_tool, run_tool, shared

from wirefall.analyzer import completeness as C
from wirefall.analyzer.browserlog import BrowserLogError, kind_of, open_any, overlay, read_log
from wirefall.analyzer.capture import CaptureError
from wirefall.analyzer.pipeline import analyze
from wirefall.analyzer.model import not_sent_of

sys.path.insert(0, str(ROOT / "scripts" / "hostile"))
import browserlog_inputs as H  # noqa: E402

PAGE = SAMPLES / "page"
QUIC = SAMPLES / "quic"

# (capture, key log, browser log) of the same load, made by real tools
NETLOG_LOADS = [
    ("page/page-h1.pcapng", "page/page-h1.keys", "page/page-h1.netlog.json.gz"),
    ("page/page-h2.pcapng", "page/page-h2.keys", "page/page-h2.netlog.json.gz"),
    ("page/page-h3.pcapng", "page/page-h3.keys", "page/page-h3.netlog.json.gz"),
    ("quic/page-h3.pcapng", "quic/page-h3.keys", "quic/page-h3.netlog.json.gz"),
    ("page/pw-h1.pcapng", "page/pw-h1.keys", "page/pw-h1.netlog.json.gz"),
    ("page/pw-h2.pcapng", "page/pw-h2.keys", "page/pw-h2.netlog.json.gz"),
]
ALONE = NETLOG_LOADS + [
    ("page/pw-h1.pcapng", "page/pw-h1.keys", "page/pw-h1.har.gz"),
    ("page/pw-h2.pcapng", "page/pw-h2.keys", "page/pw-h2.har.gz"),
    ("quic/aioquic-qlog.pcap", "quic/aioquic-qlog.keys", "quic/aioquic-qlog.qlog"),
]


def _sent(an) -> list:
    """The capture's exchanges: not the rows a log laid over adds for its requests that never
    reached the network (``browser.not_sent``, since 2026-12-04: tests/test_overlay_notsent28.py)."""
    return [e for e in an.exchanges if not not_sent_of(e.browser)]


def _cli(*args, check=True) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "wirefall", *map(str, args)], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(p.stderr)
    return p


def _raw_netlog(path: Path) -> tuple[dict, list]:
    """The NetLog read with plain json (the test's own reading of the browser's events)."""
    d = json.loads(gzip.decompress(path.read_bytes()))
    return d["constants"], d["events"]


def _netlog_sent(path: Path) -> dict[int, dict]:
    """URL_REQUEST source id -> {url, method, send, status_time} for the requests that sent
    headers, from the raw events (epoch seconds)."""
    c, events = _raw_netlog(path)
    ev = {v: k for k, v in c["logEventTypes"].items()}
    off = c["timeTickOffset"]
    out: dict[int, dict] = {}
    start: dict[int, dict] = {}
    for e in events:
        t = ev.get(e["type"], "")
        sid = e["source"]["id"]
        p = e.get("params", {})
        if t == "URL_REQUEST_START_JOB" and "url" in p:
            start[sid] = {"url": p["url"], "method": p["method"]}
        elif t == "HTTP_TRANSACTION_SEND_REQUEST" and e.get("phase") == 1 and sid in start:  # PHASE_BEGIN
            start[sid]["send_at"] = (int(e["time"]) + off) / 1000.0
        elif t.endswith("SEND_REQUEST_HEADERS") and t.startswith("HTTP_TRANSACTION") and sid in start:
            out[sid] = dict(start[sid], stream=p.get("quic_stream_id"))
        elif t == "HTTP_TRANSACTION_READ_RESPONSE_HEADERS" and sid in out:
            out[sid]["headers_at"] = (int(e["time"]) + off) / 1000.0
            out[sid]["status"] = int(p["headers"][0].split()[1])
    return out


# ------------------------------------------------------------ the overlay on real loads


@pytest.mark.parametrize("cap,keys,log", NETLOG_LOADS, ids=[x[2] for x in NETLOG_LOADS])
def test_netlog_overlay_matches_every_sent_request_with_its_exact_url(cap, keys, log):
    an = analyze(str(SAMPLES / cap), keylogs=[str(SAMPLES / keys)])
    s = overlay(an, str(SAMPLES / log))
    sent = _netlog_sent(SAMPLES / log)
    assert len(sent) == 13 and s["sent"] == 13
    assert s["matched"] == 13 and s["unmatched"] == 0 and s["wire_only"] == 0
    by_id = {e.browser["id"]: e for e in _sent(an)}
    assert set(by_id) == {str(k) for k in sent}
    for sid, want in sent.items():
        e = by_id[str(sid)]
        assert e.url == want["url"] and e.method == want["method"] and e.status == want["status"]
        if want["stream"] is not None:  # HTTP/3: the browser's own stream id
            assert e.stream_id == want["stream"]
    # the wire's requests as tshark sees them: same paths on the same client ports (h1/h2)
    if "h3" not in cap:
        kl = f"tls.keylog_file:{SAMPLES / keys}"
        if "h1" in cap:
            rows = run_tool("tshark", "-r", str(SAMPLES / cap), "-o", kl, "-Y", "http.request", "-T", "fields",
                            "-e", "tcp.srcport", "-e", "http.request.uri").splitlines()
            truth = sorted(tuple(r.split("\t")) for r in rows)
        else:
            rows = run_tool("tshark", "-r", str(SAMPLES / cap), "-o", kl, "-Y", 'http2.header.name == ":path"', "-T", "fields",
                            "-e", "tcp.srcport", "-e", "http2.streamid", "-e", "http2.header.name", "-e", "http2.header.value").splitlines()
            truth = []
            for r in rows:
                port, _sids, names, values = r.split("\t")
                truth += [(port, v) for n, v in zip(names.split(","), values.split(",")) if n == ":path"]
            truth.sort()
        conns = {c.id: c for c in an.connections}
        got = sorted((str(conns[e.connection].client[1]), e.path) for e in by_id.values())
        assert got == truth


def test_netlog_offsets_per_phase_are_browser_minus_wire():
    """response_start offsets = the NetLog's READ_RESPONSE_HEADERS time (raw JSON) minus
    tshark's time of the packet with the response HEADERS, per HTTP/2 stream; the summary
    reports them per phase."""
    cap, keys, log = PAGE / "page-h2.pcapng", PAGE / "page-h2.keys", PAGE / "page-h2.netlog.json.gz"
    rows = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y", 'http2.header.name == ":status"',
                    "-T", "fields", "-e", "frame.time_epoch", "-e", "http2.streamid").splitlines()
    wire = {}
    for r in rows:
        t, sids = r.split("\t")
        for sid in set(sids.split(",")):
            wire.setdefault(int(sid), float(t))
    an = analyze(str(cap), keylogs=[str(keys)])
    s = overlay(an, str(log))
    sent = _netlog_sent(log)
    offs = []
    for e in _sent(an):
        b = e.browser
        # the browser's side is the raw event's time; the wire's the packet of the headers'
        # first byte (tshark shows the frame where its record completes: response_headers_end)
        assert b["times"]["response_start"] == sent[int(b["id"])]["headers_at"]
        assert e.response_headers_end == pytest.approx(wire[e.stream_id], abs=1e-6)
        assert b["offsets"]["response_start"] == pytest.approx(sent[int(b["id"])]["headers_at"] - e.response_start, abs=1e-9)
        offs.append(b["offsets"]["response_start"])
        for k in ("request_start", "request_end", "response_start", "response_end"):
            assert b["offsets"][k] == pytest.approx(b["times"]["send_start" if k == "request_start" else "send_end" if k == "request_end" else k]
                                                    - getattr(e, k), abs=1e-9)
        assert b["durations"]["wait"] == pytest.approx(b["phases"]["wait"] - (e.response_start - e.request_end), abs=1e-9)
    st = s["offsets"]["response_start"]
    assert st["count"] == 13 and st["median"] == pytest.approx(statistics.median(offs))
    assert st["min"] == min(offs) and st["max"] == max(offs)
    # same machine, same clock: the browser saw the response after the wire did, within 50 ms
    assert 0 <= st["median"] < 0.05
    for k in ("request_start", "request_end", "response_end"):
        assert s["offsets"][k]["count"] == 13
    assert s["offsets"]["connect_start"]["count"] == 1  # the request that opened the connection
    # the JSON carries them, documented fields
    run = _cli("requests", cap, "--keylog", keys, "--netlog", log, "--json")
    out = [x for x in json.loads(run.stdout) if not x["browser"].get("not_sent")]  # (the log's not-sent rows: no wire)
    # how the log matched, said on stderr (it was said only in the TUI and the page)
    assert "NetLog page-h2.netlog.json.gz: 13 of 13 requests it sent matched, 0 not in the capture, 0 wire-only" in run.stderr
    # and where the browser and the capture point stand apart: the medians at the send and at the receipt
    med = {k: statistics.median(e.browser["offsets"][k] for e in _sent(an)) for k in ("request_start", "response_end")}
    assert (f"; browser − wire (median): request start {med['request_start'] * 1000:+.3f} ms, "
            f"response end {med['response_end'] * 1000:+.3f} ms") in run.stderr
    assert [x["browser"]["offsets"]["response_start"] for x in out] == pytest.approx(
        [e.browser["offsets"]["response_start"] for e in sorted(_sent(an), key=lambda e: (e.request_start, e.id))])
    assert all(x["sources"]["url"] == "wire" and x["sources"]["priority_name"] == "browser" for x in out)
    summ = json.loads(_cli("summary", cap, "--keylog", keys, "--netlog", log, "--json").stdout)
    assert summ["source"] == "capture" and summ["browser"]["logs"][0]["matched"] == 13


OFFSET_LOADS = NETLOG_LOADS + [
    ("quic/page-h3-late.pcapng", "quic/page-h3-late.keys", "quic/page-h3-late.netlog.json.gz"),
    ("shared:pageload-amazon/amazon1.cap.gz", "shared:pageload-amazon/amazon1.key_log.txt.gz",
     "shared:pageload-amazon/amazon1_netlog.json.gz"),
]


def _sample(p: str) -> Path:
    return shared(p[7:]) if p.startswith("shared:") else SAMPLES / p


@pytest.mark.parametrize("cap,keys,log", OFFSET_LOADS, ids=[Path(x[2]).name for x in OFFSET_LOADS])
def test_offsets_per_phase_on_every_netlog_load(cap, keys, log):
    """On every page load with its NetLog: the browser-minus-wire offset of each matched
    request at request start and response start is the NetLog's raw event time (json)
    minus tshark's time of the packet the wire's moment is in; the summary's statistics per
    phase are those of the requests' offsets; and the clocks agree (same machine: medians
    within 50 ms)."""
    cap_p, keys_p, log_p = _sample(cap), _sample(keys), _sample(log)
    an = analyze(str(cap_p), keylogs=[str(keys_p)])
    s = overlay(an, str(log_p))
    sent = _netlog_sent(log_p)
    times = {int(n): float(t) for n, t in (r.split("\t") for r in run_tool(
        "tshark", "-r", str(cap_p), "-T", "fields", "-e", "frame.number", "-e", "frame.time_epoch").splitlines())}
    assert s["matched"] == len(_sent(an)) > 0
    for e in _sent(an):
        b = e.browser
        raw = sent[int(b["id"])]
        assert b["offsets"]["response_start"] == pytest.approx(raw["headers_at"] - times[e.response_start_packet], abs=1e-6)
        if "send_at" in raw:
            assert b["offsets"]["request_start"] == pytest.approx(raw["send_at"] - times[e.request_start_packet], abs=1e-6)
    for k, st in s["offsets"].items():
        vals = [e.browser["offsets"][k] for e in _sent(an) if e.browser["offsets"].get(k) is not None]
        assert st["count"] == len(vals), k
        if vals:
            assert (st["median"], st["min"], st["max"]) == pytest.approx((statistics.median(vals), min(vals), max(vals)))
    for k in ("request_start", "request_end", "response_start"):
        assert s["offsets"][k]["count"] == s["matched"], k
    # (amazon: a 204 beacon still alive when the NetLog stopped ends where its stream did, since 2026-12-03)
    assert all(e.browser["times"]["response_end"] is not None for e in _sent(an))
    assert s["offsets"]["response_end"]["count"] == s["matched"]
    for k in ("request_start", "request_end", "response_start", "response_end"):
        assert abs(s["offsets"][k]["median"]) < 0.05, (k, s["offsets"][k])


def _netlog_resolver_jobs(path: Path) -> dict[str, list[tuple[float, float]]]:
    """Host name -> [(begin, end)] of the NetLog's host resolver jobs that succeeded (raw json)."""
    c, events = _raw_netlog(path)
    ev = {v: k for k, v in c["logEventTypes"].items()}
    off = c["timeTickOffset"]
    begin: dict[int, tuple[str, float]] = {}
    out: dict[str, list[tuple[float, float]]] = {}
    for e in events:
        if ev.get(e["type"]) != "HOST_RESOLVER_MANAGER_JOB":
            continue
        t, sid, p = (int(e["time"]) + off) / 1000.0, e["source"]["id"], e.get("params", {})
        if e.get("phase") == 1:
            begin[sid] = (p["host"].split("://", 1)[-1].split(":")[0], t)
        elif e.get("phase") == 2 and sid in begin and "net_error" not in p:
            out.setdefault(begin[sid][0], []).append((begin[sid][1], t))
    return out


@pytest.mark.parametrize("cap,keys,log", OFFSET_LOADS, ids=[Path(x[2]).name for x in OFFSET_LOADS])
def test_netlog_dns_is_the_resolver_job_and_no_phase_is_negative(cap, keys, log):
    """The browser's DNS phase of a request that opened its connection is the host resolver
    job its connect job waited for (raw json: a job for the request's host that ended when
    the phase ends, and began no later than the phase); a request bound to a connect job
    begun a moment before it has no negative "blocked"."""
    cap_p, keys_p, log_p = _sample(cap), _sample(keys), _sample(log)
    an = analyze(str(cap_p), keylogs=[str(keys_p)])
    overlay(an, str(log_p))
    jobs = _netlog_resolver_jobs(log_p)
    with_dns = 0
    for e in an.exchanges:
        b = e.browser
        assert all(v is None or v >= 0 for v in b["phases"].values()), (b["url"], b["phases"])
        t = b["times"]
        if t["dns_start"] is None:
            continue
        with_dns += 1
        host = b["url"].split("://", 1)[1].split("/")[0].split(":")[0]
        assert any(end == t["dns_end"] and begin <= t["dns_start"] for begin, end in jobs.get(host, ())), (b["url"], t)
        assert t["dns_end"] <= t["connect_start"]
    if "bg-mixed" in log:  # theme.css opened static.test's connection: its lookup (HTTPS then A) took 29 ms
        theme = next(e for e in an.exchanges if e.url == "https://static.test/css/theme.css")
        assert round(theme.browser["phases"]["dns"] * 1000) == 29
        # logo.png went on the HTTP/2 session another job opened (HTTP_STREAM_JOB_HTTP2_SESSION_AVAILABLE):
        # bound by connection and stream, as the wire's
        logo = next(e for e in an.exchanges if e.url == "https://static.test/img/logo.png")
        assert logo.browser["stream_id"] == logo.stream_id == 5
    if "bg-mixed" in log:  # (the other loads are of 127.0.0.1, amazon's connect jobs found their names in the cache)
        assert with_dns >= 1, with_dns


def test_netlog_overlay_on_a_connection_opened_before_the_capture():
    """page-h3-late: the NetLog holds both loads (39 requests sent), the capture only the
    second (26, streams 52..152): each of those matched by the browser's own stream id with
    its exact URL; the 13 of the first load are not matched, as over before the capture
    began (they once took the second load's exchanges by time, offsets of -1.8 s)."""
    cap, keys, log = (QUIC / "page-h3-late.pcapng", QUIC / "page-h3-late.keys", QUIC / "page-h3-late.netlog.json.gz")
    an = analyze(str(cap), keylogs=[str(keys)])
    s = overlay(an, str(log))
    sent = _netlog_sent(log)
    assert len(sent) == s["sent"] == 39 and s["matched"] == 26 and s["wire_only"] == 0
    assert [u["reason"] for u in s["unmatched_requests"]] == ["it was over before the capture began"] * 13
    t0 = an.start_time
    late = {sid: r for sid, r in sent.items() if r["headers_at"] >= t0}
    assert len(late) == 26 and sorted(r["stream"] for r in late.values()) == list(range(52, 153, 4))
    for e in _sent(an):
        r = late[int(e.browser["id"])]
        assert (e.stream_id, e.url, e.method, e.status) == (r["stream"], r["url"], r["method"], r["status"])
        assert e.sources["match_by"] == "connection+stream" and e.sources["url"] == "browser"


def test_amazon_page_load_netlog_overlay():
    """Chrome's own NetLog of a real page load (HTTP/2 and HTTP/3, IPv4 and IPv6, 10
    connections): every request that reached the network matched on its connection."""
    d = shared("pageload-amazon")
    an = analyze(str(d / "amazon1.cap.gz"), keylogs=[str(d / "amazon1.key_log.txt.gz")])
    s = overlay(an, str(d / "amazon1_netlog.json.gz"))
    log = read_log(str(d / "amazon1_netlog.json.gz"))
    sent = [r for r in log.requests if r.sent]
    assert s["sent"] == len(sent) == 15 and s["matched"] == 15 and s["unmatched"] == 0
    assert s["connections_matched"] == s["connections"] == 10
    for e in _sent(an):
        r = next(x for x in sent if x.id == e.browser["id"])
        assert e.url == r.url and e.method == r.method
        if r.stream_id is not None:
            assert e.stream_id == r.stream_id


def test_har_and_qlog_overlays_on_their_loads():
    for cap, keys, log in ALONE[6:]:
        an = analyze(str(SAMPLES / cap), keylogs=[str(SAMPLES / keys)])
        s = overlay(an, str(SAMPLES / log))
        n = len(an.exchanges)
        assert s["matched"] == s["sent"] == n and s["unmatched"] == 0, (log, s["unmatched_requests"])
        for e in an.exchanges:
            assert e.url == e.browser["url"] and e.browser["source"] == kind_of(str(SAMPLES / log))
        assert s["offsets"]["response_start"]["count"] == n
        if log.endswith(".har.gz"):  # Playwright's HAR: page timings onContentLoad / onLoad
            pages = an.browser["pages"]
            assert len(pages) == 1 and pages[0]["on_load"] >= pages[0]["on_content_load"] > pages[0]["start"]


# -------------------------------------------------------- URLs the capture never saw


def test_overlay_fills_urls_behind_hpack_references_the_capture_never_saw(tmp_path):
    """page-h2c cut after its first HEADERS: the later requests' :authority is an HPACK
    entry the capture lost, their header names <unknown>.  A HAR of the whole load (the
    uncut capture, exported) fills each URL by connection and stream, as tshark reads the
    uncut capture."""
    src = PAGE / "page-h2c.pcapng"
    need_tool("editcap")
    cut = tmp_path / "cut.pcapng"
    subprocess.run(["editcap", "-r", str(src), str(cut), "9-33"], check=True, capture_output=True)
    har = tmp_path / "whole.har"
    _cli("export", src, "-o", har)
    port = run_tool("tshark", "-r", str(src), "-Y", "tcp.flags.syn == 1 && tcp.flags.ack == 0", "-T", "fields",
                    "-e", "tcp.dstport").split()[0]
    rows = run_tool("tshark", "-r", str(src), "-d", f"tcp.port=={port},http2", "-Y", "http2.type == 1 && tcp.dstport == " + port,
                    "-T", "fields", "-e", "http2.headers.authority", "-e", "http2.headers.path").splitlines()
    truth = {}  # path -> the URL tshark reads in the uncut capture (several HEADERS a packet: lists)
    for r in rows:
        auths, paths = r.split("\t")
        for a, pth in zip(auths.split(","), paths.split(",")):
            truth[pth] = f"http://{a}{pth}"
    assert len(truth) == 13
    an = analyze(str(cut))
    before = {e.stream_id: e.url for e in an.exchanges}
    # the capture has paths only: no SNI (cleartext), no DNS answer, so the host is unknown
    assert before and all((u or "").startswith("http://<unknown>") for u in before.values()), before
    assert C.compute(an).unknown_headers == 12
    s = overlay(an, str(har))
    assert s["matched"] == 12 and s["filled"]["url"] == 12
    # (editcap kept packets 9-33: /index.html's exchange was over in the 8 before)
    assert s["unmatched_requests"] == [{"id": "0", "method": "GET", "url": truth["/index.html"],
                                        "reason": "it was over before the capture began"}]
    for e in an.exchanges:
        assert e.url == truth[e.path]
        assert e.sources["url"] == "browser" and e.sources["request_headers"] == "browser"
        assert e.sources["match_by"] == "connection+stream"
        assert not any(k == C.UNKNOWN for k, _ in e.request_headers)
    assert C.compute(an).unknown_headers == 0  # what the capture lacked, the log gave


# ------------------------------------------------------------- logs opened on their own


def _requests(path, *extra):
    return json.loads(_cli("requests", path, *extra, "--json").stdout)


@pytest.mark.parametrize("cap,keys,log", ALONE, ids=[x[2] for x in ALONE])
def test_log_alone_gives_the_requests_of_the_capture(cap, keys, log):
    wire = _requests(SAMPLES / cap, "--keylog", SAMPLES / keys)
    every = _requests(SAMPLES / log)
    # the log's requests that reached the network are the capture's; the others (Chrome's own
    # lookups that failed before sending, a cache hit) are rows of their own, marked not sent
    alone = [e for e in every if not e["browser"].get("not_sent")]
    assert all(e["response_start_packet"] is None and e["request_start_packet"] is None for e in every)
    key = lambda e: (e["method"], e["url"], e["status"])
    assert sorted(map(key, alone)) == sorted(map(key, wire))
    kind = kind_of(str(SAMPLES / log))
    if kind in ("netlog", "qlog") or "h2" in log:  # a NetLog and a qlog know HTTP/2 and HTTP/3 stream ids
        if kind != "har":
            assert sorted((e["url"], e["stream_id"]) for e in alone) == sorted((e["url"], e["stream_id"]) for e in wire)
    by = {key(e): e for e in wire}
    for e in alone:
        w = by[key(e)]
        # the same load on the same clock: the browser's send within 100 ms of the wire's
        assert abs(e["request_start"] - w["request_start"]) < 0.1
        assert e["request_start_packet"] is None and e["browser"]["source"] == kind
        assert e["sources"]["url"] == "browser"
    summ = json.loads(_cli("summary", SAMPLES / log, "--json").stdout)
    assert summ["source"] == kind and summ["packets"] == 0 and summ["format"] == kind
    issue = next(i for i in summ["completeness"]["issues"] if i["kind"] == "no_packets")
    assert issue["count"] == len(every) and f"--{kind}" in issue["next_step"]
    assert not summ["completeness"]["complete"] and summ["completeness"]["headline"].startswith("Incomplete: no packets")
    # statistics and the waterfall read it as they read a capture
    st = json.loads(_cli("stats", SAMPLES / log, "--json").stdout)
    assert st["completeness"]["complete"] is False


def test_webpagetest_har_alone():
    """WebPageTest's HAR of two runs: every entry, with its stream id, comes through with
    --har-page all; by default the first run's alone (tests/test_har_pages.py)."""
    p = shared("hars/webpagetest-amazon.har.gz")
    raw = json.loads(gzip.decompress(p.read_bytes()))["log"]
    out = _requests(p, "--har-page", "all")
    assert len(out) == len(raw["entries"]) == 30
    assert sorted(e["url"] for e in out) == sorted(x["request"]["url"] for x in raw["entries"])
    # WebPageTest's HTTP/2 stream ids and priorities come through
    want = {x["request"]["url"]: x.get("_http2_stream_id") for x in raw["entries"]}
    for e in out:
        if want[e["url"]]:
            assert e["stream_id"] == want[e["url"]]
    an = open_any(str(p), limits={"har_page": 0})
    assert [pg["title"] for pg in an.browser["pages"]] == [pg["title"] for pg in raw["pages"]]
    first = [x for x in raw["entries"] if x["pageref"] == raw["pages"][0]["id"]]
    assert sorted(e["url"] for e in _requests(p)) == sorted(x["request"]["url"] for x in first) and len(first) == 15


def test_round_trip_export_har_then_requests(tmp_path):
    """``wirefall export CAP -o a.har`` then ``wirefall requests a.har --json``: the same
    requests and times, within the HAR's rounding (milliseconds with microsecond digits)."""
    for cap, keys in (("page/page-h2.pcapng", "page/page-h2.keys"), ("page/page-h1.pcapng", "page/page-h1.keys"),
                      ("page/page-h3.pcapng", "page/page-h3.keys"), ("http/h2c-nghttp.pcap", None),
                      ("http/http1-nginx.pcap", None), ("spdy/spdy3-plain.pcap", None)):
        kl = ["--keylog", SAMPLES / keys] if keys else []
        har = tmp_path / (Path(cap).stem + ".har")
        _cli("export", SAMPLES / cap, *kl, "-o", har)
        a = [e for e in _requests(SAMPLES / cap, *kl) if e["url"]]
        b = _requests(har)

        def keyed(lst):
            out = {}
            for e in lst:
                k = (e["method"], e["url"], e["status"], e["protocol"], e["stream_id"])
                n = sum(1 for x in out if x[:5] == k)
                out[k + (n,)] = e
            return out

        ka, kb = keyed(a), keyed(b)
        assert set(ka) == set(kb), cap
        for k, x in ka.items():
            y = kb[k]
            for f in ("request_start", "request_end", "response_start", "response_end"):
                if x[f] is not None:
                    assert y[f] == pytest.approx(x[f], abs=5e-4), (cap, k, f)
            assert y["pushed"] == x["pushed"]


COMPARED = [("page/pw-h2.pcapng", "page/pw-h2.keys", "page/pw-h2.har.gz"),
            ("page/pw-h1.pcapng", "page/pw-h1.keys", "page/pw-h1.har.gz"),
            ("page/page-h2.pcapng", "page/page-h2.keys", "page/page-h2.netlog.json.gz"),
            ("quic/aioquic-qlog.pcap", "quic/aioquic-qlog.keys", "quic/aioquic-qlog.qlog")]


@pytest.mark.parametrize("cap,keys,log", COMPARED, ids=[x[2] for x in COMPARED])
def test_compare_capture_against_its_browser_log(cap, keys, log):
    """``wirefall compare capture.pcap devtools.har`` (or a NetLog, a qlog): every request
    of the capture matched to the log's, as two captures are matched."""
    wire = _requests(SAMPLES / cap, "--keylog", SAMPLES / keys)
    out = json.loads(_cli("compare", SAMPLES / cap, SAMPLES / log, "--keylog", SAMPLES / keys, "--json").stdout)
    assert len(out["matched"]) == len(wire) > 0 and out["only_a"] == [] and out["only_b"] == []
    plt = out["page"]["page_load_time"]
    assert 0 < plt["a"] < 1 and 0 < plt["b"] < 1  # each from its own start, not from epoch 0


# ---------------------------------------------------------------- chosen by content


def test_kind_is_chosen_by_content_not_name_and_compression_is_transparent(tmp_path):
    import zstandard

    har = tmp_path / "capture.pcap"  # a HAR under a capture's name
    har.write_bytes(gzip.decompress((PAGE / "pw-h2.har.gz").read_bytes()))
    nl = tmp_path / "log.har"  # a NetLog under a HAR's name
    nl.write_bytes((PAGE / "page-h2.netlog.json.gz").read_bytes())
    ql = tmp_path / "trace.bin"  # a qlog, zstd-compressed
    ql.write_bytes(zstandard.ZstdCompressor().compress((QUIC / "aioquic-qlog.qlog").read_bytes()))
    assert (kind_of(str(har)), kind_of(str(nl)), kind_of(str(ql))) == ("har", "netlog", "qlog")
    assert kind_of(str(PAGE / "page-h2.pcapng")) is None
    # (the NetLog's 13 sent requests and, since review 24, its 4 that failed before sending — rows too)
    assert [len(open_any(str(p)).exchanges) for p in (har, nl, ql)] == [13, 17, 7]
    other = tmp_path / "other.json"
    other.write_text('{"hello": "world"}')
    with pytest.raises(CaptureError, match="not a capture file"):
        analyze(str(other))
    with pytest.raises(BrowserLogError, match="given as a har but it is a netlog"):
        overlay(open_any(str(har)), str(nl), kind="har")


def test_cut_off_netlog_reads_to_its_last_whole_event(tmp_path):
    """A NetLog cut as a crashed browser leaves it: the events before the cut survive."""
    raw = gzip.decompress((PAGE / "page-h2.netlog.json.gz").read_bytes())
    full = read_log(str(PAGE / "page-h2.netlog.json.gz"))
    ends = raw.rindex(b"]", 0, raw.rindex(b'"polledData"'))  # the events' "]", then polledData
    for name, data in (("no-close.json", raw[:ends]), ("trailing-comma.json", raw[:ends] + b",\n"),
                       ("mid-event.json", raw[: ends - 30])):
        p = tmp_path / name
        p.write_bytes(data)
        log = read_log(str(p))
        assert any("cut off" in w for w in log.warnings), name
        assert [(r.url, r.status) for r in log.requests if r.sent] == [(r.url, r.status) for r in full.requests if r.sent]
    # cut in the middle of the load: the requests it holds are those that started before
    mid = raw.index(b"/img/hero.jpg")
    p = tmp_path / "half.json.gz"
    p.write_bytes(gzip.compress(raw[:mid]))
    log = read_log(str(p))
    urls = [r.url for r in log.requests]
    assert 0 < len(urls) < len(full.requests) and urls == [r.url for r in full.requests][: len(urls)]


# ----------------------------------------------------------------------- hostile logs


def test_hostile_logs_keep_the_good_request(tmp_path):
    for name, make, kind in (("bad.har", H.har_bad_types, "har"), ("bad.json", H.netlog_bad_events, "netlog"),
                             ("cut.json", lambda: H.netlog_cut("inside"), "netlog"),
                             ("cut.json.gz", lambda: gzip.compress(H.netlog_cut("after")), "netlog"),
                             ("bad.sqlog", H.qlog_seq_bad, "qlog")):
        p = tmp_path / name
        p.write_bytes(make())
        an = open_any(str(p))
        assert an.source == kind
        sent = [e for e in an.exchanges if not not_sent_of(e.browser)]  # ("[::1/bad" is a row: not sent)
        assert [(e.method, e.url, e.status) for e in sent] == [("GET", H.GOOD_URL, 200)], name
        e = sent[0]
        assert e.response_end >= e.response_start >= e.request_start
        out = _cli("requests", p, "--json")
        assert H.GOOD_URL in [r["url"] for r in json.loads(out.stdout)] and "Traceback" not in out.stderr
    bad = read_log(str(tmp_path / "bad.har"))
    assert bad.skipped == 9 and any("9 malformed entries" in w for w in bad.warnings)  # ("[::1/bad" is kept: not sent)
    bad = read_log(str(tmp_path / "bad.sqlog"))
    assert any("cut off inside its last record" in w for w in bad.warnings)


def test_hostile_logs_fail_in_one_line(tmp_path):
    cases = (("deep.har", H.har_deep, "nested too deeply"), ("entries.har", H.har_not_entries, "log.entries is not a list"),
             ("const.json", lambda: H.netlog_cut("constants"), "cut off inside its constants"))
    for name, make, msg in cases:
        p = tmp_path / name
        p.write_bytes(make())
        with pytest.raises(BrowserLogError, match=msg):
            open_any(str(p))
        r = _cli("requests", p, check=False)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and msg in r.stderr and "Traceback" not in r.stderr
    # a gzip bomb stops at the size budget, clearly, without inflating it all
    p = tmp_path / "bomb.har.gz"
    p.write_bytes(H.gzip_bomb(64 << 20))
    with pytest.raises(BrowserLogError, match="larger than 16 MiB"):
        analyze(str(p), limits={"browserlog_bytes": 16 << 20})
    # an overlay of a broken log on a capture: one line, exit 2
    r = _cli("requests", PAGE / "page-h2c.pcapng", "--har", tmp_path / "deep.har", check=False)
    assert r.returncode == 2 and "nested too deeply" in r.stderr and "Traceback" not in r.stderr


# ---------------------------------------------------------------- TUI and web, smoke


def test_tui_opens_a_har():
    import asyncio

    from wirefall.ui.tui.app import WirefallApp
    from wirefall.ui.tui.widgets import WaterfallView  # noqa: F401

    async def run():
        app = WirefallApp(str(PAGE / "pw-h2.har.gz"), [])
        async with app.run_test(size=(160, 40)) as pilot:
            for _ in range(300):
                await pilot.pause(0.05)
                if app.loaded or app.load_error:
                    break
            assert app.loaded and app.load_error is None
            assert len(app.wf.rows) == 13 and app.an.source == "har"
            assert all(r.browser is not None for r in app.wf.rows)

    asyncio.run(run())


def test_web_opens_a_netlog():
    from wirefall.ui.web import WebState
    from wirefall.ui.web.app import cb_waterfall, create_app

    st = WebState(use_cache=False)
    try:
        e = st.add_file(str(PAGE / "page-h3.netlog.json.gz"), [], name="page-h3.netlog.json.gz")
        st.wait(e.id)
        assert e.status == "done", e.error
        # (13 sent and 4 that failed before sending: ERR_NAME_NOT_RESOLVED, rows since review 24)
        assert e.analysis.source == "netlog" and len(e.analysis.exchanges) == 17
        _fig, err, count, _why = cb_waterfall(st, e.id, "v", [], [], [], [], "")
        assert err == "" and count == "17 of 17 requests"
        client = create_app(st).server.test_client()
        assert client.get("/").status_code == 200
        # an uploaded HAR (uncompressed JSON) is taken as a capture is
        import base64

        raw = gzip.decompress((PAGE / "pw-h2.har.gz").read_bytes())
        tok = st.stage_upload("capture", "devtools.har", "data:application/json;base64," + base64.b64encode(raw).decode())
        up = st.open_staged(tok["token"])
        st.wait(up.id)
        assert up.status == "done" and up.analysis.source == "har" and len(up.analysis.exchanges) == 13
        from wirefall.ui.web.state import UploadError

        with pytest.raises(UploadError, match="nor a HAR"):
            st.stage_upload("capture", "x.json", "data:application/json;base64," + base64.b64encode(b'{"a": 1}').decode())
    finally:
        st.close()


def test_lab_netlog_reader_uses_the_shared_parser(tmp_path):
    sys.path.insert(0, str(ROOT / "scripts" / "lab"))
    import netlog as lab_netlog

    raw = gzip.decompress((PAGE / "page-h2.netlog.json.gz").read_bytes())
    p = tmp_path / "cut.json"
    p.write_bytes(raw[: raw.rindex(b"]", 0, raw.rindex(b'"polledData"')) - 30])  # cut inside an event: the old reader could not
    reqs = lab_netlog.requests(p, origin="https://127.0.0.1")
    assert len(reqs) == 13 and all(r.status == 200 for r in reqs)


# ------------------------------------------------ the browser's page events as milestones


def _har_page(har: Path, i: int = 0) -> tuple[float, float | None, float | None]:
    """(start, DOMContentLoaded, load) of the HAR's page i, epoch seconds, read from its JSON here."""
    from datetime import datetime

    pg = json.loads(gzip.decompress(har.read_bytes()))["log"]["pages"][i]
    start = datetime.fromisoformat(pg["startedDateTime"].replace("Z", "+00:00")).timestamp()
    pt = pg["pageTimings"]
    ev = [start + pt[k] / 1000.0 if isinstance(pt.get(k), (int, float)) and pt[k] >= 0 else None for k in ("onContentLoad", "onLoad")]
    return start, ev[0], ev[1]


def test_har_page_events_are_milestones_on_the_capture_clock():
    """A HAR's onContentLoad / onLoad — DevTools' blue and red lines, WebPageTest's DOM Content
    Loaded and On Load — were read into summary.browser.pages and drawn nowhere.  Laid over
    its capture they are milestones, put on the capture's clock by the median over the matched
    requests of (the HAR's response end: entry startedDateTime + its timings) − (the wire's response
    end); opened alone, at the HAR's own times; the exported HAR carries them."""
    from datetime import datetime

    from wirefall.analyzer.export import har as har_of
    from wirefall.analyzer.waterfall import build

    cap, keys, har = SAMPLES / "page/pw-h2.pcapng", SAMPLES / "page/pw-h2.keys", SAMPLES / "page/pw-h2.har.gz"
    start, dcl, load = _har_page(har)
    assert dcl is not None and load is not None and start < dcl <= load
    an = analyze(str(cap), keylogs=[str(keys)])
    overlay(an, str(har))
    ends = {}  # (start + the timings, -1 not counted: HAR 1.2's "time"; Playwright's own "time" counts ssl twice)
    for en in json.loads(gzip.decompress(har.read_bytes()))["log"]["entries"]:
        tm = sum(v for k, v in en["timings"].items() if k in ("blocked", "dns", "connect", "send", "wait", "receive") and v >= 0)
        ends[en["request"]["url"]] = datetime.fromisoformat(en["startedDateTime"].replace("Z", "+00:00")).timestamp() + tm / 1000.0
    off = statistics.median(ends[e.url] - e.response_end for e in an.exchanges)
    assert len(an.exchanges) == len(ends) == 13
    wf = build(an)
    got = {m.name: m for m in wf.milestones}
    assert got["dom_content_loaded"].label == "DOMContentLoaded (HAR)" and got["load_event"].label == "Load event (HAR)"
    assert got["dom_content_loaded"].time == pytest.approx(dcl - off, abs=2e-6)
    assert got["load_event"].time == pytest.approx(load - off, abs=2e-6)
    assert got["dom_content_loaded"].packet is None  # (the browser's moment: no packet carried it)
    # this page's scripts ran after the last byte arrived
    assert got["page_load"].time < got["dom_content_loaded"].time <= got["load_event"].time
    pt = har_of(an)["log"]["pages"][0]["pageTimings"]
    assert pt["onContentLoad"] == pytest.approx((got["dom_content_loaded"].time - wf.page_start) * 1000, abs=1e-3)
    assert pt["onLoad"] == pytest.approx((got["load_event"].time - wf.page_start) * 1000, abs=1e-3)

    from wirefall.analyzer import stats

    st = stats.to_dict(stats.compute(an))  # `wirefall stats --json`: from the page's start, as page_load_time
    assert st["browser_events"] == pytest.approx({k: got[k].time - wf.page_start for k in ("dom_content_loaded", "load_event")})
    assert st["capture"]["page_load_time"] == pytest.approx(got["page_load"].time - wf.page_start)
    assert "DOMContentLoaded (HAR) 215.8 ms, Load event (HAR) 243.8 ms" in stats.render_text(stats.compute(an))

    alone = build(open_any(str(har)))  # the HAR alone: its own clock
    got = {m.name: m for m in alone.milestones}
    assert got["dom_content_loaded"].time == pytest.approx(dcl, abs=2e-6) and got["load_event"].time == pytest.approx(load, abs=2e-6)
    # a capture without a log: none
    assert not {"dom_content_loaded", "load_event"} & {m.name for m in build(analyze(str(cap), keylogs=[str(keys)])).milestones}


def test_webpagetest_har_over_amazon_gives_the_load_event_of_the_run_captured():
    """WebPageTest's HAR holds two runs; the amazon capture is of the first (its 15 requests
    match).  Its load event is drawn once, the first run's (it has no onContentLoad), before
    the capture's last response (the late beacon POST): the second run, 17 s later, is
    another load."""
    from wirefall.analyzer.waterfall import build

    har = shared("hars/webpagetest-amazon.har.gz")
    cap = shared("pageload-amazon/amazon1.cap.gz")
    an = analyze(str(cap), keylogs=[str(shared("pageload-amazon/amazon1.key_log.txt.gz"))])
    s = overlay(an, str(har))
    assert s["matched"] == len(an.exchanges) == 15
    start, dcl, load = _har_page(har, 0)
    assert dcl is None and load is not None
    off = statistics.median(e.browser["offsets"]["response_end"] for e in an.exchanges)
    ms = [m for m in build(an).milestones if m.name in ("dom_content_loaded", "load_event")]
    assert [(m.name, m.label) for m in ms] == [("load_event", "Load event (HAR)")]
    assert ms[0].time == pytest.approx(load - off, abs=2e-6)
    assert an.index.ts[0] < ms[0].time < max(e.response_end for e in an.exchanges)
