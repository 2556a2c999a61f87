"""Hot-path header decoding: link layer -> IPv4/IPv6 -> TCP/UDP with ``struct``.

This runs once per packet, so it builds no object per layer (dpkt's per-packet objects
run ~55 k packets/s here, a struct scan several times that); the detail tree for one
packet, which is not hot, is built with dpkt in ``analyzer.detail``.

``layers(linktype, data)`` walks the headers once — link layer, IPv4 or IPv6 with its
extension-header chain, TCP/UDP — and returns their offsets (``Layers``); it is the one walk
every reader uses (the detail tree, the packet list, TCP analysis).  ``Decoder.decode(linktype,
data)`` (the pipeline's) adds IPv4 reassembly and returns a ``Decoded`` tuple or a string naming
why the packet could not be decoded; its Ethernet/IPv4 fast path (inlined once more in
``analyzer.pipeline``) gives the same result as ``layers`` in one ``struct`` unpack.
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


# (NamedTuple's functional form, as capture.Record: no compile() per string annotation at start)
Decoded = NamedTuple("Decoded", [  # noqa: UP014 (see above)
    ("ipver", int),
    ("src", bytes),  # packed address
    ("dst", bytes),
    ("proto", int),  # IP protocol number
    ("sport", int),
    ("dport", int),
    ("payload", bytes | memoryview),  # TCP/UDP payload (or IP payload for other protocols)
    ("seq", int),  # TCP only
    ("ack", int),
    ("flags", int),
    ("win", int),
    ("l3_off", int),  # offset of the IP header in the link-layer frame (-1 for reassembled)
    ("l4_off", int),  # offset of the TCP/UDP header (-1 for reassembled)
    ("l3_end", int),  # end of the IP datagram by its length field, unclipped (-1: 0 or too small, or reassembled)
])


_new = tuple.__new__  # Decoded without the namedtuple's Python-level __new__


def addr_str(packed: bytes) -> str:
    if len(packed) == 4:
        return "%d.%d.%d.%d" % tuple(packed)  # noqa: UP031  (the fastest form: once per new address)
    # IPv6 text form (zero compression): socket's inet_ntop, from its C module (socket.py
    # itself imports selectors and enum classes, ~1.5 ms of a start); imported only when a
    # capture has IPv6
    from _socket import AF_INET6, inet_ntop

    return inet_ntop(AF_INET6, packed)


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


# (the functional form, as Decoded)
Layers = NamedTuple("Layers", [  # noqa: UP014 (see above)
    ("network", int),  # offset of the IP header; -1: link layer truncated or unsupported
    ("ethertype", int),  # 0x0800, 0x86DD, …; BSD loopback: the address family; raw IP, not v4/v6: -1
    ("ipver", int),  # 4, 6; 0: not IP (or not reached)
    ("src", bytes),  # packed addresses (b"" when not reached)
    ("dst", bytes),
    ("proto", int),  # transport protocol number, after the IPv6 extension headers; -1: not reached
    ("transport", int),  # offset of the transport header; -1: not reached
    ("end", int),  # end of the IP datagram in the frame: by its length field, clipped to the bytes captured
    ("length_end", int),  # end by the length field alone; -1: 0 or smaller than the header (TSO: the frame's end)
    ("frag", int),  # 0: not a fragment; else 1 + the fragment's offset in bytes (IPv4, or an IPv6 fragment header)
    ("more", bool),  # more fragments follow (IPv4 MF / IPv6 M flag)
    ("ident", int),  # IPv4 identification (the reassembly key)
    ("ext", tuple[tuple[int, int, int], ...]),  # IPv6 extension headers: (header type, offset, length) each
    ("payload", int),  # offset of the TCP/UDP payload; -1: no such header, or it does not fit in ``end``
    ("error", str | None),
])
Layers.__doc__ = """Where each layer of one frame starts, as offsets into the frame's bytes (the link-layer
    header is at 0): the one place link layer, IPv4/IPv6 (with the IPv6 extension-header chain)
    and the TCP/UDP header are walked.  ``layers()`` makes it; ``Decoder`` (the pipeline),
    ``analyzer.detail`` (tree and packet list) and ``analyzer.tcp_analysis`` read it.

    ``error`` names the first layer that could not be decoded (the fields of the layers after
    it are -1 / empty); a frame that is not IP has ``ipver`` 0 and ``error`` set, with
    ``ethertype`` what its link layer says follows."""


_NO_IP = (b"", b"", -1, -1, -1, -1, 0, False, 0, (), -1)


def _link(linktype: int, data) -> tuple[int, int] | str:
    """(offset of the network header, ethertype) of a frame, or why there is none."""
    n = len(data)
    if linktype == LINKTYPE_ETHERNET:
        if n < 14:
            return "Ethernet header truncated"
        etype = _u16(data, 12)[0]
        off = 14
        while etype in (0x8100, 0x88A8, 0x9100):  # 802.1Q / QinQ
            if n < off + 4:
                return "VLAN tag truncated"
            etype = _u16(data, off + 2)[0]
            off += 4
        return off, etype
    if linktype == LINKTYPE_LINUX_SLL:
        if n < 16:
            return "Linux cooked header truncated"
        return 16, _u16(data, 14)[0]
    if linktype == LINKTYPE_LINUX_SLL2:
        if n < 20:
            return "Linux cooked v2 header truncated"
        return 20, _u16(data, 0)[0]
    if linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
        if n < 4:
            return "loopback header truncated"
        fam = int.from_bytes(data[:4], "big" if linktype == LINKTYPE_LOOP else "little")
        if linktype == LINKTYPE_NULL and fam > 0xFFFF:  # written on a big-endian host
            fam = int.from_bytes(data[:4], "big")
        return 4, 0x0800 if fam == 2 else 0x86DD if fam in (10, 24, 28, 30) else fam
    if linktype in (LINKTYPE_RAW, LINKTYPE_IPV4, LINKTYPE_IPV6) or linktype in LINKTYPE_RAW_OLD:
        if not n:
            return "empty packet"
        v = data[0] >> 4
        return 0, 0x0800 if v == 4 else 0x86DD if v == 6 else -1
    return f"unsupported link type {linktype}"


def _not_ip(linktype: int, data, off: int, etype: int) -> str:
    if linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
        return f"loopback address family {etype}"
    if off == 0 and linktype not in (LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2, LINKTYPE_ETHERNET):
        return f"IP version {data[0] >> 4}"
    return f"ethertype {etype:#06x}"


def layers(linktype: int, data) -> Layers:
    """The layer offsets of one frame (see ``Layers``); never raises."""
    lk = _link(linktype, data)
    if isinstance(lk, str):
        return Layers(-1, -1, 0, *_NO_IP, lk)
    off, etype = lk
    n = len(data)
    if etype == 0x0800:
        if n < off + 20:
            return Layers(off, etype, 4, *_NO_IP, "IPv4 header truncated")
        vihl = data[off]
        ihl = (vihl & 15) * 4
        if vihl >> 4 != 4 or ihl < 20:
            return Layers(off, etype, 4, *_NO_IP, "bad IPv4 version" if vihl >> 4 != 4 else "bad IPv4 header length")
        total = _u16(data, off + 2)[0]
        lend = off + total if total >= ihl else -1  # TSO captures may carry 0
        end = n if lend < 0 or lend > n else lend  # snapped or truncated: take what is there
        fo = _u16(data, off + 6)[0]
        proto = data[off + 9]
        frag = (fo & 0x1FFF) * 8 + 1 if fo & 0x3FFF else 0  # MF set or offset non-zero
        pay, err4 = _transport(data, proto, off + ihl, end) if not frag else (-1, None)
        return _new(Layers, (off, etype, 4, data[off + 12 : off + 16], data[off + 16 : off + 20], proto, off + ihl, end, lend,
                             frag, bool(fo & 0x2000), (data[off + 4] << 8) | data[off + 5], (), pay, err4))
    if etype == 0x86DD:
        if n < off + 40:
            return Layers(off, etype, 6, *_NO_IP, "IPv6 header truncated")
        plen = _u16(data, off + 4)[0]
        nxt = data[off + 6]
        p = off + 40
        lend = p + plen if plen else -1  # jumbogram / TSO: use what is there
        end = n if lend < 0 or lend > n else lend
        ext: list[tuple[int, int, int]] = []
        frag, more = 0, False
        error: str | None = None
        while nxt in IPV6_EXT or nxt == 44:
            if p + 8 > end:
                error = "IPv6 extension header truncated"
                break
            if nxt == 44:  # fragment header
                fo = _u16(data, p + 2)[0]
                if fo & 0xFFF9:
                    frag, more = (fo & 0xFFF8) + 1, bool(fo & 1)
                hlen = 8
            else:
                hlen = (data[p + 1] + 2) * 4 if nxt == 51 else (data[p + 1] + 1) * 8
            if p + hlen > end:  # (its length runs past the datagram: what the datagram holds of it, then nothing)
                ext.append((nxt, p, end - p))
                p = end
                error = "IPv6 extension header truncated"
                break
            ext.append((nxt, p, hlen))
            nxt = data[p]
            p += hlen
            if frag > 1:  # not the first fragment: what follows is payload, not headers
                break
        pay = -1
        if error is None and not frag:
            pay, error = _transport(data, nxt, p, end)
        return _new(Layers, (off, etype, 6, data[off + 8 : off + 24], data[off + 24 : off + 40], nxt, p, end, lend,
                             frag, more, 0, tuple(ext), pay, error))
    return Layers(off, etype, 0, *_NO_IP, _not_ip(linktype, data, off, etype))


def _transport(data, proto: int, p: int, end: int) -> tuple[int, str | None]:
    """(payload offset, error) after the TCP/UDP header at ``p``."""
    if proto == PROTO_TCP:
        if end - p < 20:
            return -1, "TCP header truncated"
        hl = (data[p + 12] >> 4) * 4
        if hl < 20:
            return -1, "bad TCP header length"
        return p + hl, None
    if proto == PROTO_UDP:
        if end - p < 8:
            return -1, "UDP header truncated"
        return p + 8, None
    return -1, None


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
                                              flags | ((doff & 1) << 8), win, 14, 34, 14 + total if total >= 20 else -1))
            elif n >= 42 and data[23] == PROTO_UDP and data[14] == 0x45:
                etype, _, total, _, frag, _, src, dst, sport, dport, ulen = _ETH_IP4_UDP(data, 0)
                if etype == 0x0800 and not frag & 0x3FFF:
                    end = 14 + total if total >= 20 else n
                    if end > n:
                        end = n
                    if end >= 42:
                        uend = 34 + ulen if 8 <= ulen <= end - 34 else end
                        return _new(Decoded, (4, src, dst, PROTO_UDP, sport, dport, data[42:uend], 0, 0, 0, 0, 14, 34,
                                              14 + total if total >= 20 else -1))
        L = layers(linktype, data)
        if L.frag and L.ipver == 6:
            return "IPv6 fragment"  # not reassembled (rare on the web)
        if L.error is not None:
            return L.error
        if L.frag:
            whole = self.defrag.add((L.src, L.dst, L.ident, L.proto), L.frag - 1, L.more, bytes(data[L.transport : L.end]))
            if whole is None:
                return None
            return self._l4(4, L.src, L.dst, L.proto, whole, 0, len(whole), -1, -1, -1)
        return self._l4(L.ipver, L.src, L.dst, L.proto, data, L.transport, L.end, L.network, L.transport, L.length_end)

    @staticmethod
    def _l4(ipver, src, dst, proto, data, p, end, l3_off, l4_off, l3_end):
        if proto == PROTO_TCP:
            if end - p < 20:
                return "TCP header truncated"
            sport, dport, seq, ack, doff, flags, win = _tcp(data, p)
            hl = (doff >> 4) * 4
            if hl < 20:
                return "bad TCP header length"
            return Decoded(ipver, src, dst, proto, sport, dport, data[p + hl : end], seq, ack, flags | ((doff & 1) << 8), win,
                           l3_off, l4_off, l3_end)
        if proto == PROTO_UDP:
            if end - p < 8:
                return "UDP header truncated"
            sport, dport, ulen = _udp(data, p)
            uend = p + ulen if 8 <= ulen <= end - p else end
            return Decoded(ipver, src, dst, proto, sport, dport, data[p + 8 : uend], 0, 0, 0, 0, l3_off, l4_off, l3_end)
        return Decoded(ipver, src, dst, proto, 0, 0, data[p:end], 0, 0, 0, 0, l3_off, l4_off, l3_end)


class TcpOptions(list[tuple[int, bytes, int]]):
    """The TCP options of a segment as tshark 4.0 walks them (``tcp_options``): ``(kind, value,
    offset in the options)`` each, EOL and NOP with an empty value, and ``stop``: why the walk
    ended before the options' end, ``(OPT_PADDING | OPT_NO_LENGTH | OPT_TOO_SHORT | OPT_PAST_END,
    offset)``, or None when it reached it."""

    stop: tuple[str, int] | None = None  # (set on the instance only when the walk stops early: no __init__ to run)


# how a walk of the options stops early (TcpOptions.stop), with tshark 4.0's words for each
OPT_PADDING = "padding"  # "Non-zero header padding": a byte other than EOL after an EOL
OPT_NO_LENGTH = "no length"  # "%s (length byte past end of options)"
OPT_TOO_SHORT = "too short"  # "%s (with too-short option length = %u byte%s)"
OPT_PAST_END = "past end"  # "%s (option length = %u byte%s says option goes past end of options)"


def tcp_options(opts) -> TcpOptions:
    """TCP options ``opts`` (the header's bytes after its first 20) as tshark 4.0 walks them —
    the one walk of them in wirefall (the detail tree, the filter's tcp.options.* fields, the
    Info column, the window scale the flow layer and TCP analysis apply, the D-SACK expert
    item).  Its rules, each checked against tshark 4.0.17 on built segments
    (tests/test_tcp_options37.py):

    - EOL (kind 0) and NOP (kind 1) are one byte.  After an EOL only more EOLs are walked: the
      first other byte ends the walk, the rest being "Non-zero header padding" (an Error expert
      item), so nothing after an EOL is an option (``00 01 03 03 07 00 00 00``: one EOL, no
      window scale; ``00 00 00 00``: four EOLs), as RFC 9293 §3.1 has it: what follows the
      End of Option List is header padding of zeros.
    - Every other kind has a length byte: none left, a length below 2, or one running past
      the options ends the walk there (a Note expert item each) — the options before it
      stand, the one at fault and those after it are not options.
    - An option's own length rules (WS 3, MSS 4, SACK-permitted 2, timestamps 10) are not
      the walk's: such an option is walked and its dissector finds the length wrong (tshark:
      "option length should be N"), as its readers here do.
    """
    if type(opts) is not bytes:
        opts = bytes(opts)  # (a view of the packet: its values as bytes, as from bytes)
    out = TcpOptions()
    add = out.append
    i, n = 0, len(opts)
    while i < n:
        k = opts[i]
        if k <= 1:
            add((k, b"", i))
            i += 1
            if k == 0:
                while i < n and not opts[i]:
                    add((0, b"", i))
                    i += 1
                if i < n:
                    out.stop = (OPT_PADDING, i)
                    break
            continue
        if i + 1 >= n:
            out.stop = (OPT_NO_LENGTH, i)
            break
        ln = opts[i + 1]
        if ln < 2:
            out.stop = (OPT_TOO_SHORT, i)
            break
        if i + ln > n:
            out.stop = (OPT_PAST_END, i)
            break
        add((k, opts[i + 2 : i + ln], i))
        i += ln
    return out


def wscale_option(opts) -> int | None:
    """The shift of the Window Scale option among TCP options ``opts`` (``tcp_options``'s walk;
    capped at 14 as RFC 7323 §2.3 and tshark do); None without one.  Of two, the last: tshark
    4.0 stores the shift as it dissects each one, so the last one walked is the one applied (``03 03 02 03 03 05``: tcp.window_size_scalefactor 32, checked in
    tests/test_tcp_options37.py).  One of another length than 3 is none (tshark: "option
    length should be 3", no scale stored)."""
    ws = -1
    for k, v, _ in tcp_options(opts):
        if k == 3 and len(v) == 1:
            ws = v[0]
    return None if ws < 0 else min(ws, 14)


# TCP flag bits
FIN, SYN, RST, PSH, ACK, URG, ECE, CWR = 1, 2, 4, 8, 16, 32, 64, 128


def tcp_flag_names(flags: int) -> str:
    names = [n for bit, n in ((SYN, "SYN"), (FIN, "FIN"), (RST, "RST"), (PSH, "PSH"), (ACK, "ACK"), (URG, "URG"), (ECE, "ECE"), (CWR, "CWR")) if flags & bit]
    return ", ".join(names)
