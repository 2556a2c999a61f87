"""Wireshark habits against tshark 4.0 (review 32): what a Wireshark user reads in the TCP
detail tree (stream index, conversation completeness, window scaling factor, the
conversation's timestamps, SACK edges), the ALPN and extension types of a decrypted TLS 1.3
EncryptedExtensions, ``frame.protocols`` on segments where a TLS record begins, and a bad
filter's message — each compared with what tshark shows for the same packets.
"""
from __future__ import annotations

import gzip
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path

import pytest
import tshark_tap
from tuifix import sync, wait_loaded

from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.detail import packet_detail
from wirefall.analyzer.filter import FilterError, compile_filter
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]
S = ROOT / "sample_captures"
SHARED = ROOT.parent / "shared" / "captures"
pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

CAPS = {
    "lossy-h2": (S / "lossy/page-h2.pcapng", S / "lossy/page-h2.keys"),
    "lossy-h1": (S / "lossy/page-h1.pcapng", S / "lossy/page-h1.keys"),
    "lossy-h3": (S / "lossy/page-h3.pcapng", S / "lossy/page-h3.keys"),
    "h2-tls": (S / "http/h2-tls.pcap", S / "http/h2-tls.keys"),
    "tls13": (SHARED / "tls13/capture.pcap", SHARED / "tls13/keylog.txt"),
    "amazon": (None, None),
}


@cache
def _cap(name: str) -> tuple[Path, Path | None]:
    if name != "amazon":
        cap, keys = CAPS[name]
        if not cap.exists():
            pytest.skip(f"{cap} not present")
        return cap, keys
    src = SHARED / "pageload-amazon"
    if not (src / "amazon1.cap.gz").exists():
        pytest.skip("../shared/captures/pageload-amazon is not present")
    import atexit
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="wirefall-ws32-"))
    atexit.register(shutil.rmtree, d, True)
    (d / "amazon1.cap").write_bytes(gzip.decompress((src / "amazon1.cap.gz").read_bytes()))
    (d / "amazon1.keys").write_bytes(gzip.decompress((src / "amazon1.key_log.txt.gz").read_bytes()))
    return d / "amazon1.cap", d / "amazon1.keys"


@cache
def _an(name: str):
    cap, keys = _cap(name)
    return analyze(str(cap), keylogs=[str(keys)] if keys else [])


def _tshark(name: str, *args: str) -> str:
    cap, keys = _cap(name)
    cmd = ["tshark", "-n", "-r", str(cap), *tshark_tap.decode_args(_an(name)), *args]
    if keys:
        cmd += ["-o", f"tls.keylog_file:{keys}"]
    return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600).stdout


# ------------------------------------------------------------------ the TCP detail tree

TREE_FIELDS = ("tcp.stream", "tcp.completeness", "tcp.window_size_scalefactor", "tcp.time_relative", "tcp.time_delta",
               "tcp.options.sack_le", "tcp.options.sack_re", "tcp.options.sack.count")
SHOWN = ("tcp.completeness", "tcp.window_size_scalefactor", "tcp.ack")  # (their words too: tshark's showname)


def _norm(field: str, v: str) -> str:
    return f"{float(v):.6f}" if field.startswith("tcp.time_") else v


def _tshark_tree(name: str) -> tuple[dict[int, dict[str, list[str]]], dict[int, dict[str, str]]]:
    """packet -> field -> values (``-T fields``), and packet -> field -> its tree line (PDML showname)."""
    out = _tshark(name, "-Y", "tcp", "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|", "-e", "frame.number",
                  *[x for f in TREE_FIELDS for x in ("-e", f)])
    vals = {}
    for line in out.splitlines():
        parts = line.split("\t")
        vals[int(parts[0])] = {f: [_norm(f, x) for x in v.split("|")] if v else [] for f, v in zip(TREE_FIELDS, parts[1:], strict=True)}
    shown: dict[int, dict[str, str]] = {}
    root = ET.fromstring(_tshark(name, "-Y", "tcp", "-T", "pdml"))
    for pkt in root.iter("packet"):
        num = int(next(f for f in pkt.iter("field") if f.get("name") == "frame.number").get("show"))
        shown[num] = {f.get("name"): f.get("showname") for f in pkt.iter("field") if f.get("name") in SHOWN}
    return vals, shown


def _walk(nodes):
    for n in nodes:
        yield from n.walk()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["lossy-h2", "amazon"])
def test_tcp_tree_shows_tsharks_conversation_facts(name):
    """Every TCP packet's tree holds tshark's [Stream index], [Conversation completeness],
    [Window size scaling factor], [Timestamps] and SACK edges with tshark's values, and the
    completeness, scaling factor and relative ACK lines in tshark's words."""
    an = _an(name)
    cap, _ = _cap(name)
    want, shown = _tshark_tree(name)
    assert any(w["tcp.options.sack_le"] for w in want.values()) or name == "amazon"
    src = PacketSource(str(cap))
    wrong = []
    try:
        for n, w in want.items():
            nodes = [x for x in _walk(packet_detail(an, src, n)) if x.abbrev]
            tcp = [x for x in packet_detail(an, src, n) if x.label.startswith("Transmission Control Protocol")]
            assert len(tcp) == 1, n
            got = {f: [_norm(f, str(x.value)) for x in nodes if x.abbrev == f] for f in TREE_FIELDS}
            if got != w:
                wrong.append((n, {f: (w[f], got[f]) for f in TREE_FIELDS if got[f] != w[f]}))
            lines = {x.abbrev: x.label for x in _walk(tcp) if x.abbrev in SHOWN}
            for f, text in shown[n].items():
                # tshark: "[Conversation completeness: Incomplete, DATA (15)]" generated, "Acknowledgment Number: 1    (relative ack number)"
                mine = lines.get(f, "")
                if mine.strip("[]").replace("]: ", ": ") != text.strip("[]"):
                    wrong.append((n, f, text, mine))
    finally:
        src.close()
    assert not wrong, f"{len(wrong)} packets differ from tshark, e.g. {wrong[:5]}"


# ------------------------------------------------------------------ display filters

FILTERS = [
    ('tls.handshake.extensions_alpn_str == "h2"', ("lossy-h2", "h2-tls", "amazon")),
    ("tls.handshake.extensions_alpn_str", ("lossy-h1", "lossy-h2", "lossy-h3", "h2-tls", "amazon")),
    ('tls.handshake.extensions_alpn_str == "h3"', ("lossy-h3",)),
    ("tls.handshake.extension.type == 16", ("lossy-h1", "lossy-h2", "h2-tls", "amazon")),
    ("tls.handshake.extension.type == 0 && tls.handshake.type == 8", ("amazon",)),
    ("tls.handshake.type == 8 && !tls.handshake.extensions_alpn_str", ()),
    ('frame.protocols contains "tls"', ("lossy-h1", "lossy-h2", "amazon")),
    ('frame.protocols contains "tls" && !tls', ()),
]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["lossy-h1", "lossy-h2", "lossy-h3", "h2-tls", "tls13", "amazon"])
def test_encrypted_extensions_and_tls_layer_filters_match_tshark(name):
    """A decrypted TLS 1.3 EncryptedExtensions carries the server's ALPN choice (tshark shows
    it as tls.handshake.extensions_alpn_str and lists its extension types), and a segment where
    a TLS record spanning packets begins has "tls" in frame.protocols as tshark has."""
    cap, keys = _cap(name)
    exprs = [e for e, _ in FILTERS]
    theirs = tshark_tap.tap(cap, exprs, keys, tshark_tap.decode_args(_an(name)))
    cases = [(e, name in must) for e, must in FILTERS]
    tshark_tap.assert_same_packets(name, cases, theirs, lambda e: tshark_tap.wirefall_packets(_an(name), cap, e))


def test_bad_filter_messages_say_what_tshark_says():
    """A CIDR netmask too wide is named as such (tshark: "Netmask bits in a CIDR IPv4 address
    should be <= 32, not 33"), not called an invalid address; a string for a number field names
    the field once."""
    cap = S / "http/h2c-curl.pcap"
    for expr in ("ip.src == 10.0.0.0/33", "ipv6.addr == ::/129", 'tcp.port == "abc"'):
        r = subprocess.run(["tshark", "-r", str(cap), "-Y", expr], capture_output=True, text=True)
        assert r.returncode != 0
        theirs = r.stderr.strip().splitlines()[-3]  # (the message; the expression and a caret follow)
        with pytest.raises(FilterError) as err:
            compile_filter(expr, "packets")
        mine = err.value.message
        if "should be <=" in theirs:  # (tshark: "Netmask bits in a CIDR IPv4 address …", "Prefix in a IPv6 address …")
            said = re.sub(r"\ban?\b ", "", theirs.removeprefix("tshark: ").lower())
            assert said in re.sub(r"\ban?\b ", "", mine.lower()), (theirs, mine)
        else:
            assert "cannot be converted from a string" in theirs and "cannot be converted from a string" in mine
            assert mine.count("tcp.port") == 1, mine


# ------------------------------------------------------------------ the TUI's packet list and tree


@pytest.mark.slow
@sync
async def test_tui_dup_ack_filter_and_tree_match_tshark():
    """In the TUI: the filter a Wireshark user types for duplicate ACKs selects tshark's
    packets, and the selected packet's TCP tree shows tshark's stream index and conversation
    completeness in its words."""
    from textual.widgets import Tree

    from wirefall.ui.tui.app import WirefallApp
    from wirefall.ui.tui.widgets import PacketList

    cap, keys = _cap("lossy-h2")
    expr = "tcp.analysis.duplicate_ack && tcp.stream eq 0"
    out = _tshark("lossy-h2", "-Y", expr, "-T", "fields", "-e", "frame.number", "-e", "tcp.stream")
    want = [int(x.split("\t")[0]) for x in out.splitlines()]
    assert len(want) > 5
    first = want[0]
    pdml = ET.fromstring(_tshark("lossy-h2", "-Y", f"frame.number == {first}", "-T", "pdml"))
    names = {f.get("name"): f.get("showname") for f in pdml.iter("field")}
    app = WirefallApp(str(cap), [str(keys)])
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_loaded(pilot, app, must_load=True)
        await pilot.press("f")
        app.query_one("#filter").value = expr
        await pilot.press("enter")
        pl = app.query_one(PacketList)
        for _ in range(100):
            await pilot.pause(0.05)
            if pl.count != app.an.packets:
                break
        assert list(pl.packets) == want
        await pilot.press("home")
        await pilot.pause(0.1)
        assert pl.current_packet == first
        tree = app.query_one("#detail", Tree)
        tcp = next(c for c in tree.root.children if c.label.plain.startswith("Transmission Control Protocol"))
        labels = [c.label.plain for c in tcp.children]
        assert f"[{names['tcp.stream']}]" in labels  # "[Stream index: 0]"
        assert f"[{names['tcp.completeness']}]" in labels  # "[Conversation completeness: Incomplete, DATA (15)]"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
