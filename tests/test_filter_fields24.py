"""Display-filter fields added after review 24 (B5: common tshark 4.0 fields wirefall refused as
"unknown field"): for each, the packets wirefall's ``filter_packets`` (``packets -Y``) selects
are the packets tshark 4.0's ``-Y`` selects, on real captures (one tshark pass per capture, a
Lua tap per expression: tests/tshark_filters.lua, as tests/test_filter_parity24.py).  Captures
a rule needs that no sample has (a TCP conversation whose handshake is cut) are made from
http1-nginx's packets by editcap at test time; ``#2pass`` runs tshark with -2 (the value
Wireshark's packet list shows, where one pass has none: http.response_in)."""
from __future__ import annotations

import atexit
import shutil
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

import pytest
import tshark_tap
from conftest import unpack_amazon

from wirefall.analyzer.filter import FilterError, compile_filter
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]
S = ROOT / "sample_captures"
SHARED = ROOT.parent / "shared" / "captures"
NGINX = S / "http" / "http1-nginx.pcap"

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

_TMP = Path(tempfile.mkdtemp(prefix="wirefall-fields24-"))
atexit.register(lambda: shutil.rmtree(_TMP, ignore_errors=True))


def _cut(drop: str) -> Path:
    """http1-nginx.pcap without the packets ``drop`` names (editcap's syntax, '+'-separated)."""
    out = _TMP / f"cut-{drop}.pcap"
    if not out.exists():
        if shutil.which("editcap") is None:
            pytest.skip("editcap not installed")
        subprocess.run(["editcap", str(NGINX), str(out), *drop.split("+")], check=True, capture_output=True)
    return out


def _capture(name: str) -> tuple[Path, Path | None, list[str]]:
    """(capture, key log, extra tshark arguments) of a capture by name."""
    extra: list[str] = []
    name, _, opt = name.partition("#")
    if opt == "2pass":
        extra.append("-2")
    if name.startswith("cut:"):
        return _cut(name[4:]), None, extra
    if name.startswith("made:"):
        sys.path.insert(0, str(ROOT / "scripts" / "hostile"))
        import tcp_handshake_cuts

        out = _TMP / f"{name[5:]}.pcap"
        if not out.exists():
            out.write_bytes(tcp_handshake_cuts.build(name[5:], NGINX.read_bytes()))
        return out, None, extra
    if name == "amazon":
        return (*unpack_amazon(_TMP), extra)
    if name.startswith("shared:"):
        cap = SHARED / name[7:]
        if not cap.exists():
            pytest.skip(f"../shared/captures/{name[7:]} is not present")
        keys = cap.with_name("keylog.txt")
        return cap, keys if keys.exists() else None, extra
    nokeys = opt == "nokeys"
    cap = S / name
    keys = None if nokeys else cap.with_suffix(".keys")
    return cap, keys if keys is not None and keys.exists() else None, extra


@cache
def _analysis(name: str):
    cap, keys, _ = _capture(name)
    return analyze(str(cap), keylogs=[str(keys)] if keys else [])


def _tshark(name: str, exprs: list[str]) -> dict[str, list[int] | str]:
    cap, keys, extra = _capture(name)
    return tshark_tap.tap(cap, exprs, keys, [*extra, *tshark_tap.decode_args(_analysis(name))])


def _wirefall(name: str, expr: str) -> list[int]:
    return tshark_tap.wirefall_packets(_analysis(name), _capture(name)[0], expr)


def _compare(name: str, cases: list[tuple[str, bool]]) -> None:
    """Each (expression, must select something in tshark) selects tshark's packets."""
    tshark_tap.assert_same_packets(name, cases, _tshark(name, [e for e, _ in cases]), lambda e: _wirefall(name, e))


# ------------------------------------------------------------------ TCP, IP and frame
# (expression, True where tshark must select at least one packet there)

TCP_IP = [
    ("tcp.time_relative", True), ("tcp.time_relative == 0", True), ("tcp.time_relative > 0.001", True),
    ("tcp.time_delta", True), ("tcp.time_delta == 0", True), ("tcp.time_delta > 0.0001", True), ("tcp.time_delta < 0.00002", True),
    ("tcp.completeness", True), ("tcp.completeness == 0", True), ("tcp.completeness == 31", True), ("tcp.completeness == 15", True),
    ("tcp.completeness & 8", True), ("tcp.completeness & 4 && !(tcp.completeness & 2)", False), ("tcp.completeness > 7", True),
    ("tcp.window_size_scalefactor", True), ("tcp.window_size_scalefactor == -1", False), ("tcp.window_size_scalefactor == -2", False),
    ("tcp.window_size_scalefactor == 1024", False), ("tcp.window_size_scalefactor > 1", False),
    ("tcp.options.sack_perm", False), ("tcp.options.sack_perm == 04:02", False), ("tcp && !tcp.options.sack_perm", True),
    ("ip.dsfield.dscp == 0", True), ("ip.dsfield.ecn == 0", True), ("ip.dsfield.dscp > 0 || ip.dsfield.ecn > 0", False),
    ('ip.src_host == "127.0.0.1"', False), ('ip.host contains "127."', False), ('ip.dst_host matches "^127\\\\."', False),
    ("ip.src_host", True), ("ip.host", True), ('ip.src_host == ip.dst_host', False),
    ("frame.marked == 0", True), ("frame.marked", True), ("frame.marked == 1", False),
]

CASES: dict[str, list[tuple[str, bool]]] = {
    "http/http1-nginx.pcap": TCP_IP,
    "tcp-port-reuse.pcap": [("tcp.completeness == 1", True), ("tcp.completeness == 31", True), ("tcp.time_relative == 0", True),
                            ("tcp.time_delta > 0.001", True), ("tcp.window_size_scalefactor > 1", True)],
    # a conversation cut: without its SYN, SYN-ACK, third ACK, handshake; pure ACKs gone before its FINs
    **{f"cut:{d}": [("tcp.completeness == 0", True), ("tcp.completeness == 4", False), ("tcp.completeness == 8", False),
                    ("tcp.completeness == 12", False), ("tcp.completeness == 11", False), ("tcp.completeness == 13", False),
                    ("tcp.completeness == 31", False), ("tcp.time_relative == 0", True), ("tcp.window_size_scalefactor == -1", False),
                    ("tcp.window_size_scalefactor == 1024", False)]
       for d in ("1", "1-2", "1-3", "2", "3", "2-3", "3+5+7")},
    "made:drop-synack": [("tcp.window_size_scalefactor == -1", True), ("tcp.window_size_scalefactor == 1024", True),
                         ("tcp.completeness == 13", True)],
    "made:swap-syn": [("tcp.window_size_scalefactor == -1", True), ("tcp.completeness == 4", True), ("tcp.completeness == 12", True)],
    "quic/page-multi-late.pcapng": [("tcp.completeness == 0", True), ("tcp.completeness == 8", True), ("tcp.completeness == 12", True),
                                    ("tcp.window_size_scalefactor == -1", True), ("tcp.time_delta > 0.01", True)],
    "lossy/page-h1.pcapng": [("tcp.time_delta > 0.03", True), ("tcp.time_relative > 0.5", True), ("tcp.completeness == 15", True),
                             ("tcp.window_size_scalefactor > 1", True), ("tcp.options.sack_perm", True)],
    "link-sll.pcap": [("ip.host", True), ('ip.src_host == "127.0.0.1"', True), ("tcp.time_relative > 0", True),
                      ("tcp.completeness == 31", True)],
    # HTTP/1 (http1-node: 100 Continue before its upload ends, 103 then 200, a websocket Upgrade; its first response is
    # close-delimited, which tshark ends at the FIN: a documented difference)
    "http/http1-node.pcap": [
        ('http.request.line contains "Expect"', True), ('http.request.line == "Connection: Upgrade\\r\\n"', True),
        ('http.response.line contains "content-length: 9"', True), ("http.request.line", True), ("frame.number > 10 && http.response.line", True),
        ("count(http.request.line) >= 3", True), ('http.upgrade == "websocket"', True), ("http.upgrade", True),
        ('http.transfer_encoding == "chunked"', True), ('http.connection contains "Upgrade"', True),
        ("http.accept_encoding", False)],
    "http/http1-nginx.pcap#2": [  # (the pipelined HEAD's responses apart: a documented difference)
        ('http.accept_encoding == "gzip"', True), ("frame.number < 62 && http.transfer_encoding", True),
        ('http.request.line contains "gzip"', True), ('frame.number < 62 && http.response.line == "Server: nginx/1.22.1\\r\\n"', True),
        ("http.upgrade", False)],
    "page/page-h1c.pcapng": [("http.request.line", True), ('http.response.line contains "Content-Type: image/"', True),
                             ('http.accept_encoding', False), ("http.transfer_encoding", False)],
    # http.response_in: Wireshark's (two-pass) value; tshark's one pass never has it
    "page/page-h1c.pcapng#2pass": [("http.response_in", True), ("http.response_in > 10", True), ("http.response_in == 6", False)],
    "http/http1-node.pcap#2pass": [("http.response_in > 10", True), ("http.response_in == 21", True), ("http.response_in == 30", True)],
    "http/h2c-upgrade.pcap": [('http.upgrade == "h2c"', True), ('http.request.line contains "HTTP2-Settings"', True),
                              ("http2.header.length > 100", True), ("http2.stream", True)],
    # HTTP/2
    "http/h2c-nghttp.pcap": [("http2.header.length", True), ("http2.header.length == 179", True), ("http2.header.length > 1000", True),
                             ("http2.stream", True), ("count(http2.stream) > 3", True), ("http2.stream && !http2.header", True)],
    "http/h2c-node.pcap": [("http2.header.length < 100", True), ("http2.stream", True), ("count(http2.stream) == 1", True)],
    "page/page-h2.pcapng": [("http2.header.length > 300", True), ("count(http2.stream) >= 2", True)],
}


@pytest.mark.parametrize("name", list(CASES))
def test_fields_select_what_tshark_selects(name):
    _compare(name, CASES[name])


def test_frame_time_delta_displayed_is_refused_with_the_reason():
    # tshark's value under -Y is measured from the previous packet the same filter displayed
    with pytest.raises(FilterError, match="previous packet the same filter displayed"):
        compile_filter("frame.time_delta_displayed > 0", "packets")


# names tshark 4.0 knows that wirefall refuses, each with its reason (never a silent empty match)
REFUSED = {"http.file_data": "bodies", "tcp.pdu.size": "reassembly", "tcp.segment": "reassembly", "tcp.segments": "reassembly", "tls.segment": "reassembly",
           "http2.magic": "preface", "tls.handshake.extensions_supported_group": "hellos", "tls.handshake.sig_hash_alg": "hellos",
           "tls.handshake.certificate": "hellos", "tls.handshake.length": "hellos", "x509ce.dNSName": "hellos"}


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_fields_say_why(name):
    with pytest.raises(FilterError, match=REFUSED[name]):
        compile_filter(name, "packets")


@cache
def _tshark_fields() -> str:
    return subprocess.run(["tshark", "-G", "fields"], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("name", list(REFUSED) + ["frame.time_delta_displayed"])
def test_refused_fields_are_tshark_fields(name):
    assert f"\t{name}\t" in _tshark_fields()


@pytest.mark.parametrize("typo, meant", [("tcp.segmnt", "tcp.segment"), ("http.upgrad", "http.upgrade"),
                                         ("tcp.sequence", "tcp.seq"), ("ip.srchost", "ip.src_host"), ("htpp.host", "http.host"),
                                         ("http.acept_encoding", "http.accept_encoding")])
def test_suggestions_prefer_the_same_protocol(typo, meant):
    with pytest.raises(FilterError, match=f"did you mean '{meant}'"):
        compile_filter(typo, "packets")
