#!/usr/bin/env python3
"""QUIC captures with the uncommon frames and packets, from a real aioquic 1.7.2 client and
server exchanging datagrams in memory (no sockets, no root), written as pcap with the
client's key log — for tests/test_quic_fields20.py (Info, detail header and filter fields
against tshark).

    .venv/bin/python scripts/quic/proto_frames.py OUTDIR [v1|v2|vn ...]

Writes OUTDIR/quic-<mode>.pcap and OUTDIR/quic-<mode>.keys for each mode (default: all):

- ``v1``, ``v2``: one connection of that version: handshake, HTTP/3 SETTINGS (aioquic's
  include a GREASE identifier), a GET, a DATAGRAM, a stream that the client resets
  (RESET_STREAM) and stops (STOP_SENDING), flow control (MAX_STREAM_DATA, MAX_DATA: the
  server's limits are small), HTTP/3 GOAWAY / CANCEL_PUSH / MAX_PUSH_ID and a reserved frame,
  a client migration (PATH_CHALLENGE / PATH_RESPONSE, NEW_CONNECTION_ID,
  RETIRE_CONNECTION_ID), PING and CONNECTION_CLOSE.
- ``vn``: the client offers v1, the server supports only v2: the server answers the client's
  first Initial with a Version Negotiation packet (aioquic's own encoder, as its asyncio
  server does).  The capture ends there: the client's next attempt (in v2, with the same
  connection IDs) is one tshark 4.0 does not decrypt (it keeps the first version's keys).
"""
from __future__ import annotations

import datetime
import socket
import sys
from pathlib import Path

import dpkt
from aioquic.buffer import Buffer, encode_uint_var
from aioquic.h3.connection import FrameType, H3Connection, encode_frame
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.quic.packet import QuicProtocolVersion, encode_quic_version_negotiation, pull_quic_header
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

CLIENT, SERVER = ("10.0.0.1", 50000), ("10.0.0.2", 443)
MIGRATED = ("10.0.0.1", 50002)


def _cert(out: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2)).sign(key, hashes.SHA256()))
    cp, kp = out / "proto-frames-cert.pem", out / "proto-frames-key.pem"
    cp.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    kp.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return cp, kp


class _Negotiated(Exception):
    """The server answered with Version Negotiation: the capture ends there."""


class Run:
    def __init__(self, out: Path, mode: str, cert: tuple[Path, Path]):
        self.mode = mode
        self.pcap = out / f"quic-{mode}.pcap"
        self.keylog = open(out / f"quic-{mode}.keys", "w")  # noqa: SIM115 (closed in write())
        v1, v2 = QuicProtocolVersion.VERSION_1, QuicProtocolVersion.VERSION_2
        client_versions = {"v1": [v1], "v2": [v2], "vn": [v1]}[mode]
        self.server_versions = {"v1": [v2, v1], "v2": [v2, v1], "vn": [v2]}[mode]
        self.cc = QuicConfiguration(is_client=True, alpn_protocols=["h3"], secrets_log_file=self.keylog,
                                    max_datagram_frame_size=65536, supported_versions=client_versions)
        self.cc.verify_mode = 0
        self.sc = QuicConfiguration(is_client=False, alpn_protocols=["h3"], max_datagram_frame_size=65536,
                                    supported_versions=self.server_versions, max_data=6000, max_stream_data=3000)
        self.sc.load_cert_chain(str(cert[0]), str(cert[1]))
        self.client = QuicConnection(configuration=self.cc)
        self.server: QuicConnection | None = None
        self.now = 1700000000.0
        self.pkts: list[tuple[float, bytes]] = []
        self.hc: H3Connection | None = None
        self.hs: H3Connection | None = None

    def udp(self, src, dst, payload: bytes) -> None:
        self.now += 0.0005
        u = dpkt.udp.UDP(sport=src[1], dport=dst[1], data=payload)
        u.ulen = 8 + len(payload)
        ip = dpkt.ip.IP(src=socket.inet_aton(src[0]), dst=socket.inet_aton(dst[0]), p=17, data=u, ttl=64)
        ip.len = len(bytes(ip))
        self.pkts.append((self.now, bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=0x800, data=ip))))

    def pump(self, caddr=CLIENT) -> None:
        for _ in range(40):
            moved = False
            for d, _a in self.client.datagrams_to_send(now=self.now):
                self.udp(caddr, SERVER, d)
                moved = True
                if self.server is None:
                    h = pull_quic_header(Buffer(data=d), host_cid_length=8)
                    if h.version not in self.server_versions:  # what aioquic's asyncio server does
                        vn = encode_quic_version_negotiation(source_cid=h.destination_cid, destination_cid=h.source_cid,
                                                             supported_versions=self.server_versions)
                        self.udp(SERVER, caddr, vn)
                        raise _Negotiated
                    self.server = QuicConnection(configuration=self.sc, original_destination_connection_id=h.destination_cid)
                self.server.receive_datagram(d, caddr, now=self.now)
            if self.server is not None:
                for d, _a in self.server.datagrams_to_send(now=self.now):
                    self.udp(SERVER, caddr, d)
                    moved = True
                    self.client.receive_datagram(d, SERVER, now=self.now)
            self.events()
            if not moved:
                break

    def events(self) -> None:
        for conn, h3 in ((self.server, self.hs), (self.client, self.hc)):
            while conn is not None:
                e = conn.next_event()
                if e is None:
                    break
                if h3 is not None:
                    h3.handle_event(e)

    def go(self) -> None:
        self.client.connect(SERVER, now=self.now)
        try:
            self.pump()
        except _Negotiated:
            return
        assert self.server is not None
        self.hc, self.hs = H3Connection(self.client), H3Connection(self.server)
        sid = self.client.get_next_available_stream_id()
        self.hc.send_headers(sid, [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", b"localhost"), (b":path", b"/x")],
                             end_stream=True)
        self.pump()
        self.hs.send_headers(sid, [(b":status", b"200"), (b"content-type", b"text/plain")])
        self.hs.send_data(sid, b"hello", end_stream=True)
        self.pump()
        self.client.send_datagram_frame(b"dgram-payload-123")
        self.pump()
        # flow control: more than the server's stream and connection windows, in steps
        big = self.client.get_next_available_stream_id()
        for _ in range(4):
            self.client.send_stream_data(big, b"z" * 1400)
            self.pump()
        sid2 = self.client.get_next_available_stream_id()
        self.client.send_stream_data(sid2, b"abc")
        self.pump()
        self.client.stop_stream(sid2, 0x10C)
        self.pump()
        self.client.reset_stream(sid2, 0x10C)
        self.pump()
        self.server.send_stream_data(self.hs._local_control_stream_id, encode_frame(FrameType.GOAWAY, encode_uint_var(sid + 4)))
        self.pump()
        self.client.send_stream_data(self.hc._local_control_stream_id,
                                     encode_frame(0x3, encode_uint_var(7)) + encode_frame(FrameType.MAX_PUSH_ID, encode_uint_var(42))
                                     + encode_frame(0x21 + 0x1F * 5, b"grease"))
        self.pump()
        # migration: a new connection ID on a new port -> PATH_CHALLENGE / PATH_RESPONSE, RETIRE_CONNECTION_ID
        self.client.change_connection_id()
        self.pump(MIGRATED)
        self.now += 0.01
        self.client.send_ping(7)
        self.pump(MIGRATED)
        self.client.close(error_code=0x0A, frame_type=0x08, reason_phrase="bye")
        self.pump(MIGRATED)

    def write(self) -> int:
        with open(self.pcap, "wb") as fh:
            w = dpkt.pcap.Writer(fh)
            for t, b in self.pkts:
                w.writepkt(b, t)
        self.keylog.close()
        return len(self.pkts)


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    cert = _cert(out)
    for mode in argv[1:] or ["v1", "v2", "vn"]:
        r = Run(out, mode, cert)
        r.go()
        print(r.pcap, r.write(), "packets")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
