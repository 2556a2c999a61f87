"""A valid HAR 1.2 on every capture: each sample capture (with its key log) and each shared
third-party capture (with its key logs) exports a HAR that validates against
tests/data/har-1.2.schema.json (written from the HAR 1.2 specification), with its entries sorted
by startedDateTime, an absolute URL on every entry, every exchange in ``entries`` or
``log._orphans`` exactly once, and pageTimings from the page's milestones.  An orphan response
(the request before the capture, a VM agent's connection joined mid-way) goes to
``log._orphans`` — tshark sees the same response without its request — and the page's timings
(``_lastByte``: its last response byte) do not move when unrelated traffic is merged in."""
from __future__ import annotations

import copy
import datetime as dt
import json
import os
import sys
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES, SHARED, run_tool

from wirefall.analyzer import export as ex
from wirefall.analyzer.pipeline import analyze
from wirefall.analyzer.waterfall import build

jsonschema = pytest.importorskip("jsonschema")
SCHEMA = json.loads((Path(__file__).parent / "data" / "har-1.2.schema.json").read_text())
VALIDATOR = jsonschema.Draft7Validator(SCHEMA)
sys.path.insert(0, str(ROOT / "scripts" / "background"))
import metadata_merge  # noqa: E402


def _captures() -> list[tuple[str, list[str]]]:
    out = []
    for p in sorted(SAMPLES.rglob("*")):
        if p.suffix in (".pcap", ".pcapng"):
            k = p.with_suffix(".keys")
            out.append((str(p.relative_to(ROOT)), [str(k.relative_to(ROOT))] if k.exists() else []))
    if SHARED.exists():
        for p in sorted(SHARED.rglob("*")):
            if p.is_file() and (".pcap" in p.name or p.name.endswith((".cap", ".cap.gz"))):
                keys = sorted(str(k) for k in p.parent.iterdir() if "key" in k.name.lower())
                out.append((str(p), keys))
    return out


CAPTURES = _captures()


def _ts(s: str) -> float:
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


@pytest.mark.parametrize("cap,keys", CAPTURES, ids=[Path(c).name for c, _ in CAPTURES])
def test_har_of_every_capture_is_valid(cap, keys, monkeypatch):
    monkeypatch.delenv("SSLKEYLOGFILE", raising=False)
    path = cap if os.path.isabs(cap) else str(ROOT / cap)
    an = analyze(path, keylogs=[k if os.path.isabs(k) else str(ROOT / k) for k in keys])
    h = json.loads(json.dumps(ex.har(an), allow_nan=False))
    errors = sorted(VALIDATOR.iter_errors(h), key=lambda e: list(e.absolute_path))
    assert not errors, [f"{list(e.absolute_path)}: {e.message[:200]}" for e in errors[:5]]
    log = h["log"]
    entries = log["entries"]
    assert [e["startedDateTime"] for e in entries] == sorted(e["startedDateTime"] for e in entries)
    assert all("://" in e["request"]["url"] for e in entries)
    ids = [e["_exchange"] for e in entries] + [o["_exchange"] for o in log["_orphans"]]
    assert sorted(ids) == sorted(e.id for e in an.exchanges)  # each exchange once, none lost
    wf = build(an)
    page = log["pages"][0]
    pl = wf.page_load_time
    # the browser's load events are not on the wire: -1 (a viewer would draw a value as the load event)
    assert page["pageTimings"]["onLoad"] == -1 and page["pageTimings"]["onContentLoad"] == -1
    assert page["pageTimings"]["_lastByte"] == (round(pl * 1000.0, 3) if pl is not None else -1)
    if len(an.index):
        assert _ts(page["startedDateTime"]) == pytest.approx(wf.page_start, abs=1e-6)
    for e in entries:
        assert ("pageref" in e) == (not e["_background"])
    assert log["_complete"] == log["comment"].startswith("Complete")


def test_schema_is_not_vacuous():
    an = analyze(str(SAMPLES / "page" / "page-h2.pcapng"), keylogs=[str(SAMPLES / "page" / "page-h2.keys")])
    h = ex.har(an)
    VALIDATOR.validate(h)
    for damage in (
        lambda l: l["entries"][0]["request"].__setitem__("url", ""),  # an entry without a URL
        lambda l: l["entries"][0]["request"].__setitem__("url", "/css/main.css"),  # not absolute
        lambda l: l["pages"][0].pop("pageTimings"),
        lambda l: l["entries"][0]["timings"].__setitem__("wait", -1),
        lambda l: l["entries"][0]["response"].__setitem__("status", "200"),
        lambda l: l["entries"][0].__setitem__("startedDateTime", "yesterday"),
        lambda l: l["entries"][0]["request"].pop("headersSize"),
        lambda l: l["entries"][0].__setitem__("notInHar", 1),  # custom fields start with "_"
    ):
        bad = copy.deepcopy(h)
        damage(bad["log"])
        with pytest.raises(jsonschema.ValidationError):
            VALIDATOR.validate(bad)


def test_orphan_response_goes_to_log_orphans(tmp_path):
    page = SAMPLES / "page" / "page-h2.pcapng"
    keys = SAMPLES / "page" / "page-h2.keys"
    out = tmp_path / "orphan.pcapng"
    metadata_merge.make(str(page), str(SAMPLES / "http" / "http1-node.pcap"), str(out), orphan=True)
    # tshark: one HTTP response on an agent's connection that shows no request at all
    rows = run_tool("tshark", "-r", str(out), "-Y", "http && ip.addr == 169.254.169.254", "-T", "fields",
                    "-e", "tcp.stream", "-e", "http.request", "-e", "http.response.code").splitlines()
    with_request = {ln.split("\t")[0] for ln in rows if ln.split("\t")[1]}
    orphan_codes = [int(c) for s, _, c in (ln.split("\t") for ln in rows) if c and s not in with_request]
    assert len(orphan_codes) == 1
    an = analyze(str(out), keylogs=[str(keys)])
    h = ex.har(an)
    VALIDATOR.validate(h)
    orphans = h["log"]["_orphans"]
    assert [o["response"]["status"] for o in orphans] == orphan_codes
    o = orphans[0]
    assert o["request"]["url"] == "" and o["_background"] and "pageref" not in o
    assert "unknown in the capture: url, method" in o["comment"] and "opened before the capture" in o["comment"]
    assert not any(e["request"]["url"] == "" for e in h["log"]["entries"])
    # (the agent's connection, not the page: the page is whole — analyzer.completeness says it apart)
    assert h["log"]["comment"].startswith("Page complete: its 13 requests with every field known, their connections seen from "
                                          "the start; background traffic (not the page's): 1 HTTP/1.1 connection joined mid-way "
                                          "(began before the capture; 1 request with unknown URL)")
    assert h["log"]["_complete"] is False
    # the page's timings and its entries are those of the page sample alone
    base = ex.har(analyze(str(page), keylogs=[str(keys)]))
    assert h["log"]["pages"][0]["pageTimings"] == base["log"]["pages"][0]["pageTimings"]
    assert h["log"]["pages"][0]["startedDateTime"] == base["log"]["pages"][0]["startedDateTime"]
    mine = [e for e in h["log"]["entries"] if not e["_background"]]
    assert [e["request"]["url"] for e in mine] == [e["request"]["url"] for e in base["log"]["entries"]]
    assert len(h["log"]["entries"]) - len(mine) == 3  # the agent's three requests with their URL


def test_path_only_url_completed_from_the_connection(tmp_path):
    """A capture that shows only the path (HTTP/1 without Host, here openssl s_client): the
    request's URL is the path on the host the TLS SNI names (analyzer.authority), the HAR's
    the same; with no SNI (a resumed session), the URL's host is <unknown> and the HAR entry's
    URL the path on the server address, its comment saying so."""
    cap = SAMPLES / "tls" / "tls13_aes128gcm.pcap"
    an = analyze(str(cap), keylogs=[str(cap.with_suffix(".keys"))])
    e = an.exchanges[0]
    c = an.connections[e.connection]
    assert e.path and e.url == f"https://{c.tls.sni}:{c.server[1]}{e.path}" and e.sources["authority"] == "tls_sni"
    h = ex.har(an)
    VALIDATOR.validate(h)
    assert h["log"]["entries"][0]["request"]["url"] == e.url
    cap = SAMPLES / "tls" / "tls13_resumed.pcap"
    an = analyze(str(cap), keylogs=[str(cap.with_suffix(".keys"))])
    e = an.exchanges[0]
    c = an.connections[e.connection]
    assert e.url == f"https://<unknown>{e.path}" and e.sources["authority"] == "unknown"
    h = ex.har(an)
    VALIDATOR.validate(h)
    en = h["log"]["entries"][0]
    assert en["request"]["url"] == f"https://{c.server[0]}:{c.server[1]}{e.path}"
    assert "URL completed from the connection" in en["comment"]


def test_quic_handshake_is_the_ssl_time():
    """A QUIC connection's handshake is its TLS handshake: the HAR's ``ssl`` is that time,
    included in ``connect`` (WebPageTest's HAR of an h3 load: connect 73, ssl 73), never −1
    (which says no TLS was negotiated); a TCP connection's ssl stays the TLS part only."""
    an = analyze(str(SAMPLES / "page" / "page-h3.pcapng"), keylogs=[str(SAMPLES / "page" / "page-h3.keys")])
    entries = ex.har(an)["log"]["entries"]
    first = [e for e in entries if e["timings"]["connect"] > 0]
    assert first and all(e["_protocol"] == "h3" for e in first)
    for e in first:
        assert e["timings"]["ssl"] == e["timings"]["connect"]
    for e in entries:
        if e["timings"]["connect"] < 0:
            assert e["timings"]["ssl"] == -1
    an2 = analyze(str(SAMPLES / "page" / "page-h2.pcapng"), keylogs=[str(SAMPLES / "page" / "page-h2.keys")])
    t = [e["timings"] for e in ex.har(an2)["log"]["entries"] if e["timings"]["connect"] > 0][0]
    assert 0 < t["ssl"] < t["connect"]


def test_http1_status_text_is_the_reason_phrase():
    """HAR's ``statusText`` was "" on every entry, where an HTTP/1.1 response carries its reason
    phrase on the wire ("HTTP/1.1 200 OK": Chrome's HAR of the same load says "OK"); it is the
    final response head's phrase now.  HTTP/2 has none: "" as in Chrome's HAR."""
    an = analyze(str(SAMPLES / "page" / "pw-h1.pcapng"), keylogs=[str(SAMPLES / "page" / "pw-h1.keys")])
    entries = ex.har(an)["log"]["entries"]
    assert len(entries) == 13 and {e["response"]["statusText"] for e in entries} == {"OK"}
    import gzip

    chrome = json.loads(gzip.open(SAMPLES / "page" / "pw-h1.har.gz").read())["log"]["entries"]
    assert {e["response"]["statusText"] for e in chrome} == {"OK"}
    an2 = analyze(str(SAMPLES / "page" / "pw-h2.pcapng"), keylogs=[str(SAMPLES / "page" / "pw-h2.keys")])
    assert {e["response"]["statusText"] for e in ex.har(an2)["log"]["entries"]} == {""}


def test_a_pause_inside_the_handshake_is_connect_not_blocked():
    """pw-h2's first request: Chromium paused 5.7 ms between its TCP handshake and its
    ClientHello. That is the connection's set-up (Chrome's own HAR of the load has no blocked
    time there), so it is in connect, not in blocked, which HAR viewers draw before dns and
    connect; the timings still add up to the entry's time.  Since the waterfall's tls begins
    where the TCP handshake ends (the client's TLS set-up: tests/test_waterfall_dns_handshake.py)
    the pause is in ``ssl`` — as in Chrome's own HAR of this load (Playwright's: ``ssl`` equals
    ``connect``, 62.7 ms) — and ``connect`` − ``ssl`` is the TCP handshake (loopback: < 1 ms)."""
    import gzip

    page = ROOT / "sample_captures/page"
    an = analyze(str(page / "pw-h2.pcapng"), keylogs=[str(page / "pw-h2.keys")])
    first = ex.har(an)["log"]["entries"][0]
    t = first["timings"]
    assert t["blocked"] < 1.0 and t["ssl"] > 5.0 and 0 <= t["connect"] - t["ssl"] < 1.0, t
    assert first["time"] == pytest.approx(sum(v for k, v in t.items() if k != "ssl" and not k.startswith("_") and v > 0), abs=1e-6)
    chrome = json.loads(gzip.decompress((page / "pw-h2.har.gz").read_bytes()))["log"]["entries"][0]["timings"]
    assert chrome["connect"] - chrome["ssl"] < 1.0 and chrome.get("blocked", -1) < 1.0, chrome


@pytest.mark.parametrize("name", ["page-h2", "page-h3"])
def test_priority_is_chromes_name_and_the_wire_object_beside_it(name):
    """``_priority`` is a string as Chrome's HAR writes it (DevTools showed wirefall's object as
    "[object Object]"): the urgency the request's own ``priority`` header states (tshark's
    decrypted header values) in Chromium's mapping (u=0 VeryHigh, 1 High, 2 Medium, 3 Low,
    4 VeryLow); with the NetLog laid over, the browser's own priority (the raw log's last
    priority of the request) in DevTools' names; the wire's object is ``_priority_wire``."""
    import gzip
    import re

    from wirefall.analyzer.browserlog import overlay

    cap, keys = SAMPLES / "page" / f"{name}.pcapng", SAMPLES / "page" / f"{name}.keys"
    log = cap.with_suffix(".netlog.json.gz")
    d = json.loads(gzip.decompress(log.read_bytes()))
    ev = {v: k for k, v in d["constants"]["logEventTypes"].items()}
    want = []  # each request's urgency as sent
    if name == "page-h2":  # tshark's decrypted priority header values ("i" alone: the default urgency 3)
        out = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y", 'http2.header.name == "priority"',
                       "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|", "-e", "http2.header.name",
                       "-e", "http2.header.value")
        for line in out.splitlines():
            hn, hv = line.split("\t")
            want += [int(m.group(1)) if (m := re.search(r"u=(\d)", v)) else 3 for n, v in zip(hn.split("|"), hv.split("|"))
                     if n == "priority"]
    else:  # tshark 4.0 does not decode QPACK: the urgency the browser logged with each request it sent
        want = [e["params"]["quic_priority_urgency"] for e in d["events"]
                if ev.get(e["type"]) == "HTTP_TRANSACTION_QUIC_SEND_REQUEST_HEADERS"]
    names = ("VeryHigh", "High", "Medium", "Low", "VeryLow")
    an = analyze(str(cap), keylogs=[str(keys)])
    har = ex.har(an)
    got = [en for en in har["log"]["entries"]]
    assert len(got) == 13 and all(isinstance(en["_priority_wire"], dict) for en in got)
    assert len(want) == 13 and sorted(en["_priority"] for en in got) == sorted(names[u] for u in want)
    # the browser's own priority, when its NetLog is laid over
    last: dict[int, str] = {}
    for e in d["events"]:
        t, p = ev.get(e["type"]), e.get("params", {})
        if t in ("REQUEST_ALIVE", "URL_REQUEST_SET_PRIORITY") and "priority" in p:
            last[e["source"]["id"]] = p["priority"]
    an2 = analyze(str(cap), keylogs=[str(keys)])
    overlay(an2, str(log))
    dev = {"HIGHEST": "VeryHigh", "MEDIUM": "High", "LOW": "Medium", "LOWEST": "Low", "IDLE": "VeryLow"}
    by_exchange = {en["_exchange"]: en["_priority"] for en in ex.har(an2)["log"]["entries"]}
    for e in an2.exchanges:
        assert by_exchange[e.id] == dev[last[int(e.browser["id"])]], e.url


@pytest.mark.parametrize("name", ["spdy2-plain", "spdy3-plain"])
def test_spdy_status_text_is_the_status_headers_phrase(name):
    """SPDY's status header carries the reason phrase ("200 OK"): statusText was "" on every
    SPDY entry (review 24).  Truth: the server's own log of the headers it sent (Node spdy);
    a pushed stream's ":status: 200" has none."""
    log = [json.loads(ln) for ln in (SAMPLES / "spdy" / f"{name}.server.jsonl").read_text().splitlines() if ln.strip()]
    sent = {}
    for f in log:
        if f["dir"] == "send" and f["frame"] in ("SYN_REPLY", "SYN_STREAM"):
            st = dict(f["headers"]).get(":status") or dict(f["headers"]).get("status")
            sent[f["stream"]] = st.partition(" ")[2]
    an = analyze(str(SAMPLES / "spdy" / f"{name}.pcap"))
    entries = ex.har(an)["log"]["entries"]
    by_stream = {e["_stream_id"]: e for e in entries}
    assert len(entries) == len(by_stream) == len(sent)
    assert {sid: by_stream[sid]["response"]["statusText"] for sid in sent} == sent
    assert {"OK", "Not Found", ""} == set(sent.values())
