"""HTTP/1's "decoded" header size counts what HTTP/2's and HTTP/3's do: the sum of name and value
lengths of the decoded header list, the start line counted as the pseudo-header fields HTTP/2
carries for it (RFC 9113 §8.3.1: ``:method`` and ``:path``, ``:scheme`` and ``:authority`` of an
absolute-form target; ``:status``).  Before, HTTP/1 left its request and status lines out while
HTTP/2 counted ``:method``/``:path``/``:scheme``/``:authority``/``:status``, so the h1-vs-h2
"decoded" rows and HTTP/1's "compression" of `compare` were not like for like.

Checked against tshark: each request's size is the sum over its ``http.request.line`` values
(name and value of each line tshark shows) plus ``:method`` + ``http.request.method`` and
``:path`` + ``http.request.uri``; each response's likewise with ``:status`` +
``http.response.code``; HTTP/2's sizes are unchanged (tshark's ``http2.header.name.length`` +
``http2.header.value.length``)."""
from __future__ import annotations

import json

import pytest

from conftest import SAMPLES, run_tool
from wirefall.analyzer.pipeline import analyze
from wirefall.dissectors.http1 import start_line_fields

PAGE = SAMPLES / "page"


def _fields_size(lines: list[str]) -> int:
    """Name + value lengths of header lines as tshark shows them (``Name: value\\r\\n``)."""
    n = 0
    for line in lines:
        name, sep, value = line.rstrip("\r\n").partition(":")
        assert sep, line
        n += len(name.strip().encode()) + len(value.strip().encode())
    return n


def _tshark_sizes(cap, keys) -> tuple[dict[int, int], dict[int, int]]:
    """(request frame → size, response frame → size) from tshark's HTTP fields."""
    opts = ["-o", f"tls.keylog_file:{keys}"] if keys else []
    out = run_tool("tshark", "-r", str(cap), *opts, "-o", "tcp.reassemble_out_of_order:TRUE", "-Y", "http.request || http.response",
                   "-T", "json", "-e", "frame.number", "-e", "http.request.method", "-e", "http.request.uri", "-e",
                   "http.request.line", "-e", "http.response.code", "-e", "http.response.line")
    req: dict[int, int] = {}
    resp: dict[int, int] = {}
    for pkt in json.loads(out):
        f = pkt["_source"]["layers"]
        num = int(f["frame.number"][0])
        if "http.request.method" in f:
            (method,), (uri,) = f["http.request.method"], f["http.request.uri"]  # (one message per frame here)
            req[num] = _fields_size(f.get("http.request.line", [])) + len(":method") + len(method) + len(":path") + len(uri)
        if "http.response.code" in f:
            (code,) = f["http.response.code"]
            resp[num] = _fields_size(f.get("http.response.line", [])) + len(":status") + len(code)
    return req, resp


@pytest.mark.parametrize("name", ["page-h1", "page-h1c"])
def test_h1_decoded_sizes_are_tsharks_fields_plus_pseudo_headers(name):
    cap = PAGE / f"{name}.pcapng"
    keys = PAGE / f"{name}.keys"
    if not cap.exists():
        pytest.skip(f"{cap.name} missing")
    an = analyze(str(cap), keylogs=[str(keys)] if keys.exists() else None)
    req, resp = _tshark_sizes(cap, keys if keys.exists() else None)
    exs = [e for e in an.exchanges if e.protocol.startswith("http/1")]
    assert len(exs) >= 10 and len(req) == len(exs) and len(resp) == len(exs)
    assert {e.request_end_packet: e.request_header_bytes_decoded for e in exs} == req
    assert {e.response_end_packet: e.response_header_bytes_decoded for e in exs} == resp
    # the start line's share: what HTTP/2 carries as pseudo-headers, e.g. GET /css/main.css
    css = next(e for e in exs if e.path == "/css/main.css")
    fields = sum(len(k) + len(v) for k, v in css.request_headers)
    assert css.request_header_bytes_decoded == fields + len(":methodGET:path/css/main.css")
    assert css.response_header_bytes_decoded == sum(len(k) + len(v) for k, v in css.response_headers) + len(":status200")


def test_h2_decoded_sizes_unchanged():
    """HTTP/2's decoded sizes are tshark's HPACK field lengths, pseudo-headers included (the
    definition HTTP/1 now follows)."""
    cap, keys = PAGE / "page-h2.pcapng", PAGE / "page-h2.keys"
    if not cap.exists():
        pytest.skip(f"{cap.name} missing")
    an = analyze(str(cap), keylogs=[str(keys)])
    out = run_tool("tshark", "-r", str(cap), "-o", f"tls.keylog_file:{keys}", "-Y", "http2.type == 1", "-T", "json", "-e",
                   "tcp.srcport", "-e", "http2.header.name.length", "-e", "http2.header.value.length")
    server_port = an.connections[0].server[1]
    tot = [0, 0]
    for pkt in json.loads(out):
        f = pkt["_source"]["layers"]
        d = int(int(f["tcp.srcport"][0]) == server_port)
        tot[d] += sum(int(x) for x in f.get("http2.header.name.length", [])) + sum(int(x) for x in f.get("http2.header.value.length", []))
    exs = [e for e in an.exchanges if e.protocol == "h2"]
    assert [sum(e.request_header_bytes_decoded for e in exs), sum(e.response_header_bytes_decoded for e in exs)] == tot


@pytest.mark.parametrize("method, target, want", [
    ("GET", "/a?b", [(":method", "GET"), (":path", "/a?b")]),
    ("OPTIONS", "*", [(":method", "OPTIONS"), (":path", "*")]),
    ("GET", "http://user@ex.com:8080?q", [(":method", "GET"), (":scheme", "http"), (":authority", "ex.com:8080"), (":path", "/?q")]),
    ("GET", "https://ex.com/p/q?r", [(":method", "GET"), (":scheme", "https"), (":authority", "ex.com"), (":path", "/p/q?r")]),
    ("CONNECT", "ex.com:443", [(":method", "CONNECT"), (":authority", "ex.com:443")]),
])
def test_start_line_as_pseudo_headers(method, target, want):
    """RFC 9113 §8.3.1 (and §8.5 for CONNECT): the fields an HTTP/2 request would carry for the line."""
    assert start_line_fields(method, target) == want
    assert start_line_fields(status="404") == [(":status", "404")]
