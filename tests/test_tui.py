"""TUI and per-packet detail tests.  Truth comes from tshark on the same captures."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from analyzer.capture import PacketSource
from analyzer.detail import hexdump, packet_bytes, packet_detail, packet_row, packet_rows
from analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_captures"
SHARED = ROOT.parent / "shared" / "captures"
TSHARK = shutil.which("tshark")

needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")


def shared(rel: str) -> Path:
    p = SHARED / rel
    if not SHARED.is_dir():
        pytest.skip("third-party captures folder absent")
    return p


def _tshark_json(path: Path, extra=()) -> list[dict]:
    out = subprocess.run([TSHARK, "-r", str(path), "-T", "json", "--no-duplicate-keys", *extra], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def _flatten(d, acc: dict) -> dict:
    """tshark -T json layers -> {field: [values]} (descending into *_tree objects)."""
    for k, v in d.items():
        if isinstance(v, dict):
            _flatten(v, acc)
        elif isinstance(v, list):
            for x in v:
                if isinstance(x, dict):
                    _flatten(x, acc)
                else:
                    acc.setdefault(k, []).append(x)
        else:
            acc.setdefault(k, []).append(v)
    return acc


# (capture, key log or None, packets to check)
LINK_CASES = [
    ("sample_captures/link-sll.pcap", None),
    ("sample_captures/link-sll2.pcap", None),
    ("sample_captures/link-raw.pcap", None),
    ("shared:tls13/capture.pcap", None),  # BSD loopback (null)
    ("shared:pageload-amazon/amazon1.cap.gz", None),  # Ethernet, IPv4+IPv6, TCP+UDP, gzip
    ("shared:quic-illustrated/capture.pcap", None),  # null + UDP
]


def _path(spec: str) -> Path:
    return shared(spec[7:]) if spec.startswith("shared:") else ROOT / spec


_analyses: dict = {}


def _analysis(path: Path, keylogs=None):
    key = (str(path), tuple(keylogs or ()))
    if key not in _analyses:
        _analyses[key] = analyze(str(path), [str(k) for k in keylogs or ()])
    return _analyses[key]


COMPARED = {
    "frame.number", "frame.len", "frame.cap_len", "frame.interface_id",
    "eth.dst", "eth.src", "eth.type", "null.family",
    "sll.pkttype", "sll.hatype", "sll.halen", "sll.src.eth", "sll.etype", "sll.ifindex",
    "ip.version", "ip.hdr_len", "ip.dsfield", "ip.len", "ip.id", "ip.flags", "ip.frag_offset", "ip.ttl", "ip.proto",
    "ip.checksum", "ip.src", "ip.dst",
    "ipv6.version", "ipv6.tclass", "ipv6.flow", "ipv6.plen", "ipv6.nxt", "ipv6.hlim", "ipv6.src", "ipv6.dst",
    "tcp.srcport", "tcp.dstport", "tcp.len", "tcp.seq", "tcp.seq_raw", "tcp.nxtseq", "tcp.ack", "tcp.ack_raw", "tcp.hdr_len",
    "tcp.flags", "tcp.window_size_value", "tcp.window_size", "tcp.checksum", "tcp.urgent_pointer",
    "tcp.options.mss_val", "tcp.options.wscale.shift", "tcp.options.timestamp.tsval", "tcp.options.timestamp.tsecr",
    "udp.srcport", "udp.dstport", "udp.length", "udp.checksum",
}


@needs_tshark
@pytest.mark.parametrize("spec", [c[0] for c in LINK_CASES])
def test_detail_fields_equal_tshark(spec):
    path = _path(spec)
    an = _analysis(path)
    src = PacketSource(str(path))
    ts = _tshark_json(path)
    assert len(ts) == an.packets > 0
    step = max(1, an.packets // 60)  # about 60 packets of each capture, spread over it
    compared = 0
    seen_fields = set()
    for n in range(1, an.packets + 1, step):
        want = _flatten(ts[n - 1]["_source"]["layers"], {})
        nodes = packet_detail(an, src, n)
        got: dict = {}
        for root in nodes:
            for node in root.walk():
                if node.abbrev in COMPARED:
                    got.setdefault(node.abbrev, []).append(node.value)
        # every IP/TCP/UDP field tshark shows for the outer headers is in our tree with its value
        for f in COMPARED:
            if f in want and f in got:
                w = want[f][: len(got[f])]
                assert got[f][: len(w)] == w, f"packet {n} {f}: wirefall {got[f]} tshark {want[f]}"
                compared += 1
                seen_fields.add(f)
            elif f in want and f.split(".")[0] in ("ip", "ipv6", "tcp", "udp") and not f.startswith("tcp.options"):
                if f == "ip.version" and "ipv6.version" in got:  # tshark names IPv6's version field both ways
                    continue
                if "icmp" in want.get("frame.protocols", [""])[0]:
                    continue
                raise AssertionError(f"packet {n}: tshark has {f}={want[f]}, wirefall tree lacks it")
        t_epoch = float(want["frame.time_epoch"][0])
        assert abs(float(got.get("frame.time_epoch", ["nan"])[0] if "frame.time_epoch" in got else nodes[0].find("frame.time_epoch").value) - t_epoch) < 2e-6
    assert compared > 100
    assert {"tcp.seq", "ip.src"} & seen_fields or {"udp.srcport", "ipv6.src"} & seen_fields


@needs_tshark
@pytest.mark.parametrize("spec", ["sample_captures/link-sll2.pcap", "shared:tls13/capture.pcap", "shared:pageload-amazon/amazon1.cap.gz"])
def test_packet_rows_equal_tshark_columns(spec):
    path = _path(spec)
    an = _analysis(path)
    src = PacketSource(str(path))
    fields = ["frame.number", "frame.time_relative", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "frame.len", "tcp.srcport", "tcp.dstport",
              "tcp.seq", "tcp.ack", "tcp.window_size", "tcp.len", "tcp.flags.str", "udp.length"]
    out = subprocess.run([TSHARK, "-r", str(path), "-T", "fields", "-E", "separator=\t", "-E", "occurrence=f", *sum([["-e", f] for f in fields], [])],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    rows = packet_rows(an, src, 1, an.packets + 1)
    assert len(rows) == len(out) == an.packets
    tcp_checked = 0
    for row, line in zip(rows, out):
        t = dict(zip(fields, line.split("\t")))
        no, tm, s, d, proto, length, info = row
        assert no == int(t["frame.number"]) and length == int(t["frame.len"])
        assert isinstance(tm, float) and abs(tm - float(t["frame.time_relative"])) < 2e-6
        assert (s, d) == (t["ip.src"] or t["ipv6.src"], t["ip.dst"] or t["ipv6.dst"])
        if t["tcp.srcport"] and info.startswith(f"{t['tcp.srcport']} → "):
            # "sport → dport [FLAGS] Seq=… Ack=… Win=… Len=…" as Wireshark's Info
            assert f"{t['tcp.srcport']} → {t['tcp.dstport']} [" in info
            assert f" Seq={t['tcp.seq']} " in info
            if t["tcp.ack"] and "ACK" in info.split("]")[0]:
                assert f" Ack={t['tcp.ack']} " in info
            assert f" Win={t['tcp.window_size']} Len={t['tcp.len']}" in info
            tcp_checked += 1
        elif t["udp.length"] and proto == "UDP":
            assert info.endswith(f"Len={int(t['udp.length']) - 8}")
    assert tcp_checked == sum(1 for r in rows if r[4] == "TCP") > 0
    assert packet_row(an, src, 1) == rows[0]


def test_hexdump_format():
    data = bytes(range(0x30, 0x30 + 20))
    lines = hexdump(data)
    assert lines[0] == "0000  30 31 32 33 34 35 36 37 38 39 3a 3b 3c 3d 3e 3f   0123456789:;<=>?"
    assert lines[1] == "0010  40 41 42 43" + " " * 36 + "   @ABC"


@needs_tshark
def test_packet_bytes_equal_tshark_hex():
    path = _path("shared:tls13/capture.pcap")
    an = _analysis(path)
    src = PacketSource(str(path))
    out = subprocess.run([TSHARK, "-r", str(path), "-x"], capture_output=True, text=True, check=True).stdout
    # tshark -x prints each packet's hex dump, blocks separated by a blank line
    blocks = [b.splitlines() for b in out.split("\n\n") if b.strip()]
    assert len(blocks) == an.packets
    for n in range(1, an.packets + 1):
        assert hexdump(packet_bytes(src, an, n)) == [ln.rstrip() for ln in blocks[n - 1]] or \
            [ln.rstrip() for ln in hexdump(packet_bytes(src, an, n))] == [ln.rstrip() for ln in blocks[n - 1]], n
