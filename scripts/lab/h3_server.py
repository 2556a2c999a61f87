#!/usr/bin/env python3
"""Minimal HTTP/3 static file server for the wirefall capture lab.

Built only on aioquic's public API (aioquic.asyncio.serve, H3Connection), in the
spirit of aioquic's examples/http3_server.py but without its ASGI layer: it
serves the files of one directory, GET/HEAD only, and logs each request it
answers as one JSON line (stream id, method, path, status, bytes) so the lab
has the server's own record next to the client's NetLog.

    python scripts/lab/h3_server.py --root DIR --cert C --key K --port P \
        [--secrets-log FILE] [--request-log FILE]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import mimetypes
import signal
import sys
from pathlib import Path

from aioquic.asyncio import QuicConnectionProtocol, serve
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ProtocolNegotiated, QuicEvent

mimetypes.add_type("application/javascript", ".js")
mimetypes.add_type("application/json", ".json")
mimetypes.add_type("font/woff2", ".woff2")
mimetypes.add_type("image/webp", ".webp")
SERVER_NAME = b"wirefall-lab-aioquic"


class H3FileServer(QuicConnectionProtocol):
    root: Path = Path(".")
    request_log = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._http: H3Connection | None = None

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, ProtocolNegotiated) and event.alpn_protocol in H3_ALPN:
            self._http = H3Connection(self._quic)
        if self._http is None:
            return
        for ev in self._http.handle_event(event):
            if isinstance(ev, HeadersReceived):
                self._answer(ev.stream_id, dict(ev.headers))
            elif isinstance(ev, DataReceived):
                pass  # GET requests have no body; ignore any
        self.transmit()

    def _answer(self, stream_id: int, headers: dict) -> None:
        method = headers.get(b":method", b"").decode("latin-1")
        path = headers.get(b":path", b"/").decode("latin-1").split("?", 1)[0]
        if path.endswith("/"):
            path += "index.html"
        target = (self.root / path.lstrip("/")).resolve()
        body, status = b"not found\n", 404
        ctype = "text/plain"
        if method not in ("GET", "HEAD"):
            body, status = b"method not allowed\n", 405
        elif target.is_file() and self.root in target.parents:
            body, status = target.read_bytes(), 200
            ctype = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        cors = [(b"access-control-allow-origin", headers[b"origin"]), (b"access-control-allow-credentials", b"true")] \
            if headers.get(b"origin") else []  # the lab's multi-origin pages: credentialed CORS
        self._http.send_headers(stream_id, [
            (b":status", str(status).encode()),
            (b"server", SERVER_NAME),
            (b"content-type", ctype.encode()),
            (b"content-length", str(len(body)).encode()),
            *cors,
        ])
        self._http.send_data(stream_id, b"" if method == "HEAD" else body, end_stream=True)
        if self.request_log:
            self.request_log.write(json.dumps({
                "stream_id": stream_id, "method": method,
                "path": headers.get(b":path", b"").decode("latin-1"),
                "status": status, "bytes": len(body)}) + "\n")
            self.request_log.flush()


async def run(args) -> None:
    config = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN, max_datagram_frame_size=65536)
    config.load_cert_chain(args.cert, args.key)
    if args.secrets_log:
        config.secrets_log_file = open(args.secrets_log, "a")
    H3FileServer.root = Path(args.root).resolve()
    if args.request_log:
        H3FileServer.request_log = open(args.request_log, "a")
    server = await serve(args.host, args.port, configuration=config, create_protocol=H3FileServer)
    print(f"h3_server listening on {args.host}:{args.port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="HTTP/3 static file server (aioquic)")
    ap.add_argument("--root", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--secrets-log")
    ap.add_argument("--request-log")
    asyncio.run(run(ap.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
