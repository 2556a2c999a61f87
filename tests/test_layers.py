"""One packet decoder (analyzer.packet.layers): the layer offsets it finds agree with tshark on
every link layer the samples use and on IPv6 extension-header chains; the pipeline's Decoder,
TCP analysis and the detail view read the same offsets."""
from __future__ import annotations

import struct

import pytest

from conftest import SAMPLES, run_tool, shared
from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.detail import _decode_row, packet_detail
from wirefall.analyzer.packet import Decoded, Decoder, layers
from wirefall.analyzer.pipeline import analyze


def _tshark_rows(path):
    out = run_tool("tshark", "-r", str(path), "-T", "fields", "-E", "occurrence=l", "-e", "frame.number", "-e", "ip.src",
                   "-e", "ipv6.src", "-e", "tcp.srcport", "-e", "tcp.len", "-e", "udp.srcport", "-e", "udp.length")
    return [ln.split("\t") for ln in out.split("\n") if ln]


@pytest.mark.parametrize("name", ["link-sll.pcap", "link-sll2.pcap", "link-raw.pcap", "tcp-port-reuse.pcap", "amazon"])
def test_layer_offsets_agree_with_tshark(name):
    path = shared("pageload-amazon/amazon1.cap.gz") if name == "amazon" else SAMPLES / name
    an = analyze(str(path))
    src = PacketSource(str(path))
    idx = an.index
    checked = 0
    try:
        for num, ip4, ip6, tsport, tlen, usport, ulen in _tshark_rows(path):
            n = int(num)
            data = src.read(idx.offset[n - 1], idx.caplen[n - 1])
            L = layers(idx.linktype[n - 1], data)
            if not (ip4 or ip6):
                assert L.ipver == 0 or L.error
                continue
            import ipaddress

            assert str(ipaddress.ip_address(L.src)) == (ip4 or ip6)
            if tsport:
                assert L.proto == 6 and struct.unpack_from("!H", data, L.transport)[0] == int(tsport)
                assert L.end - L.payload == int(tlen)
                d = Decoder().decode(idx.linktype[n - 1], data)
                assert isinstance(d, Decoded) and d.l4_off == L.transport and len(d.payload) == int(tlen)
                checked += 1
            elif usport:
                assert L.proto == 17 and struct.unpack_from("!H", data, L.transport)[0] == int(usport)
                assert L.payload == L.transport + 8 and struct.unpack_from("!H", data, L.transport + 4)[0] == int(ulen)
                checked += 1
    finally:
        src.close()
    assert checked >= 20


def _ipv6_tcp_with_extensions() -> bytes:
    """Ethernet + IPv6 + hop-by-hop (8) + destination options (16) + routing (8) + TCP SYN with
    a window-scale option + 5 payload bytes."""
    tcp = struct.pack("!HHIIBBHHH", 40000, 8080, 1000, 0, (24 // 4) << 4, 0x02, 65535, 0, 0) + bytes([3, 3, 7, 0]) + b"hello"
    hbh = bytes([60, 0]) + bytes([1, 4, 0, 0, 0, 0])  # next: dest opts; PadN
    dst = bytes([43, 1]) + bytes([1, 12]) + bytes(12)  # next: routing; 16 bytes
    rt = bytes([6, 0, 0, 0]) + bytes(4)  # next: TCP; type 0, segments left 0
    ext = hbh + dst + rt
    ip6 = struct.pack("!IHBB", 6 << 28, len(ext) + len(tcp), 0, 64) + bytes(15) + b"\x01" + bytes(15) + b"\x02"
    return bytes(6) + bytes(5) + b"\x01" + b"\x86\xdd" + ip6 + ext + tcp


def test_ipv6_extension_chain_once(tmp_path):
    frame = _ipv6_tcp_with_extensions()
    L = layers(1, frame)
    assert L.error is None and [(h, o, ln) for h, o, ln in L.ext] == [(0, 54, 8), (60, 62, 16), (43, 78, 8)]
    assert (L.network, L.transport, L.proto, L.end - L.payload) == (14, 86, 6, 5)
    # tshark reads the same chain
    cap = tmp_path / "ext.pcap"
    cap.write_bytes(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
                    + struct.pack("<IIII", 1, 0, len(frame), len(frame)) + frame)
    (row,) = [r.split("\t") for r in run_tool("tshark", "-r", str(cap), "-T", "fields", "-e", "tcp.srcport", "-e", "tcp.len",
                                              "-e", "tcp.options.wscale.shift").split("\n") if r]
    assert row == ["40000", "5", "7"]
    # the pipeline decodes it, records the SYN's window scale on the connection, and the detail
    # view and the packet list read the same layers
    d = Decoder().decode(1, frame)
    assert isinstance(d, Decoded) and (d.sport, d.dport, bytes(d.payload), d.l4_off) == (40000, 8080, b"hello", 86)
    an = analyze(str(cap))
    (c,) = an.connections
    assert c.tcp is not None and c.tcp.wscale == (7, None) and c.tcp.syn == (True, False) and c.tcp.isn == (1001, None)
    row = _decode_row(frame, 1)
    assert row[:4] == (6, "::1", "::2", 6) and row[5][:2] == (40000, 8080)
    src = PacketSource(str(cap))
    try:
        tree = packet_detail(an, src, 1)
    finally:
        src.close()
    ip6 = next(n for n in tree if n.label.startswith("Internet Protocol Version 6"))
    assert [(x.label, x.start, x.end) for x in ip6.children if x.label.startswith("IPv6 extension")] == [
        ("IPv6 extension header 0, length 8", 54, 62), ("IPv6 extension header 60, length 16", 62, 78),
        ("IPv6 extension header 43, length 8", 78, 86)]
    tcp = next(n for n in tree if n.label.startswith("Transmission Control Protocol"))
    assert tcp.start == 86 and tcp.find("tcp.seq").value == "0"  # relative to the SYN the flow layer saw


def test_truncated_extension_header_is_named():
    frame = _ipv6_tcp_with_extensions()[:14 + 40 + 8 + 4]  # inside the destination options header
    frame = frame[:18] + struct.pack("!H", len(frame) - 54) + frame[20:]
    L = layers(1, frame)
    assert L.error == "IPv6 extension header truncated" and L.payload == -1
    assert Decoder().decode(1, frame) == "IPv6 extension header truncated"
