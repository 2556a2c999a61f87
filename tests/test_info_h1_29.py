"""HTTP/1 in the packet list where a TCP segment (over TLS: a record) ends one message and
begins the next, compared packet by packet with tshark 4.0 (Info and protocol columns).

tshark's HTTP dissector writes a message's first line as soon as it has read it, before it asks
TCP for the rest of the message; so the packet shows the messages that end there and then
``LINE `` of the one going on, with no segment marker (TCP writes ``[TCP segment of a reassembled
PDU]`` only where it could dissect nothing of the segment).  wirefall left that line out, and
wrote TCP's marker (and the protocol ``TCP``) after a packet's complete messages when the next
message's body went on.  Over TLS, a record whose one complete message began in an earlier
record ends with ``[TLS segment of a reassembled PDU]`` instead of that line.

The captures: (a) the first 20,000 packets of the corpus' h2load HTTP/1.1 capture (cut with
editcap here; skipped without the corpus); (b) captures made here with python's http.server on
loopback, a raw socket (cleartext, and TLS with a key log) pipelining requests in writes that end
inside the next request, and a client with a small receive window that lets the server's answers
pile up, so that segments cut them anywhere; tcpdump captures (skipped without root and tcpdump).
Every row must be tshark's, or one of ``test_info.ALLOWED_ROWS`` (named rules, docs/PACKETS.md).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest
from test_info import ALLOWED_ROWS

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "benchmarks" / "corpus"
TSHARK = shutil.which("tshark")
WIREFALL = str(ROOT / ".venv" / "bin" / "wirefall")
SEG = "[TCP segment of a reassembled PDU]"
TLS_SEG = "[TLS segment of a reassembled PDU]"

pytestmark = pytest.mark.skipif(TSHARK is None, reason="tshark not installed")
live = pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0 or not shutil.which("tcpdump"),
                          reason="needs root and tcpdump (a live loopback capture)")


# ---------------------------------------------------------------- comparing with tshark

def _rows(cap: Path, keys: Path | None) -> dict[int, tuple[str, str, str, str]]:
    """packet -> (wirefall protocol, wirefall Info, tshark protocol, tshark Info): wirefall's
    ``packets --json -j 1``, tshark as tests/test_info.py runs it."""
    cmd = [WIREFALL, "packets", "--json", "-j", "1", str(cap)] + (["--keylog", str(keys)] if keys else ["--no-keys"])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    mine = {r["packet"]: (r["protocol"], r["info"]) for r in json.loads(out.stdout)}
    tcmd = [TSHARK, "-r", str(cap), "-o", "tcp.reassemble_out_of_order:TRUE"]
    if keys:
        tcmd += ["-o", f"tls.keylog_file:{keys}"]
    tcmd += ["-T", "fields", "-e", "frame.number", "-e", "_ws.col.Protocol", "-e", "_ws.col.Info"]
    theirs = {}
    for ln in subprocess.run(tcmd, capture_output=True, text=True, check=True, timeout=600).stdout.splitlines():
        n, p, i = ln.split("\t", 2)
        theirs[int(n)] = (p, i)
    assert mine.keys() == theirs.keys()
    return {n: (*mine[n], *theirs[n]) for n in mine}


def _same_as_tshark(cap: Path, keys: Path | None = None) -> tuple[dict, Counter]:
    """Every row tshark's or under a named rule; the rows and the rules used."""
    rows = _rows(cap, keys)
    used: Counter = Counter()
    bad = []
    for n, (wp, w, tp, t) in rows.items():
        if (wp, w) == (tp, t):
            continue
        rule = next((name for name, _, ok in ALLOWED_ROWS if ok(wp, w, tp, t)), None)
        if rule is None:
            bad.append((n, wp, w, tp, t))
        else:
            used[rule] += 1
    assert not bad, "\n".join(f"#{n}\n  wirefall: {wp} {w!r}\n  tshark:   {tp} {t!r}" for n, wp, w, tp, t in bad[:20])
    return rows, used


def _payload_rows(cap: Path, port: int, keys: Path | None = None) -> list[tuple[int, int, int, str]]:
    """(packet, source port, TCP payload length, tshark Info) of the segments with payload."""
    cmd = [TSHARK, "-r", str(cap), "-o", "tcp.reassemble_out_of_order:TRUE"] + (["-o", f"tls.keylog_file:{keys}"] if keys else [])
    cmd += ["-Y", f"tcp.len > 0 && tcp.port == {port}", "-T", "fields", "-e", "frame.number", "-e", "tcp.srcport", "-e", "tcp.len",
            "-e", "_ws.col.Info"]
    out = []
    for ln in subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=120).stdout.splitlines():
        n, sp, ln_, info = ln.split("\t", 3)
        out.append((int(n), int(sp), int(ln_), info))
    return out


# ---------------------------------------------------------------- (a) the corpus' h2load capture

@pytest.mark.slow
@pytest.mark.skipif(not (CORPUS / "h1-mtu.pcap").is_file() or not shutil.which("editcap"), reason="corpus capture or editcap absent")
def test_corpus_h1_capture_is_tsharks(tmp_path):
    """The first 20,000 packets of h1-mtu (h2load's HTTP/1.1 over TLS, MTU-sized segments): every
    row is tshark's (none differed before this change either: its requests are not pipelined;
    it guards the change against the common case)."""
    cut = tmp_path / "h1-20k.pcap"
    subprocess.run(["editcap", "-r", str(CORPUS / "h1-mtu.pcap"), str(cut), "1-20000"], check=True, capture_output=True, timeout=120)
    rows, used = _same_as_tshark(cut, CORPUS / "h1-mtu.keys")
    assert len(rows) == 20000 and not used
    assert sum(tp == "HTTP" for _, _, tp, _ in rows.values()) > 6000  # (the responses and requests of the cut)


# ---------------------------------------------------------------- (b) captures made here

SERVER = r'''
import functools, http.server, ssl, sys

class H(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # (keep-alive: pipelined requests answered in order)

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

httpd = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), functools.partial(H, directory=sys.argv[2]))
if len(sys.argv) > 3:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[3], sys.argv[4])
    ctx.num_tickets = 0  # (no NewSessionTicket records to share a segment with an answer: a row of TLS's own)
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
httpd.serve_forever()
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _served_and_captured(tmp_path: Path, pcap: Path, tls: bool = False):
    """python's http.server (HTTP/1.1; TLS with a throwaway certificate) on a loopback port,
    serving four small files, and tcpdump on that port while the block runs; yields the port."""
    www = tmp_path / "www"
    www.mkdir()
    (www / "a.txt").write_text("hello\n" * 3)
    (www / "b.css").write_text("body{color:red}\n" * 2)
    (www / "c.json").write_text('{"k": 1}\n')
    (www / "d.html").write_text("<p>x</p>\n" * 6)
    args = []
    if tls:
        cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                        "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost"],
                       check=True, capture_output=True, timeout=60)
        args = [str(cert), str(key)]
    port = _free_port()
    srv = subprocess.Popen([sys.executable, "-c", SERVER, str(port), str(www), *args],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dump = None
    try:
        for _ in range(200):  # (the server listening; this probe is not captured)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        # (--immediate-mode: without it packets wait in the kernel's buffer and a capture
        # stopped soon after loses them)
        dump = subprocess.Popen(["tcpdump", "-i", "lo", "--immediate-mode", "-U", "-w", str(pcap), f"tcp port {port}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        assert dump.stderr is not None
        assert b"listening on" in dump.stderr.readline()
        yield port
        time.sleep(0.3)
    finally:
        if dump is not None:
            dump.terminate()
            dump.wait(10)
        srv.terminate()
        srv.wait(10)


def _get(path: bytes, close: bool = False) -> bytes:
    return b"GET " + path + b" HTTP/1.1\r\nHost: h\r\n" + (b"Connection: close\r\n" if close else b"") + b"\r\n"


POST = b"POST /up HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\n"
# pipelined requests in writes (one segment each; over TLS one record each) that end inside the next request
WRITES = [
    _get(b"/a.txt") + b"GET /b.css HTTP/1.1\r\n",  # a ends; b's first line
    b"Host: h\r\n\r\n" + _get(b"/c.json") + b"GET /d.html HTTP/1.1\r\nHost: h\r\n",  # b and c end; d's line and a field
    b"\r\n" + POST + b"01234",  # d ends; the POST's head and half its body
    b"56789GE",  # the POST ends; two bytes of the next line
    b"T /a.txt HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
]
# tshark's Info of those segments
CLEAR_INFO = [
    "GET /a.txt HTTP/1.1 GET /b.css HTTP/1.1 ",
    "GET /b.css HTTP/1.1 GET /c.json HTTP/1.1 GET /d.html HTTP/1.1 ",
    "GET /d.html HTTP/1.1 POST /up HTTP/1.1 ",
    "POST /up HTTP/1.1  (text/plain)",
    "GET /a.txt HTTP/1.1 ",
]
# over TLS: the same, except where the record's one complete message is a body whose head (with
# its Content-Length) was read in an earlier record: TLS's marker (d's head, read across two
# records, is not such a one)
TLS_INFO = [
    "GET /a.txt HTTP/1.1 GET /b.css HTTP/1.1 ",
    "GET /b.css HTTP/1.1 GET /c.json HTTP/1.1 GET /d.html HTTP/1.1 ",
    "GET /d.html HTTP/1.1 POST /up HTTP/1.1 ",
    "POST /up HTTP/1.1  (text/plain)" + TLS_SEG,
    "GET /a.txt HTTP/1.1 ",
]


def _send_in_pieces(s, writes: list[bytes]) -> None:
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for w in writes:
        s.sendall(w)
        time.sleep(0.05)  # (each write its own segment)


def _read_all(s) -> bytes:
    data = b""
    while True:
        try:
            b = s.recv(65536)
        except (OSError, ssl.SSLError):
            break
        if not b:
            break
        data += b
    return data


def _slow_reader(port: int) -> socket.socket:
    """A client whose receive window is small, so the server's answers pile up in its send
    buffer and go out in window-sized segments cut anywhere in the messages."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    s.connect(("127.0.0.1", port))
    return s


@live
def test_pipelined_requests_and_piled_up_responses_are_tsharks(tmp_path):
    """Cleartext: the five writes above on a connection, then 30 GETs (the first line alone in a
    segment, the rest in one write) whose answers pile up behind a small window.  Every row is
    tshark's (or a named rule): the request segments that end one request and begin the next
    show the next one's line, the POST's head read with its body going on shows its line with
    no marker and the protocol HTTP, and the response segments ending in the head of the next
    response too."""
    pcap = tmp_path / "pipe.pcap"
    with _served_and_captured(tmp_path, pcap) as port:
        s = _slow_reader(port)
        _send_in_pieces(s, WRITES)
        time.sleep(0.3)
        first = _read_all(s)
        s.close()
        s = _slow_reader(port)
        paths = [b"/a.txt", b"/b.css", b"/c.json", b"/d.html"] * 7 + [b"/a.txt"]
        bulk = b"".join(_get(p) for p in paths) + _get(b"/d.html", close=True)
        _send_in_pieces(s, [bulk[:21], bulk[21:]])  # (the first line alone: a head begun where nothing ends)
        time.sleep(0.3)
        second = _read_all(s)
        s.close()
    assert first.count(b"HTTP/1.1 200 OK") == 6 and second.count(b"HTTP/1.1 200 OK") == 30
    rows, used = _same_as_tshark(pcap)
    segs = _payload_rows(pcap, port)
    client = [r for r in segs if r[1] != port]
    assert [info for *_, info in client[:6]] == CLEAR_INFO + ["GET /a.txt HTTP/1.1  " + SEG]
    assert used["http1-head-begun-alone"] >= 1  # (that segment: wirefall writes no line there yet)
    assert rows[client[2][0]][0] == rows[client[2][0]][2] == "HTTP"  # (the POST's line: no TCP marker, HTTP's column)
    # the server's segments that end a response and begin the next one's head (where a
    # window's end fell inside a head: most of these small answers are head)
    ends_in_next = [n for n, sp, _, info in segs if sp == port and re.search(r"\)HTTP/1\.1 \d{3} [A-Za-z ]*$", info)]
    assert ends_in_next, segs
    assert all(rows[n][1] == rows[n][3] for n in ends_in_next)


@live
def test_pipelined_requests_over_tls_are_tsharks(tmp_path):
    """The same five writes over TLS (one record each; python's ssl client writes the key log):
    the record ending the POST's body (its head and length read in the record before) ends with
    TLS's marker, the others with the next request's line, as tshark's."""
    pcap, keys = tmp_path / "tls.pcap", tmp_path / "tls.keys"
    with _served_and_captured(tmp_path, pcap, tls=True) as port:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.keylog_filename = str(keys)
        with ctx.wrap_socket(socket.create_connection(("127.0.0.1", port))) as s:
            time.sleep(0.1)  # (the handshake's last flight in segments of its own)
            # (the connection kept open and closed by the client once the six answers are in:
            # a server closing first makes python's client send a Decode Error alert, a row
            # of TLS's own)
            _send_in_pieces(s, WRITES[:-1] + [WRITES[-1].replace(b"Connection: close\r\n", b"")])
            s.settimeout(20)
            got = b""
            while got.count(b"HTTP/1.1 200 OK") < 6 or not got.endswith(b"hello\n" * 3):
                b = s.recv(65536)
                assert b, got
                got += b
    assert got.count(b"HTTP/1.1 200 OK") == 6
    rows, used = _same_as_tshark(pcap, keys)
    client = [r for r in _payload_rows(pcap, port, keys) if r[1] != port and r[3].startswith(("GET", "POST"))]
    assert [info for *_, info in client] == TLS_INFO
    assert all(rows[n][0] == "HTTP" for n, *_ in client)
