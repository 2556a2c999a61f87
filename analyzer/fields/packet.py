"""One packet as the display filter sees it: lazily read, lazily decoded.

``PacketView(ctx, n)`` costs a few attribute stores; it reads the packet's bytes from the
capture (``PacketSource``) only when a field needs them, decodes the link/IP/TCP/UDP
headers only then (once), and looks up the analysis frames that complete on it only when a
frame-level field is asked for.  A filter over the index alone (``frame.number``,
``frame.len``, ``tcp.stream`` on a packet wirefall tied to a connection…) reads nothing.

``PacketContext`` holds what every packet of one filtering pass shares: the analysis, the
packet source, the packet -> frames index, TCP/UDP stream numbers as tshark counts them, the
exchanges by (connection, stream) and per-connection TCP state (relative sequence numbers).
"""
from __future__ import annotations

import struct
from typing import Any

_u16 = struct.Struct("!H").unpack_from
_tcp = struct.Struct("!HHIIBBHHH").unpack_from  # sport dport seq ack off flags win csum urp
_udp = struct.Struct("!HHHH").unpack_from
_ip4 = struct.Struct("!BBHHHBBH4s4s").unpack_from  # vihl tos total id frag ttl proto csum src dst
# the common case in one unpack: Ethernet, IPv4 without options, then TCP (fixed header) or UDP
_E4TCP = struct.Struct("!6s6sHBBHHHBBHIIHHIIBBHHH").unpack_from
_E4UDP = struct.Struct("!6s6sHBBHHHBBHIIHHHH").unpack_from

IPV6_EXT = (0, 43, 60, 51, 135, 139, 140, 44)


class Layers:
    """Header fields of one packet (None where the layer is absent).  Offsets are into the
    captured bytes, so that slices (``tcp[0:4]``) and ``contains`` read the right bytes."""

    __slots__ = ("link", "eth", "eth_off", "ip", "ip_off", "ip_end", "ip6", "ip6_off", "ip6_end",
                 "proto", "frag", "tcp", "tcp_off", "udp", "udp_off", "l4_end")

    def __init__(self):
        self.link = None  # "eth", "sll", "sll2", "null", "raw"
        self.eth = None  # (dst, src, type) with the type after VLAN tags
        self.eth_off = 0
        self.ip = None  # (version, ihl, tos, total, id, frag, ttl, proto, csum, src int, dst int)
        self.ip_off = self.ip_end = 0
        self.ip6 = None  # (plen, nxt, hlim, src int, dst int, flow, tclass)
        self.ip6_off = self.ip6_end = 0
        self.proto = None  # transport protocol number (after IPv6 extension headers)
        self.frag = False  # a fragment (no transport header decoded, as tshark before reassembly)
        self.tcp = None  # (sport, dport, seq, ack, hdr_len, flags, win, csum, urp, payload len)
        self.tcp_off = 0
        self.udp = None  # (sport, dport, length, csum)
        self.udp_off = 0
        self.l4_end = 0


def decode_layers(linktype: int, data: bytes) -> Layers:
    """Link, IP and TCP/UDP headers with their offsets; a truncated header ends the decode
    at the layer before it (never an exception)."""
    L = Layers()
    n = len(data)
    etype = None
    off = 0
    if linktype == 1 and n >= 42 and data[14] == 0x45 and data[12:14] == b"\x08\x00" and not data[20] & 0x3F and not data[21]:
        # fast path (same result as below): Ethernet, IPv4 with a 20-byte header, not a fragment
        proto = data[23]
        if proto == 6 and n >= 54:
            (dst, src, etype, vihl, tos, total, ident, frag, ttl, proto, csum, s4, d4,
             sport, dport, seq, ack, doff, flags, win, tcsum, urp) = _E4TCP(data, 0)
            hl = (doff >> 4) * 4
            end = 14 + total if 20 <= total and 14 + total <= n else n
            if hl >= 20 and end >= 34 + 20:
                L.link, L.eth, L.ip = "eth", (dst, src, etype), (4, 20, tos, total, ident, frag, ttl, proto, csum, s4, d4)
                L.ip_off, L.ip_end, L.proto, L.l4_end, L.tcp_off = 14, end, 6, end, 34
                L.tcp = (sport, dport, seq, ack, hl, flags | ((doff & 1) << 8), win, tcsum, urp, max(end - 34 - hl, 0))
                return L
        elif proto == 17:
            dst, src, etype, vihl, tos, total, ident, frag, ttl, proto, csum, s4, d4, sport, dport, ulen, ucsum = _E4UDP(data, 0)
            end = 14 + total if 20 <= total and 14 + total <= n else n
            if end >= 42:
                L.link, L.eth, L.ip = "eth", (dst, src, etype), (4, 20, tos, total, ident, frag, ttl, proto, csum, s4, d4)
                L.ip_off, L.ip_end, L.proto, L.l4_end, L.udp_off = 14, end, 17, end, 34
                L.udp = (sport, dport, ulen, ucsum)
                return L
    if linktype == 1:
        if n < 14:
            return L
        L.link = "eth"
        etype = _u16(data, 12)[0]
        off = 14
        while etype in (0x8100, 0x88A8, 0x9100) and n >= off + 4:
            etype = _u16(data, off + 2)[0]
            off += 4
        L.eth = (data[0:6], data[6:12], etype)
    elif linktype == 113:
        if n < 16:
            return L
        L.link, etype, off = "sll", _u16(data, 14)[0], 16
    elif linktype == 276:
        if n < 20:
            return L
        L.link, etype, off = "sll2", _u16(data, 0)[0], 20
    elif linktype in (0, 108):
        if n < 4:
            return L
        fam = int.from_bytes(data[:4], "big" if linktype == 108 else "little")
        if linktype == 0 and fam > 0xFFFF:
            fam = int.from_bytes(data[:4], "big")
        L.link, off = "null", 4
        etype = 0x0800 if fam == 2 else 0x86DD if fam in (10, 24, 28, 30) else None
    elif linktype in (101, 228, 229, 12, 14):
        if not n:
            return L
        L.link = "raw"
        etype = 0x0800 if data[0] >> 4 == 4 else 0x86DD if data[0] >> 4 == 6 else None
    else:
        return L
    if etype == 0x0800:
        if n < off + 20 or data[off] >> 4 != 4:
            return L
        vihl, tos, total, ident, frag, ttl, proto, csum, src, dst = _ip4(data, off)
        ihl = (vihl & 15) * 4
        if ihl < 20:
            return L
        end = off + total if ihl <= total and off + total <= n else n
        L.ip = (4, ihl, tos, total, ident, frag, ttl, proto, csum, int.from_bytes(src, "big"), int.from_bytes(dst, "big"))
        L.ip_off, L.ip_end = off, end
        L.proto = proto
        if frag & 0x3FFF:
            L.frag = True
            return L
        p = off + ihl
    elif etype == 0x86DD:
        if n < off + 40:
            return L
        w0 = int.from_bytes(data[off : off + 4], "big")
        plen = _u16(data, off + 4)[0]
        nxt = data[off + 6]
        end = min(off + 40 + plen, n) if plen else n
        L.ip6 = (plen, nxt, data[off + 7], int.from_bytes(data[off + 8 : off + 24], "big"),
                 int.from_bytes(data[off + 24 : off + 40], "big"), w0 & 0xFFFFF, (w0 >> 20) & 0xFF)
        L.ip6_off, L.ip6_end = off, end
        p = off + 40
        proto = nxt
        while proto in IPV6_EXT and p + 8 <= end:
            if proto == 44:
                if _u16(data, p + 2)[0] & 0xFFF9:
                    L.frag = True
                    L.proto = 44
                    return L
                hl = 8
            else:
                hl = (data[p + 1] + 2) * 4 if proto == 51 else (data[p + 1] + 1) * 8
            proto = data[p]
            p += hl
        L.proto = proto
    else:
        return L
    L.l4_end = end
    if proto == 6 and end - p >= 20:
        sport, dport, seq, ack, doff, flags, win, csum, urp = _tcp(data, p)
        hl = (doff >> 4) * 4
        if hl >= 20:
            L.tcp = (sport, dport, seq, ack, hl, flags | ((doff & 1) << 8), win, csum, urp, max(end - p - hl, 0))
            L.tcp_off = p
    elif proto == 17 and end - p >= 8:
        L.udp = _udp(data, p)
        L.udp_off = p
    return L


class PacketContext:
    """What every packet of one filtering pass shares (see the module docstring)."""

    def __init__(self, an, source):
        from wirefall.analyzer.detail import _frame_index

        self.an = an
        self.source = source
        self.idx = an.index
        self.frames = an.frames
        self.by_packet = _frame_index(an)
        self.t0 = self.idx.ts[0] if len(self.idx) else 0.0
        self.conns = an.connections
        self._clients: dict[int, tuple[int, int]] = {}
        self.tcp_states: dict[int, Any] = {}
        self._streams: dict[int, int] | None = None
        self._ex: dict | None = None
        self.cache: dict[str, Any] = {}  # per-protocol memo (e.g. a connection's QUIC CID length)

    def stream_number(self, conn_id: int) -> int | None:
        """tshark's tcp.stream / udp.stream: connections of that transport counted from 0 in
        the order of their first packet."""
        if self._streams is None:
            s: dict[int, int] = {}
            counts = {"tcp": 0, "udp": 0}
            for c in sorted(self.an.connections, key=lambda c: (c.first_packet, c.id)):
                if c.transport in counts:
                    s[c.id] = counts[c.transport]
                    counts[c.transport] += 1
            self._streams = s
        return self._streams.get(conn_id)

    def client(self, conn_id: int) -> tuple[int, int]:
        """The client endpoint of a connection as (address int, port), for directions."""
        c = self._clients.get(conn_id)
        if c is None:
            import ipaddress

            conn = self.conns[conn_id]
            try:
                c = (int(ipaddress.ip_address(conn.client[0])), conn.client[1])
            except ValueError:
                c = (-1, -1)
            self._clients[conn_id] = c
        return c

    def exchange(self, conn_id: int, stream_id):
        if self._ex is None:
            ex: dict = {}
            for e in self.an.exchanges:
                ex.setdefault((e.connection, e.stream_id), e)
            self._ex = ex
        return self._ex.get((conn_id, stream_id))


class PacketView:
    __slots__ = ("ctx", "n", "_data", "_layers", "_frames", "_row", "_dir", "_conn", "memo")

    def __init__(self, ctx: PacketContext, n: int):
        self.ctx = ctx
        self.n = n
        self._data: bytes | None = None
        self._layers: Layers | None = None
        self._frames: list | None = None
        self._row: tuple | None = None
        self._dir: int | None = -1  # -1: not worked out yet
        self._conn: Any = -1  # -1: not looked up yet, then the Connection or None
        self.memo = None  # per-packet results a protocol module keeps (e.g. QUIC headers)

    @property
    def data(self) -> bytes:
        if self._data is None:
            i = self.n - 1
            idx = self.ctx.idx
            self._data = self.ctx.source.read(idx.offset[i], idx.caplen[i])
        return self._data

    @property
    def layers(self) -> Layers:
        if self._layers is None:
            self._layers = decode_layers(self.ctx.idx.linktype[self.n - 1], self.data)
        return self._layers

    @property
    def frames(self) -> list:
        """The analysis frames that complete on this packet (where tshark shows them)."""
        if self._frames is None:
            frames = self.ctx.frames
            n = self.n
            self._frames = [frames[i] for i in self.ctx.by_packet.get(n, ()) if frames[i].packet == n]
        return self._frames

    @property
    def spanning(self) -> list:
        """Every analysis frame with a byte in this packet (those completing here too)."""
        frames = self.ctx.frames
        return [frames[i] for i in self.ctx.by_packet.get(self.n, ())]

    @property
    def conn_id(self) -> int:
        return self.ctx.idx.conn[self.n - 1]

    @property
    def connection(self):
        if self._conn == -1:
            c = self.ctx.idx.conn[self.n - 1]
            conns = self.ctx.conns
            self._conn = conns[c] if 0 <= c < len(conns) else None
        return self._conn

    @property
    def row(self) -> tuple:
        """The packet-list row (no, time, source, destination, protocol, length, info)."""
        if self._row is None:
            from wirefall.analyzer.detail import packet_row

            self._row = packet_row(self.ctx.an, self.ctx.source, self.n)
        return self._row

    @property
    def direction(self) -> int | None:
        """0 (client to server) or 1 for a TCP/UDP packet of a connection, else None."""
        if self._dir == -1:
            self._dir = None
            c = self.ctx.idx.conn[self.n - 1]
            L = self.layers
            t = L.tcp or L.udp
            if c >= 0 and t is not None and c < len(self.ctx.conns):
                ip = L.ip
                src = ip[9] if ip is not None else L.ip6[3] if L.ip6 is not None else None
                if src is not None:
                    a, port = self.ctx.client(c)
                    if type(src) is bytes:
                        src = int.from_bytes(src, "big")
                    self._dir = 0 if (src == a and t[0] == port) else 1
        return self._dir
