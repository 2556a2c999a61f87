#!/usr/bin/env python3
"""HTTP/3 responses captured from the middle of their streams (for tests/test_h3_midstream.py).

aioquic's client and server (``QuicConnection`` + ``H3Connection``, datagrams passed in memory;
no wirefall code makes a byte of them) exchange requests whose responses are sent as several
DATA frames of chosen sizes, with a reserved (GREASE) frame and trailers where asked.  The
capture begins at a chosen server datagram, so the streams in flight are seen mid-stream, and
may end before the last datagrams (streams without their FIN).

The truth comes from aioquic, not from wirefall: the frames as the server sent them (each
``send_headers`` / ``send_data`` is one frame; their stream offsets recorded from the bytes the
server handed to its QUIC stream) and, per stream, the first stream offset the capture holds
(the STREAM frames aioquic's client received from the captured datagrams).

    from h3_midstream import run
    cap = run(bodies=[[3000, 3000, 1000], ...], cut=5)
    cap.pcap, cap.keys, cap.streams  # {sid: Stream(frames=[(offset, kind, header_len, payload_len)], first=offset, fin=bool)}
"""
from __future__ import annotations

import io
import random
from dataclasses import dataclass, field

from aioquic.h3.connection import H3_ALPN, H3Connection, encode_frame
from aioquic.h3.events import HeadersReceived
from aioquic.quic import stream as qstream
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection

from aioquic_late import _cert
from aioquic_late import capture as _write


@dataclass
class Stream:
    frames: list = field(default_factory=list)  # (stream offset, kind, header length, payload length) as sent
    first: int | None = None  # first stream offset in the captured datagrams (server to client)
    fin: bool = False  # the capture holds the stream's FIN


@dataclass
class Capture:
    pcap: bytes
    keys: str
    streams: dict  # request stream id -> Stream (server-to-client direction)


def _varint_len(v: int) -> int:
    return 1 if v < 64 else 2 if v < 16384 else 4 if v < 1 << 30 else 8


def run(bodies: list[list[int]], cut: int, drop_tail: int = 0, grease: bool = False, trailers: bool = False,
        seed: int = 0, later: int = 1) -> Capture:
    """One connection; request i is answered with DATA frames of ``bodies[i]`` payload bytes
    (random bytes), after a reserved frame 0x21 when ``grease``, then trailers when
    ``trailers``.  The capture holds the datagrams from the ``cut``-th one the server sends
    after the handshake (client datagrams from the same moment), less the last ``drop_tail``;
    ``later`` requests (one DATA frame of 100 bytes each) follow once those are answered."""
    bodies = [list(b) for b in bodies]
    rnd = random.Random(seed)
    log = io.StringIO()
    cc = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, secrets_log_file=log, server_name="www.lab.test")
    cc.verify_mode = 0
    sc = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN)
    sc.certificate, sc.private_key = _cert()
    client = QuicConnection(configuration=cc)
    server = QuicConnection(configuration=sc, original_destination_connection_id=client.original_destination_connection_id)
    hc, hs = H3Connection(client), H3Connection(server)
    caddr, saddr = ("10.0.0.1", 50000), ("10.0.0.2", 443)
    now = 1000.0
    streams: dict[int, Stream] = {}
    sent = {}  # sid -> bytes handed to the server's QUIC stream so far
    orig_send = server.send_stream_data

    def send_stream_data(sid, data, end_stream=False):
        if sid in streams:
            off = sent.get(sid, 0)
            t = data[0]
            hl = next(1 + lv for lv in (1, 2, 4, 8) if _varint_len(len(data) - 1 - lv) == lv)  # (one-byte types)
            streams[sid].frames.append((off, {0: "DATA", 1: "HEADERS", 0x21: "GREASE"}.get(t, hex(t)), hl, len(data) - hl))
            sent[sid] = off + len(data)
        return orig_send(sid, data, end_stream)

    server.send_stream_data = send_stream_data
    state = {"server_dgrams": 0, "capturing": False, "started": False}
    recorded: list = []  # (datagram, direction)
    orig_handle = qstream.QuicStreamReceiver.handle_frame

    def handle_frame(self, frame):
        if state["capturing"] and state.get("rx") is not None:
            state["rx"].append((self, frame.offset, len(frame.data), frame.fin))
        return orig_handle(self, frame)

    rx_owner = {}

    def pump():
        nonlocal now
        for _ in range(400):
            moved = False
            for data, _a in client.datagrams_to_send(now):
                moved = True
                if state["capturing"]:
                    recorded.append((0, caddr, saddr, data))
                server.receive_datagram(data, caddr, now)
            for data, _a in server.datagrams_to_send(now):
                moved = True
                if state["started"]:
                    state["server_dgrams"] += 1
                    if state["server_dgrams"] > cut:
                        state["capturing"] = True
                if state["capturing"]:
                    recorded.append((1, saddr, caddr, data))
                    state["rx"] = []
                client.receive_datagram(data, saddr, now)
                for recv, off, n, fin in state.get("rx") or ():
                    rx_owner.setdefault(recv._stream_id, []).append((off, n, fin))
                state["rx"] = None
            for q, h, is_server in ((server, hs, True), (client, hc, False)):
                ev = q.next_event()
                while ev is not None:
                    moved = True
                    for e in h.handle_event(ev):
                        if is_server and isinstance(e, HeadersReceived):
                            i = int(dict(e.headers)[b":path"].decode().rsplit("/", 1)[1])
                            streams[e.stream_id] = Stream()
                            h.send_headers(e.stream_id, [(b":status", b"200"), (b"content-type", b"application/octet-stream")])
                            sizes = bodies[i]
                            for k, n in enumerate(sizes):
                                if grease and k == 1:
                                    server.send_stream_data(e.stream_id, encode_frame(0x21, rnd.randbytes(7)), False)
                                last = k == len(sizes) - 1 and not trailers
                                h.send_data(e.stream_id, rnd.randbytes(n), end_stream=last)
                            if trailers:
                                h.send_headers(e.stream_id, [(b"x-checksum", b"abc123")], end_stream=True)
                    ev = q.next_event()
            now += 0.001
            if not moved:
                return

    qstream.QuicStreamReceiver.handle_frame = handle_frame
    try:
        client.connect(saddr, now)
        pump()
        state["started"] = True
        sids = []
        for i in range(len(bodies)):
            sid = client.get_next_available_stream_id()
            sids.append(sid)
            hc.send_headers(sid, [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"www.lab.test"),
                                  (b":path", f"/mid/{i}".encode())], end_stream=True)
        pump()
        for _ in range(later):  # requests after the cut: their streams open in the capture (HTTP/3 is recognised)
            sid = client.get_next_available_stream_id()
            bodies.append([100])
            hc.send_headers(sid, [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"www.lab.test"),
                                  (b":path", f"/mid/{len(bodies) - 1}".encode())], end_stream=True)
            pump()
    finally:
        qstream.QuicStreamReceiver.handle_frame = orig_handle
    for sid in sids:
        got = rx_owner.get(sid, [])
        st = streams.get(sid)
        if st is not None and got:
            st.first = min(o for o, _n, _f in got)
            st.fin = any(f for _o, _n, f in got)
    if drop_tail:
        recorded = recorded[:-drop_tail]
        for st in streams.values():
            st.fin = False  # (the tests that drop the tail drop every FIN: see test_h3_midstream)

    class _C:
        datagrams = recorded
        keylog = log.getvalue()

    pcap, keys = _write([_C])
    return Capture(pcap, keys, streams)
