"""The HTTP/2 detail tree is Wireshark's: one "HyperText Transfer Protocol 2" node a frame,
``Stream: HEADERS, Stream ID: 1, Length 437, GET /``, the frame header (flag bits, reserved bit,
stream identifier), the type's fields (SETTINGS entries, priority, window increment, error codes,
promised stream) and each header: on every packet of real captures (nghttp2, curl, Node, Chromium
over TLS with its key log, cleartext h2c), the tree's lines are tshark's (``-T pdml``), in order,
and every line tshark shows of these kinds is there.

Before (session 33): one group node ("HyperText Transfer Protocol 2 (3 frames)"), frames as
"HTTP2: SETTINGS[0]", flags as a number, settings in RFC names, wirefall's facts ("window: …",
"header_bytes_wire: …") among Wireshark's fields.  wirefall's own facts are now in a
``[wirefall: …]`` node of their own.  Left out of tshark's: the header block's bytes and each
header's representation and index, the block's header count and length (they count a table size
update too), body data and its reassembly, PING data."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.detail import packet_detail
from wirefall.analyzer.pipeline import analyze

from conftest import SAMPLES, run_tool

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
        "Weight: ", "Weight real: ")
MUST_BITS = ("Stream Identifier", "Reserved", "Window Size Increment", "Promised-Stream-ID", "Exclusive", "Stream Dependency",
             "Unused", "End Stream", "End Headers", "Padded", "Priority", "ACK")


def _label(s: str) -> str:
    return s[1:-1] if s.startswith("[") and s.endswith("]") else s


def _must(label: str) -> bool:
    return label.startswith(MUST) or " = " in label and label.split(" = ", 1)[1].split(":", 1)[0] in MUST_BITS


def _tshark(path: str, keys: str | None, decode: str | None) -> dict[int, list[str]]:
    args = ["tshark", "-n", "-o", "tcp.reassemble_out_of_order:TRUE", "-r", path, "-T", "pdml", "-Y", "http2"]
    args += ["-o", f"tls.keylog_file:{keys}"] if keys else []
    args += ["-d", decode] if decode else []
    out: dict[int, list[str]] = {}
    for pkt in ET.fromstring(run_tool(*args)).iter("packet"):
        num = int(next(f for f in pkt.iter("field") if f.get("name") == "frame.number").get("show"))
        rows: list[str] = []

        def walk(el):
            for f in el.findall("field"):
                label = _label(f.get("showname") or f.get("show") or "")
                if f.get("hide") == "yes" or " Body fragments (" in label or (f.get("name") or "").startswith("data"):
                    # (tshark's body reassembly and the body as data: left out)
                    continue
                rows.append(label)
                walk(f)
        for proto in pkt.iter("proto"):
            if proto.get("name") == "http2":
                walk(proto)
        out[num] = rows
    return out


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
                ours += [_label(x.label) for x in fn.walk() if id(x) not in own]
        it = iter(theirs)
        for lb in ours:
            assert any(lb == t for t in it), f"packet {n}: {lb!r} is not tshark's (or not in its order)"
        must = Counter(t for t in theirs if _must(t))
        have = Counter(lb for lb in ours if _must(lb))
        assert must - have == Counter(), f"packet {n}: tshark also shows {list((must - have).elements())[:4]}"
    assert frames >= len(want)
