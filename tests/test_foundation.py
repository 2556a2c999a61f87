"""Capture reading, flows and TCP reassembly, checked against capinfos and tshark."""
from __future__ import annotations

import bz2
import gzip
import ipaddress
import lzma
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from wirefall.analyzer.capture import CaptureError, read_capture
from wirefall.analyzer.pipeline import analyze
from conftest import ROOT, SAMPLES, need_tool, run_tool, shared

SHARED_CAPTURES = [
    "tls12/capture.pcap",
    "tls13/capture.pcap",
    "quic-illustrated/capture.pcap",
    "retina/quic.pcap",
    "retina/quic_kyber.pcapng",
    "retina/quic_retry.pcapng",
    "retina/tls_ciphers.pcap",
    "pcap2qlog/ngtcp2-29-dsb.pcapng",
    "pcap2qlog/multi_stream.pcap",
    "pcap2qlog/ack_range.pcapng",
    "gquic/dragon3.pcap",
    "pageload-amazon/amazon1.cap.gz",
]
TCP_CAPTURES = ["tls12/capture.pcap", "tls13/capture.pcap", "retina/tls_ciphers.pcap", "pageload-amazon/amazon1.cap.gz", "retina/quic.pcap"]


def sample_files() -> list[Path]:
    return sorted(p for p in SAMPLES.rglob("*") if re.search(r"\.(pcap|pcapng|cap)(\.(gz|xz|bz2|zst))?$", p.name))


class Collector:
    """A TCP session that keeps every reassembled byte and gap (tests only)."""

    def __init__(self, ctx, conn):
        self.conn = conn
        self.bufs = [bytearray(), bytearray()]
        self.gaps: list[tuple[int, int, int, int]] = []

    def data(self, direction, data, offset, packet):
        assert offset == len(self.bufs[direction]), "bytes must arrive in stream order"
        self.bufs[direction] += data

    def gap(self, direction, offset, length, packet):
        self.gaps.append((direction, offset, length, packet))
        self.bufs[direction] += b"\0" * length

    def end(self):
        pass


def analyze_collect(path):
    sessions: dict[int, Collector] = {}

    def make(ctx, conn):
        sessions[conn.id] = Collector(ctx, conn)
        return sessions[conn.id]

    an = analyze(str(path), tcp_session=make)
    return an, sessions


def capinfos_count(path) -> int:
    out = run_tool("capinfos", "-c", "-M", str(path))
    return int(re.search(r"Number of packets:\s+(\d+)", out).group(1))


def _ep(s: str) -> tuple[str, int]:
    addr, port = s.rsplit(":", 1)
    return str(ipaddress.ip_address(addr.strip("[]"))), int(port)


UNITS = {"bytes": 1, "kB": 1000, "MB": 1000**2, "GB": 1000**3}


class Approx(int):
    """tshark prints large byte counts rounded (\"13 kB\"): equal within that rounding."""

    def __new__(cls, value: float, unit: int):
        o = super().__new__(cls, round(value * unit))
        o.unit = unit
        return o

    def __eq__(self, other):
        return 0 <= int(other) - int(self) < self.unit if self.unit > 1 else int(self) == int(other)

    __hash__ = int.__hash__


def tshark_convs(path, proto: str) -> list[tuple]:
    """tshark's conversation table: sorted (endpoint pair, frames, bytes)."""
    out = run_tool("tshark", "-r", str(path), "-q", "-z", f"conv,{proto}")
    rows = []
    num = r"(\d+)\s+(\d+(?:\.\d+)?) (bytes|kB|MB|GB)\s+"
    for line in out.splitlines():
        m = re.match(r"^(\S+)\s+<->\s+(\S+)\s+" + num * 3, line)
        if m:
            a, b = _ep(m.group(1)), _ep(m.group(2))
            rows.append((tuple(sorted([a, b])), int(m.group(9)), Approx(float(m.group(10)), UNITS[m.group(11)])))
    return sorted(rows, key=lambda r: r[0])


def our_convs(an, transport: str) -> list[tuple]:
    rows = []
    for c in an.connections:
        if c.transport != transport:
            continue
        a = (str(ipaddress.ip_address(c.client[0])), c.client[1])
        b = (str(ipaddress.ip_address(c.server[0])), c.server[1])
        rows.append((tuple(sorted([a, b])), c.stats[0].packets + c.stats[1].packets, c.stats[0].bytes + c.stats[1].bytes))
    return sorted(rows, key=lambda r: r[0])


def tshark_follow_tcp(path, stream: int) -> tuple[tuple[str, int], bytes, bytes]:
    out = run_tool("tshark", "-r", str(path), "-q", "-z", f"follow,tcp,raw,{stream}")
    node0 = None
    bufs = [bytearray(), bytearray()]
    for line in out.splitlines():
        if line.startswith("Node 0:"):
            node0 = _ep(line.split(":", 1)[1].strip())
            continue
        if not line or line.startswith(("=", "Follow", "Filter", "Node")):
            continue
        if line.startswith("\t"):
            bufs[1] += bytes.fromhex(line.strip())
        else:
            bufs[0] += bytes.fromhex(line.strip())
    return node0, bytes(bufs[0]), bytes(bufs[1])


def tshark_stream_endpoints(path) -> dict[int, tuple]:
    out = run_tool("tshark", "-r", str(path), "-Y", "tcp", "-T", "fields", "-e", "tcp.stream", "-e", "ip.src", "-e", "ipv6.src",
                   "-e", "tcp.srcport", "-e", "ip.dst", "-e", "ipv6.dst", "-e", "tcp.dstport")
    eps = {}
    for line in out.splitlines():
        f = line.split("\t")
        s = int(f[0])
        if s not in eps:
            src = (str(ipaddress.ip_address(f[1] or f[2])), int(f[3]))
            dst = (str(ipaddress.ip_address(f[4] or f[5])), int(f[6]))
            eps[s] = tuple(sorted([src, dst]))
    return eps


# ---------------------------------------------------------------- packet counts


@pytest.mark.parametrize("rel", SHARED_CAPTURES)
def test_packet_count_equals_capinfos(rel):
    p = shared(rel)
    an = analyze(str(p))
    assert an.packets == capinfos_count(p) > 0
    # timestamps equal tshark's for the first and last packet
    out = run_tool("tshark", "-r", str(p), "-T", "fields", "-e", "frame.time_epoch")
    tts = [float(x) for x in out.split()]
    assert len(tts) == an.packets
    assert abs(an.index.ts[0] - tts[0]) < 1e-6 and abs(an.index.ts[-1] - tts[-1]) < 1e-6


def test_sample_captures_count_equals_capinfos():
    files = sample_files()
    if not files:
        pytest.skip("no sample captures yet")
    for p in files:
        assert analyze(str(p)).packets == capinfos_count(p), p


# ---------------------------------------------------------------- conversations


@pytest.mark.parametrize("rel", SHARED_CAPTURES)
def test_conversations_equal_tshark(rel):
    p = shared(rel)
    an = analyze(str(p))
    for proto in ("tcp", "udp"):
        theirs = tshark_convs(p, proto)
        ours = our_convs(an, proto)
        assert ours == theirs, f"{proto} conversations differ"
    assert an.connections, "every shared capture has flows"


# ---------------------------------------------------------------- reassembly


def compare_follow(path, an, sessions, limit=40):
    eps = tshark_stream_endpoints(path)
    tcp_conns = [c for c in an.connections if c.transport == "tcp"]
    assert len(tcp_conns) == len(eps)
    checked = 0
    for stream, conn in list(zip(sorted(eps), tcp_conns))[:limit]:
        ours_ep = tuple(sorted([(str(ipaddress.ip_address(conn.client[0])), conn.client[1]),
                                (str(ipaddress.ip_address(conn.server[0])), conn.server[1])]))
        assert ours_ep == eps[stream]
        node0, b0, b1 = tshark_follow_tcp(path, stream)
        col = sessions[conn.id]
        client = (str(ipaddress.ip_address(conn.client[0])), conn.client[1])
        c2s, s2c = (b0, b1) if node0 == client else (b1, b0)
        assert bytes(col.bufs[0]) == c2s, f"stream {stream} client→server differs"
        assert bytes(col.bufs[1]) == s2c, f"stream {stream} server→client differs"
        checked += len(c2s) + len(s2c)
    return checked


@pytest.mark.parametrize("rel", TCP_CAPTURES)
def test_reassembly_equals_tshark_follow(rel):
    p = shared(rel)
    an, sessions = analyze_collect(p)
    assert compare_follow(p, an, sessions) > 0


def test_sample_captures_reassembly_equals_tshark():
    files = [f for f in sample_files() if f.stat().st_size < 3_000_000]
    if not files:
        pytest.skip("no sample captures yet")
    total = 0
    for p in files[:12]:
        an, sessions = analyze_collect(p)
        if any(c.transport == "tcp" for c in an.connections):
            total += compare_follow(p, an, sessions, limit=8)
    assert total > 0


# ---------------------------------------------------------------- formats


def _write_pcap_records(path: Path, linktype: int, records, endian="<", nsec=False):
    magic = 0xA1B23C4D if nsec else 0xA1B2C3D4
    with open(path, "wb") as f:
        f.write(struct.pack(endian + "IHHiIII", magic, 2, 4, 0, 0, 262144, linktype))
        for ts, data in records:
            sec = int(ts)
            frac = round((ts - sec) * (1e9 if nsec else 1e6))
            f.write(struct.pack(endian + "IIII", sec, frac, len(data), len(data)))
            f.write(data)


def _records(path):
    return [(r.ts, r.data) for r in read_capture(str(path))]


@pytest.mark.parametrize("variant", ["gzip", "xz", "bzip2", "zstd"])
def test_compressed_by_magic_not_name(tmp_path, variant):
    src = shared("tls13/capture.pcap")
    raw = src.read_bytes()
    if variant == "gzip":
        data = gzip.compress(raw)
    elif variant == "xz":
        data = lzma.compress(raw)
    elif variant == "bzip2":
        data = bz2.compress(raw)
    else:
        import zstandard

        data = zstandard.ZstdCompressor().compress(raw)
    out = tmp_path / "capture.bin"  # no telling extension
    out.write_bytes(data)
    an = analyze(str(out))
    assert an.compression == variant
    base = analyze(str(src))
    assert an.packets == base.packets == capinfos_count(src)
    assert our_convs(an, "tcp") == tshark_convs(src, "tcp")
    # lazy detail re-reads packet bytes from the decompressed stream
    from wirefall.analyzer.capture import PacketSource

    ps = PacketSource(str(out))
    try:
        for n in (1, an.packets):
            assert ps.read(an.index.offset[n - 1], an.index.caplen[n - 1]) == _records(src)[n - 1][1]
    finally:
        ps.close()


@pytest.mark.parametrize("endian,nsec", [(">", False), ("<", True), (">", True)])
def test_pcap_byte_orders_and_nanoseconds(tmp_path, endian, nsec):
    src = shared("tls13/capture.pcap")
    recs = _records(src)
    out = tmp_path / "v.pcap"
    _write_pcap_records(out, 0, recs, endian=endian, nsec=nsec)  # the source is BSD loopback
    an, sessions = analyze_collect(out)
    assert an.packets == capinfos_count(out) == len(recs)
    assert abs(an.index.ts[5] - recs[5][0]) < 1e-6
    assert compare_follow(out, an, sessions) > 0


@pytest.mark.parametrize("linktype", [0, 101, 113, 276, 228])
def test_link_types(tmp_path, linktype):
    src = shared("retina/tls_ciphers.pcap")  # Ethernet
    recs = []
    for ts, d in _records(src)[:200]:
        etype, ip = d[12:14], d[14:]
        if linktype == 0:
            d2 = struct.pack("<I", 2) + ip
        elif linktype in (101, 228):
            d2 = ip
        elif linktype == 113:
            d2 = struct.pack("!HHH8s", 0, 772, 6, b"\0" * 8) + etype + ip
        else:  # SLL2
            d2 = etype + b"\0\0" + struct.pack("!I", 1) + struct.pack("!HBB8s", 772, 0, 6, b"\0" * 8) + ip
        recs.append((ts, d2))
    out = tmp_path / f"lt{linktype}.pcap"
    _write_pcap_records(out, linktype, recs)
    an, sessions = analyze_collect(out)
    assert not an.undecoded
    assert our_convs(an, "tcp") == tshark_convs(out, "tcp") != []
    assert compare_follow(out, an, sessions, limit=3) > 0


def test_vlan_tags(tmp_path):
    src = shared("retina/tls_ciphers.pcap")
    recs = [(ts, d[:12] + b"\x81\x00\x00\x05" + b"\x81\x00\x00\x07" + d[12:]) for ts, d in _records(src)[:200]]
    out = tmp_path / "vlan.pcap"
    _write_pcap_records(out, 1, recs)
    an, sessions = analyze_collect(out)
    assert our_convs(an, "tcp") == tshark_convs(out, "tcp") != []
    assert compare_follow(out, an, sessions, limit=3) > 0


def test_pcapng_from_editcap(tmp_path):
    need_tool("editcap")
    src = shared("pageload-amazon/amazon1.cap.gz")
    out = tmp_path / "a.pcapng"
    subprocess.run(["editcap", "-F", "pcapng", str(src), str(out)], check=True)
    an, sessions = analyze_collect(out)
    assert an.capture_format == "pcapng"
    assert an.packets == capinfos_count(out)
    assert our_convs(an, "udp") == tshark_convs(out, "udp")
    assert compare_follow(out, an, sessions, limit=5) > 0


def test_mergecap_two_captures(tmp_path):
    need_tool("mergecap")
    out = tmp_path / "m.pcapng"
    subprocess.run(["mergecap", "-w", str(out), str(shared("tls12/capture.pcap")), str(shared("tls13/capture.pcap"))], check=True)
    an, sessions = analyze_collect(out)
    assert len([c for c in an.connections if c.transport == "tcp"]) == 2
    assert our_convs(an, "tcp") == tshark_convs(out, "tcp")
    assert compare_follow(out, an, sessions) > 0


def test_port_reuse_is_two_connections_as_in_tshark():
    """One 4-tuple, two TCP connections (sample_captures/tcp-port-reuse.pcap, made by
    scripts/make_tcp_samples.sh): every packet belongs to the connection tshark's tcp.stream
    puts it in, and both requests are found."""
    p = SAMPLES / "tcp-port-reuse.pcap"
    an = analyze(str(p))
    assert our_convs(an, "tcp") == tshark_convs(p, "tcp")
    out = run_tool("tshark", "-r", str(p), "-T", "fields", "-e", "frame.number", "-e", "tcp.stream")
    theirs = {int(n): int(s) for n, s in (ln.split("\t") for ln in out.splitlines() if ln.strip())}
    ours = {i + 1: c for i, c in enumerate(an.index.conn)}
    assert set(theirs.values()) == {0, 1} and len(ours) == len(theirs)
    pairs = {(ours[n], theirs[n]) for n in theirs}
    assert len(pairs) == 2 and len({a for a, _ in pairs}) == 2, f"packets grouped differently: {sorted(pairs)}"
    assert [(e.connection, e.method, e.status) for e in an.exchanges] == [(0, "GET", 200), (1, "GET", 200)]
    # both connections keep their byte -> packet maps (the detail view reads them), each
    # naming only its own packets
    assert sorted(an.maps) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    for (cid, _), m in an.maps.items():
        assert m.packets and all(ours[p] == cid for p in m.packets)


# ---------------------------------------------------------------- loss and reordering


def _seq_len(path, n):
    out = run_tool("tshark", "-r", str(path), "-Y", f"frame.number == {n}", "-T", "fields", "-e", "tcp.seq", "-e", "tcp.len", "-e", "tcp.stream")
    seq, ln, stream = out.split()
    return int(seq), int(ln), int(stream)


def test_removed_packet_is_a_gap_at_the_right_offset(tmp_path):
    need_tool("editcap")
    src = shared("pageload-amazon/amazon1.cap.gz")
    # find a TCP data packet in the middle of a long server→client run
    out = run_tool("tshark", "-r", str(src), "-Y", "tcp.len > 1000", "-T", "fields", "-e", "frame.number")
    victim = int(out.split()[len(out.split()) // 2])
    seq, length, stream = _seq_len(src, victim)
    cut = tmp_path / "lost.pcap"
    subprocess.run(["editcap", str(src), str(cut), str(victim)], check=True)
    an, sessions = analyze_collect(cut)
    conn = [c for c in an.connections if c.transport == "tcp"][stream]
    gaps = sessions[conn.id].gaps
    assert [(off, ln) for _, off, ln, _ in gaps] == [(seq - 1, length)]
    assert any(f"{length} bytes missing" in n for n in conn.notes)
    # every byte before and after the gap equals the original stream
    an0, s0 = analyze_collect(src)
    d = gaps[0][0]
    orig = s0[[c for c in an0.connections if c.transport == "tcp"][stream].id].bufs[d]
    got = sessions[conn.id].bufs[d]
    assert got[: seq - 1] == orig[: seq - 1] and got[seq - 1 + length :] == orig[seq - 1 + length :]


def test_reordered_segments_reassemble(tmp_path):
    src = shared("pageload-amazon/amazon1.cap.gz")
    recs = _records(src)
    out = run_tool("tshark", "-r", str(src), "-Y", "tcp.len > 1000", "-T", "fields", "-e", "frame.number", "-e", "tcp.stream")
    rows = [tuple(map(int, l.split())) for l in out.splitlines()]
    swaps = 0
    for (a, sa), (b, sb) in zip(rows, rows[1:]):
        if sa == sb and b == a + 1 and swaps < 20:
            recs[a - 1], recs[b - 1] = recs[b - 1], recs[a - 1]  # b arrives before a
            swaps += 1
    assert swaps > 3
    p = tmp_path / "reordered.pcap"
    _write_pcap_records(p, 1, recs)
    an, sessions = analyze_collect(p)
    an0, s0 = analyze_collect(src)
    for c0, c1 in zip([c for c in an0.connections if c.transport == "tcp"], [c for c in an.connections if c.transport == "tcp"]):
        assert s0[c0.id].bufs == sessions[c1.id].bufs
        assert not sessions[c1.id].gaps
    # and tshark agrees on the reordered file
    assert compare_follow(p, an, sessions, limit=6) > 0


def test_retransmissions_counted_like_tshark():
    p = shared("pageload-amazon/amazon1.cap.gz")
    an = analyze(str(p))
    out = run_tool("tshark", "-r", str(p), "-Y", "tcp.analysis.retransmission && tcp.len > 0", "-T", "fields", "-e", "frame.number")
    theirs = len(out.split())
    ours = sum(c.stats[d].retransmissions for c in an.connections for d in (0, 1))
    assert ours == theirs


# ---------------------------------------------------------------- bad input


def test_truncated_capture_keeps_complete_packets(tmp_path):
    src = shared("tls13/capture.pcap").read_bytes()
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(src[: len(src) - 30])
    an = analyze(str(cut))
    assert an.packets == 21
    assert any("truncated in packet 22" in w for w in an.warnings)
    r = subprocess.run([sys.executable, "-m", "wirefall", "summary", str(cut)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0
    assert "packet 22" in r.stderr and "Traceback" not in r.stderr


def test_not_a_capture_exit_2(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello, this is not a capture\n")
    with pytest.raises(CaptureError):
        analyze(str(bad))
    r = subprocess.run([sys.executable, "-m", "wirefall", "summary", str(bad)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and str(bad) in r.stderr and "pcap" in r.stderr
    assert "Traceback" not in r.stderr


def test_unknown_link_type_counted_not_fatal(tmp_path):
    recs = _records(shared("tls13/capture.pcap"))
    p = tmp_path / "weird.pcap"
    _write_pcap_records(p, 147, recs)  # USER0
    an = analyze(str(p))
    assert an.packets == len(recs)
    assert an.undecoded == {"unsupported link type 147": len(recs)}


def test_garbage_ip_headers_counted(tmp_path):
    recs = _records(shared("tls13/capture.pcap"))
    recs[3] = (recs[3][0], recs[3][1][:4] + b"\x45\x00")  # IPv4 header cut short (BSD loopback link)
    p = tmp_path / "g.pcap"
    _write_pcap_records(p, 0, recs)
    an = analyze(str(p))
    assert an.undecoded == {"IPv4 header truncated": 1}
    assert len(an.connections) == 1


def test_reordered_with_wireshark_tools(tmp_path):
    """Segments moved out of order with editcap + mergecap -a, then put back with reordercap:
    both files reassemble to tshark's streams of the original."""
    for tool in ("editcap", "mergecap", "reordercap"):
        need_tool(tool)
    src = shared("pageload-amazon/amazon1.cap.gz")
    out = run_tool("tshark", "-r", str(src), "-Y", "tcp.len > 1000", "-T", "fields", "-e", "frame.number")
    k = int(out.split()[len(out.split()) // 3])
    n = capinfos_count(src)
    parts = [(1, k - 1), (k + 1, k + 3), (k, k), (k + 4, n)]  # packet k arrives after the next three
    files = []
    for i, (a, b) in enumerate(parts):
        f = tmp_path / f"p{i}.pcap"
        subprocess.run(["editcap", "-r", str(src), str(f), f"{a}-{b}"], check=True)
        files.append(str(f))
    shuffled = tmp_path / "shuffled.pcap"
    subprocess.run(["mergecap", "-a", "-F", "pcap", "-w", str(shuffled), *files], check=True)
    fixed = tmp_path / "fixed.pcap"
    subprocess.run(["reordercap", str(shuffled), str(fixed)], check=True, capture_output=True)
    an0, s0 = analyze_collect(src)
    for p in (shuffled, fixed):
        an, sessions = analyze_collect(p)
        assert an.packets == n
        tcp0 = [c for c in an0.connections if c.transport == "tcp"]
        tcp1 = [c for c in an.connections if c.transport == "tcp"]
        assert [c.client for c in tcp0] == [c.client for c in tcp1]
        for c0, c1 in zip(tcp0, tcp1):
            assert s0[c0.id].bufs == sessions[c1.id].bufs
        assert compare_follow(p, an, sessions, limit=5) > 0


def test_snap_length_cut_packets_are_counted_like_tshark(tmp_path):
    """A capture made with a snap length (tcpdump -s 600): the packets holding fewer bytes than
    were sent are counted in one warning naming the first, the same packets tshark marks
    (frame.cap_len < frame.len); the missing payload is a gap, not garbage frames."""
    need_tool("editcap")
    need_tool("tshark")
    src = SAMPLES / "http" / "h2c-nghttp.pcap"
    cut = tmp_path / "snap600.pcapng"
    subprocess.run(["editcap", "-s", "600", str(src), str(cut)], check=True)
    out = subprocess.run(["tshark", "-r", str(cut), "-T", "fields", "-e", "frame.number", "-Y", "frame.cap_len < frame.len"],
                         capture_output=True, text=True, check=True).stdout.split()
    an = analyze(str(cut))
    (w,) = [w for w in an.warnings if "snap length" in w]
    assert len(out) > 10 and w.startswith(f"{len(out)} packets (the first: packet {out[0]})")
    assert not any(f.type.startswith("UNKNOWN") for f in an.frames)
    assert analyze(str(src)).warnings == []
