"""The HTTP/2 detail tree is Wireshark's: one "HyperText Transfer Protocol 2" node a frame,
``Stream: HEADERS, Stream ID: 1, Length 437, GET /``, the frame header (flag bits, reserved bit,
stream identifier), the type's fields (SETTINGS entries, priority, window increment, error codes,
promised stream) and each header: on every packet of real captures (nghttp2, curl, Node, Chromium
over TLS with its key log, cleartext h2c), the tree's lines are tshark's (``-T pdml``), in order,
and every line tshark shows of these kinds is there.

Before (session 33): one group node ("HyperText Transfer Protocol 2 (3 frames)"), frames as
"HTTP2: SETTINGS[0]", flags as a number, settings in RFC names, wirefall's facts ("window: …",
"header_bytes_wire: …") among Wireshark's fields.  wirefall's own facts are now in a
``[wirefall: …]`` node of their own.  Session 35: each header as tshark shows it — its name and
value lengths, its own field (``:method: GET``, ``content-length: 9``), ``[Unescaped: …]``, its
HPACK representation and index — the block's bytes, ``[Header Length]`` and ``[Header Count]``
(which count a table size update too), the table size update where it stands, a request's
``[Full request URI]``.  Left out of tshark's: body data and its reassembly, PING data, and the
representations of a block continued over CONTINUATION frames."""
from __future__ import annotations


import pytest

from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.detail import packet_detail
from wirefall.analyzer.pipeline import analyze

import pdml
from conftest import SAMPLES

CAPTURES = {
    "page-h2": ("page/page-h2.pcapng", "page/page-h2.keys", None),
    "lossy-h2": ("lossy/page-h2.pcapng", "lossy/page-h2.keys", None),
    "h2-tls": ("http/h2-tls.pcap", "http/h2-tls.keys", None),
    "h2c-nghttp": ("http/h2c-nghttp.pcap", None, "tcp.port==18081,http2"),
    "h2c-curl": ("http/h2c-curl.pcap", None, "tcp.port==18081,http2"),
    "h2c-node": ("http/h2c-node.pcap", None, None),
    "h2c-upgrade": ("http/h2c-upgrade.pcap", None, None),
    "curl-h2-nghttpd": ("tls/curl_h2_nghttpd.pcap", "tls/curl_h2_nghttpd.keys", None),
}
MUST = ("Stream: ", "Length: ", "Type: ", "Flags: ", "Settings - ", "Settings Identifier: ", "Header: ", "Error: ",
        "Weight: ", "Weight real: ", "Header Block Fragment: ", "Header Length: ", "Header Count: ", "Name Length: ",
        "Name: ", "Value Length: ", "Value: ", "Unescaped: ", "Representation: ", "Index: ", "Header table size",
        "Full request URI: ", ":method: ", ":path: ", ":status: ", ":authority: ", ":scheme: ", "content-length: ",
        "content-type: ", "user-agent: ")
MUST_BITS = ("Stream Identifier", "Reserved", "Window Size Increment", "Promised-Stream-ID", "Exclusive", "Stream Dependency",
             "Unused", "End Stream", "End Headers", "Padded", "Priority", "ACK")

CONTINUATION_LEFT_OUT = ("Continuation Header", "Header Length: ", "Header Count: ", "Representation: ", "Index: ",
                         "Header table size")


def _must(label: str) -> bool:
    return label.startswith(MUST) or " = " in label and label.split(" = ", 1)[1].split(":", 1)[0] in MUST_BITS


def _tshark(path: str, keys: str | None, decode: str | None) -> dict[int, list[str]]:
    args = ["-n", "-o", "tcp.reassemble_out_of_order:TRUE", "-r", path, "-Y", "http2"]
    args += ["-o", f"tls.keylog_file:{keys}"] if keys else []
    args += ["-d", decode] if decode else []

    def skip(f, label: str) -> bool:  # (tshark's body reassembly and the body as data: left out)
        return " Body fragments (" in label or (f.get("name") or "").startswith("data")
    def lines(proto) -> list[str]:
        out = [r[0] for r in pdml.field_lines(proto, skip)]
        if out and out[0].startswith("Stream: CONTINUATION"):  # (what wirefall leaves out of a CONTINUATION)
            out = [x for x in out if not x.startswith(CONTINUATION_LEFT_OUT)]
        return out
    return {num: [x for proto in pkt.iter("proto") if proto.get("name") == "http2" for x in lines(proto)]
            for num, pkt in pdml.packets(*args)}


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_h2_tree_is_tsharks(name):
    cap, keys, decode = CAPTURES[name]
    path = str(SAMPLES / cap)
    kpath = str(SAMPLES / keys) if keys else None
    want = _tshark(path, kpath, decode)
    an = analyze(path, keylogs=[kpath] if kpath else [])
    src = PacketSource(path)
    frames = 0
    for n, theirs in want.items():
        ours: list[str] = []
        for top in packet_detail(an, src, n):
            if not top.label.startswith("HyperText Transfer Protocol 2"):
                continue
            for fn in top.children:
                if "[continued: " in fn.label:
                    continue
                frames += 1
                own = {id(y) for w in fn.children if w.label.startswith("[wirefall: ") for y in w.walk()}
                ours += [pdml.label(x.label) for x in fn.walk() if id(x) not in own]
        pdml.in_order(ours, theirs, f"packet {n}")
        pdml.all_there((t for t in theirs if _must(t)), (lb for lb in ours if _must(lb)), f"packet {n}")
    assert frames >= len(want)
