"""Display filters against tshark 4.0, the review-24 findings: for each, the packets wirefall's
``filter_packets`` (``packets -Y``) selects are the packets tshark's ``-Y`` selects, on real
captures (one tshark pass per capture, a Lua tap per expression: tests/tshark_filters.lua).
Captures the findings need that no sample has (a TCP handshake with its SYN-ACK lost, a SYN
that arrives after its ACK) are made from a real capture's packets by
``scripts/hostile/tcp_handshake_cuts.py`` at test time."""
from __future__ import annotations

import shutil
import sys
import tempfile
from functools import cache
from pathlib import Path

import pytest
import tshark_tap
from conftest import unpack_amazon

from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.filter import FilterError, compile_filter
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]
S = ROOT / "sample_captures"
SHARED = ROOT.parent / "shared" / "captures"

needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

_TMP = Path(tempfile.mkdtemp(prefix="wirefall-parity24-"))


def _cleanup() -> None:
    shutil.rmtree(_TMP, ignore_errors=True)


import atexit  # noqa: E402

atexit.register(_cleanup)


def _made(name: str) -> Path:
    """A capture made by scripts/hostile/tcp_handshake_cuts.py from http/http1-nginx.pcap."""
    out = _TMP / f"{name}.pcap"
    if not out.exists():
        sys.path.insert(0, str(ROOT / "scripts" / "hostile"))
        import tcp_handshake_cuts

        out.write_bytes(tcp_handshake_cuts.build(name, (S / "http" / "http1-nginx.pcap").read_bytes()))
    return out


def _capture(name: str) -> tuple[Path, Path | None, list[str]]:
    """(capture, key log, extra tshark arguments) of a capture by name."""
    extra: list[str] = []
    if name.startswith("made:"):
        return _made(name[5:]), None, extra
    if name == "amazon":
        return (*unpack_amazon(_TMP), extra)
    nokeys = name.endswith("#nokeys")
    cap = S / name.removesuffix("#nokeys")
    keys = None if nokeys else cap.with_suffix(".keys")
    if cap.name == "spdy3-plain.pcap":
        extra = ["-d", "tcp.port==18330,spdy"]
    return cap, keys if keys is not None and keys.exists() else None, extra


@cache
def _analysis(name: str):
    cap, keys, _ = _capture(name)
    return analyze(str(cap), keylogs=[str(keys)] if keys else [])


def _tshark(name: str, exprs: list[str]) -> dict[str, list[int] | str]:
    cap, keys, extra = _capture(name)
    return tshark_tap.tap(cap, exprs, keys, extra)


def _wirefall(name: str, expr: str) -> list[int]:
    return tshark_tap.wirefall_packets(_analysis(name), _capture(name)[0], expr)


def _compare(name: str, cases: list[tuple[str, bool]]) -> None:
    """Each (expression, must select something in tshark) selects tshark's packets."""
    tshark_tap.assert_same_packets(name, cases, _tshark(name, [e for e, _ in cases]), lambda e: _wirefall(name, e))


# ---------------------------------------------------------------- the findings, capture by capture
# (expression, True where tshark must select at least one packet there)

CASES: dict[str, list[tuple[str, bool]]] = {
    # A1: a TLS 1.3 protected record has opaque_type 23; content_type is its inner type once decrypted
    "tls/tls13_aes128gcm.pcap": [
        ("tls.record.content_type == 23", True),
        ("tls.record.opaque_type == 23", True),
        ("tls.record.opaque_type && tls.record.content_type", True),
        ("tls.record.content_type == 22", True),
        ("tls.record.content_type == 23 && tls.record.opaque_type == 23", True),
        ('tls.record.content_type == "Application Data"', True),
        ('tls.record.opaque_type == "Application Data"', True),
    ],
    "tls/tls13_aes128gcm.pcap#nokeys": [
        ("tls.record.content_type == 23", False),
        ("tls.record.opaque_type == 23", True),
        ("tls.record.content_type", True),
        ("tls.record.opaque_type && tls.record.content_type", True),
    ],
    "tls/tls12_aes128gcm.pcap#nokeys": [  # (no keys here: TLS 1.2's outer type stays content_type)
        ("tls.record.content_type == 23", True),
        ("tls.record.opaque_type", False),
    ],
    "tls/tls13_hrr.pcap#nokeys": [
        ("tls.record.content_type == 23", False),
        ("tls.record.opaque_type", True),
        ("tls.record.content_type", True),
    ],
    # A2: tcp.window_size is the Info column's Win= (tshark's): scaled per direction once its SYN's scale is known
    "made:drop-synack": [
        ("tcp.stream == 0 && tcp.window_size < 1000", True),
        ("tcp.window_size == 65536", True),
        ("tcp.window_size > 60000", True),
        ("tcp.window_size == tcp.window_size_value", True),
    ],
    "made:swap-syn": [
        ("tcp.stream == 1 && tcp.window_size == 65536", True),
        ("tcp.window_size < 1000", True),
        ("tcp.window_size == tcp.window_size_value", True),
    ],
    "http/http1-nginx.pcap": [
        ("tcp.window_size < 1000", False),
        ("tcp.window_size == 65536", True),
        # A6: count() of an absent field is no value
        ("count(http2.header) == 0", False),
        ("count(http.request) >= 0", True),
        ("count(tcp.port) == 2", True),
        ("!(count(http.request) == 1)", True),
        # A7: string() of integers (decimal) and addresses (as shown)
        ('string(ip.src) == "127.0.0.1"', True),
        ('string(ip.src) contains "127"', True),
        ('string(eth.src) == "00:00:00:00:00:00"', True),
        ('string(tcp.flags) == "18"', True),
        ('string(tcp.srcport) == "18085"', True),
        # A8: byte slices against IPv4 fields, either side
        ("ip[12:4] == ip.src", True),
        ("frame[26:4] == ip.src", True),
        ("ip.src == ip[12:4]", True),
        ("ip.dst != ip[16:4]", False),
        ("eth[6:6] == eth.src", True),
        # A9: byte strings ordered by length first
        ("tcp.payload > 80:00", True),
        ("tcp.payload < 80:00", False),
        ("tcp.payload >= 47:45:54", True),
        ("ip.src[0:2] > 7f", True),
        # B1: FIELD & MASK == VALUE is (FIELD & MASK) == VALUE
        ("tcp.flags & 0x12 == 0x12", True),
        ("tcp[13] & 0x12 == 0x12", True),
        ("frame[14] & 0xf0 == 0x40", True),
        ("tcp.flags & 0x17 > 0x10", True),
        ("not tcp.flags & 0x10 == 0x10", True),
        ("tcp.flags & 0x12 == 0x12 || tcp.flags.fin == 1", True),
        # B3: abs(), min(), max()
        ("abs(tcp.srcport - tcp.dstport) > 100", True),
        ("abs(frame.time_delta) > 0.1", True),
        ("min(tcp.srcport, tcp.dstport) == 18085", True),
        ("max(tcp.port) > 30000", True),
        ("min(frame.len) == 66", True),
        # B6: Cisco's dotted MAC; PCRE's (?-i) prefix
        ("eth.src == 0000.0000.0000", True),
        # B2: tshark's value names for ip.proto and eth.type
        ("ip.proto == TCP", True),
        ("ip.proto == UDP", False),
        ('ip.proto == "TCP"', True),
        ("ip.proto in {TCP, UDP}", True),
        ("eth.type == IPv4", True),
        ("eth.type == ipv4", True),
        ("eth.type == IPv6", False),
        ('http.request.method matches "(?-i)get"', False),
        ('http.request.method matches "(?-i)GET"', True),
        ('http.request.method matches "(?i)get"', True),
    ],
    # A3: dns.flags.rcode only on responses
    "page/bg-mixed.pcapng": [
        ("dns.flags.rcode == 0", True),
        ("dns.flags.rcode == 0 && dns.flags.response == 0", False),
        ("dns.flags.rcode", True),
        ("dns.flags.rcode != 0", True),
        ("dns && !dns.flags.rcode", True),
        # A10: dns.resp.* over every section
        ("dns.resp.name", True),
        ("dns.resp.type", True),
        ("dns.resp.ttl", True),
    ],
    "amazon": [  # (../shared: EDNS OPT records in the additional section, SOA records in the authority section)
        ("dns.flags.rcode == 0", True),
        ("dns.flags.rcode == 0 && dns.flags.response == 0", False),
        ("ip.version == 6", True),
        ('dns.resp.name == "<Root>"', True),
        ("dns.resp.type == 41", True),
        ("dns.resp.type == 6", True),
        ("dns.resp.ttl > 3600", True),
        ('dns.resp.name contains "amazon"', True),
        ("tls.record.content_type == 23", True),
        ("tls.record.opaque_type", True),
        ("tcp.window_size > 100000", True),
        # A10: tls.handshake on a QUIC packet whose CRYPTO frame carries part of a handshake message
        ("tls.handshake && udp && !tls.handshake.type", True),
        ("tls.handshake", True),
    ],
    # A4: ip.version is on IPv6 packets too (6)
    "link-sll.pcap": [
        ("ip.version == 6", True),
        ("ip.version == 4", True),
        ("!ip.version", False),
        ("ip.version == 6 && ipv6", True),
        ("ipv6.nxt == TCP", True),
    ],
    "link-raw.pcap": [
        ("ip.version == 6", True),
        ("ip.version", True),
    ],
    # A5: no spdy.type on DATA frames; spdy.data, their payload
    "spdy/spdy3-plain.pcap": [
        ("spdy.type == 0", False),
        ("spdy && !spdy.type", True),
        ("spdy.type", True),
        ("spdy.data", True),
        ("len(spdy.data) > 1000", True),
        ("spdy.data[0:2] == 3c:21", True),
        # A10: spdy.flags is each SETTINGS entry's flags too
        ("spdy.flags & 1", True),
        ("spdy.flags == 1", True),
    ],
    "page/page-spdy.pcapng": [
        ("spdy && !spdy.type", True),
        ("spdy.data contains \"html\"", True),
        ("len(spdy.data) > 1000", True),
        ("spdy.flags & 1", True),
        ("count(spdy.flags) == 2", True),
    ],
}


@pytest.mark.parametrize("name", ["made:drop-synack", "made:swap-syn", "http/http1-nginx.pcap"])
def test_window_size_is_the_info_columns_win(name):
    from wirefall.analyzer.fields.packet import PacketContext, PacketView
    from wirefall.analyzer.fields import lookup
    from wirefall.analyzer.packet_record import packet_record

    an = _analysis(name)
    cap, _, _ = _capture(name)
    src = PacketSource(str(cap))
    try:
        ctx = PacketContext(an, src)
        get = lookup("tcp.window_size").get  # type: ignore[union-attr]
        for n in range(1, an.packets + 1):
            info = packet_record(an, src, n).info
            if " Win=" in info:
                assert f" Win={get(PacketView(ctx, n))[0]} " in info, (n, info)
    finally:
        src.close()


@needs_tshark
@pytest.mark.parametrize("name", list(CASES))
def test_filters_select_what_tshark_selects(name):
    _compare(name, CASES[name])


# tshark 4.0 refuses these; so does wirefall, naming why
REFUSED = [
    'string(tcp.flags.syn) == "1"',  # (booleans, times, bytes: "String conversion … is not supported")
    'string(frame.time_relative) contains "0.00"',
    'string(tcp.payload) contains "GET"',
    "foo(tcp.port) == 1",
    "max(frame.time_relative, tcp.len) > 5",
]


@pytest.mark.parametrize("expr", REFUSED)
def test_refused_as_tshark_refuses(expr):
    with pytest.raises(FilterError) as e:
        compile_filter(expr, "packets")
    assert "unknown field" not in str(e.value)


@needs_tshark
def test_refused_expressions_are_refused_by_tshark():
    theirs = _tshark("http/http1-nginx.pcap", REFUSED)
    assert all(isinstance(t, str) and "ERROR" in t for t in theirs.values()), theirs


def test_unknown_function_is_named_a_function():
    with pytest.raises(FilterError, match="unknown function 'foo'"):
        compile_filter("foo(tcp.port) == 1", "packets")
