#!/usr/bin/env python3
"""One QUIC handshake (ALPN h3) with each server, then close: the lab's warm-up before a
capture, so the HTTP/3 server's start-up cost (first handshake of the process) is not counted as
protocol time. Uses aioquic's client; prints one line per target: address, handshake ms or the
error. Never fails the lab: a server that does not answer here shows in the capture.

    python scripts/lab/h3_warm.py IP:PORT:SNI ...
"""
from __future__ import annotations

import asyncio
import ssl
import sys
import time

from aioquic.asyncio import connect
from aioquic.h3.connection import H3_ALPN
from aioquic.quic.configuration import QuicConfiguration


async def one(ip: str, port: int, sni: str) -> str:
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, verify_mode=ssl.CERT_NONE, server_name=sni)
    t0 = time.perf_counter()
    try:
        async with connect(ip, port, configuration=cfg, wait_connected=True) as c:
            ms = (time.perf_counter() - t0) * 1000
            c.close()
        return f"{ip}:{port} {sni} {ms:.1f} ms"
    except Exception as e:  # noqa: BLE001  (reported, not raised: see the docstring)
        return f"{ip}:{port} {sni} error {type(e).__name__}: {e}"


async def main(targets: list[str]) -> None:
    for t in targets:
        ip, port, sni = t.split(":", 2)
        try:
            print(await asyncio.wait_for(one(ip, int(port), sni), 10), flush=True)
        except TimeoutError:
            print(f"{t} timeout", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
