"""HTTP/2 header bytes of a connection the capture joined after its HPACK table was filled:
``decoded`` is the names and values of the fields that can be known, an ``<unknown>`` field
(an entry inserted before the capture) adds nothing — its size is not in the capture — and is
counted apart (``stats``' ``unknown_fields``).  Before: each ``<unknown>`` added 9 bytes, the
length of the placeholder.  Oracle: tshark's HPACK dissection of the same cut capture, which
shows the same fields as ``<unknown>`` and gives each known field's name and value lengths."""
from __future__ import annotations

import json
import sys
from collections import defaultdict

from conftest import SAMPLES, need_tool, run_tool

from wirefall.analyzer.pipeline import analyze

SRC = SAMPLES / "page" / "page-h2c.pcapng"
UNKNOWN = "<unknown>"


def _as_list(x):
    return [] if x is None else x if isinstance(x, list) else [x]


def test_h2_decoded_header_bytes_leave_unknown_fields_out_as_tshark_counts_them(tmp_path):
    need_tool("tshark")
    need_tool("editcap")
    cut = tmp_path / "cut.pcapng"
    run_tool("editcap", "-r", str(SRC), str(cut), "9-33")  # after the first HEADERS: the table partly unknown
    port = run_tool("tshark", "-r", str(SRC), "-Y", "tcp.flags.syn == 1 && tcp.flags.ack == 0",
                    "-T", "fields", "-e", "tcp.dstport").split()[0]
    out = run_tool("tshark", "-r", str(cut), "-d", f"tcp.port=={port},http2", "-Y", "http2.type == 1",
                   "-T", "json", "--no-duplicate-keys", "-J", "tcp http2")
    # per (client port, stream, direction): known name+value bytes and unknown fields, as tshark shows them
    known: dict[tuple, int] = defaultdict(int)
    unknown: dict[tuple, int] = defaultdict(int)
    for p in json.loads(out):
        layers = p["_source"]["layers"]
        request = layers["tcp"]["tcp.dstport"] == port
        cport = layers["tcp"]["tcp.srcport" if request else "tcp.dstport"]
        for h2 in _as_list(layers.get("http2")):
            for s in _as_list(h2.get("http2.stream")):
                if s.get("http2.type") != "1":
                    continue
                key = (int(cport), int(s["http2.streamid"]), request)
                for h in _as_list(s.get("http2.header")):
                    if h["http2.header.name"] == UNKNOWN:
                        unknown[key] += 1
                    else:
                        known[key] += int(h["http2.header.name.length"]) + int(h["http2.header.value.length"])
    assert sum(unknown.values()) > 10  # the cut makes the case: a table partly filled before it

    an = analyze(str(cut), keylogs=[])
    got_known: dict[tuple, int] = {}
    got_unknown: dict[tuple, int] = {}
    for e in an.exchanges:
        c = an.connections[e.connection]
        cport = c.client[1]
        for request, decoded, headers in ((True, e.request_header_bytes_decoded, e.request_headers),
                                          (False, e.response_header_bytes_decoded, e.response_headers)):
            if headers:
                got_known[cport, e.stream_id, request] = decoded
                got_unknown[cport, e.stream_id, request] = sum(1 for k, v in headers if UNKNOWN in (k, v))
    assert got_known == dict(known)
    assert {k: v for k, v in got_unknown.items() if v} == dict(unknown)

    # and stats counts the same: decoded of the known fields, the unknown ones apart
    st = run_tool(sys.executable, "-m", "wirefall", "stats", str(cut), "--json")
    h = json.loads(st)["protocols"]["h2c"]["headers"]
    for side, request in (("request", True), ("response", False)):
        assert [h[side]["decoded"], h[side]["unknown_fields"]] == [
            sum(v for k, v in known.items() if k[2] == request), sum(v for k, v in unknown.items() if k[2] == request)], side
