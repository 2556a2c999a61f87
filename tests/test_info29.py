"""The Info column's length cap and the segments that arrive ahead of their PDU, against
tshark 4.0 (``tshark -o tcp.reassemble_out_of_order:TRUE -T fields -e _ws.col.Protocol -e
_ws.col.Info``), packet by packet, on captures built here: TCP connections written with dpkt
(``scripts/hostile/content_flow_inputs.py``'s packets), and one made with real tools (curl and
a raw socket against Python's http.server on loopback, captured by tcpdump) where they can run.

1. tshark's Info column is a 4,096-byte buffer (``COL_MAX_INFO_LEN``, its NUL included): an
   HTTP/1 request line of 5,000 bytes is shown as its first 4,095 bytes, no ellipsis; so is the
   ``[TCP segment of a reassembled PDU]`` that follows a long head, and a segment of 600
   pipelined requests.  wirefall wrote the whole line (5,015 characters).  tshark cuts at the
   byte, inside a UTF-8 character when one straddles the limit; wirefall's column then ends
   before that character (the bytes before are tshark's).
2. A segment that arrived after a hole and before the retransmission filling it, carrying bytes
   of a frame whose first byte is in the hole: tshark writes ``[TCP segment of a reassembled
   PDU]`` after the TCP summary (protocol TCP); wirefall wrote the TCP summary alone (the frame
   index has a frame only from its first byte's packet, the retransmission, on).
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import dpkt
import pytest

from wirefall.analyzer.capture import PacketSource
from wirefall.analyzer.info import COL_MAX_INFO_LEN, cap_info
from wirefall.analyzer.packet_record import packet_record
from wirefall.analyzer.pipeline import analyze

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts" / "hostile"))

from content_flow_inputs import TcpConn  # noqa: E402
from h2_spdy_inputs import h2frame  # noqa: E402

TSHARK = shutil.which("tshark")
pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")

SEG = "[TCP segment of a reassembled PDU]"


# ---------------------------------------------------------------- helpers

def _write(path: Path, packets: list[bytes]) -> Path:
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, snaplen=262144, linktype=dpkt.pcap.DLT_EN10MB)
        for i, buf in enumerate(packets):
            w.writepkt(buf, 1_900_000_000 + i * 0.01)
    return path


def _tshark(path: Path, *extra: str) -> list[tuple[str, bytes]]:
    """tshark's (protocol, Info bytes) per packet: bytes, as its column may end inside a character."""
    out = subprocess.run([TSHARK, "-r", str(path), "-o", "tcp.reassemble_out_of_order:TRUE", *extra, "-T", "fields",
                          "-e", "_ws.col.Protocol", "-e", "_ws.col.Info"], capture_output=True, check=True, timeout=120).stdout
    rows = []
    for line in out.split(b"\n")[:-1]:
        p, _, i = line.partition(b"\t")
        rows.append((p.decode(), i))
    return rows


def _whole_chars(b: bytes) -> bytes:
    """``b`` without a character cut at its end (the bytes a str can hold)."""
    for k in range(4):
        try:
            (b[: len(b) - k] if k else b).decode("utf-8")
            return b[: len(b) - k] if k else b
        except UnicodeDecodeError:
            continue
    raise AssertionError(b[-8:])


def _rows(path: Path, keys: list[str] | None = None):
    an = analyze(str(path), keys or [])
    src = PacketSource(str(path))
    try:
        return [packet_record(an, src, n) for n in range(1, an.packets + 1)]
    finally:
        src.close()


def _same_as_tshark(path: Path, *extra: str, keys: list[str] | None = None) -> list[tuple[str, bytes]]:
    """Every packet's Info and protocol are tshark's (the Info up to a character tshark's cut
    splits); returns tshark's rows."""
    theirs = _tshark(path, *extra)
    ours = _rows(path, keys)
    assert len(ours) == len(theirs)
    bad = [(r.number, r.protocol, r.info[-60:], p, i[-60:]) for r, (p, i) in zip(ours, theirs, strict=True)
           if r.info.encode() != _whole_chars(i) or r.protocol != p]
    assert not bad, bad[:5]
    assert all(len(r.info.encode()) < COL_MAX_INFO_LEN for r in ours)
    return theirs


def _get(target: bytes, extra: bytes = b"") -> bytes:
    return b"GET " + target + b" HTTP/1.1\r\nHost: h\r\n" + extra + b"\r\n"


def _resp(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(body) + body


# ---------------------------------------------------------------- 1. the cap

def test_a_long_request_line_is_cut_at_4095_bytes_as_tsharks(tmp_path):
    """A 5,000-byte target (one segment): tshark shows 4,095 bytes and no ellipsis; so does
    wirefall.  The same for targets whose 4,095th byte falls inside a 2- or 3-byte character
    (tshark's column ends with the character's first bytes; wirefall's before it), and for one
    where it falls between characters (equal to the byte)."""
    targets = [b"/" + b"a" * 5000, ("/x" + "é" * 2100).encode(), ("/" + "é" * 2100).encode(), ("/xy" + "€" * 1400).encode()]
    c = TcpConn(0).handshake()
    for t in targets:
        c.send(0, _get(t), segment=1 << 16).send(1, _resp(b"ok"), segment=1 << 16)
    theirs = _same_as_tshark(_write(tmp_path / "long.pcap", c.packets))
    long_ = [i for _, i in theirs if i.startswith(b"GET /")]
    assert len(long_) == 4 and all(len(i) == COL_MAX_INFO_LEN - 1 for i in long_)  # (tshark's cap, all four)
    assert long_[0] == b"GET /" + b"a" * 4090  # cut, no ellipsis
    assert long_[1].endswith(b"\xc3") and long_[3].endswith(b"\xe2\x82")  # (tshark cut inside a character)
    assert long_[2].decode().endswith("é")


def test_the_segment_marker_after_a_long_head_is_cut_too(tmp_path):
    """A POST head of ~4,080 bytes whose body ends in a later segment: tshark writes the line,
    then TCP's `` [TCP segment of a reassembled PDU]``, cut at 4,095 bytes inside the marker; the
    protocol stays TCP.  (A cap on the line alone, before the marker is added, would differ.)"""
    head = b"POST /" + b"p" * 4060 + b" HTTP/1.1\r\nHost: h\r\nContent-Length: 3000\r\n\r\n"
    c = TcpConn(0).handshake()
    c.send(0, head + b"x" * 1000, segment=1 << 16).send(0, b"x" * 2000, segment=1 << 16).send(1, _resp(b"ok"))
    theirs = _same_as_tshark(_write(tmp_path / "post.pcap", c.packets))
    cut = [(p, i) for p, i in theirs if i.startswith(b"POST /")]
    assert len(cut) == 2 and len(cut[0][1]) == COL_MAX_INFO_LEN - 1 and cut[0][0] == "TCP"
    assert b"[TCP seg" in cut[0][1] and not cut[0][1].endswith(b"PDU]")
    assert cut[1] == ("HTTP", b"POST /" + b"p" * 4060 + b" HTTP/1.1 ")  # (where the body ends: 4,076 bytes, whole)


def test_many_pipelined_requests_in_one_segment_are_cut_as_tsharks(tmp_path):
    """600 pipelined requests in one segment: tshark's Info lists them up to 4,095 bytes; so
    does wirefall's (it built all 600 lines, ~16 kB, before)."""
    reqs = b"".join(_get(b"/r%d" % i) for i in range(600))
    c = TcpConn(0).handshake()
    c.send(0, reqs, segment=1 << 16)
    for _ in range(600):
        c.send(1, _resp(b"k"), segment=1 << 16)
    theirs = _same_as_tshark(_write(tmp_path / "pipe.pcap", c.packets))
    assert len(theirs[3][1]) == COL_MAX_INFO_LEN - 1


def test_cap_info_is_the_byte_cut_and_constant_past_the_limit():
    """``cap_info`` keeps short text as it is, cuts at 4,095 UTF-8 bytes, drops a character
    the limit splits, and reads no more than the first 4,096 characters of a huge text."""
    assert cap_info("GET / HTTP/1.1 ") == "GET / HTTP/1.1 "
    assert cap_info("a" * 4095) == "a" * 4095
    assert cap_info("a" * 4096) == "a" * 4095
    assert cap_info("x" + "é" * 3000).encode() == ("x" + "é" * 2047).encode()  # 4,095 bytes: whole characters
    assert cap_info("é" * 3000).encode() == ("é" * 2047).encode()  # (byte 4,095 is the first half of the 2,048th)
    assert cap_info("→" * 1023) == "→" * 1023 and len(cap_info("→" * 1366).encode()) == 4095
    assert cap_info("😀" * 1100) == "😀" * 1023
    huge = "a" * 50_000_000
    t = time.perf_counter()
    assert cap_info(huge) == "a" * 4095
    assert time.perf_counter() - t < 0.05


def test_a_huge_request_target_costs_linear_time(tmp_path):
    """A request head of 200 kB and one of 800 kB (one target across 1,400-byte segments, under
    the 1 MiB head limit): the rows of the 800 kB capture cost about four times the 200 kB
    one's (not sixteen), and the head's Info is tshark's 4,095-byte cut of its line."""

    def build(n: int) -> Path:
        c = TcpConn(0).handshake()
        c.send(0, _get(b"/" + b"a" * n)).send(1, _resp(b"ok"))
        return _write(tmp_path / f"huge{n}.pcap", c.packets)

    def cost(path: Path) -> tuple[float, list]:
        t = time.perf_counter()
        rows = _rows(path)
        return time.perf_counter() - t, rows

    small, big = build(200_000), build(800_000)
    cost(small)  # (imports, caches)
    ts, _ = cost(small)
    tb, rows = cost(big)
    assert tb < 8 * ts + 0.5, (ts, tb)
    heads = [r for r in rows if r.info.startswith("GET /")]
    assert len(heads) == 1 and heads[0].info == "GET /" + "a" * 4090
    theirs = _tshark(big)
    assert theirs[heads[0].number - 1] == ("HTTP", heads[0].info.encode())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0 or not shutil.which("tcpdump") or not shutil.which("curl"),
                    reason="needs root, tcpdump and curl (a live loopback capture)")
def test_real_long_urls_from_curl_and_a_raw_client_are_tsharks(tmp_path):
    """A real capture: curl asks Python's http.server for a 5,000-byte URL (and one of 2,100
    ``é``, which curl percent-encodes), a raw socket sends 2,100 ``é`` and 1,400 ``€`` unescaped
    (tshark's cut falls inside a character), tcpdump captures loopback.  Every packet's Info and
    protocol are tshark's."""
    port = _free_port()
    pcap = tmp_path / "real.pcap"
    dump = subprocess.Popen(["tcpdump", "-i", "lo", "--immediate-mode", "-U", "-w", str(pcap), f"tcp port {port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    srv = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                           cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert dump.stderr is not None
        assert b"listening on" in dump.stderr.readline()  # (tcpdump says so once it captures)
        for _ in range(200):  # (the server listening)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        for path in ("/" + "a" * 5000, "/" + "é" * 2100):
            subprocess.run(["curl", "-s", "-o", "/dev/null", f"http://127.0.0.1:{port}{path}"], check=True, timeout=30)
        for path in ("/x" + "é" * 2100, "/xy" + "€" * 1400):
            with socket.create_connection(("127.0.0.1", port)) as s:
                s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                while s.recv(65536):
                    pass
        time.sleep(0.5)
    finally:
        srv.terminate()
        srv.wait(10)
        dump.terminate()
        dump.wait(10)
    theirs = _same_as_tshark(pcap)
    long_ = [i for _, i in theirs if i.startswith(b"GET /")]
    assert len(long_) == 4 and all(len(i) == COL_MAX_INFO_LEN - 1 for i in long_)


# ---------------------------------------------------------------- 2. segments ahead of their PDU

def _reordered(tmp_path: Path, name: str, pieces: list[bytes], order: list[int]) -> Path:
    """Three pipelined requests, then the server's ``pieces`` (one segment each) captured in
    ``order`` (a later piece before an earlier one: the earlier one was lost and came again)."""
    c = TcpConn(0).handshake()
    c.send(0, b"".join(_get(b"/r%d" % i) for i in range(1, 4)))
    start = len(c.packets)
    for p in pieces:
        c.send(1, p, segment=1 << 16)
    segs = c.packets[start:]
    return _write(tmp_path / name, c.packets[:start] + [segs[i] for i in order])


R1, R2, R3 = _resp(b"a" * 100), _resp(b"b" * 2000), _resp(b"c" * 300)


@pytest.mark.parametrize("name,pieces,order,ahead", [
    # the rest of a response whose head is in the hole
    ("rest-of-message", [R1, R2[:1200], R2[1200:], R3], [0, 2, 1, 3], [6]),
    # a whole response after a hole: it is dissected when the hole is filled, not before
    ("whole-message", [R1, R2, R3], [0, 2, 1], [6]),
    # two segments ahead of the retransmission (the second has no "previous segment not captured")
    ("two-ahead", [R1, R2[:700], R2[700:1400], R2[1400:] + R3], [0, 2, 3, 1], [6, 7]),
])
def test_http1_segments_ahead_of_their_pdu_are_tsharks(tmp_path, name, pieces, order, ahead):
    theirs = _same_as_tshark(_reordered(tmp_path, f"{name}.pcap", pieces, order))
    for n in ahead:
        assert theirs[n - 1][0] == "TCP" and theirs[n - 1][1].endswith(b" Len=%d " % len(pieces[order[n - 5]]) + SEG.encode()), theirs[n - 1]


def test_h2c_data_frame_ahead_of_its_header_is_tsharks(tmp_path):
    """Cleartext HTTP/2 (Decode As): the DATA frame's first bytes (its 9-byte header) are in the
    lost segment, its tail in the one captured before the retransmission."""
    c = TcpConn(0, sport=8080).handshake()
    hdrs = bytes([0x82, 0x86, 0x84, 0x41, 1]) + b"h"  # GET http / :authority h
    c.send(0, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + h2frame(4, 0, 0, b"") + h2frame(1, 5, 1, hdrs), segment=1 << 16)
    start = len(c.packets)
    data = h2frame(0, 1, 1, b"d" * 3000)
    for p in (h2frame(4, 0, 0, b"") + h2frame(4, 1, 0, b"") + h2frame(1, 4, 1, b"\x88"), data[:1400], data[1400:]):
        c.send(1, p, segment=1 << 16)
    segs = c.packets[start:]
    path = _write(tmp_path / "h2c.pcap", c.packets[:start] + [segs[0], segs[2], segs[1]])
    theirs = _same_as_tshark(path, "-d", "tcp.port==8080,http2")
    assert theirs[5][0] == "TCP" and theirs[5][1].endswith(SEG.encode())


def test_tls_segment_ahead_of_its_record_is_tsharks():
    """lossy/page-h1 packet 419: the end of a TLS record (carrying the PNG response 430
    completes) that arrived before the retransmission 430 of the segment where the record
    begins; every packet of the capture is tshark's (test_info.py excused it before)."""
    path = ROOT / "sample_captures/lossy/page-h1.pcapng"
    keys = ROOT / "sample_captures/lossy/page-h1.keys"
    theirs = _same_as_tshark(path, "-o", f"tls.keylog_file:{keys}", keys=[str(keys)])
    assert theirs[418][0] == "TCP" and theirs[418][1].startswith(b"[TCP Previous segment not captured] ")
    assert theirs[418][1].endswith(b" " + SEG.encode())
