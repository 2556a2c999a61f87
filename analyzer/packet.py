"""Hot-path header decoding: link layer -> IPv4/IPv6 -> TCP/UDP with ``struct``.

This runs once per packet, so it builds no object per layer (dpkt's per-packet objects
run ~55 k packets/s here, a struct scan several times that); the detail tree for one
packet, which is not hot, is built with dpkt in ``analyzer.detail``.

``Decoder.decode(linktype, data)`` returns a ``Decoded`` tuple or a string naming why the
packet could not be decoded.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

# Link types (https://www.tcpdump.org/linktypes.html)
LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_RAW_OLD = (12, 14)
LINKTYPE_LOOP = 108
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276

LINKTYPE_NAMES = {0: "BSD loopback", 1: "Ethernet", 101: "Raw IP", 12: "Raw IP", 14: "Raw IP", 108: "OpenBSD loopback",
                  113: "Linux cooked", 228: "Raw IPv4", 229: "Raw IPv6", 276: "Linux cooked v2"}

PROTO_TCP = 6
PROTO_UDP = 17

_u16 = struct.Struct("!H").unpack_from
_tcp = struct.Struct("!HHIIBBH").unpack_from  # sport dport seq ack off flags win
_udp = struct.Struct("!HHH").unpack_from

IPV6_EXT = {0, 43, 60, 51, 135, 139, 140}  # hop-by-hop, routing, dest opts, AH, mobility, HIP, shim6

# The common case in one unpack: Ethernet, IPv4 without options or fragmentation, then the
# fixed TCP header (ethertype, vihl, total, id, frag, proto, src, dst, sport, dport, seq, ack,
# off, flags, win) or UDP header (... sport, dport, ulen)
_ETH_IP4_TCP = struct.Struct("!12xHBxHHHxB2x4s4sHHIIBBH").unpack_from
_ETH_IP4_UDP = struct.Struct("!12xHBxHHHxB2x4s4sHHH").unpack_from


class Decoded(NamedTuple):
    ipver: int
    src: bytes  # packed address
    dst: bytes
    proto: int  # IP protocol number
    sport: int
    dport: int
    payload: bytes | memoryview  # TCP/UDP payload (or IP payload for other protocols)
    seq: int  # TCP only
    ack: int
    flags: int
    win: int
    l3_off: int  # offset of the IP header in the link-layer frame (-1 for reassembled)


_new = tuple.__new__  # Decoded without the namedtuple's Python-level __new__


def addr_str(packed: bytes) -> str:
    if len(packed) == 4:
        return "%d.%d.%d.%d" % tuple(packed)  # noqa: UP031  (the fastest form: once per new address)
    import socket  # IPv6 text form (zero compression); imported only when a capture has IPv6

    return socket.inet_ntop(socket.AF_INET6, packed)


def endpoint_str(packed: bytes, port: int) -> str:
    a = addr_str(packed)
    return f"[{a}]:{port}" if len(packed) == 16 else f"{a}:{port}"


class Defragmenter:
    """IPv4 fragment reassembly, bounded in datagrams held, bytes per datagram and bytes
    held in all (a flood of first fragments or of overlapping fragments cannot grow it;
    the oldest datagram goes first and is counted in ``dropped``)."""

    def __init__(self, max_datagrams: int = 1024, max_size: int = 65535 + 1500, max_bytes: int = 32 << 20):
        self.pending: dict[tuple, dict] = {}
        self.max_datagrams = max_datagrams
        self.max_size = max_size
        self.max_bytes = max_bytes
        self.held = 0  # fragment bytes held in all pending datagrams
        self.dropped = 0

    def _drop(self, key) -> None:
        ent = self.pending.pop(key, None)
        if ent is not None:
            self.held -= ent["bytes"]
            self.dropped += 1

    def add(self, key: tuple, offset: int, more: bool, data: bytes) -> bytes | None:
        if offset + len(data) > self.max_size:
            self._drop(key)
            return None
        ent = self.pending.get(key)
        if ent is None:
            if len(self.pending) >= self.max_datagrams:
                self._drop(next(iter(self.pending)))  # oldest goes
            ent = self.pending[key] = {"parts": {}, "total": None, "bytes": 0}
        parts = ent["parts"]
        old = parts.get(offset)
        n = len(data) - (len(old) if old is not None else 0)
        parts[offset] = data
        ent["bytes"] += n
        self.held += n
        if ent["bytes"] > 2 * self.max_size:  # overlapping fragments piling up: not a datagram
            self._drop(key)
            return None
        while self.held > self.max_bytes and self.pending:
            oldest = next(iter(self.pending))
            self._drop(oldest)
            if oldest == key:
                return None
        if not more:
            ent["total"] = offset + len(data)
        total = ent["total"]
        if total is None or ent["bytes"] < total:
            return None  # cannot be complete yet (no rebuild per fragment: no quadratic work)
        out = bytearray()
        for off in sorted(parts):
            part = parts[off]
            if off > len(out):
                return None  # hole
            out[off:] = b""
            out += part
        if len(out) < total:
            return None
        del self.pending[key]
        self.held -= ent["bytes"]
        return bytes(out[:total])


class Decoder:
    def __init__(self, frag_datagrams: int = 1024, frag_bytes: int = 32 << 20):
        self.defrag = Defragmenter(max_datagrams=frag_datagrams, max_bytes=frag_bytes)

    def decode(self, linktype: int, data: bytes) -> Decoded | str | None:
        """Decode one frame.  Returns Decoded, a reason string, or None for an IPv4
        fragment that does not complete a datagram yet."""
        n = len(data)
        if linktype == LINKTYPE_ETHERNET:
            # fast path (same result as the general one below, in one unpack and no calls)
            if n >= 54 and data[23] == PROTO_TCP and data[14] == 0x45:
                etype, _, total, _, frag, _, src, dst, sport, dport, seq, ack, doff, flags, win = _ETH_IP4_TCP(data, 0)
                if etype == 0x0800 and not frag & 0x3FFF and doff >= 0x50:
                    end = 14 + total if total >= 20 else n
                    if end > n:
                        end = n
                    if end >= 54:
                        return _new(Decoded, (4, src, dst, PROTO_TCP, sport, dport, data[34 + (doff >> 4) * 4 : end], seq, ack,
                                              flags | ((doff & 1) << 8), win, 14))
            elif n >= 42 and data[23] == PROTO_UDP and data[14] == 0x45:
                etype, _, total, _, frag, _, src, dst, sport, dport, ulen = _ETH_IP4_UDP(data, 0)
                if etype == 0x0800 and not frag & 0x3FFF:
                    end = 14 + total if total >= 20 else n
                    if end > n:
                        end = n
                    if end >= 42:
                        uend = 34 + ulen if 8 <= ulen <= end - 34 else end
                        return _new(Decoded, (4, src, dst, PROTO_UDP, sport, dport, data[42:uend], 0, 0, 0, 0, 14))
            if n < 14:
                return "Ethernet header truncated"
            etype = _u16(data, 12)[0]
            off = 14
            while etype in (0x8100, 0x88A8, 0x9100):  # 802.1Q / QinQ
                if n < off + 4:
                    return "VLAN tag truncated"
                etype = _u16(data, off + 2)[0]
                off += 4
            if etype == 0x0800:
                return self._ipv4(data, off)
            if etype == 0x86DD:
                return self._ipv6(data, off)
            return f"ethertype {etype:#06x}"
        if linktype == LINKTYPE_LINUX_SLL:
            if n < 16:
                return "Linux cooked header truncated"
            etype = _u16(data, 14)[0]
            off = 16
        elif linktype == LINKTYPE_LINUX_SLL2:
            if n < 20:
                return "Linux cooked v2 header truncated"
            etype = _u16(data, 0)[0]
            off = 20
        elif linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
            if n < 4:
                return "loopback header truncated"
            fam = int.from_bytes(data[:4], "big" if linktype == LINKTYPE_LOOP else "little")
            if linktype == LINKTYPE_NULL and fam > 0xFFFF:  # written on a big-endian host
                fam = int.from_bytes(data[:4], "big")
            if fam == 2:
                return self._ipv4(data, 4)
            if fam in (10, 24, 28, 30):
                return self._ipv6(data, 4)
            return f"loopback address family {fam}"
        elif linktype in (LINKTYPE_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6) or linktype in LINKTYPE_RAW_OLD:
            if not n:
                return "empty packet"
            v = data[0] >> 4
            if v == 4:
                return self._ipv4(data, 0)
            if v == 6:
                return self._ipv6(data, 0)
            return f"IP version {v}"
        else:
            return f"unsupported link type {linktype}"
        if etype == 0x0800:
            return self._ipv4(data, off)
        if etype == 0x86DD:
            return self._ipv6(data, off)
        return f"ethertype {etype:#06x}"

    def _ipv4(self, data, off: int):
        if len(data) < off + 20:
            return "IPv4 header truncated"
        vihl = data[off]
        if vihl >> 4 != 4:
            return "bad IPv4 version"
        ihl = (vihl & 15) * 4
        if ihl < 20:
            return "bad IPv4 header length"
        total = _u16(data, off + 2)[0]
        end = off + total if total >= ihl else len(data)  # TSO captures may carry 0
        if end > len(data):
            end = len(data)  # snapped or truncated: take what is there
        frag = _u16(data, off + 6)[0]
        proto = data[off + 9]
        src = data[off + 12 : off + 16]
        dst = data[off + 16 : off + 20]
        if frag & 0x3FFF:  # MF set or offset non-zero
            key = (src, dst, _u16(data, off + 4)[0], proto)
            whole = self.defrag.add(key, (frag & 0x1FFF) * 8, bool(frag & 0x2000), bytes(data[off + ihl : end]))
            if whole is None:
                return None
            return self._l4(4, src, dst, proto, whole, 0, len(whole), -1)
        return self._l4(4, src, dst, proto, data, off + ihl, end, off)

    def _ipv6(self, data, off: int):
        if len(data) < off + 40:
            return "IPv6 header truncated"
        plen = _u16(data, off + 4)[0]
        nxt = data[off + 6]
        src = data[off + 8 : off + 24]
        dst = data[off + 24 : off + 40]
        p = off + 40
        end = p + plen if plen else len(data)  # jumbogram / TSO: use what is there
        if end > len(data):
            end = len(data)
        while nxt in IPV6_EXT or nxt == 44:
            if p + 8 > end:
                return "IPv6 extension header truncated"
            if nxt == 44:  # fragment header
                fo = _u16(data, p + 2)[0]
                if fo & 0xFFF9:
                    return "IPv6 fragment"  # not reassembled (rare on the web)
                nxt = data[p]
                p += 8
                continue
            hlen = (data[p + 1] + 2) * 4 if nxt == 51 else (data[p + 1] + 1) * 8
            nxt = data[p]
            p += hlen
        return self._l4(6, src, dst, nxt, data, p, end, off)

    @staticmethod
    def _l4(ipver, src, dst, proto, data, p, end, l3_off):
        if proto == PROTO_TCP:
            if end - p < 20:
                return "TCP header truncated"
            sport, dport, seq, ack, doff, flags, win = _tcp(data, p)
            hl = (doff >> 4) * 4
            if hl < 20:
                return "bad TCP header length"
            return Decoded(ipver, src, dst, proto, sport, dport, data[p + hl : end], seq, ack, flags | ((doff & 1) << 8), win, l3_off)
        if proto == PROTO_UDP:
            if end - p < 8:
                return "UDP header truncated"
            sport, dport, ulen = _udp(data, p)
            uend = p + ulen if 8 <= ulen <= end - p else end
            return Decoded(ipver, src, dst, proto, sport, dport, data[p + 8 : uend], 0, 0, 0, 0, l3_off)
        return Decoded(ipver, src, dst, proto, 0, 0, data[p:end], 0, 0, 0, 0, l3_off)


# TCP flag bits
FIN, SYN, RST, PSH, ACK, URG, ECE, CWR = 1, 2, 4, 8, 16, 32, 64, 128


def tcp_flag_names(flags: int) -> str:
    names = [n for bit, n in ((SYN, "SYN"), (FIN, "FIN"), (RST, "RST"), (PSH, "PSH"), (ACK, "ACK"), (URG, "URG"), (ECE, "ECE"), (CWR, "CWR")) if flags & bit]
    return ", ".join(names)
