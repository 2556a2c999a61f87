"""``ip``: IPv4 header."""
from __future__ import annotations

from ipaddress import IPv4Address

from ._util import packet_field as P
from .types import BOOL, IPV4, PROTO, STRING, UINT, Protocol


def _f(i):
    def get(pv):
        ip = pv.layers.ip
        return [ip[i]] if ip is not None else []
    return get


def _bytes(pv):
    L = pv.layers
    return [pv.data[L.ip_off : L.ip_end]] if L.ip is not None else []


def _host(*which):
    """ip.src_host / dst_host / host (FT_STRING): the address as text, as tshark without name
    resolution (-n; wirefall resolves no names) gives it."""
    def get(pv):
        ip = pv.layers.ip
        return [str(IPv4Address(ip[i])) for i in which] if ip is not None else []
    return get


PROTOCOL = Protocol("ip", "Internet Protocol version 4", P("ip", PROTO, _bytes, "the IPv4 datagram"), [
    P("ip.addr", IPV4, lambda pv: [ip[9], ip[10]] if (ip := pv.layers.ip) else [], "source or destination address (CIDR: ip.addr == 10.0.0.0/8)"),
    P("ip.src", IPV4, _f(9), "source address"),
    P("ip.dst", IPV4, _f(10), "destination address"),
    P("ip.proto", UINT, _f(7), "protocol (6 TCP, 17 UDP; tshark's names: ip.proto == TCP)", size=1),
    P("ip.ttl", UINT, _f(6), "time to live", size=1),
    P("ip.len", UINT, _f(3), "total length", size=2),
    P("ip.id", UINT, _f(4), "identification", size=2),
    P("ip.hdr_len", UINT, _f(1), "header length in bytes", size=1),
    P("ip.version", UINT, lambda pv: [4] if pv.layers.ip else [6] if pv.layers.ip6 else [], "4 (6 on IPv6 packets: tshark's IPv6 dissector sets it too)", size=1),
    P("ip.dsfield", UINT, _f(2), "differentiated services byte", size=1),
    P("ip.dsfield.dscp", UINT, lambda pv: [ip[2] >> 2] if (ip := pv.layers.ip) else [], "differentiated services codepoint (6 bits)", size=1),
    P("ip.dsfield.ecn", UINT, lambda pv: [ip[2] & 3] if (ip := pv.layers.ip) else [], "explicit congestion notification (2 bits)", size=1),
    P("ip.src_host", STRING, _host(9), "source address as text (no name resolution: tshark -n's)"),
    P("ip.dst_host", STRING, _host(10), "destination address as text"),
    P("ip.host", STRING, _host(9, 10), "source or destination address as text"),
    P("ip.checksum", UINT, lambda pv: [ip[8]] if (ip := pv.layers.ip) else [], "header checksum", size=2),
    P("ip.flags", UINT, lambda pv: [ip[5] >> 13] if (ip := pv.layers.ip) else [], "flags (3 bits: 0x2 don't fragment, 0x1 more fragments)", size=1),
    P("ip.flags.df", BOOL, lambda pv: [(ip[5] >> 14) & 1] if (ip := pv.layers.ip) else [], "don't fragment"),
    P("ip.flags.mf", BOOL, lambda pv: [(ip[5] >> 13) & 1] if (ip := pv.layers.ip) else [], "more fragments"),
    P("ip.frag_offset", UINT, lambda pv: [(ip[5] & 0x1FFF) * 8] if (ip := pv.layers.ip) else [], "fragment offset in bytes", size=2),
])
