#!/usr/bin/env python3
"""HTTP/3 connections made in memory by aioquic, captured from the middle (for the tests).

Real QUIC and HTTP/3 from a real implementation (aioquic's ``QuicConnection`` and
``H3Connection``, client and server, datagrams passed between them in memory; no wirefall code
makes a byte of them), with what a large site's connections do and the lab's rarely show:
connection IDs of any length on either side, a key update (the Key Phase bit flips), a change
of connection ID (the client moves to one the server issued in NEW_CONNECTION_ID), a NAT
rebinding (the client's port changes, the server validates the new path), several connections
at once.  ``capture`` writes the datagrams from a chosen request on (the capture "joins" there:
no handshake, QPACK entries inserted before) as a pcap, with a key log that holds every
connection's secrets and, if asked, decoy secrets of connections that are not in the capture.

    from aioquic_late import Conn, capture
    c = Conn(requests=12, join=4, server_cid=4, key_update=6, rebind=8)
    pcap, keys = capture([c], decoys=30)
    c.truth  # [(stream id, method, path, status, body length, client port)] of the requests after the join
"""
from __future__ import annotations

import datetime
import io
import random
from dataclasses import dataclass, field

from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

_CERT = None


def _cert():
    global _CERT
    if _CERT is None:
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lab.test")])
        now = datetime.datetime(2026, 1, 1)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=3650))
                .sign(key, hashes.SHA256()))
        _CERT = (cert, key)
    return _CERT


@dataclass
class Conn:
    requests: int = 8  # requests made, one after the other
    join: int = 2  # the capture starts after this many requests were answered
    server_cid: int = 8  # connection ID lengths each side chooses
    client_cid: int = 8
    key_update: int | None = None  # the server starts a key update after this request
    change_cid: int | None = None  # the client moves to a new connection ID after this request
    rebind: int | None = None  # the client's port changes after this request
    client: tuple = ("10.0.0.1", 50000)
    server: tuple = ("10.0.0.2", 443)
    seed: int = 0
    truth: list = field(default_factory=list)  # requests after the join
    datagrams: list = field(default_factory=list)  # (direction, src, dst, payload) after the join
    keylog: str = ""

    def run(self) -> Conn:
        rnd = random.Random(self.seed)
        log = io.StringIO()
        cc = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, secrets_log_file=log,
                               connection_id_length=self.client_cid, server_name="www.lab.test")
        cc.verify_mode = 0  # ssl.CERT_NONE
        sc = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN, connection_id_length=self.server_cid)
        sc.certificate, sc.private_key = _cert()
        client = QuicConnection(configuration=cc)
        server = QuicConnection(configuration=sc, original_destination_connection_id=client.original_destination_connection_id)
        hc, hs = H3Connection(client), H3Connection(server)
        now = 1000.0
        caddr = self.client
        client.connect(self.server, now)
        capturing = False
        answers: dict = {}

        def pump():
            nonlocal now
            for _ in range(200):
                moved = False
                for data, _addr in client.datagrams_to_send(now):
                    moved = True
                    if capturing:
                        self.datagrams.append((0, caddr, self.server, data))
                    server.receive_datagram(data, caddr, now)
                for data, _addr in server.datagrams_to_send(now):
                    moved = True
                    if capturing:
                        self.datagrams.append((1, self.server, caddr, data))
                    client.receive_datagram(data, self.server, now)
                for q, h, is_server in ((server, hs, True), (client, hc, False)):
                    ev = q.next_event()
                    while ev is not None:
                        moved = True
                        for e in h.handle_event(ev):
                            if is_server and isinstance(e, HeadersReceived):
                                path = dict(e.headers)[b":path"].decode()
                                body = bytes(rnd.randrange(256) for _ in range(200 + 37 * len(path)))
                                status = 404 if path.endswith("/missing") else 200
                                h.send_headers(e.stream_id, [(b":status", str(status).encode()),
                                                             (b"content-type", b"application/octet-stream; lab=1"),
                                                             (b"cache-control", b"no-store, private"),
                                                             (b"content-length", str(len(body)).encode())])
                                h.send_data(e.stream_id, body, end_stream=True)
                            elif not is_server and isinstance(e, HeadersReceived):
                                answers.setdefault(e.stream_id, [int(dict(e.headers)[b":status"]), 0])
                            elif not is_server and isinstance(e, DataReceived):
                                answers.setdefault(e.stream_id, [None, 0])[1] += len(e.data)
                        ev = q.next_event()
                now += 0.001
                if not moved:
                    return

        pump()
        for i in range(self.requests):
            if i == self.join:
                capturing = True
            if i == self.rebind:
                caddr = (caddr[0], caddr[1] + 1000)
            sid = client.get_next_available_stream_id()
            path = f"/r/{i}/{'missing' if i % 5 == 4 else 'item-' + str(rnd.randrange(1000))}"
            hc.send_headers(sid, [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"www.lab.test"),
                                  (b":path", path.encode()), (b"user-agent", b"aioquic-late/1"),
                                  (b"x-lab-trace", f"t-{self.seed}-{rnd.randrange(4)}".encode())], end_stream=True)
            pump()
            if i >= self.join:
                st, n = answers[sid]
                self.truth.append((sid, "GET", path, st, n, caddr[1]))
            if i == self.key_update:
                server.request_key_update()
            if i == self.change_cid:
                client.change_connection_id()
            pump()
        self.keylog = log.getvalue()
        return self


def capture(conns: list[Conn], decoys: int = 0, seed: int = 1) -> tuple[bytes, str]:
    """A pcap (Ethernet/IPv4/UDP) of the connections' datagrams after their joins, interleaved
    in turn, and the key log: every connection's secrets and ``decoys`` made-up ones, shuffled."""
    import dpkt

    rnd = random.Random(seed)
    buf = io.BytesIO()
    w = dpkt.pcap.Writer(buf, linktype=1, snaplen=262144)
    queues = [list(c.datagrams) for c in conns]
    t = 1.7e9
    while any(queues):
        for q in queues:
            if q:
                d, src, dst, payload = q.pop(0)
                udp = dpkt.udp.UDP(sport=src[1], dport=dst[1], data=payload)
                udp.ulen = 8 + len(payload)
                ip = dpkt.ip.IP(src=bytes(map(int, src[0].split("."))), dst=bytes(map(int, dst[0].split("."))), p=17,
                                data=udp, ttl=64)
                ip.len = 20 + len(bytes(udp))
                eth = dpkt.ethernet.Ethernet(src=b"\x02\0\0\0\0\x01", dst=b"\x02\0\0\0\0\x02", type=0x0800, data=ip)
                t += 1e-4
                w.writepkt(bytes(eth), ts=t)
    lines = [ln for c in conns for ln in c.keylog.splitlines() if ln.strip()]
    for _ in range(decoys):
        cr = rnd.randbytes(32).hex()
        for label in ("CLIENT_HANDSHAKE_TRAFFIC_SECRET", "SERVER_HANDSHAKE_TRAFFIC_SECRET",
                      "CLIENT_TRAFFIC_SECRET_0", "SERVER_TRAFFIC_SECRET_0"):
            lines.append(f"{label} {cr} {rnd.randbytes(32).hex()}")
    rnd.shuffle(lines)
    return buf.getvalue(), "\n".join(lines) + "\n"
