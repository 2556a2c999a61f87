#!/usr/bin/env python3
"""Capture an aioquic HTTP/3 upload (a POST with a known body) with both endpoints' own qlogs.

A real implementation's qlog of a request with a body, as truth for the qlog reader
(tests/test_qlog_upload31.py): aioquic's client GETs /hello, then POSTs /upload with BODY bytes
(``--body``, a known pattern) in two DATA frames, the second with ``end_stream``; the server
(this script with ``--serve``, aioquic's H3 API) reads the whole body, waits ``--delay`` ms and
answers 200 with what it received.  Both QuicConfigurations are given a ``QuicFileLogger``
(aioquic's qlog writer: qlog 0.3, JSON, QUIC + HTTP/3 events; client and server vantage
points), the client a ``secrets_log_file``; tcpdump captures the loopback UDP port.  Each
process is stopped by its PID.

    .venv/bin/python scripts/qlog/aioquic_post.py OUTDIR [--name aioquic-post] [--body 30000] [--delay 25]
Writes OUTDIR/NAME.pcap, NAME.keys, NAME.qlog (the client's qlog), NAME.server.qlog (the
server's) and NAME.client.json (the client's own record: per request its stream, method, path,
body bytes sent, status, response bytes and text).
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "quic"))
import aioquic_capture as cap  # noqa: E402  (the aioquic samples' helpers: free_port, captured)
from aioquic.asyncio import QuicConnectionProtocol, connect, serve  # noqa: E402
from aioquic.h3.connection import H3_ALPN, H3Connection  # noqa: E402
from aioquic.h3.events import DataReceived, HeadersReceived  # noqa: E402
from aioquic.quic.configuration import QuicConfiguration  # noqa: E402
from aioquic.quic.events import ProtocolNegotiated  # noqa: E402
from aioquic.quic.logger import QuicFileLogger  # noqa: E402

SPLIT = 20_000  # the body's first DATA frame (the rest, with end_stream, is the second)


def body_of(n: int) -> bytes:
    """The known request body: n bytes of a fixed pattern."""
    return bytes((i * 7 + 3) & 0xFF for i in range(n))


# ---------------------------------------------------------------- server (--serve)

class UploadServer(QuicConnectionProtocol):
    delay = 0.025

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.h3: H3Connection | None = None
        self.req: dict[int, dict] = {}

    def quic_event_received(self, event) -> None:
        if isinstance(event, ProtocolNegotiated) and event.alpn_protocol in H3_ALPN:
            self.h3 = H3Connection(self._quic)
        if self.h3 is None:
            return
        for ev in self.h3.handle_event(event):
            if isinstance(ev, HeadersReceived):
                h = dict(ev.headers)
                self.req[ev.stream_id] = {"method": h.get(b":method", b"").decode(), "path": h.get(b":path", b"").decode(),
                                          "hash": hashlib.sha256(), "bytes": 0}
            elif isinstance(ev, DataReceived) and ev.stream_id in self.req:
                self.req[ev.stream_id]["bytes"] += len(ev.data)
                self.req[ev.stream_id]["hash"].update(ev.data)
            if getattr(ev, "stream_ended", False) and ev.stream_id in self.req:
                # answer once the whole request is in, after the server's think time
                asyncio.get_running_loop().call_later(self.delay, self._answer, ev.stream_id)

    def _answer(self, sid: int) -> None:
        r = self.req.pop(sid)
        body = json.dumps({"method": r["method"], "path": r["path"], "received": r["bytes"],
                           "sha256": r["hash"].hexdigest()}).encode()
        assert self.h3 is not None
        self.h3.send_headers(sid, [(b":status", b"200"), (b"server", b"wirefall-aioquic-post"),
                                   (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())])
        self.h3.send_data(sid, body, end_stream=True)
        self.transmit()


async def serve_main(port: int, cert: str, key: str, qlog_dir: str, delay_ms: float) -> None:
    cfg = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN)
    cfg.load_cert_chain(cert, key)
    cfg.quic_logger = QuicFileLogger(qlog_dir)
    UploadServer.delay = delay_ms / 1000.0
    server = await serve("127.0.0.1", port, configuration=cfg, create_protocol=UploadServer)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()


# ---------------------------------------------------------------- client

class Client(QuicConnectionProtocol):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.h3 = H3Connection(self._quic)
        self.waiters: dict[int, asyncio.Future] = {}
        self.resp: dict[int, dict] = {}

    def quic_event_received(self, event) -> None:
        for ev in self.h3.handle_event(event):
            r = self.resp.get(ev.stream_id)
            if r is None:
                continue
            if isinstance(ev, HeadersReceived):
                r["status"] = int(dict(ev.headers)[b":status"])
            elif isinstance(ev, DataReceived):
                r["bytes"] += len(ev.data)
                r["text"] += ev.data.decode("latin-1")
            if getattr(ev, "stream_ended", False):
                self.waiters[ev.stream_id].set_result(r)

    async def request(self, authority: str, method: str, path: str, body: bytes | None) -> dict:
        sid = self._quic.get_next_available_stream_id()
        hdrs = [(b":method", method.encode()), (b":scheme", b"https"), (b":authority", authority.encode()),
                (b":path", path.encode()), (b"user-agent", b"aioquic-wirefall")]
        if body is not None:
            hdrs += [(b"content-type", b"application/octet-stream"), (b"content-length", str(len(body)).encode())]
        self.resp[sid] = {"stream_id": sid, "method": method, "path": path, "request_body_bytes": len(body or b""),
                          "status": None, "bytes": 0, "text": ""}
        self.waiters[sid] = asyncio.get_running_loop().create_future()
        self.h3.send_headers(sid, hdrs, end_stream=body is None)
        if body is not None:  # two DATA frames, the second ending the stream
            self.h3.send_data(sid, body[:SPLIT], end_stream=False)
            self.h3.send_data(sid, body[SPLIT:], end_stream=True)
        self.transmit()
        return await asyncio.wait_for(self.waiters[sid], 20)


async def run_client(port: int, body: bytes, keys: Path, qlog_dir: Path) -> list[dict]:
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, verify_mode=0, server_name="localhost")
    cfg.quic_logger = QuicFileLogger(str(qlog_dir))
    with open(keys, "a") as kf:
        cfg.secrets_log_file = kf
        async with connect("127.0.0.1", port, configuration=cfg, create_protocol=Client) as c:
            auth = f"localhost:{port}"
            out = [await c.request(auth, "GET", "/hello", None), await c.request(auth, "POST", "/upload", body)]
            c.close()
            await asyncio.sleep(0.2)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir", type=Path, nargs="?")
    ap.add_argument("--name", default="aioquic-post")
    ap.add_argument("--body", type=int, default=30_000, help="request body bytes")
    ap.add_argument("--delay", type=float, default=25.0, help="server think time after the body, ms")
    ap.add_argument("--serve", nargs=4, metavar=("PORT", "CERT", "KEY", "QLOGDIR"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.serve:
        asyncio.run(serve_main(int(a.serve[0]), a.serve[1], a.serve[2], a.serve[3], a.delay))
        return 0
    if a.outdir is None:
        ap.error("OUTDIR is required")
    a.outdir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="wf-aioquic-post-"))
    cert, key = work / "cert.pem", work / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost"], check=True, capture_output=True)
    port = cap.free_port()
    out = a.outdir / a.name
    pcap, keys = Path(f"{out}.pcap"), Path(f"{out}.keys")
    cdir, sdir = work / "client", work / "server"
    cdir.mkdir()
    sdir.mkdir()
    keys.unlink(missing_ok=True)
    body = body_of(a.body)
    with cap.captured(pcap, port, [sys.executable, __file__, "--delay", str(a.delay), "--serve", str(port), str(cert), str(key), str(sdir)]):
        results = asyncio.run(run_client(port, body, keys, cdir))
        # the server writes its qlog when its side of the connection ends (after draining)
        for _ in range(50):
            if list(sdir.glob("*.qlog")):
                break
            time.sleep(0.1)
        time.sleep(0.3)
    for d, suffix in ((cdir, ".qlog"), (sdir, ".server.qlog")):
        qlogs = sorted(d.glob("*.qlog"))
        if len(qlogs) != 1:
            raise SystemExit(f"aioquic_post: expected one qlog in {d}, found {len(qlogs)}")
        shutil.copy(qlogs[0], f"{out}{suffix}")
    import aioquic

    Path(f"{out}.client.json").write_text(json.dumps({"aioquic": aioquic.__version__, "port": port, "body_bytes": len(body),
                                                      "body_sha256": hashlib.sha256(body).hexdigest(), "split": SPLIT,
                                                      "server_delay_ms": a.delay, "responses": results}, indent=1) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    print(f"{pcap} {pcap.stat().st_size} bytes, {out}.qlog {Path(f'{out}.qlog').stat().st_size} bytes, "
          f"{out}.server.qlog {Path(f'{out}.server.qlog').stat().st_size} bytes, {len(results)} responses")
    return 0


if __name__ == "__main__":
    sys.exit(main())
