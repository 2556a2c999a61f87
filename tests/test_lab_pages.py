"""The lab's pages (lab/pages.py), DNS server configuration (lab/dns.py) and the per-load
measurements added with them (lab/measure.py): fast, no root.

Outside truth: the real HAR in shared/captures (read here with json, independently of
lab/pages.py), Python's HTML parser for what the generated page references, dnsmasq itself
answering real DNS queries, and the figures of the papers the built-in pages are modelled on.
The root test that replays the HAR through every protocol is tests/test_lab_replay.py.
"""
from __future__ import annotations

import gzip
import json
import re
import shutil
import socket
import struct
import subprocess
import time
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest

from conftest import ROOT, SHARED
from wirefall.lab import pages
from wirefall.lab.dns import dnsmasq_conf, resolv_conf, valid_name
from wirefall.lab.measure import handshake_rtts, quic_server_flights

HAR = SHARED / "hars" / "webpagetest-amazon.har.gz"


def _har_entries():
    if not HAR.exists():
        pytest.skip("shared/captures/hars/webpagetest-amazon.har.gz not here")
    har = json.loads(gzip.decompress(HAR.read_bytes()))
    first = har["log"]["entries"][0]["pageref"]
    es = sorted((e for e in har["log"]["entries"] if e["pageref"] == first), key=lambda e: e["startedDateTime"])
    return har, es


class _Refs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs: list[tuple[str, str]] = []
        self.classes: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("link", "script", "img") and (a.get("href") or a.get("src")):
            self.refs.append((tag, a.get("href") or a.get("src")))
        if tag == "div" and a.get("class"):
            self.classes.append(a["class"])


# ------------------------------------------------------------------ HAR -> page

def test_har_page_has_the_hars_origins_urls_sizes_and_order():
    _har, es = _har_entries()
    page = pages.from_har(HAR)
    # every distinct URL of the HAR's first page, once; the origins are the HAR's hosts
    first_seen: dict[str, dict] = {}
    for e in es:
        first_seen.setdefault(e["request"]["url"], e)
    assert len(page.resources) == len(first_seen) == 13
    assert page.origins == list(dict.fromkeys(urlsplit(u).hostname for u in first_seen))
    assert len(page.origins) == 4
    # the document first, then the others in the order the HAR started them
    assert page.document.har_url == "https://www.amazon.com/" and page.document.kind == "html"
    assert [r.har_url for r in page.resources[1:]] == [u for u in first_seen if u != "https://www.amazon.com/"]
    for r in page.resources:
        e = first_seen[r.har_url]
        assert r.host == urlsplit(e["request"]["url"]).hostname
        assert r.bytes == e["response"]["bodySize"], r.url
        # the served type is the HAR's (by the extension the generated path was given)
        mime = e["response"]["content"]["mimeType"].split(";")[0]
        if r is not page.document and mime:
            want = {"text/javascript": "application/javascript", "application/x-javascript": "application/javascript"}.get(mime, mime)
            assert r.content_type == want, (r.url, mime)
    # the HAR's initiators: a script started by a script is that script's child; the sprite is the CSS's
    by = {r.har_url: r for r in page.resources}
    for e in es:
        ini = e.get("_initiator")
        r = by[e["request"]["url"]]
        if r is page.document or r.har_url != e["request"]["url"] or first_seen[r.har_url] is not e:
            continue
        p = by.get(ini)
        if p is not None and p.kind in ("css", "js") and p is not r:
            assert r.parent == p.url, r.url
        else:
            assert r.parent == page.document.url, r.url
    kinds = {r.har_url.rsplit("/", 1)[-1][:20]: r.parent for r in page.resources}
    assert any(k.startswith("aui_sprite") for k in kinds)
    assert any(r.kind == "image" and by.get(r.parent and next(x.har_url for x in page.resources if x.url == r.parent)).kind == "css"
               for r in page.resources if r.parent != page.document.url)
    assert "2 non-GET requests replayed as GETs of their response's size" in page.notes


def test_har_site_makes_the_browser_discover_the_hars_order(tmp_path):
    page = pages.from_har(HAR if HAR.exists() else pytest.skip("no HAR"))
    m = pages.write_site(page, tmp_path)
    assert (tmp_path / "page.json").exists() and json.loads((tmp_path / "page.json").read_text())["origins"] == page.origins
    kids = pages.children(page)
    # index.html references exactly the first level, in the HAR's order, by absolute URL
    p = _Refs()
    p.feed((tmp_path / page.document.host / "index.html").read_text())
    refs = [u for _t, u in p.refs if u.startswith("https://")]
    assert refs == [r.url for r in kids[page.document.url]]
    tags = dict((u, t) for t, u in p.refs)
    for r in kids[page.document.url]:
        assert tags[r.url] == {"css": "link", "js": "script", "image": "img"}.get(r.kind, "link")
    # each stylesheet / script references its children (and only them); CSS background rules
    # have their element in the page
    for r in page.resources:
        if r.kind not in ("css", "js"):
            continue
        body = (tmp_path / r.host / r.file).read_text()
        found = re.findall(r"https://[A-Za-z0-9.-]+/[^\"')\s]*", body)
        assert found == [k.url for k in kids.get(r.url, [])], r.url
    for k in pages.css_descendant_images(page):
        assert f"wf-r{page.resources.index(k)}" in p.classes
    # sizes: binary bodies exactly the HAR's; text bodies the HAR's unless their references need more
    for f, r in zip(m["files"], page.resources):
        assert f["url"] == r.url and (tmp_path / r.host / r.file).stat().st_size == f["bytes"]
        if r.kind in ("image", "other", "font"):
            assert f["bytes"] == max(r.bytes, 1), r.url  # an empty body is one byte (docstring)
        elif r is not page.document:
            need = len((pages.css_body if r.kind == "css" else pages.js_body)(
                page, pages.Resource(**{**r.__dict__, "bytes": 0}), __import__("random").Random(0)))
            assert f["bytes"] == max(r.bytes, need), r.url
    # every file a static server can serve: safe characters, no dot segments, a typed extension
    for r in page.resources[1:]:
        assert re.fullmatch(r"/[A-Za-z0-9._~/-]+", r.path) and "/../" not in r.path
        assert pages.served_type(r.path) == r.content_type
    # deterministic: a second write is byte-identical
    m2 = pages.write_site(pages.from_har(HAR), tmp_path / "again")
    assert [f["sha256"] for f in m2["files"]] == [f["sha256"] for f in m["files"]]


def test_local_path_is_safe_and_typed():
    assert pages.local_path("https://a.test/x/y.js?v=1&b=2", "text/javascript") == "/x/y.js_v_1_b_2.js"
    assert pages.local_path("https://a.test/1/batch/OE/", "") == "/1/batch/OE/index.txt"
    assert pages.local_path("https://a.test/..%2F..%2Fetc/passwd", "image/png") == "/.._.._etc/passwd.png"
    assert pages.local_path("https://a.test/p", "text/css") == "/p.css"
    long = pages.local_path("https://a.test/" + "a" * 400 + ".png", "image/png")
    assert len(long.split("/")[-1]) <= pages.MAX_SEGMENT and long.endswith(".png")


def test_hostile_har_is_a_clear_error_or_bounded(tmp_path):
    bad = tmp_path / "bad.har"
    bad.write_text("{not json")
    with pytest.raises(pages.PageError, match="not a HAR"):
        pages.from_har(bad)
    bad.write_text(json.dumps({"log": {"entries": "x"}}))
    with pytest.raises(pages.PageError, match="no log.entries"):
        pages.from_har(bad)
    # many entries, odd initiators (itself, a later entry, garbage): bounded, parents always earlier
    es = [{"request": {"url": "https://www.a.test/", "method": "GET"}, "startedDateTime": "0",
           "response": {"bodySize": 500, "content": {"mimeType": "text/html"}}}]
    for i in range(pages.MAX_ENTRIES + 50):
        es.append({"request": {"url": f"https://h{i % 3}.a.test/s{i}.js", "method": "GET"}, "startedDateTime": f"{i + 1:08d}",
                   "_initiator": f"https://h{(i + 1) % 3}.a.test/s{i + 1}.js" if i % 2 else {"type": "parser", "url": 7},
                   "response": {"bodySize": -1, "content": {"size": 10 ** 12, "mimeType": "text/javascript"}}})
    es.append({"request": {"url": "https://10.0.0.9/x.js", "method": "GET"}, "startedDateTime": "99999999",
               "response": {"bodySize": 5, "content": {"mimeType": "text/javascript"}}})
    bad.write_text(json.dumps({"log": {"entries": es}}))
    page = pages.from_har(bad)
    assert "1 requests to hosts that are not DNS names left out" in page.notes
    assert len(page.resources) == pages.MAX_ENTRIES and any("left out" in n for n in page.notes)
    pos = {r.url: i for i, r in enumerate(page.resources)}
    assert all(pos[r.parent] < i for i, r in enumerate(page.resources[1:], 1))
    assert max(r.bytes for r in page.resources) == pages.MAX_BODY
    many = [{"request": {"url": f"https://h{i}.a.test/", "method": "GET"}, "startedDateTime": f"{i:08d}",
             "response": {"bodySize": 1, "content": {"mimeType": "text/html"}}} for i in range(pages.MAX_ORIGINS + 1)]
    bad.write_text(json.dumps({"log": {"entries": many}}))
    with pytest.raises(pages.PageError, match="origins"):
        pages.from_har(bad)


# ------------------------------------------------------------------ built-in pages

def test_whitepaper_page_has_the_web_metrics_average_page():
    # Google "Web metrics: size and number of resources" (2010, the SPDY whitepaper's initiative):
    # 44.56 GETs and 7.01 hosts per page, 320 KB; 29.39 images 205.99 KB, 7.09 scripts 57.98 KB,
    # 3.22 stylesheets 18.72 KB
    p = pages.whitepaper_page()
    assert len(p.resources) == 44 and len(p.origins) == 7
    by = lambda k: [r for r in p.resources if r.kind == k]  # noqa: E731
    imgs = [r for r in p.resources if r.kind == "image" and "beacon" not in r.path]
    assert len(imgs) == 29 and sum(r.bytes for r in imgs) == 205_990
    assert len(by("js")) == 7 and sum(r.bytes for r in by("js")) == 57_980
    assert len(by("css")) == 3 and sum(r.bytes for r in by("css")) == 18_720
    assert sum(r.bytes for r in p.resources) == 320_000
    # discovered in levels: some only from stylesheets and scripts
    assert {r.parent for r in p.resources[1:]} - {p.document.url}
    pos = {r.url: i for i, r in enumerate(p.resources)}
    assert all(pos[r.parent] < i for i, r in enumerate(p.resources[1:], 1))


def test_jpeg_page_is_real_jpegs_of_the_asked_size(tmp_path):
    p = pages.jpeg_page(5, 12)
    assert len(p.resources) == 6 and p.origins == ["www.jpeg.lab.test"]
    assert all(r.kind == "image" and r.bytes == 12_000 for r in p.resources[1:])
    if not shutil.which("cjpeg"):
        pytest.skip("cjpeg (libjpeg-turbo-progs) not installed")
    import sys

    sys.path.insert(0, str(ROOT / "scripts" / "lab" / "page"))
    import generate

    m = pages.write_site(p, tmp_path, jpeg=generate._jpeg)
    for f in m["files"][1:]:
        data = (tmp_path / "www.jpeg.lab.test" / f["path"].lstrip("/")).read_bytes()
        assert len(data) == 12_000 and data[:2] == b"\xff\xd8" and data[-2:] == b"\xff\xd9"
        # a real decoder reads it: djpeg (same package) writes the picture
        out = subprocess.run(["djpeg", "-pnm"], input=data, capture_output=True)
        assert out.returncode == 0 and out.stdout.startswith(b"P6"), out.stderr
    p2 = pages.resolve("jpeg:7:3.5")
    assert len(p2.resources) == 8 and p2.resources[1].bytes == 3500
    with pytest.raises(pages.PageError):
        pages.resolve("jpeg:x")
    with pytest.raises(pages.PageError):
        pages.resolve("nosuchpage")


# ------------------------------------------------------------------ DNS

def test_dnsmasq_conf_names_and_addresses():
    c = dnsmasq_conf({"www.a.test": "10.77.0.2", "img.a.test": "10.77.0.101"}, log="/tmp/x.log")
    lines = c.splitlines()
    assert "host-record=www.a.test,10.77.0.2" in lines and "host-record=img.a.test,10.77.0.101" in lines
    assert "no-resolv" in lines and "listen-address=10.77.0.53" in lines and "local=/img.a.test/" in lines
    assert resolv_conf().startswith("nameserver 10.77.0.53\n")
    assert not valid_name("10.0.0.1") and not valid_name("a..b") and valid_name("1c5c.c0b1.us-east-1.token.awswaf.com")
    with pytest.raises(ValueError):
        dnsmasq_conf({"bad name": "10.0.0.1"})


def _query(name: str, qtype: int, qid: int) -> bytes:
    q = b"".join(bytes([len(x)]) + x.encode() for x in name.split(".")) + b"\x00"
    return struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + q + struct.pack(">HH", qtype, 1)


def test_dnsmasq_answers_the_pages_names_and_nothing_else(tmp_path):
    if not shutil.which("dnsmasq"):
        pytest.skip("dnsmasq not installed (apt-get install dnsmasq-base)")
    from wirefall.dissectors import dns as dnsd

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = tmp_path / "d.conf"
    conf.write_text(dnsmasq_conf({"www.a.test": "10.77.0.2", "img.a.test": "10.77.0.101"}, listen="127.0.0.1",
                                 log=str(tmp_path / "q.log"), port=port))
    p = subprocess.Popen(["dnsmasq", "--keep-in-foreground", f"--conf-file={conf}", f"--pid-file={tmp_path / 'pid'}"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.settimeout(0.5)
        got = {}
        for i, (name, qt) in enumerate([("www.a.test", 1), ("img.a.test", 1), ("img.a.test", 28), ("other.test", 1)]):
            for _ in range(20):  # until dnsmasq listens
                u.sendto(_query(name, qt, 100 + i), ("127.0.0.1", port))
                try:
                    got[(name, qt)] = dnsd.parse(u.recv(512))
                    break
                except TimeoutError:
                    time.sleep(0.1)
        u.close()
    finally:
        p.terminate()
        p.wait(5)
    assert got[("www.a.test", 1)].addresses() == ["10.77.0.2"]
    assert got[("img.a.test", 1)].addresses() == ["10.77.0.101"]
    assert got[("img.a.test", 28)].rcode == "NOERROR" and got[("img.a.test", 28)].addresses() == []  # NODATA: go on with A
    assert got[("other.test", 1)].rcode == "NXDOMAIN"  # nothing is forwarded
    assert "query[A] www.a.test" in (tmp_path / "q.log").read_text()


# ------------------------------------------------------------------ measurements

def _p(ts, c2s, flow, length=100, proto="udp"):
    return {"ts": ts, "c2s": c2s, "len": length, "proto": proto, "flow": flow}


def test_dns_flows_are_not_handshakes_and_quic_flight_is_the_first_full_datagram():
    pk = [_p(0.000, True, (5000, 53)), _p(0.020, False, (5000, 53)),           # DNS: 20 ms, not an RTT
          _p(0.030, True, (6000, 443), 1278), _p(0.030, True, (6000, 443), 1278),
          _p(0.081, False, (6000, 443), 65),                                    # quic-go's ACK-only Initial
          _p(0.140, False, (6000, 443), 1280)]                                  # the ServerHello flight
    src, rtts = handshake_rtts(pk)
    assert src == "quic" and [round(x, 3) for x in rtts] == [51.0]
    assert [round(x, 3) for x in quic_server_flights(pk)] == [110.0]


def test_check_requests_wants_each_url_from_its_own_origins_address():
    from types import SimpleNamespace as NS

    from wirefall.lab.run import check_requests

    origins = {"www.a.test": "10.77.0.2", "img.a.test": "10.77.0.101"}
    conns = [NS(id=1, server=("10.77.0.2", 443)), NS(id=2, server=("10.77.0.101", 443)), NS(id=3, server=("10.77.0.2", 443))]
    ex = [NS(url="https://www.a.test/", status=200, pushed=False, connection=1),
          NS(url="https://img.a.test/x.png", status=200, pushed=False, connection=2),
          NS(url="https://img.a.test/y.png", status=200, pushed=False, connection=3)]  # from www's address
    want = ["https://www.a.test/", "https://img.a.test/x.png", "https://img.a.test/y.png"]
    r = check_requests(NS(exchanges=ex, connections=conns), want, None, origins)
    assert r["status_200"] == 3 and not r["missing"] and r["wrong_address"] == {"https://img.a.test/y.png": "10.77.0.2"}
    assert not r["ok"]
    ex[2].connection = 2
    assert check_requests(NS(exchanges=ex, connections=conns), want, None, origins)["ok"]
    # the same path on another origin is another request
    r = check_requests(NS(exchanges=ex[:2], connections=conns), want + ["https://www.a.test/x.png"], None, origins)
    assert r["missing"] == ["https://img.a.test/y.png", "https://www.a.test/x.png"]
