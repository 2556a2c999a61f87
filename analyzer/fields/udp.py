"""``udp``: UDP header."""
from __future__ import annotations

from ._util import packet_field as P
from .frame import _us
from .types import BYTES, FLOAT, PROTO, UINT, Protocol


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


def _times(i: int):
    """udp.time_relative (``i`` 0) and udp.time_delta (1): seconds since the conversation's
    first packet and its previous one (tshark's udp.calculate_timestamps), to the microsecond
    as frame times; the previous packet is found by looking back along the index, no further
    than the conversation's first packet."""
    def get(pv):
        if pv.layers.udp is None or pv.conn_id is None or pv.conn_id < 0:
            return []
        an, n, c = pv.ctx.an, pv.n, pv.conn_id
        try:
            first = an.connections[c].first_packet
        except IndexError:
            return []
        ts, conn = pv.ctx.idx.ts, pv.ctx.idx.conn
        if not 1 <= first <= n:
            return []
        if i == 0:
            return [_us(ts[n - 1] - ts[first - 1])]
        k = n - 2
        while k >= first - 1 and conn[k] != c:
            k -= 1
        return [_us(ts[n - 1] - ts[k]) if k >= first - 1 else 0.0]
    return get


PROTOCOL = Protocol("udp", "User Datagram Protocol", P("udp", PROTO, _bytes, "the UDP datagram"), [
    P("udp.port", UINT, lambda pv: [u[0], u[1]] if (u := pv.layers.udp) else [], "source or destination port", size=2),
    P("udp.srcport", UINT, _f(0), "source port", size=2),
    P("udp.dstport", UINT, _f(1), "destination port", size=2),
    P("udp.length", UINT, _f(2), "length (header and payload)", size=2),
    P("udp.checksum", UINT, _f(3), "checksum", size=2),
    P("udp.stream", UINT, _stream, "UDP conversation number, from 0 in order of first packet", size=4),
    P("udp.time_relative", FLOAT, _times(0), "seconds since the conversation's first packet"),
    P("udp.time_delta", FLOAT, _times(1), "seconds since the conversation's previous packet"),
    P("udp.payload", BYTES, _payload, "payload bytes (every datagram's, as tshark 4.0 gives it)"),
])
