"""``ipv6``: IPv6 fixed header."""
from __future__ import annotations

from ._util import packet_field as P
from .types import IPV6, PROTO, UINT, Protocol


def _f(i):
    def get(pv):
        ip = pv.layers.ip6
        return [ip[i]] if ip is not None else []
    return get


def _bytes(pv):
    L = pv.layers
    return [pv.data[L.ip6_off : L.ip6_end]] if L.ip6 is not None else []


PROTOCOL = Protocol("ipv6", "Internet Protocol version 6", P("ipv6", PROTO, _bytes, "the IPv6 packet"), [
    P("ipv6.addr", IPV6, lambda pv: [ip[3], ip[4]] if (ip := pv.layers.ip6) else [], "source or destination address (ipv6.addr == fe80::/10)"),
    P("ipv6.src", IPV6, _f(3), "source address"),
    P("ipv6.dst", IPV6, _f(4), "destination address"),
    P("ipv6.nxt", UINT, _f(1), "next header of the fixed header (ipv6.nxt == UDP)", size=1),
    P("ipv6.hlim", UINT, _f(2), "hop limit", size=1),
    P("ipv6.plen", UINT, _f(0), "payload length", size=2),
    P("ipv6.flow", UINT, _f(5), "flow label", size=3),
    P("ipv6.tclass", UINT, _f(6), "traffic class", size=4),
    P("ipv6.version", UINT, lambda pv: [6] if pv.layers.ip6 else [], "6", size=1),
])
