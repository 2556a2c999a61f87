"""Captures with many bodies of the same name, for ``wirefall objects`` (review 20, defect 2).

``Names.take`` tried ``(1)``, ``(2)`` … from the start for every body of a name that was
taken, massaging and ``os.stat``-ing each candidate: O(k²) for k bodies of one name (the
reviewer's h2-big-mtu capture: 6296 bodies of ``obj``, 44 % of the command's time), and the
command said "wrote 6296 objects" where 1000 files were written.

- ``same_names(path, n)``: synthetic (dpkt; no tool needed) — one HTTP/1.1 keep-alive
  connection to port 80 with ``n`` GETs of ``/obj``, ``n // 2`` of ``/dir/page.html`` and
  ``n // 4`` of ``/x.txt``, interleaved, and, after the first two ``/x.txt``, one GET of
  ``/x(1).txt`` (a name that is one of another's candidates); every response body says which
  request it answers.  For counting the work against ``n``.
- ``real_same_names(path, n)``: the same requests made for real: Python's HTTP/1.1 server
  (``http.server``, keep-alive) and ``http.client`` on loopback, captured with ``tcpdump -i
  lo``, plus two POSTs to ``/obj`` (request bodies, which tshark exports too).  For comparing
  names and bodies with ``tshark --export-objects http,DIR``.  Needs root (tcpdump on lo).

    python scripts/hostile/objects20_inputs.py OUTDIR [N]
"""
from __future__ import annotations

import http.client
import http.server
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from content_flow_inputs import TcpConn, write  # noqa: E402

CROSS = "/x(1).txt"  # requested once, after the second /x.txt (whose file is x(1).txt)


def requests(n: int) -> list[tuple[str, str, bytes]]:
    """(method, target, request body) in order: ``n`` /obj, ``n // 2`` /dir/page.html,
    ``n // 4`` /x.txt interleaved, and ``CROSS`` after the second /x.txt."""
    out: list[tuple[str, str, bytes]] = []
    xs = 0
    for i in range(n):
        out.append(("GET", "/obj", b""))
        if i % 2 == 0:
            out.append(("GET", "/dir/page.html", b""))
        if i % 4 == 0:
            out.append(("GET", "/x.txt", b""))
            xs += 1
            if xs == 2:
                out.append(("GET", CROSS, b""))
    return out


def response_body(i: int, target: str) -> bytes:
    return b"answer %d to %s\n" % (i, target.encode())


def same_names(path, n: int = 100) -> str:
    c = TcpConn(1, sport=80).handshake()
    for i, (method, target, body) in enumerate(requests(n)):
        c.send(0, b"%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (method.encode(), target.encode(), len(body)) + body)
        b = response_body(i, target)
        c.send(1, b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(b) + b)
    return write(path, c.packets, normal=False)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # (head and body are two writes: no delayed-ACK wait per response)
    count = 0

    def _answer(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        b = response_body(type(self).count, self.path)
        type(self).count += 1
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    do_GET = do_POST = _answer

    def log_message(self, *a) -> None:  # quiet
        pass


def real_same_names(path, n: int = 40, tries: int = 3) -> str:
    """``requests(n)`` and two POSTs of ``/obj`` over one keep-alive connection on lo,
    captured with tcpdump (root); made again (up to ``tries`` times) if tcpdump reports a
    packet dropped by the kernel."""
    for _ in range(tries):
        dropped = _capture(Path(path), n)
        if not dropped:
            return str(path)
    raise RuntimeError(f"tcpdump dropped {dropped} packets {tries} times")


def _capture(path: Path, n: int) -> int:
    _Handler.count = 0
    srv = http.server.HTTPServer(("127.0.0.1", 0), _Handler)
    port = srv.server_address[1]
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    log = path.with_suffix(".tcpdump.log")
    with open(log, "w+") as err:
        td = subprocess.Popen(["tcpdump", "-i", "lo", "--immediate-mode", "-B", "131072", "-U", "-s", "0", "-w", str(path),
                               "tcp", "port", str(port)], stdout=subprocess.DEVNULL, stderr=err)
        try:
            t0 = time.time()
            while "listening on" not in log.read_text():
                if td.poll() is not None or time.time() - t0 > 10:
                    raise RuntimeError(f"tcpdump did not start: {log.read_text()}")
                time.sleep(0.05)
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.connect()
            c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            reqs = requests(n)
            reqs[3:3] = [("POST", "/obj", b"upload one\n")]
            reqs.append(("POST", "/obj", b"upload two\n"))
            for method, target, body in reqs:
                c.request(method, target, body=body or None, headers={"Content-Type": "text/plain"} if body else {})
                c.getresponse().read()
            c.close()
            time.sleep(0.3)  # the FINs
        finally:
            td.send_signal(signal.SIGINT)
            td.wait(10)
            srv.shutdown()
            srv.server_close()
    report = log.read_text()
    log.unlink()
    m = re.search(r"(\d+) packets? dropped by kernel", report)
    if m is None:
        raise RuntimeError(f"no tcpdump report: {report}")
    return int(m.group(1))


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    print(same_names(out / "objects20-same.pcap", n))
    try:
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW).close()
    except (PermissionError, AttributeError, OSError):
        print("not root: no real capture", file=sys.stderr)
        return 0
    print(real_same_names(out / "objects20-real.pcap", n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
