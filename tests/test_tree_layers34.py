"""The detail tree's frame, link, IP and transport layers are tshark's: on every packet of real
captures, each layer's lines (label, byte offset, length) are tshark's (``tshark -n -T pdml``,
one pass, as the display filter's fields), in tshark's order, and the lines of tshark's that the
tree leaves out are only those named in ``LEFT_OUT``.

Before (session 33): bit fields as plain values ("Version: 4", "Flags: 0x0", "SYN: Set"),
no DSCP/ECN, no Ethernet address bits, generated fields bracketed by name only ("[TCP Segment
Len]: 0"), options without their kind and length, no checksum status, no UDP stream or times,
the link type for tshark's encapsulation type, six digits of arrival time.

Captures: the third-party amazon page load (Ethernet, IPv4 and IPv6, DNS, TCP with SACK
permitted and window scaling), the shared TLS 1.3 capture (BSD loopback), and bundled ones:
Linux cooked v1/v2 and raw IP, a D-SACK (page-h1), FINs from both sides (h2c-curl), a lossy
page load, the h2 TLS capture, pcapng with interfaces (page-h2)."""
from __future__ import annotations


import pytest

from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.detail import Node, packet_detail
from wirefall.analyzer.pipeline import analyze

import pdml
from conftest import capture_and_keys

# tshark's protocol -> the start of the tree node's label that is that layer
LAYERS = {"frame": "Frame ", "eth": "Ethernet II", "sll": "Linux cooked", "null": "Null/Loopback", "raw": "Raw packet data",
          "ip": "Internet Protocol Version 4", "ipv6": "Internet Protocol Version 6", "udp": "User Datagram Protocol",
          "tcp": "Transmission Control Protocol"}

# tshark's lines the tree does not show: the GUI's own state (display filter, marks, time
# references), pcapng's section number, and the pieces of reassembly tshark hangs on TCP
# (wirefall shows a message where it ends, its frames in their own nodes)
LEFT_OUT = ("Time delta from previous displayed frame", "Frame is marked", "Frame is ignored", "Section number",
            "TCP segment data (", "Retransmitted TCP segment data (", "PDU Size", "Reassembled PDU in frame")

CAPTURES = {
    "amazon": ("shared", "pageload-amazon/amazon1.cap.gz", "pageload-amazon/amazon1.key_log.txt.gz"),
    "tls13": ("shared", "tls13/capture.pcap", "tls13/keylog.txt"),
    "link-sll": ("sample", "link-sll.pcap", None),
    "link-sll2": ("sample", "link-sll2.pcap", None),
    "link-raw": ("sample", "link-raw.pcap", None),
    "page-h1": ("sample", "page/page-h1.pcapng", "page/page-h1.keys"),
    "page-h2": ("sample", "page/page-h2.pcapng", "page/page-h2.keys"),
    "h2c-curl": ("sample", "http/h2c-curl.pcap", None),
    "h2-tls": ("sample", "http/h2-tls.pcap", "http/h2-tls.keys"),
    "lossy-h2": ("sample", "lossy/page-h2.pcapng", "lossy/page-h2.keys"),
    "lossy-h3": ("sample", "lossy/page-h3.pcapng", "lossy/page-h3.keys"),
    "lossy-h1": ("sample", "lossy/page-h1.pcapng", "lossy/page-h1.keys"),
    "port-reuse": ("sample", "tcp-port-reuse.pcap", None),
    "bg-mixed": ("sample", "page/bg-mixed.pcapng", "page/bg-mixed.keys"),
}




def _tshark(path: str, keys: str | None) -> dict[int, dict[str, list]]:
    out: dict[int, dict[str, list]] = {}
    args = ["-n", "-o", "tcp.reassemble_out_of_order:TRUE", "-r", path, *(["-o", f"tls.keylog_file:{keys}"] if keys else [])]
    for num, pkt in pdml.packets(*args):
        layers: dict[str, list] = {}
        for proto in pkt.findall("proto"):
            name = proto.get("name")
            if name not in LAYERS or name in layers:  # (the outer one of a layer met twice: tunnels)
                continue
            rows = [pdml.proto_line(proto), *(r[:3] for r in pdml.field_lines(proto))]
            layers[name] = [r for r in rows if not r[0].startswith("Protocols in frame")]
        out[num] = layers
    return out


def _ours(tree: list[Node], name: str) -> list | None:
    node = next((n for n in tree if n.label.startswith(LAYERS[name])), None)
    if node is None:
        return None
    return [pdml.line(n.label, n.start, n.end - n.start if n.start >= 0 else -1) for n in node.walk()
            if not n.label.startswith(("[Connection: ", "[Protocols in frame"))]  # (wirefall's own; the filter's field: test_dns_tree34)


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_layers_are_tsharks(name, tmp_path):
    path, kpath = capture_and_keys(*CAPTURES[name], tmp_path)
    want = _tshark(path, kpath)
    an = analyze(path, keylogs=[kpath] if kpath else None)
    src = PacketSource(path)
    assert len(want) == len(an.index)
    checked = 0
    for n, layers in want.items():
        tree = packet_detail(an, src, n)
        for layer, theirs in layers.items():
            ours = _ours(tree, layer)
            assert ours is not None, f"packet {n}: no {layer} node"
            # ours, in order, within theirs; and nothing of theirs left out but LEFT_OUT
            pdml.in_order(ours, theirs, f"packet {n} {layer}")
            extra = [t for t in theirs if t not in ours and not t[0].startswith(LEFT_OUT)]
            assert not extra, f"packet {n} {layer}: tshark also shows {extra[:3]}"
            checked += len(ours)
    assert checked > 20 * len(want)
