"""Session 20's red-team findings on text and chunking: a chunk size "1_0" (Python's int()
reads 16; tshark: malformed, RFC 9112 chunk-size = 1*HEXDIG), captured text in the SVG legend
(a HAR's method with control characters made the SVG not well-formed XML), and the batch
report's error table (ESC, BEL, U+202E from file names raw)."""
from __future__ import annotations

import json
import xml.dom.minidom

from conftest import SAMPLES


def test_chunk_size_with_underscore_is_bad():
    from wirefall.dissectors.http1 import H1Connection

    def body(size: bytes):
        c = H1Connection()
        c.receive(0, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 1)
        out = c.receive(1, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + size + b"\r\n" + b"a" * 16 + b"\r\n0\r\n\r\n", 2)
        heads = [e for e in out if type(e).__name__ == "H1Head"]
        return heads[0]

    assert body(b"10").error is None
    assert "bad chunk size" in (body(b"1_0").error or "")


def test_svg_legend_escapes_a_hars_method(tmp_path):
    har = json.loads(json.dumps({"log": {"version": "1.2", "creator": {"name": "t", "version": "1"}, "pages": [], "entries": [{
        "startedDateTime": "2026-12-03T10:00:00.000Z", "time": 50,
        "request": {"method": "<B>X\x1b\x07", "url": "https://example.test/a", "httpVersion": "h2", "headers": [], "queryString": [],
                    "cookies": [], "headersSize": -1, "bodySize": 0},
        "response": {"status": 404, "statusText": "", "httpVersion": "h2", "headers": [], "cookies": [], "content": {"size": 0, "mimeType": "text/html"},
                     "redirectURL": "", "headersSize": -1, "bodySize": 0},
        "cache": {}, "timings": {"blocked": -1, "dns": -1, "connect": -1, "send": 1, "wait": 40, "receive": 9}}]}}))
    p = tmp_path / "m.har"
    p.write_text(json.dumps(har))
    from wirefall.ui.cli import main

    out = tmp_path / "m.svg"
    assert main(["export", str(p), "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    xml.dom.minidom.parseString(text)  # well-formed
    assert "\x1b" not in text and "\x07" not in text and "<B>" not in text


def test_batch_report_errors_table_escapes_controls():
    from wirefall.ui.batch_report import _table

    cell = "\x1b]0;x\x07<img src=x>\u202eexe.txt"
    html = _table(["capture"], [[cell]])
    assert "\x1b" not in html and "\x07" not in html and "\u202e" not in html and "<img" not in html


def test_page_origin_from_referer_when_the_document_host_is_unknown():
    """page-multi-late: the document's QUIC connection began before the capture, its
    :authority a QPACK reference from before — '<unknown>'. Its subresources on static.lab.test,
    late.lab.test and fresh.lab.test say 'Referer: https://www.lab.test/', the origin the
    document's own connection's requests name, and were all drawn 'bg' (32 of 90 requests, 'not
    the page's'). The lab's manifest says every one of those hosts served the page: none is
    background now, and the page's origins start with www.lab.test."""
    from wirefall.analyzer.pipeline import analyze
    from wirefall.analyzer.waterfall import page_of

    cap = SAMPLES / "quic" / "page-multi-late.pcapng"
    manifest = json.loads(cap.with_name("page-multi-late.manifest.json").read_text())
    page_hosts = set(manifest["page"])
    by_addr = {v["address"]: k for k, v in manifest["origins"].items()}
    an = analyze(str(cap), keylogs=[str(cap.with_suffix(".keys"))])
    page = page_of(an)
    conns = {c.id: c for c in an.connections}
    ours = [e for e in an.exchanges if by_addr.get(conns[e.connection].server[0]) in page_hosts]
    assert len(ours) == len(an.exchanges) == 90
    assert not [e.url for e in ours if e.id in page.background]
    assert page.origins[0] == "https://www.lab.test"


def test_web_upload_takes_a_pzstd_capture(tmp_path):
    """A capture compressed by pzstd starts with a zstd skippable frame (0x184D2A50): the
    reader takes it (tests/test_capture_hostile20.py); the web app's upload check refused it."""
    import shutil
    import subprocess

    from conftest import need_tool

    need_tool("pzstd")
    from wirefall.ui.web.state import CAPTURE_MAGICS

    src = tmp_path / "c.pcap"
    shutil.copy(SAMPLES / "tcp-port-reuse.pcap", src)
    subprocess.run(["pzstd", "-q", "-f", str(src), "-o", str(tmp_path / "c.pcap.zst")], check=True)
    head = (tmp_path / "c.pcap.zst").read_bytes()[:8]
    assert any(head.startswith(m) for m in CAPTURE_MAGICS)
