"""A UDP datagram of text whose first byte has the QUIC short-header bit (SSDP "M-SEARCH", SIP
"OPTIONS", any line of text) is not a QUIC connection joined mid-way: a short header's bytes after
the DCID are ciphertext.  tshark (the oracle) decodes them as their own protocols; wirefall
leaves them plain UDP, and the capture's completeness is not spoiled by a "QUIC connection not
decrypted"."""
from __future__ import annotations

import json
import subprocess
import sys

import dpkt
import pytest

from conftest import ROOT, need_tool, run_tool

TEXTS = [
    (1900, b"M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nMAN: \"ssdp:discover\"\r\nMX: 1\r\nST: ssdp:all\r\n\r\n"),
    (5060, b"OPTIONS sip:bob@example.com SIP/2.0\r\nVia: SIP/2.0/UDP 192.168.1.5:5060;branch=z9hG4bK776asdhds\r\n"
           b"Max-Forwards: 70\r\nTo: <sip:bob@example.com>\r\nFrom: <sip:alice@example.com>;tag=1928301774\r\n"
           b"Call-ID: a84b4c76e66710\r\nCSeq: 63104 OPTIONS\r\nContent-Length: 0\r\n\r\n"),
    (9999, b"Hello from a plain text protocol on a port no dissector claims, line one\r\nline two\r\n"),
]


def _write(path) -> None:
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, linktype=dpkt.pcap.DLT_EN10MB)
        for i, (port, text) in enumerate(TEXTS):
            u = dpkt.udp.UDP(sport=50000 + i, dport=port, data=text)
            u.ulen = len(u)
            ip = dpkt.ip.IP(src=bytes([192, 168, 1, 5]), dst=bytes([192, 168, 1, 1]), p=17, ttl=64, data=u)
            ip.len = len(ip)
            eth = dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
            w.writepkt(bytes(eth), ts=1.0 + i)


def test_text_datagrams_are_not_quic(tmp_path):
    need_tool("tshark")
    cap = tmp_path / "text.pcap"
    _write(cap)
    assert all(t[1][0] & 0x40 and not t[1][0] & 0x80 for t in TEXTS)  # each looks like a short header by its first byte
    protos = run_tool("tshark", "-r", str(cap), "-T", "fields", "-e", "_ws.col.Protocol").split()
    assert "QUIC" not in protos and {"SSDP", "SIP"} <= set(protos)
    out = subprocess.run([sys.executable, "-m", "wirefall", "summary", str(cap), "--json"], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    s = json.loads(out.stdout)
    assert len(s["connections"]) == 3
    assert all(c["protocol"] != "quic" and c["quic"] is None for c in s["connections"])
    assert s["completeness"]["complete"] is True


@pytest.mark.parametrize("n", [16, 64, 1200])
def test_random_short_headers_still_look_like_quic(n):
    """The text test never refuses ciphertext: 10 000 random short-header datagrams pass."""
    import random

    from wirefall.dissectors.quic import looks_like_quic

    rnd = random.Random(n)
    for _ in range(10_000):
        d = bytes([0x40 | rnd.randrange(64)]) + rnd.randbytes(n - 1)
        assert looks_like_quic(d) == "ietf"
