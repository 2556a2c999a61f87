"""The DNS detail tree is Wireshark's: every line of tshark's ``dns`` tree (``-2 -T pdml``:
label, byte offset and length) on every DNS packet of two real captures, in order, and the
frame's ``[Protocols in frame]`` line is tshark's ``frame.protocols``.

Before (session 33): one generic node ("DNS: query 0x8ab7 www.amazon.com") under a group node,
with the answers as Python lists (``[0]: ['www.amazon.com', 'CNAME', 1751, '…']``), no
authority or additional records, no byte ranges; and "[Protocols in frame:
eth:ip:tcp:transport layer security:hypertext transfer protocol 2]" made from the tree's labels.

Inputs: the third-party amazon page load (../shared/captures: 64 DNS packets: A, AAAA, HTTPS
queries; CNAME, A, AAAA, SOA and OPT records) and sample_captures/page/bg-mixed.pcapng (the
lab's Chromium; A and HTTPS).  Hostile messages are built here (truncated records, a
compression loop): the tree says where the message stopped reading, never raises."""
from __future__ import annotations

import struct

import pytest

from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.detail import Node, packet_detail
from wirefall.analyzer.pipeline import analyze

import pdml
from conftest import SAMPLES, run_tool, shared


def _tshark_trees(path: str) -> dict[int, list[tuple[str, int, int]]]:
    """Packet -> tshark's dns tree as (label, offset, length) lines, depth first (a generated
    field of no bytes: offset and length -1)."""
    out: dict[int, list[tuple[str, int, int]]] = {}
    for num, pkt in pdml.packets("-2", "-r", path, "-Y", "dns"):
        dns = next(p for p in pkt.findall("proto") if p.get("name") == "dns")
        out[num] = [pdml.proto_line(dns), *(r[:3] for r in pdml.field_lines(dns))]
    return out


def _ours(tree: list[Node]) -> list[tuple[str, int, int]] | None:
    dns = next((n for n in tree if n.label.startswith("Domain Name System")), None)
    if dns is None:
        return None
    own = {id(y) for w in dns.children if w.label.startswith("[wirefall: ") for y in w.walk()}  # (wirefall's own fields)
    return [pdml.line(n.label, n.start, n.end - n.start if n.start >= 0 else -1) for n in dns.walk() if id(n) not in own]


@pytest.mark.parametrize("which", ["amazon", "bg-mixed"])
def test_dns_tree_is_tsharks(which, tmp_path):
    if which == "amazon":
        cap = str(shared("pageload-amazon/amazon1.cap.gz"))
        import gzip

        plain = tmp_path / "amazon1.cap"  # (tshark and wirefall read the same bytes; gzip is the reader's)
        plain.write_bytes(gzip.decompress(open(cap, "rb").read()))
        cap = str(plain)
    else:
        cap = str(SAMPLES / "page" / "bg-mixed.pcapng")
    want = _tshark_trees(cap)
    assert len(want) == (64 if which == "amazon" else 46)
    an = analyze(cap)
    src = PacketSource(cap)
    for n, rows in want.items():
        assert _ours(packet_detail(an, src, n)) == rows, f"packet {n}"
    # frame.protocols: the tree's line is the display filter's field (on DNS packets equal to
    # tshark's; elsewhere it names the layers wirefall decodes: docs/FILTERS.md)
    protos = dict(ln.split("\t") for ln in run_tool("tshark", "-r", cap, "-T", "fields", "-e", "frame.number",
                                                     "-e", "frame.protocols").splitlines())
    for n in want:
        line = next(c.label for c in packet_detail(an, src, n)[0].children if c.abbrev == "frame.protocols")
        assert line == f"[Protocols in frame: {protos[str(n)]}]", f"packet {n}"


def _pcap(messages: list[bytes]) -> bytes:
    """A pcap of UDP datagrams 10.0.0.1:5353 -> 10.0.0.2:53 carrying ``messages`` (Ethernet, IPv4)."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for i, m in enumerate(messages):
        udp = struct.pack("!HHHH", 40000 + i, 53, 8 + len(m), 0) + m
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i, 0, 64, 17, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])) + udp
        frame = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip
        out.append(struct.pack("<IIII", 1700000000, i, len(frame), len(frame)) + frame)
    return b"".join(out)


def test_hostile_messages_say_where_they_stop(tmp_path):
    head = struct.pack("!HHHHHH", 0x1234, 0x8180, 1, 2, 0, 0)
    q = b"\x03www\x07example\x03com\x00" + struct.pack("!HH", 1, 1)
    a_rr = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + bytes([192, 0, 2, 1])
    loop = struct.pack("!HHHHHH", 7, 0x8180, 1, 0, 0, 0) + b"\xc0\x0c" + struct.pack("!HH", 1, 1)  # (a name pointing at itself)
    cut = head + q + a_rr + a_rr[:7]  # (the second answer cut inside its fixed part)
    long_rd = head + q + b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 400) + b"\x00" * 4  # (data length past the end)
    bad_soa = struct.pack("!HHHHHH", 9, 0x8180, 0, 1, 0, 0) + b"\x00" + struct.pack("!HHIH", 6, 1, 60, 3) + b"\x01a\x00"
    p = tmp_path / "hostile-dns.pcap"
    p.write_bytes(_pcap([cut, loop, long_rd, bad_soa, b"\x00\x01"]))
    an = analyze(str(p))
    src = PacketSource(str(p))
    labels = {}
    for n in range(1, 6):
        tree = packet_detail(an, src, n)
        labels[n] = [x.label for root in tree for x in root.walk()]
    assert "www.example.com: type A, class IN, addr 192.0.2.1" in labels[1]
    assert "[Malformed Packet: DNS: truncated resource record]" in labels[1]
    assert "[Malformed Packet: DNS: compression pointer loop]" in labels[2]
    assert "[Malformed Packet: DNS: record data runs past the end of the message]" in labels[3]
    assert any(lb.startswith("[Malformed record data (3 bytes)]") for lb in labels[4])
    assert "Domain Name System (query)" in labels[5] and "[Malformed Packet: DNS: message shorter than the 12-byte header]" in labels[5]
