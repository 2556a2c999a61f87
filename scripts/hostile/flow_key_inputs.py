"""Hostile captures for the pipeline's flow table (found by mypy, issue 19).

A UDP datagram with the addresses and ports of a TCP connection met that connection's
TcpFlow in the flow table and stopped the whole pass (AttributeError: 'TcpFlow' object has
no attribute 'lazy'): every connection was lost.  Each capture starts with the real HTTP/1
exchange of ``sample_captures/http/http1-nginx.pcap`` (``content_flow_inputs.write``).

    python scripts/hostile/flow_key_inputs.py OUTDIR   # writes every input
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import content_flow_inputs as C  # noqa: E402

REQUEST = b"GET /same-ports HTTP/1.1\r\nHost: hostile.test\r\n\r\n"
BODY = b"the TCP exchange survives\n"
RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY)
# datagrams on the TCP connection's 4-tuple: a QUIC-looking short header (port 443 makes it a
# QUIC flow) and one the other way round; neither decodes
DATAGRAMS = [(0, b"\x40" + b"\x00" * 40), (1, b"\x00" * 24)]


def udp_on_tcp_ports(path, port: int = 443) -> str:
    """An HTTP/1 exchange over TCP to ``port`` with UDP datagrams on the same addresses and
    ports between the request and the response (both directions)."""
    conn = C.TcpConn(1, cport=40000, sport=port).handshake().send(0, REQUEST)
    pkts = list(conn.packets)
    for direction, data in DATAGRAMS:
        if direction == 0:
            pkts.append(C.udp_packet(conn.c, conn.cport, conn.s, conn.sport, data))
        else:
            pkts.append(C.udp_packet(conn.s, conn.sport, conn.c, conn.cport, data))
    conn.packets = []
    conn.send(1, RESPONSE)
    pkts.extend(conn.packets)
    return C.write(path, pkts)


def main(argv: list[str]) -> int:
    out = Path(argv[1] if len(argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    print(udp_on_tcp_ports(out / "udp-on-tcp-ports.pcap"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
