"""``udp``: UDP header."""
from __future__ import annotations

from ._util import packet_field as P
from .types import BYTES, PROTO, UINT, Protocol


def _f(i):
    def get(pv):
        u = pv.layers.udp
        return [u[i]] if u is not None else []
    return get


def _bytes(pv):
    L = pv.layers
    return [pv.data[L.udp_off : L.l4_end]] if L.udp is not None else []


def _payload(pv):
    L = pv.layers
    return [pv.data[L.udp_off + 8 : L.l4_end]] if L.udp is not None else []


def _stream(pv):
    if pv.layers.udp is None:
        return []
    s = pv.ctx.stream_number(pv.conn_id)
    return [s] if s is not None else []


PROTOCOL = Protocol("udp", "User Datagram Protocol", P("udp", PROTO, _bytes, "the UDP datagram"), [
    P("udp.port", UINT, lambda pv: [u[0], u[1]] if (u := pv.layers.udp) else [], "source or destination port", size=2),
    P("udp.srcport", UINT, _f(0), "source port", size=2),
    P("udp.dstport", UINT, _f(1), "destination port", size=2),
    P("udp.length", UINT, _f(2), "length (header and payload)", size=2),
    P("udp.checksum", UINT, _f(3), "checksum", size=2),
    P("udp.stream", UINT, _stream, "UDP conversation number, from 0 in order of first packet", size=4),
    P("udp.payload", BYTES, _payload, "payload bytes (every datagram's, as tshark 4.0 gives it)"),
])
