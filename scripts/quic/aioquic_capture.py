#!/usr/bin/env python3
"""Capture aioquic 1.7.2 HTTP/3 client <-> server on loopback, with key log and the
client's own log of every response (truth for tests/test_quic.py).

Server: scripts/lab/h3_server.py (aioquic) serving the lab page (scripts/lab/page/generate.py,
real JPEG/PNG images).  Client: aioquic.asyncio.connect + H3Connection, GETs every page
resource on one connection (concurrently), QuicConfiguration(secrets_log_file=...).
tcpdump -i lo -U -w OUT.pcap udp port P; every process stopped by its PID.

    .venv/bin/python scripts/quic/aioquic_capture.py OUTDIR [--count 6]
Writes OUTDIR/aioquic-h3.pcap, aioquic-h3.keys, aioquic-h3.client.json
"""
from __future__ import annotations

import argparse
import asyncio
import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from aioquic.asyncio import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration

HERE = Path(__file__).resolve().parent
LAB = HERE.parent / "lab"


class Client(QuicConnectionProtocol):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.h3 = H3Connection(self._quic)
        self.waiters: dict[int, asyncio.Future] = {}
        self.resp: dict[int, dict] = {}

    def quic_event_received(self, event):
        for ev in self.h3.handle_event(event):
            r = self.resp.get(ev.stream_id)
            if r is None:
                continue
            if isinstance(ev, HeadersReceived):
                r["headers"] = [(k.decode(), v.decode()) for k, v in ev.headers]
                r["status"] = int(dict(ev.headers)[b":status"])
            elif isinstance(ev, DataReceived):
                r["bytes"] += len(ev.data)
            if getattr(ev, "stream_ended", False):
                self.waiters[ev.stream_id].set_result(r)

    async def get(self, authority: str, path: str) -> dict:
        sid = self._quic.get_next_available_stream_id()
        self.h3.send_headers(sid, [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", authority.encode()),
                                   (b":path", path.encode()), (b"user-agent", b"aioquic-wirefall")], end_stream=True)
        self.resp[sid] = {"stream_id": sid, "url": f"https://{authority}{path}", "status": None, "bytes": 0}
        self.waiters[sid] = asyncio.get_running_loop().create_future()
        self.transmit()
        return await asyncio.wait_for(self.waiters[sid], 20)


async def run_client(port: int, paths: list[str], keys: Path) -> list[dict]:
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, verify_mode=0, server_name="localhost")
    with open(keys, "a") as kf:
        cfg.secrets_log_file = kf
        async with connect("127.0.0.1", port, configuration=cfg, create_protocol=Client) as c:
            first = await c.get(f"localhost:{port}", paths[0])
            rest = await asyncio.gather(*(c.get(f"localhost:{port}", p) for p in paths[1:]))
            c.close()
            await asyncio.sleep(0.2)
    return [first, *rest]


def free_port() -> int:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


@contextmanager
def captured(pcap: Path, port: int, server: list[str], **popen) -> Iterator[None]:
    """tcpdump on loopback writing UDP ``port``'s packets to ``pcap``, and the server ``server``
    (its argv; ``popen``: Popen's other arguments) started; the body runs the client; then the
    server is stopped (SIGTERM) and tcpdump (SIGINT: it writes what it holds), killed after 5 s.
    (The aioquic samples' scripts: this one, scripts/browser/aioquic_qlog.py, scripts/qlog/aioquic_post.py.)"""
    procs = []
    try:
        procs.append(subprocess.Popen(["tcpdump", "-i", "lo", "-U", "-w", str(pcap), "udp", "port", str(port)],
                                      stderr=subprocess.DEVNULL))
        procs.append(subprocess.Popen(server, **popen))
        time.sleep(1.5)
        yield
    finally:
        for p in reversed(procs):
            p.send_signal(signal.SIGINT if p is procs[0] else signal.SIGTERM)
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--count", type=int, default=6)
    a = ap.parse_args()
    a.outdir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="wf-aioquic-"))
    site = work / "site"
    subprocess.run([sys.executable, str(LAB / "page" / "generate.py"), str(site), "--count", str(a.count)], check=True)
    cert, key = work / "cert.pem", work / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost"], check=True, capture_output=True)
    sys.path.insert(0, str(LAB / "page"))
    import generate  # noqa: E402  (the lab page's own resource list)

    paths = ["/"] + [r["path"] if isinstance(r, dict) else getattr(r, "path", r) for r in generate.resources(a.count)]
    port = free_port()
    pcap, keys, log = a.outdir / "aioquic-h3.pcap", a.outdir / "aioquic-h3.keys", a.outdir / "aioquic-h3.client.json"
    keys.unlink(missing_ok=True)
    with captured(pcap, port, [sys.executable, str(LAB / "h3_server.py"), "--root", str(site), "--cert", str(cert), "--key", str(key),
                               "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
        results = asyncio.run(run_client(port, paths, keys))
        time.sleep(0.5)
    import aioquic
    log.write_text(json.dumps({"aioquic": aioquic.__version__, "port": port, "responses": results}, indent=1))
    print(f"{pcap} {pcap.stat().st_size} bytes, {len(results)} responses")
    return 0


if __name__ == "__main__":
    sys.exit(main())
