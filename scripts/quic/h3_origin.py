#!/usr/bin/env python3
"""HTTP/3 origin server (aioquic) that behaves more like a large site's front end than the lab's.

scripts/lab/h3_server.py answers with four headers the static QPACK table mostly covers.  A
large front end's responses are different, and so are the captures made of them; this server
(aioquic's public API only, as h3_server.py) adds, for ``late_join_multi.py``:

- response headers that repeat from response to response and are not in the QPACK static table
  (``content-type: text/html; charset=UTF-8``, ``cache-control: no-store, private``,
  ``x-frame-options: SAMEORIGIN``, ``server: lab-gfe``, ``alt-svc``...), so that pylsqpack's
  encoder puts them in its dynamic table and later responses refer to them; requests to
  ``/beacon`` are answered ``202`` (a status not in the static table, inserted in turn);
- RFC 9114 §7.2.8 reserved frame types (``0x1f * N + 0x21``) written on request streams before
  HEADERS and between DATA frames, and a unidirectional stream of a reserved type (§6.2.3) with
  a few bytes on it, as servers that exercise the extension points (GREASE) send them;
- a key update (RFC 9001 §6, the Key Phase bit flips) every ``--key-update-every`` requests on
  a connection.

    python scripts/quic/h3_origin.py --root DIR --cert C --key K --host A --port P \
        [--request-log FILE] [--key-update-every N]
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
from aioquic.h3.events import HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ProtocolNegotiated, QuicEvent

mimetypes.add_type("application/javascript", ".js")
mimetypes.add_type("application/json", ".json")
GREASE_FRAME = 0x1F * 3 + 0x21  # a reserved frame type
GREASE_STREAM = 0x1F * 5 + 0x21  # a reserved unidirectional stream type


def _varint(v: int) -> bytes:
    if v < 0x40:
        return bytes([v])
    if v < 0x4000:
        return (v | 0x4000).to_bytes(2, "big")
    if v < 0x40000000:
        return (v | 0x80000000).to_bytes(4, "big")
    return (v | 0xC000000000000000).to_bytes(8, "big")


def reserved_frame(payload: bytes) -> bytes:
    return _varint(GREASE_FRAME) + _varint(len(payload)) + payload


class Origin(QuicConnectionProtocol):
    root: Path = Path(".")
    request_log = None
    key_update_every = 0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._http: H3Connection | None = None
        self._answered = 0

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, ProtocolNegotiated) and event.alpn_protocol in H3_ALPN:
            self._http = H3Connection(self._quic)
            sid = self._quic.get_next_available_stream_id(is_unidirectional=True)
            self._quic.send_stream_data(sid, _varint(GREASE_STREAM) + b"reserved stream type, ignored by the peer")
        if self._http is None:
            return
        for ev in self._http.handle_event(event):
            if isinstance(ev, HeadersReceived):
                self._answer(ev.stream_id, dict(ev.headers))
        self.transmit()

    def _answer(self, stream_id: int, headers: dict) -> None:
        method = headers.get(b":method", b"").decode("latin-1")
        full = headers.get(b":path", b"/").decode("latin-1")
        path = full.split("?", 1)[0]
        if path.endswith("/"):
            path += "index.html"
        target = (self.root / path.lstrip("/")).resolve()
        body, status, ctype = b"not found\n", 404, "text/plain; charset=UTF-8"
        if path == "/beacon":
            body, status, ctype = b"", 202, "text/plain; charset=UTF-8"
        elif method not in ("GET", "HEAD"):
            body, status = b"method not allowed\n", 405
        elif target.is_file() and self.root in target.parents:
            body, status = target.read_bytes(), 200
            ctype = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
            if ctype.startswith("text/") or ctype.endswith(("javascript", "json")):
                ctype += "; charset=UTF-8"
        self._quic.send_stream_data(stream_id, reserved_frame(b"\x00" * (stream_id % 7)))
        self._http.send_headers(stream_id, [
            (b":status", str(status).encode()),
            (b"content-type", ctype.encode()),
            (b"cache-control", b"no-store, private"),
            (b"x-frame-options", b"SAMEORIGIN"),
            (b"x-content-type-options", b"nosniff"),
            (b"server", b"lab-gfe"),
            (b"alt-svc", b'h3=":443"; ma=2592000'),
            (b"content-length", str(len(body)).encode()),
        ])
        if method == "HEAD" or not body:
            self._http.send_data(stream_id, b"", end_stream=True)
        else:
            half = len(body) // 2
            self._http.send_data(stream_id, body[:half], end_stream=False)
            self._quic.send_stream_data(stream_id, reserved_frame(b"grease"))
            self._http.send_data(stream_id, body[half:], end_stream=True)
        self._answered += 1
        if self.key_update_every and self._answered % self.key_update_every == 0:
            self._quic.request_key_update()
        if self.request_log:
            self.request_log.write(json.dumps({"stream_id": stream_id, "method": method, "path": full,
                                               "status": status, "bytes": len(body),
                                               "key_update": bool(self.key_update_every and
                                                                  self._answered % self.key_update_every == 0)}) + "\n")
            self.request_log.flush()


async def run(args) -> None:
    config = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN)
    config.load_cert_chain(args.cert, args.key)
    Origin.root = Path(args.root).resolve()
    Origin.key_update_every = args.key_update_every
    if args.request_log:
        Origin.request_log = open(args.request_log, "a")
    server = await serve(args.host, args.port, configuration=config, create_protocol=Origin)
    print(f"h3_origin listening on {args.host}:{args.port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    server.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="HTTP/3 origin server (aioquic) with reserved frames and key updates")
    ap.add_argument("--root", required=True)
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--request-log")
    ap.add_argument("--key-update-every", type=int, default=0)
    asyncio.run(run(ap.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
