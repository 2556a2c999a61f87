"""Per-packet detail, decoded on demand from the capture file (not hot).

- ``packet_bytes(source, analysis, n)``: the captured bytes of packet ``n`` (1-based).
- ``packet_detail(analysis, source, n) -> list[Node]``: the Wireshark-like tree of one
  packet: frame, link (Ethernet / Linux cooked v1, v2 / BSD loopback / raw IP), IPv4 or
  IPv6, TCP or UDP (decoded with dpkt, which is fine for one packet), then the protocol
  frames the analysis placed on this packet (TLS records, HTTP/1, HTTP/2, SPDY, QUIC,
  HTTP/3) with their fields and decoded headers.
- ``row_columns``: Source, Destination, Protocol and Info of one packet, the Info in tshark's
  words (``analyzer.info``); ``analyzer.packet_record.packet_record`` makes the record every
  frontend shows from it, and ``packet_row`` / ``packet_rows`` are its tuple form (No., Time,
  Source, Destination, Protocol, Length, Info).
- ``hexdump(data)``: hex + ASCII lines.
- ``decrypted_tls(analysis, source, n)``: the plaintext of the TLS records that complete on
  packet ``n`` (Wireshark's "Decrypted TLS" tabs), decrypted again on demand: the analysis
  keeps only numbers per decrypted record (``analysis.tls_records``, see
  ``analyzer.sessions.tls``); the record is re-read from the capture through its TCP
  segments and opened with the key named there, looked up in ``analysis.keylog``.
- ``decrypted_quic(analysis, source, n)``: the plaintext of each decrypted QUIC packet in the
  datagram of packet ``n`` (Wireshark's "Decrypted QUIC" tabs), decrypted again on demand from
  the numbers in ``analysis.quic_packets`` (see ``analyzer.sessions.quic``); the QUIC and
  HTTP/3 frame nodes of the tree point into these tabs (``Node.source``).

Every ``Node`` carries the byte range it covers in the packet (``start``, ``end``; -1 when
it has none, e.g. decrypted content) for highlighting, and, where Wireshark has one, the
display-filter field name (``abbrev``) with the value formatted as ``tshark -T json``
prints it, so that tests can compare the tree with tshark field by field.
"""
from __future__ import annotations

import socket
import struct
import threading
from functools import lru_cache, partial
from array import array
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import datetime, UTC
from typing import Any
from collections.abc import Iterable

import dpkt

from wirefall.dissectors.registry import REGISTRY, find
from wirefall.dissectors.tls import ContentType

from .fields.tcp import AFTER_TCP, OPT_WORDS, OWN_LINE, dissected, opt_word, option_items
from .info import frame_text
from .model import PROTO_NAMES, Analysis, Frame
from .packet import LINKTYPE_NAMES, OPT_NO_LENGTH, OPT_PADDING, OPT_PAST_END, OPT_TOO_SHORT, Decoder, Layers, layers, tcp_options
from .packet_record import seconds_text
from .protocols import hooks
from .protocols import quic as quic_hooks
from .protocols.http2 import TYPES as H2_TYPES  # noqa: F401 (HTTP/2's wire numbers by Frame.type, as tests name them)
from .tcp_analysis import EXPERT as TA_EXPERT
from .tcp_analysis import F_DUPLICATE_ACK as TA_DUPLICATE_ACK
from .tcp_analysis import F_FAST_RETRANSMISSION as TA_FAST_RETRANSMISSION
from .tcp_analysis import F_RETRANSMISSION as TA_RETRANSMISSION
from .tcp_analysis import F_SPURIOUS_RETRANSMISSION as TA_SPURIOUS_RETRANSMISSION
from .tcp_analysis import NAMES as TA_NAMES
from .tcp_analysis import TREE_ORDER as TA_TREE_ORDER
from .tcp_analysis import tcp_analysis

__all__ = ["Node", "packet_bytes", "packet_detail", "packet_row", "packet_rows", "hexdump", "frames_on_packet",
           "frame_summary", "flag_names", "PROTO_DISPLAY", "decrypted_tls", "tls_records_on_packet", "DecryptedRecord",
           "decrypted_quic", "quic_packets_on_packet", "DecryptedQuic"]


@dataclass(slots=True)
class Node:
    label: str
    children: list[Node] = field(default_factory=list)
    start: int = -1  # byte range in the packet bytes, [start, end)
    end: int = -1
    abbrev: str | None = None  # Wireshark display-filter field name, when there is one
    value: Any = None  # the value as tshark -T json prints it
    source: int = 0  # which bytes start/end refer to: 0 the packet, k the k-th decrypted record on it

    def add(self, label: str, start: int = -1, end: int = -1, abbrev: str | None = None, value: Any = None) -> Node:
        n = Node(label, [], start, end, abbrev, value)
        self.children.append(n)
        return n

    def walk(self) -> Iterable[Node]:
        yield self
        for c in self.children:
            yield from c.walk()

    def find(self, abbrev: str) -> Node | None:
        for n in self.walk():
            if n.abbrev == abbrev:
                return n
        return None


def _leaf(parent: Node, name: str, value: Any, start: int, end: int, abbrev: str | None = None, shown: str | None = None) -> Node:
    return parent.add(f"{name}: {shown if shown is not None else value}", start, end, abbrev, value)


# ---------------------------------------------------------------- bytes and hex dump

def packet_bytes(source, analysis: Analysis, n: int) -> bytes:
    """Captured bytes of packet ``n`` (1-based), read from the file by offset."""
    idx = analysis.index
    if not 1 <= n <= len(idx):
        return b""
    try:
        return source.read(idx.offset[n - 1], idx.caplen[n - 1])
    except OSError:
        return b""


def _printable(b: int) -> str:
    return chr(b) if 0x20 <= b < 0x7F else "."


def hexdump(data: bytes, width: int = 16) -> list[str]:
    """Lines exactly like ``tshark -x``: ``0000  16 03 01 00 …   ................``.
    Byte i of a line is at column 6 + 3*i (hex) and 6 + 3*width + 2 + i (ASCII)."""
    out = []
    for off in range(0, len(data), width):
        chunk = data[off : off + width]
        hx = " ".join(f"{b:02x}" for b in chunk)
        out.append(f"{off:04x}  {hx:<{width * 3 - 1}}   {''.join(_printable(b) for b in chunk)}")
    return out


# ---------------------------------------------------------------- packet -> frames index

# from this many frames not yet indexed, the index is built at once with numpy (1.2 M packets,
# 302 k frames: 2.0 s of Python → ~0.2 s), else frame by frame (the loader's increments)
BULK_FRAMES = 50_000


class PacketFrames:
    """Packet number → indices of the frames on it, ascending (what ``_frame_index`` returns):
    a block built at once (``off``/``ids``: the frames on packet n are ``ids[off[n]:off[n+1]]``)
    and a dict for the frames indexed one by one after it."""

    __slots__ = ("off", "ids", "extra")

    def __init__(self, off=None, ids=None) -> None:
        self.off = off
        self.ids = ids
        self.extra: dict[int, list[int]] = {}

    def get(self, n: int, default=()):
        got = None
        off = self.off
        if off is not None and 0 <= n < len(off) - 1:
            a, b = int(off[n]), int(off[n + 1])
            if a < b:
                got = self.ids[a:b].tolist()
        more = self.extra.get(n)
        if more:
            got = got + more if got else more
        return default if got is None else got

    def setdefault(self, n: int, v: list[int]) -> list[int]:
        return self.extra.setdefault(n, v)

    def __reduce__(self):
        # pickled (the cache stores a big analysis's index) as plain arrays, not numpy's: a
        # reopened packet list reads it without importing numpy (~0.1 s of the TUI's first screen)
        return PacketFrames, (_plain(self.off), _plain(self.ids)), (None, {"extra": self.extra})


def _plain(a):
    """``a`` (``_bulk_index``'s int32/int64 numpy array, an ``array.array`` or None) as an
    ``array.array`` of the same values."""
    return a if a is None or isinstance(a, array) else array({4: "i", 8: "q"}[a.itemsize], a.tobytes())


def _bulk_index(frames, nfr: int, conn_of, npk: int) -> PacketFrames:
    """The index of frames ``[0, nfr)`` with numpy: exactly what the frame-by-frame loop of
    ``_frame_index`` gives (each frame on its completing packet and on its connection's
    packets from its first one up to that), for a complete analysis where that loop's
    Python per (frame, packet) pair is seconds."""
    from .numpy_lite import numpy

    np = numpy()

    last = np.fromiter((f.packet for f in frames[:nfr]), np.int64, nfr)
    first = np.fromiter((f.first_packet or f.packet for f in frames[:nfr]), np.int64, nfr)
    conn = np.fromiter((-1 if f.connection is None else f.connection for f in frames[:nfr]), np.int64, nfr)
    lo, hi = np.minimum(first, last), np.maximum(first, last)
    ids = np.arange(nfr, dtype=np.int64)
    # every connection's packets in order, keyed (connection, packet) so one searchsorted
    # finds a frame's span within its own connection
    pc = np.frombuffer(conn_of[:npk], dtype=np.dtype(conn_of.typecode)).astype(np.int64)  # a copy: the loader may append
    mine = np.flatnonzero(pc >= 0)
    width = npk + 2
    order = mine[np.argsort(pc[mine], kind="stable")]
    key = pc[order] * width + (order + 1)
    span = np.flatnonzero((lo < hi) & (conn >= 0))
    base = conn[span] * width
    a = np.searchsorted(key, base + np.maximum(lo[span], 1))
    b = np.searchsorted(key, base + np.minimum(hi[span], npk + 1))
    counts = np.maximum(b - a, 0)
    total = int(counts.sum())
    starts = np.cumsum(counts) - counts
    pos = np.repeat(a - starts, counts) + np.arange(total, dtype=np.int64)
    pkts = np.concatenate([hi, order[pos] + 1])
    who = np.concatenate([ids, np.repeat(ids[span], counts)])
    srt = np.lexsort((who, pkts))
    pkts, who = pkts[srt], who[srt]
    size = int(pkts[-1]) + 1 if len(pkts) else 1
    off = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(pkts, minlength=size), out=off[1:])
    return PacketFrames(off, who.astype(np.int32))


def _frame_index(analysis: Analysis) -> PacketFrames:
    """Lazy index from packet number to the analysis frames on it, built once (and
    again if frames were added since, e.g. while loading).

    A frame is on every packet from ``first_packet`` to ``packet`` that belongs to the
    frame's connection (a DATA frame spread over 40 segments shows on each of them)."""
    frames = analysis.frames
    nfr = len(frames)  # snapshot: the loader may be appending
    cache = analysis.__dict__.get("_wf_frame_index")
    if cache is not None and cache[0] == nfr:
        return cache[1]
    conn_of = analysis.index.conn
    npk = len(conn_of)  # after the frames' snapshot: every packet of those frames is indexed
    if cache is None and nfr >= BULK_FRAMES:
        by_packet = _bulk_index(frames, nfr, conn_of, npk)
        # frames added later are indexed one by one (their connections' packet lists made then)
        analysis.__dict__["_wf_frame_index"] = (nfr, by_packet, 0, {})
        return by_packet
    # incremental: frames and packets are only ever appended, so index the new ones (indices
    # grow, the lists stay sorted)
    if cache is not None and cache[0] < nfr:
        done, by_packet, pk_done, conn_pk = cache
    else:
        done, by_packet, pk_done, conn_pk = 0, PacketFrames(), 0, {}
    # each connection's packets in order, so that a frame spanning packets interleaved with
    # other connections' visits only its own (8 busy connections: 15 M steps -> 2 M)
    for p in range(pk_done, npk):
        c = conn_of[p]
        if c >= 0:
            pk = conn_pk.get(c)
            if pk is None:
                pk = conn_pk[c] = array("i")
            pk.append(p + 1)
    setdefault = by_packet.setdefault
    for i in range(done, nfr):
        fr = frames[i]
        last = fr.packet
        first = fr.first_packet or last
        if first > last:
            first, last = last, first
        setdefault(last, []).append(i)
        if first < last:
            pk = conn_pk.get(fr.connection)
            if pk is not None:
                for p in pk[bisect_left(pk, max(first, 1)) : bisect_left(pk, min(last, npk + 1))]:
                    setdefault(p, []).append(i)
    analysis.__dict__["_wf_frame_index"] = (nfr, by_packet, npk, conn_pk)
    return by_packet


def frames_on_packet(analysis: Analysis, n: int, completing_only: bool = False) -> list[Frame]:
    by_packet = _frame_index(analysis)
    frs = [analysis.frames[i] for i in by_packet.get(n, ())]
    if completing_only:
        frs = [f for f in frs if f.packet == n]
    return frs


# ---------------------------------------------------------------- protocol names and flags

# (the protocol registry's descriptors: display names, flag names, type numbers, ranks; each
# protocol's own wording is a hook of its module in analyzer/protocols)
PROTO_DISPLAY = {p: d.display for d in REGISTRY.values() for p in d.protocols}


def flag_names(fr: Frame) -> str:
    d = find(fr.protocol)
    table = d.flags.get(fr.type) if d is not None else None
    if not table:
        return ""
    return "|".join(name for bit, name in table if fr.flags & bit)


def frame_proto_name(analysis: Analysis, fr: Frame) -> str:
    h = hooks(fr.protocol).proto_name
    if h is not None:
        return h(analysis, fr)
    d = find(fr.protocol)
    return d.display if d is not None else fr.protocol.upper()


def frame_summary(fr: Frame) -> str:
    """One frame in the Info column: ``HEADERS[1]: GET /``, ``DATA[3]``, ``Client Hello``
    (the protocol's ``summary`` hook, else this generic form)."""
    h = hooks(fr.protocol).summary
    if h is not None:
        return h(fr)
    return frame_text(fr)


# ---------------------------------------------------------------- link / IP / transport

ETHERTYPES = {0x0800: "IPv4", 0x86DD: "IPv6", 0x0806: "ARP", 0x8100: "802.1Q Virtual LAN"}
IP_PROTOS = {6: "TCP", 17: "UDP", 1: "ICMP", 58: "ICMPv6", 2: "IGMP", 41: "IPv6", 47: "GRE", 50: "ESP", 132: "SCTP"}
SLL_PKTTYPES = {0: "Unicast to us", 1: "Broadcast", 2: "Multicast", 3: "Unicast to another host", 4: "Sent by us"}


def _mac(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


def bit_text(value: int, mask: int, width: int) -> str:
    """A bit field as Wireshark draws it: ``.000 0... .... ....`` (``width`` bits, the masked
    ones as 0/1, dots elsewhere, in groups of four)."""
    s = "".join(str(value >> b & 1) if mask >> b & 1 else "." for b in range(width - 1, -1, -1))
    return " ".join(s[i : i + 4] for i in range(0, width, 4))


def bit_node(parent: Node, value: int, mask: int, width: int, name: str, text: str, start: int = -1, end: int = -1,
             abbrev: str | None = None, shown: str | None = None) -> Node:
    """A bit field's line (``.... ..1. = Name: text``) over bytes ``start``-``end``; its value
    as tshark -T json prints it (``shown``; else the bits' number)."""
    v = (value & mask) >> ((mask & -mask).bit_length() - 1)
    return parent.add(f"{bit_text(value, mask, width)} = {name}: {text}", start, end, abbrev, shown if shown is not None else str(v))


def _mac_node(parent: Node, word: str, abbrev: str, data: bytes, at: int) -> None:
    """An Ethernet address and its LG and IG bits (of the OUI's first byte), as Wireshark's tree."""
    mac = _mac(data[at : at + 6])
    a = _leaf(parent, word, mac, at, at + 6, abbrev)
    _leaf(a, "Address", mac, at, at + 6, "eth.addr")
    oui = int.from_bytes(data[at : at + 3], "big")
    bit_node(a, oui, 0x020000, 24, "LG bit", "Locally administered address (this is NOT the factory default)" if oui & 0x020000
          else "Globally unique address (factory default)", at, at + 3, f"{abbrev}.lg")
    bit_node(a, oui, 0x010000, 24, "IG bit", "Group address (multicast/broadcast)" if oui & 0x010000
          else "Individual address (unicast)", at, at + 3, f"{abbrev}.ig")


# Wireshark's DSCP (short and long) and ECN names (packet-ip.c: dscp_short_vals, dscp_vals, ecn_short_vals, ecn_vals)
_DSCP_SHORT = {0: "CS0", 8: "CS1", 10: "AF11", 12: "AF12", 14: "AF13", 16: "CS2", 18: "AF21", 20: "AF22", 22: "AF23", 24: "CS3",
               26: "AF31", 28: "AF32", 30: "AF33", 32: "CS4", 34: "AF41", 36: "AF42", 38: "AF43", 40: "CS5", 44: "VA", 46: "EF",
               48: "CS6", 56: "CS7", 1: "LE"}
_DSCP_LONG = {0: "Default", 8: "Class Selector 1", 10: "Assured Forwarding 11", 12: "Assured Forwarding 12", 14: "Assured Forwarding 13",
              16: "Class Selector 2", 18: "Assured Forwarding 21", 20: "Assured Forwarding 22", 22: "Assured Forwarding 23",
              24: "Class Selector 3", 26: "Assured Forwarding 31", 28: "Assured Forwarding 32", 30: "Assured Forwarding 33",
              32: "Class Selector 4", 34: "Assured Forwarding 41", 36: "Assured Forwarding 42", 38: "Assured Forwarding 43",
              40: "Class Selector 5", 44: "Voice Admit", 46: "Expedited Forwarding", 48: "Class Selector 6", 56: "Class Selector 7",
              1: "Lower Effort"}
_ECN_SHORT = {0: "Not-ECT", 1: "ECT(1)", 2: "ECT(0)", 3: "CE"}
_ECN_LONG = {0: "Not ECN-Capable Transport", 1: "ECN-Capable Transport codepoint '01'", 2: "ECN-Capable Transport codepoint '10'",
             3: "Congestion Experienced"}


def _ds_text(tos: int) -> str:
    return f"DSCP: {_DSCP_SHORT.get(tos >> 2, 'Unknown')}, ECN: {_ECN_SHORT[tos & 3]}"


_HATYPES = {1: "Ethernet", 512: "PPP", 772: "Loopback", 776: "IPv6-in-IPv4", 778: "IP over IP", 65534: "None"}  # (sll.hatype's, arphrd)


def _hatype_text(hatype: int) -> str:
    return f"{_HATYPES[hatype]} ({hatype})" if hatype in _HATYPES else str(hatype)


def _sll_address(node: Node, data: bytes, at: int, halen: int) -> None:
    """The cooked header's 8-byte address field: an Ethernet source, then what is unused."""
    if halen == 6:
        _leaf(node, "Source", _mac(data[at : at + 6]), at, at + 6, "sll.src.eth")
    if halen < 8:
        _leaf(node, "Unused", data[at + halen : at + 8].hex(), at + halen, at + 8, "sll.unused")


def _link(node_list: list[Node], linktype: int, data: bytes) -> tuple[int, int | None]:
    """Add the link-layer node; return (offset of the network header, ethertype or None)."""
    n = len(data)
    if linktype == 1 and n >= 14:
        et = struct.unpack_from("!H", data, 12)[0]
        node = Node(f"Ethernet II, Src: {_mac(data[6:12])}, Dst: {_mac(data[0:6])}", [], 0, 14)
        _mac_node(node, "Destination", "eth.dst", data, 0)
        _mac_node(node, "Source", "eth.src", data, 6)
        off = 14
        while et in (0x8100, 0x88A8, 0x9100) and n >= off + 4:
            tci, et2 = struct.unpack_from("!HH", data, off)
            vl = node.add(f"802.1Q Virtual LAN, PRI: {tci >> 13}, ID: {tci & 0xFFF}", off - 2, off + 4)
            _leaf(vl, "ID", tci & 0xFFF, off, off + 2, "vlan.id", shown=str(tci & 0xFFF))
            et = et2
            off += 4
        _leaf(node, "Type", f"0x{et:04x}", off - 2, off, "eth.type", shown=f"{ETHERTYPES.get(et, 'Unknown')} (0x{et:04x})")
        node.end = off
        node_list.append(node)
        return off, et
    if linktype == 113 and n >= 16:
        pkttype, hatype, halen = struct.unpack_from("!HHH", data, 0)
        et = struct.unpack_from("!H", data, 14)[0]
        node = Node("Linux cooked capture v1", [], 0, 16)
        _leaf(node, "Packet type", str(pkttype), 0, 2, "sll.pkttype", shown=f"{SLL_PKTTYPES.get(pkttype, 'Unknown')} ({pkttype})")
        _leaf(node, "Link-layer address type", str(hatype), 2, 4, "sll.hatype", shown=_hatype_text(hatype))
        _leaf(node, "Link-layer address length", str(halen), 4, 6, "sll.halen")
        _sll_address(node, data, 6, halen)
        _leaf(node, "Protocol", f"0x{et:04x}", 14, 16, "sll.etype", shown=f"{ETHERTYPES.get(et, 'Unknown')} (0x{et:04x})")
        node_list.append(node)
        return 16, et
    if linktype == 276 and n >= 20:
        et, _res, ifindex, hatype, pkttype, halen = struct.unpack_from("!HHIHBB", data, 0)
        node = Node("Linux cooked capture v2", [], 0, 20)
        _leaf(node, "Protocol", f"0x{et:04x}", 0, 2, "sll.etype", shown=f"{ETHERTYPES.get(et, 'Unknown')} (0x{et:04x})")
        _leaf(node, "Interface index", str(ifindex), 4, 8, "sll.ifindex")
        _leaf(node, "Link-layer address type", str(hatype), 8, 10, "sll.hatype", shown=_hatype_text(hatype))
        _leaf(node, "Packet type", str(pkttype), 10, 11, "sll.pkttype", shown=f"{SLL_PKTTYPES.get(pkttype, 'Unknown')} ({pkttype})")
        _leaf(node, "Link-layer address length", str(halen), 11, 12, "sll.halen")
        _sll_address(node, data, 12, halen)
        node_list.append(node)
        return 20, et
    if linktype in (0, 108) and n >= 4:
        fam = int.from_bytes(data[:4], "big" if linktype == 108 else "little")
        if linktype == 0 and fam > 0xFFFF:
            fam = int.from_bytes(data[:4], "big")
        word = "IP" if fam == 2 else "IPv6" if fam in (10, 24, 28, 30) else "Unknown"
        node = Node("Null/Loopback", [], 0, 4)
        _leaf(node, "Family", str(fam), 0, 4, "null.family", shown=f"{word} ({fam})")
        node_list.append(node)
        return 4, 0x0800 if fam == 2 else 0x86DD if fam in (10, 24, 28, 30) else None
    if linktype in (101, 228, 229, 12, 14) and n:
        node_list.append(Node("Raw packet data", [], 0, n))
        v = data[0] >> 4
        return 0, 0x0800 if v == 4 else 0x86DD if v == 6 else None
    node_list.append(Node(f"Unsupported or truncated link layer (link type {linktype}, {n} bytes)", [], 0, n))
    return n, None


def _ipv4(out: list[Node], data: bytes, L: Layers):
    off = L.network
    try:
        ip = dpkt.ip.IP(data[off:])
    except (dpkt.UnpackError, ValueError, IndexError, struct.error) as e:
        out.append(Node(f"Internet Protocol Version 4 [malformed: {e.__class__.__name__}]", [], off, len(data)))
        return None
    hl = ip.hl * 4
    src, dst = socket.inet_ntoa(ip.src), socket.inet_ntoa(ip.dst)
    node = Node(f"Internet Protocol Version 4, Src: {src}, Dst: {dst}", [], off, off + hl)
    vhl = data[off]
    bit_node(node, vhl, 0xF0, 8, "Version", "4", off, off + 1, "ip.version")
    bit_node(node, vhl, 0x0F, 8, "Header Length", f"{hl} bytes ({ip.hl})", off, off + 1, "ip.hdr_len", str(hl))
    ds = _leaf(node, "Differentiated Services Field", f"0x{ip.tos:02x}", off + 1, off + 2, "ip.dsfield", shown=f"0x{ip.tos:02x} ({_ds_text(ip.tos)})")
    bit_node(ds, ip.tos, 0xFC, 8, "Differentiated Services Codepoint", f"{_DSCP_LONG.get(ip.tos >> 2, 'Unknown')} ({ip.tos >> 2})", off + 1, off + 2, "ip.dsfield.dscp")
    bit_node(ds, ip.tos, 0x03, 8, "Explicit Congestion Notification", f"{_ECN_LONG[ip.tos & 3]} ({ip.tos & 3})", off + 1, off + 2, "ip.dsfield.ecn")
    _leaf(node, "Total Length", str(ip.len), off + 2, off + 4, "ip.len")
    _leaf(node, "Identification", f"0x{ip.id:04x}", off + 4, off + 6, "ip.id", shown=f"0x{ip.id:04x} ({ip.id})")
    fo = struct.unpack_from("!H", data, off + 6)[0]
    flags = fo >> 13
    names = ", ".join(n for b, n in ((2, "Don't fragment"), (1, "More fragments")) if flags & b)
    fl = bit_node(node, fo >> 8, 0xE0, 8, "Flags", f"0x{flags:x}{', ' + names if names else ''}", off + 6, off + 7, "ip.flags", f"0x{flags:02x}")
    for m, word, abbrev in ((0x80, "Reserved bit", "ip.flags.rb"), (0x40, "Don't fragment", "ip.flags.df"), (0x20, "More fragments", "ip.flags.mf")):
        bit_node(fl, fo >> 8, m, 8, word, "Set" if fo >> 8 & m else "Not set", off + 6, off + 7, abbrev)
    bit_node(node, fo, 0x1FFF, 16, "Fragment Offset", str((fo & 0x1FFF) * 8), off + 6, off + 8, "ip.frag_offset", str((fo & 0x1FFF) * 8))
    _leaf(node, "Time to Live", str(ip.ttl), off + 8, off + 9, "ip.ttl")
    _leaf(node, "Protocol", str(ip.p), off + 9, off + 10, "ip.proto", shown=f"{IP_PROTOS.get(ip.p, 'Unknown')} ({ip.p})")
    _leaf(node, "Header Checksum", f"0x{ip.sum:04x}", off + 10, off + 12, "ip.checksum", shown=f"0x{ip.sum:04x} [validation disabled]")
    node.add("[Header checksum status: Unverified]", abbrev="ip.checksum.status", value="2")
    _leaf(node, "Source Address", src, off + 12, off + 16, "ip.src")
    _leaf(node, "Destination Address", dst, off + 16, off + 20, "ip.dst")
    out.append(node)
    if L.transport < 0:  # the header is bad (version, length): nothing after it is decoded
        return None
    return L.proto, L.transport, L.end, src, dst, bool(L.frag)


def _ipv6(out: list[Node], data: bytes, L: Layers):
    off = L.network
    if len(data) < off + 40:
        out.append(Node("Internet Protocol Version 6 [truncated]", [], off, len(data)))
        return None
    vfc, plen, nxt, hlim = struct.unpack_from("!IHBB", data, off)
    src, dst = socket.inet_ntop(socket.AF_INET6, data[off + 8 : off + 24]), socket.inet_ntop(socket.AF_INET6, data[off + 24 : off + 40])
    node = Node(f"Internet Protocol Version 6, Src: {src}, Dst: {dst}", [], off, off + 40)
    tc = (vfc >> 20) & 0xFF
    bit_node(node, data[off], 0xF0, 8, "Version", "6", off, off + 1, "ipv6.version")
    t = bit_node(node, vfc, 0x0FF00000, 32, "Traffic Class", f"0x{tc:02x} ({_ds_text(tc)})", off, off + 4, "ipv6.tclass", f"0x{tc:08x}")
    bit_node(t, vfc, 0x0FC00000, 32, "Differentiated Services Codepoint", f"{_DSCP_LONG.get(tc >> 2, 'Unknown')} ({tc >> 2})", off, off + 4, "ipv6.tclass.dscp")
    bit_node(t, vfc, 0x00300000, 32, "Explicit Congestion Notification", f"{_ECN_LONG[tc & 3]} ({tc & 3})", off, off + 4, "ipv6.tclass.ecn")
    bit_node(node, vfc & 0xFFFFFF, 0xFFFFF, 24, "Flow Label", f"0x{vfc & 0xFFFFF:05x}", off + 1, off + 4, "ipv6.flow", f"0x{vfc & 0xFFFFF:06x}")
    _leaf(node, "Payload Length", str(plen), off + 4, off + 6, "ipv6.plen")
    _leaf(node, "Next Header", str(nxt), off + 6, off + 7, "ipv6.nxt", shown=f"{IP_PROTOS.get(nxt, 'Unknown')} ({nxt})")
    _leaf(node, "Hop Limit", str(hlim), off + 7, off + 8, "ipv6.hlim")
    _leaf(node, "Source Address", src, off + 8, off + 24, "ipv6.src")
    _leaf(node, "Destination Address", dst, off + 24, off + 40, "ipv6.dst")
    out.append(node)
    for h, p, hl in L.ext:  # the extension-header chain analyzer.packet.layers walked
        if h == 44:
            fo = struct.unpack_from("!H", data, p + 2)[0]
            node.add(f"Fragment Header for IPv6{' (fragment)' if fo & 0xFFF9 else ''}", p, p + 8)
        else:
            node.add(f"IPv6 extension header {h}, length {hl}", p, p + hl)
    node.end = L.transport
    return L.proto, L.transport, L.end, src, dst, bool(L.frag)


# tshark's flag lines (packet-tcp.c): mask, name, field
_TCP_FLAG_BITS = ((0xE00, "Reserved", "tcp.flags.res"), (0x100, "Accurate ECN", "tcp.flags.ae"),
                  (0x80, "Congestion Window Reduced", "tcp.flags.cwr"), (0x40, "ECN-Echo", "tcp.flags.ece"), (0x20, "Urgent", "tcp.flags.urg"),
                  (0x10, "Acknowledgment", "tcp.flags.ack"), (0x08, "Push", "tcp.flags.push"), (0x04, "Reset", "tcp.flags.reset"),
                  (0x02, "Syn", "tcp.flags.syn"), (0x01, "Fin", "tcp.flags.fin"))


def _flag_expert(bit: int, flags: int, sport: int, dport: int) -> tuple[str, str, str] | None:
    """The expert item tshark hangs under a flag's line: a SYN (with or without ACK), a FIN,
    a RST (severity, its words (packet-tcp.c), its field)."""
    if bit == 0x02 and flags & 0x02:
        if flags & 0x10:
            return "Chat", f"Connection establish acknowledge (SYN+ACK): server port {sport}", "tcp.connection.sack"
        return "Chat", f"Connection establish request (SYN): server port {dport}", "tcp.connection.syn"
    if bit == 0x01 and flags & 0x01:
        return "Chat", "Connection finish (FIN)", "tcp.connection.fin"
    if bit == 0x04 and flags & 0x04:
        return "Warning", "Connection reset (RST)", "tcp.connection.rst"
    return None


def expert_node(parent: Node, severity: str, text: str, abbrev: str | None = None, group: str = "Sequence") -> Node:
    """An expert item in the tree, as Wireshark nests it under the item it is about."""
    e = parent.add(f"[Expert Info ({severity}/{group}): {text}]")
    e.add(f"[{text}]", abbrev=abbrev, value="")
    e.add(f"[Severity level: {severity}]")
    e.add(f"[Group: {group}]")
    return e


# tshark 4.0's option kinds (tcp_option_kind_vs, "Kind:") and the words it names each option by
# (its dissector's: the "Options:" line, "TCP Option - …", a bad length's note); a kind of
# neither is tshark's "Unknown (0xNN)", its bytes a "Payload:" line
_OPT_KINDS = {0: "End of Option List", 1: "No-Operation", 2: "Maximum Segment Size", 3: "Window Scale", 4: "SACK Permitted", 5: "SACK",
              6: "Echo", 7: "Echo Reply", 8: "Time Stamp Option", 9: "Partial Order Connection Permitted",
              10: "Partial Order Service Profile", 11: "CC", 12: "CC.NEW", 13: "CC.ECHO", 14: "TCP Alternate Checksum Request",
              15: "TCP Alternate Checksum Data", 16: "Skeeter", 17: "Bubba", 18: "Trailer Checksum Option", 19: "MD5 Signature Option",
              20: "SCPS Capabilities", 21: "Selective Negative Acknowledgements", 22: "Record Boundaries", 23: "Corruption experienced",
              24: "SNAP", 25: "Unassigned", 26: "TCP Compression Filter", 27: "Quick-Start Response", 28: "User Timeout Option",
              29: "The TCP Authentication Option", 30: "Multipath TCP", 34: "TCP Fast Open Cookie", 76: "Riverbed Probe",
              78: "Riverbed Transparency", 172: "Accurate ECN Order 0", 174: "Accurate ECN Order 1", 253: "RFC3692-style Experiment 1",
              254: "RFC3692-style Experiment 2"}


def _item_expert(parent: Node, item) -> None:
    """An option's expert item (``analyzer.fields.tcp.OptionItem``) under ``parent``."""
    expert_node(parent, item.severity.label, item.text, item.abbrev, item.group.label)


def _options_node(node: Node, opts: bytes, at: int, rbase: int | None, ack: int, syn: bool):
    """The TCP options as tshark 4.0's tree: ``Options: (N bytes), <each option's name>``, then
    one ``TCP Option - …`` node each with its kind, length and values, and the expert items
    tshark adds on them — where the walk stopped, a wrong length, four NOPs in a row, a window
    scale shift over 14, a SYN without MSS or an MSS without SYN, a SACK block cut short, D-SACK
    blocks — as ``analyzer.fields.tcp.option_items`` decides them (``ack``: the D-SACK test's
    ACK), each hung where tshark hangs it.  Where tshark throws on a SACK option (its tree ends
    there), that "Malformed Packet" item (``AFTER_TCP``, for the caller to hang), else None."""
    items = option_items(opts, syn, lambda: (ack, partial(_rel, base=rbase)))
    parsed, marks, threw = items.walk, items.marks, items.threw
    got = {(it.offset, it.abbrev): it for it in items if it.where != OWN_LINE}
    shown = parsed if threw is None else parsed[: threw + 1]
    named = shown if threw is None else shown[:-1]  # (tshark names an option once its dissector returns)
    on = node.add(f"Options: ({len(opts)} bytes)" + "".join(", " + opt_word(k) for k, _, _ in named), at, at + len(opts), "tcp.options")
    rel = " (relative)" if rbase is not None else ""
    sack_no = 0
    for kind, val, o in shown:
        s = at + o
        oe = s + (1 if kind in (0, 1) else 2 + len(val))
        word = opt_word(kind)
        if kind == 1 and (o, "tcp.nop") in got:
            _item_expert(on, got[(o, "tcp.nop")])
        # (line, start, end, field, value, the expert item hung on it)
        rows: list[tuple[str, int, int, str, str, str]] = []
        if kind == 2 and len(val) == 2:
            v = struct.unpack("!H", val)[0]
            head, rows = f"{word}: {v} bytes", [(f"MSS Value: {v}", s + 2, s + 4, "tcp.options.mss_val", str(v), "")]
        elif kind == 3 and len(val) == 1:
            # the shift as sent, the multiplier (and the scale applied) of at most 14 (RFC 7323 §2.3)
            m = 1 << min(val[0], 14)
            head = f"{word}: {val[0]} (multiply by {m})"
            rows = [(f"Shift count: {val[0]}", s + 2, s + 3, "tcp.options.wscale.shift", str(val[0]), "tcp.options.wscale.shift.invalid"),
                    (f"[Multiplier: {m}]", s + 2, s + 3, "tcp.options.wscale.multiplier", str(m), "")]
        elif kind == 8 and len(val) == 8:
            tv, te = struct.unpack("!II", val)
            head = f"{word}: TSval {tv}, TSecr {te}"
            rows = [(f"Timestamp value: {tv}", s + 2, s + 6, "tcp.options.timestamp.tsval", str(tv), ""),
                    (f"Timestamp echo reply: {te}", s + 6, s + 10, "tcp.options.timestamp.tsecr", str(te), "")]
        elif kind == 5:
            # tshark's loop on the blocks: a left edge when four bytes are left, a right edge when
            # four more are, else "suboption would go past end of option" where the block starts
            # (over what is left of the option); the count and the SLE/SRE words whole blocks only
            edges = [_rel(x, rbase) for x in struct.unpack(f"!{len(val) // 4}I", val[: len(val) // 4 * 4])]
            blocks = list(zip(edges[0::2], edges[1::2], strict=False))
            head = word + "".join(f" {a}-{b}" for a, b in blocks)
            for k, e in enumerate(edges):
                side, abbrev = ("left", "tcp.options.sack_le") if k % 2 == 0 else ("right", "tcp.options.sack_re")
                rows.append((f"{side} edge = {e}{rel}", s + 2 + 4 * k, s + 6 + 4 * k, abbrev, str(e), ""))
            cut = got.get((o, "tcp.suboption_malformed"))
            if cut is not None:
                r = len(val) % 8
                b0 = s + 2 + len(val) - r
                rows.append((cut.text, b0, b0 + (r if r < 4 else r - 4), "", "", cut.abbrev))
            rows.append((f"[TCP SACK Count: {len(blocks)}]", -1, -1, "tcp.options.sack.count", str(len(blocks)), ""))
            if sack_no < len(marks) and marks[sack_no]:  # (that option's first block, the D-SACK fields')
                if edges:
                    rows.append((f"[D-SACK Left Edge = {edges[0]}{rel}]", s + 2, s + 6, "tcp.options.sack.dsack_le", str(edges[0]), ""))
                if blocks:
                    rows.append((f"[D-SACK Right Edge = {edges[1]}{rel}]", s + 6, s + 10, "tcp.options.sack.dsack_re", str(edges[1]), ""))
            dsack = got.get((o, "tcp.options.sack.dsack"))
            if dsack is not None:
                rows.append((dsack.text, s + 2, s + 10, "", "", dsack.abbrev))
            sack_no += 1
        elif kind not in OPT_WORDS:
            head = "Unknown"
            if val:
                rows = [(f"Payload: {val.hex()}", s + 2, s + 2 + len(val), "tcp.options.unknown.payload", val.hex(":"), "")]
        else:
            head = word
        opt = on.add(f"TCP Option - {head}", s, oe)
        if (o, "tcp.options.mss.present") in got:
            _item_expert(opt, got[(o, "tcp.options.mss.present")])
        opt.add(f"Kind: {_OPT_KINDS.get(kind, 'Unknown')} ({kind})", s, s + 1, "tcp.option_kind", str(kind))
        if kind not in (0, 1):
            ln = opt.add(f"Length: {len(val) + 2}", s + 1, s + 2, "tcp.option_len", str(len(val) + 2))
            if (o, "tcp.option.len.invalid") in got:
                _item_expert(ln, got[(o, "tcp.option.len.invalid")])
        for text, a, b, abbrev, v, ex in rows:
            row = opt.add(text, a, b, abbrev or None, v)
            if ex and (o, ex) in got:
                _item_expert(row, got[(o, ex)])
    if threw is not None:
        return next(it for it in items if it.where == AFTER_TCP)
    for it in items:
        if it.where == OWN_LINE:
            # the bytes tshark's line covers where the walk stopped: the padding to the options'
            # end; the kind; the kind and length byte; the bytes left after a kind and a length
            # byte, from the option's start
            o = it.offset
            s = at + o
            why = parsed.stop[0] if parsed.stop is not None else OPT_PADDING
            end = {OPT_PADDING: at + len(opts), OPT_NO_LENGTH: s + 1, OPT_TOO_SHORT: s + 2, OPT_PAST_END: s + len(opts) - o - 2}[why]
            _item_expert(on.add(it.text, s, end), it)
        elif it.abbrev == "tcp.options.mss.absent":
            _item_expert(on, it)
    return None


_INFO_FLAGS = ((0x02, "SYN"), (0x01, "FIN"), (0x04, "RST"), (0x08, "PSH"), (0x10, "ACK"), (0x20, "URG"), (0x40, "ECE"), (0x80, "CWR"), (0x100, "AE"))


class _TcpState:
    """Per connection and direction: the base sequence number (for relative numbers as
    Wireshark shows them: the SYN's, or one before the first segment's) and the window scale
    shift — what the flow layer recorded on ``Connection.tcp`` (never rescanned here)."""

    __slots__ = ("base", "wscale", "syn_seen")

    def __init__(self) -> None:
        self.base: list[int | None] = [None, None]
        self.wscale: list[int | None] = [None, None]  # None: SYN without WS option
        self.syn_seen = [False, False]


def _tcp_state(analysis: Analysis, source, conn_id: int) -> _TcpState | None:
    """The TCP facts of connection ``conn_id`` (``source`` is not read: kept for the callers)."""
    if conn_id < 0:
        return None
    try:
        conn = analysis.connections[conn_id]
    except IndexError:
        return None
    st = _TcpState()
    t = conn.tcp
    if t is not None:
        st.base = [None if i is None else (i - 1) & 0xFFFFFFFF for i in t.isn]
        st.wscale = list(t.wscale)
        st.syn_seen = list(t.syn)
    return st


def _ep(packed: bytes, port: int) -> tuple[str, int]:
    return (socket.inet_ntop(socket.AF_INET if len(packed) == 4 else socket.AF_INET6, packed), port)


def _rel(x: int, base: int | None) -> int:
    return (x - base) & 0xFFFFFFFF if base is not None else x


def _window(st: _TcpState | None, direction: int, flags: int, win: int) -> int:
    """The calculated window of a segment (``tcp.window_size``): scaled once both SYNs showed
    a window-scale option (the display-filter field registry reads it)."""
    if st is None or flags & 0x02:
        return win
    if st.syn_seen[0] and st.syn_seen[1]:
        a, b = st.wscale[0], st.wscale[1]
        if a is not None and b is not None:
            return win << (a if direction == 0 else b)
    return win


def _tcp_analysis_to(analysis: Analysis, source, n: int):
    """The TCP analysis run at least to packet ``n``: the one made already when it reaches that
    far (a packet's flags depend only on the packets before it), else ``tcp_analysis``'s."""
    ta = analysis.__dict__.get("_wf_tcp_analysis")
    if ta is not None and ta.packets >= n:
        return ta
    return tcp_analysis(analysis, source, n)


_FIELD_CTX_LOCK = threading.Lock()


def _packet_fields(analysis: Analysis, source, n: int, names: tuple[str, ...]) -> dict[str, list]:
    """Values of display-filter fields (``analyzer.fields``) on packet ``n``, as ``-Y`` reads
    them: the tree's generated facts (TCP's and UDP's stream index and times, completeness,
    scaling factor, D-SACK edges, DNS pairing, frame.protocols) are the filter's, so tree and
    filter cannot disagree.  One field context per analysis and source (its conversation walks
    go on where they stopped) and one view of the last packet asked for (its bytes read and
    decoded once for the tree's several calls; made again when the analysis has grown)."""
    from .fields import FIELDS
    from .fields.packet import PacketContext, PacketView

    with _FIELD_CTX_LOCK:
        held = analysis.__dict__.get("_wf_detail_fields")
        if held is None or held[0] is not source:
            held = analysis.__dict__["_wf_detail_fields"] = [source, PacketContext(analysis, source), None, -1]
        pv = held[2]
        if pv is None or pv.n != n or held[3] != len(analysis.frames):  # (a live capture's frames grow: a new view then)
            pv = held[2] = PacketView(held[1], n)
            held[3] = len(analysis.frames)
        out: dict[str, list] = {}
        for name in names:
            try:
                out[name] = list(FIELDS[name].get(pv))
            except Exception:  # noqa: BLE001 - a field that cannot be read is left out of the tree, never breaks it
                out[name] = []
        return out


# tshark 4.0's words for tcp.completeness (packet-tcp.c, conversation_completeness_fill)
_COMPLETENESS = {1: "Incomplete, SYN_SENT", 3: "Incomplete, CLIENT_ESTABLISHED", 7: "Incomplete, ESTABLISHED",
                 15: "Incomplete, DATA", 31: "Complete, WITH_DATA", 47: "Complete, WITH_DATA", 63: "Complete, WITH_DATA",
                 23: "Complete, NO_DATA", 39: "Complete, NO_DATA", 55: "Complete, NO_DATA"}


def completeness_text(v: int) -> str:
    """tcp.completeness as tshark's tree shows it: "Incomplete, DATA (15)"."""
    return f"{_COMPLETENESS.get(v, 'Incomplete')} ({v})"


def _scalefactor_text(v: int) -> str:
    return {-1: "-1 (unknown)", -2: "-2 (no window scaling used)"}.get(v, str(v))


def _tcp_node(out: list[Node], analysis: Analysis, source, n: int, data: bytes, p: int, end: int, src: str, dst: str) -> tuple[str, int] | None:
    try:
        tcp = dpkt.tcp.TCP(data[p:end])
    except (dpkt.UnpackError, ValueError, IndexError, struct.error) as e:
        out.append(Node(f"Transmission Control Protocol [malformed: {e.__class__.__name__}]", [], p, end))
        return None
    hl = min(tcp.off * 4, end - p)  # (a data offset past the segment: the header is what the segment holds)
    plen = max(end - p - hl, 0)
    conn_id = analysis.index.conn[n - 1]
    ta = _tcp_analysis_to(analysis, source, n)
    flags = tcp.flags | ((data[p + 12] & 1) << 8)
    rs, ra = ta.relative(n, tcp.seq, tcp.ack)
    base = None if rs is None else (tcp.seq - rs) & 0xFFFFFFFF
    rbase = None if ra is None else (tcp.ack - ra) & 0xFFFFFFFF
    seq = tcp.seq if rs is None else rs
    ack = (tcp.ack if ra is None else ra) if flags & 0x10 else 0
    nxt = seq + plen + (1 if flags & 0x03 else 0)
    win = ta.window(n, tcp.win)
    label = f"Transmission Control Protocol, Src Port: {tcp.sport}, Dst Port: {tcp.dport}, Seq: {seq}"
    if flags & 0x10:
        label += f", Ack: {ack}"
    label += f", Len: {plen}"
    node = Node(label, [], p, p + hl)
    _leaf(node, "Source Port", str(tcp.sport), p, p + 2, "tcp.srcport")
    _leaf(node, "Destination Port", str(tcp.dport), p + 2, p + 4, "tcp.dstport")
    opts = data[p + 20 : p + hl]
    fv = _packet_fields(analysis, source, n, ("tcp.stream", "tcp.completeness", "tcp.window_size_scalefactor",
                                              "tcp.time_relative", "tcp.time_delta"))
    for v in fv["tcp.stream"][:1]:
        node.add(f"[Stream index: {v}]", abbrev="tcp.stream", value=str(v))
    for v in fv["tcp.completeness"][:1]:
        node.add(f"[Conversation completeness: {completeness_text(v)}]", abbrev="tcp.completeness", value=str(v))
    if conn_id >= 0:
        node.add(f"[Connection: {conn_id}]")
    node.add(f"[TCP Segment Len: {plen}]", abbrev="tcp.len", value=str(plen))
    _leaf(node, "Sequence Number", str(seq), p + 4, p + 8, "tcp.seq", shown=f"{seq}    (relative sequence number)" if base is not None else None)
    _leaf(node, "Sequence Number (raw)", str(tcp.seq), p + 4, p + 8, "tcp.seq_raw")
    node.add(f"[Next Sequence Number: {nxt}{'    (relative sequence number)' if base is not None else ''}]", abbrev="tcp.nxtseq", value=str(nxt))
    _leaf(node, "Acknowledgment Number", str(ack), p + 8, p + 12, "tcp.ack",
          shown=f"{ack}    (relative ack number)" if rbase is not None and flags & 0x10 else None)
    _leaf(node, "Acknowledgment number (raw)", str(tcp.ack), p + 8, p + 12, "tcp.ack_raw")
    bit_node(node, data[p + 12], 0xF0, 8, "Header Length", f"{tcp.off * 4} bytes ({tcp.off})", p + 12, p + 13, "tcp.hdr_len", str(tcp.off * 4))
    fnames = ", ".join(nm for b, nm in _INFO_FLAGS if flags & b)
    fl = _leaf(node, "Flags", f"0x{flags:04x}", p + 12, p + 14, "tcp.flags", shown=f"0x{flags:03x} ({fnames})")
    for b, nm, abbrev in _TCP_FLAG_BITS:
        at = p + 12 if b >= 0x100 else p + 13  # (tshark's offsets: the first byte for the top four bits)
        bit_node(fl, flags, b, 12, nm, "Set" if flags & b else "Not set", at, at + 1, abbrev)
        expert = _flag_expert(b, flags, tcp.sport, tcp.dport)
        if expert is not None:
            expert_node(fl.children[-1], *expert)
    letters = "".join(ch if flags >> (11 - i) & 1 else "\u00b7" for i, ch in enumerate("RRRACEUAPRSF"))
    fs = fl.add(f"[TCP Flags: {letters}]", p + 12, p + 14, "tcp.flags.str", letters)
    closing = ta.closing(n) if flags & 0x01 else None
    if closing is not None:
        expert_node(fs, "Note", "This frame initiates the connection closing" if closing else "This frame undergoes the connection closing",
                     "tcp.connection.fin_active" if closing else "tcp.connection.fin_passive")
    _leaf(node, "Window", str(tcp.win), p + 14, p + 16, "tcp.window_size_value")
    node.add(f"[Calculated window size: {win}]", p + 14, p + 16, "tcp.window_size", str(win))
    for v in fv["tcp.window_size_scalefactor"][:1]:
        node.add(f"[Window size scaling factor: {_scalefactor_text(v)}]", p + 14, p + 16, "tcp.window_size_scalefactor", str(v))
    _leaf(node, "Checksum", f"0x{tcp.sum:04x}", p + 16, p + 18, "tcp.checksum", shown=f"0x{tcp.sum:04x} [unverified]")
    node.add("[Checksum Status: Unverified]", abbrev="tcp.checksum.status", value="2")
    _leaf(node, "Urgent Pointer", str(tcp.urp), p + 18, p + 20, "tcp.urgent_pointer")
    threw = None
    if opts:
        # (the D-SACK test's ACK: relative with the flag set, else the field as it is)
        threw = _options_node(node, opts, p + 20, rbase, ack if flags & 0x10 else tcp.ack, bool(flags & 0x02))
    if fv["tcp.time_relative"] and fv["tcp.time_delta"]:
        ts = node.add("[Timestamps]")
        rel_t, delta = fv["tcp.time_relative"][0], fv["tcp.time_delta"][0]
        ts.add(f"[Time since first frame in this TCP stream: {rel_t:.9f} seconds]", abbrev="tcp.time_relative", value=f"{rel_t:.9f}")
        ts.add(f"[Time since previous frame in this TCP stream: {delta:.9f} seconds]", abbrev="tcp.time_delta", value=f"{delta:.9f}")
    if threw is not None:
        # tshark threw in the options (analyzer.fields.tcp.sack_marks): its TCP tree ends with
        # the timestamps, a "Malformed Packet" after it
        out.append(node)
        m = Node("[Malformed Packet: TCP]", [], -1, -1)
        _item_expert(m, threw)
        out.append(m)
        return None
    _seq_ack_node(node, ta, n)
    if plen:
        node.add(f"TCP payload ({plen} bytes)", p + hl, p + hl + plen)
    out.append(node)
    return ("tcp", p + hl)


def _seq_ack_node(node: Node, ta, n: int) -> None:
    """Wireshark's "[SEQ/ACK analysis]": the frame this ACK acknowledges and its RTT, the
    initial RTT, bytes in flight and since the last PSH, the analysis flags as expert items (a
    retransmission's RTO among them) and the duplicate ACK's number and frame
    (analyzer.tcp_analysis; tshark's field names, in its order)."""
    f = ta.flags[n - 1] if 0 < n <= len(ta.flags) else 0
    rtt = ta.initial_rtt(n)
    acked = ta.acked(n)
    bif = ta.in_flight(n)
    gone = ta.list_unknown_at(n)  # (a walk budget ran out: the list fields are unknown, not absent)
    flags_gone = ta.seq_unknown_at(n)  # (a SYN/FIN tshark may not have counted: the flags are unknown, not absent)
    if not f and rtt is None and acked is None and bif is None and gone is None and flags_gone is None:
        return
    sa = node.add("[SEQ/ACK analysis]", abbrev="tcp.analysis", value="")
    if gone is not None:
        sa.add(f"[ACK RTT, bytes in flight, RTO: unknown — the unacknowledged-segment list is no longer followed from frame {gone} "
               "(its walk budget ran out)]")
    if flags_gone is not None:
        sa.add(f"[TCP analysis flags: unknown — whether frame {flags_gone}'s SYN/FIN counts in the sequence space is not known "
               "(the unacknowledged-segment list may have held 10,000 segments)]")
    if acked is not None:
        fr, art = acked
        sa.add(f"[This is an ACK to the segment in frame: {fr}]", abbrev="tcp.analysis.acks_frame", value=str(fr))
        if art is not None:
            sa.add(f"[The RTT to ACK the segment was: {art:.9f} seconds]", abbrev="tcp.analysis.ack_rtt", value=f"{art:.9f}")
    if rtt is not None:
        rtt = round(rtt, 6)  # a difference of float epoch times: microseconds are what is exact
        sa.add(f"[iRTT: {rtt:.9f} seconds]", abbrev="tcp.analysis.initial_rtt", value=f"{rtt:.9f}")
    if bif is not None:
        sa.add(f"[Bytes in flight: {bif[0]}]", abbrev="tcp.analysis.bytes_in_flight", value=str(bif[0]))
        sa.add(f"[Bytes sent since last PSH flag: {bif[1]}]", abbrev="tcp.analysis.push_bytes_sent", value=str(bif[1]))
    if not f:
        return
    fl = sa.add("[TCP Analysis Flags]", abbrev="tcp.analysis.flags", value="")
    dup = ta.dupack.get(n)
    for bit in TA_TREE_ORDER:
        if not f & bit:
            continue
        if bit == TA_DUPLICATE_ACK:
            fl.add("[This is a TCP duplicate ack]", abbrev="tcp.analysis.duplicate_ack", value="")
            continue
        sev, text = TA_EXPERT[bit]
        expert_node(fl, sev, text, TA_NAMES[bit])
        rto = ta.rto.get(n) if bit == TA_RETRANSMISSION else None
        if rto is not None:
            fl.add(f"[The RTO for this segment was: {rto[0]:.9f} seconds]", abbrev="tcp.analysis.rto", value=f"{rto[0]:.9f}")
            fl.add(f"[RTO based on delta from frame: {rto[1]}]", abbrev="tcp.analysis.rto_frame", value=str(rto[1]))
        if bit in (TA_FAST_RETRANSMISSION, TA_SPURIOUS_RETRANSMISSION):  # tshark adds the retransmission item too
            sev, text = TA_EXPERT[TA_RETRANSMISSION]
            expert_node(fl, sev, text, TA_NAMES[TA_RETRANSMISSION])
    if dup is not None:
        num, frame = dup
        sa.add(f"[Duplicate ACK #: {num}]", abbrev="tcp.analysis.duplicate_ack_num", value=str(num))
        d = sa.add(f"[Duplicate to the ACK in frame: {frame}]", abbrev="tcp.analysis.duplicate_ack_frame", value=str(frame))
        expert_node(d, "Note", f"Duplicate ACK (#{num})", "tcp.analysis.duplicate_ack")


def _udp_node(out: list[Node], data: bytes, p: int, end: int, fields) -> tuple[str, int] | None:
    if end - p < 8:
        out.append(Node("User Datagram Protocol [truncated]", [], p, end))
        return None
    sport, dport, ulen, csum = struct.unpack_from("!HHHH", data, p)
    node = Node(f"User Datagram Protocol, Src Port: {sport}, Dst Port: {dport}", [], p, p + 8)
    _leaf(node, "Source Port", str(sport), p, p + 2, "udp.srcport")
    _leaf(node, "Destination Port", str(dport), p + 2, p + 4, "udp.dstport")
    _leaf(node, "Length", str(ulen), p + 4, p + 6, "udp.length")
    _leaf(node, "Checksum", f"0x{csum:04x}", p + 6, p + 8, "udp.checksum", shown=f"0x{csum:04x} [unverified]")
    node.add("[Checksum Status: Unverified]", abbrev="udp.checksum.status", value="2")
    fv = fields(("udp.stream", "udp.time_relative", "udp.time_delta"))
    for v in fv["udp.stream"][:1]:
        node.add(f"[Stream index: {v}]", abbrev="udp.stream", value=str(v))
    if fv["udp.time_relative"] and fv["udp.time_delta"]:
        ts = node.add("[Timestamps]")
        for abbrev, word in (("udp.time_relative", "Time since first frame"), ("udp.time_delta", "Time since previous frame")):
            v = seconds_text(fv[abbrev][0], 9)
            ts.add(f"[{word}: {v} seconds]", abbrev=abbrev, value=v)
    plen = (min(ulen, end - p) if ulen >= 8 else end - p) - 8
    if plen > 0:
        node.add(f"UDP payload ({plen} bytes)", p + 8, p + 8 + plen)
    out.append(node)
    return ("udp", p + 8)


# ---------------------------------------------------------------- protocol frames

def value_nodes(parent: Node, key: str, v: Any, depth: int = 0) -> None:
    """A frame field as nodes (dicts and lists of them nested, bounded)."""
    if depth > 6:
        parent.add(f"{key}: …")
        return
    if isinstance(v, (list, tuple)) and v and all(isinstance(x, (list, tuple)) and len(x) == 2 and all(type(y) is int for y in x) for x in v):
        # ranges (a QUIC ACK's packet numbers: [low, high] pairs) as numbers, not Python's brackets
        shown = ", ".join(str(a) if a == b else f"{a}\u2013{b}" for a, b in v[:500])
        parent.add(f"{key}: {shown}{' …' if len(v) > 500 else ''}")
        return
    if isinstance(v, dict):
        n = parent.add(f"{key}")
        for k2, v2 in v.items():
            value_nodes(n, str(k2), v2, depth + 1)
    elif isinstance(v, (list, tuple)) and v and all(isinstance(x, (dict, list, tuple)) for x in v):
        n = parent.add(f"{key} ({len(v)})")
        for i, x in enumerate(v[:500]):
            if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], str):
                value_nodes(n, x[0], x[1], depth + 1)
            else:
                value_nodes(n, f"[{i}]", x, depth + 1)
    elif isinstance(v, (bytes, bytearray, memoryview)):
        b = bytes(v)
        parent.add(f"{key}: {b[:32].hex()}{'…' if len(b) > 32 else ''} ({len(b)} bytes)")
    else:
        s = str(v)
        parent.add(f"{key}: {s if len(s) <= 400 else s[:400] + '…'}")


def _frame_range(analysis: Analysis, fr: Frame, n: int, payload_off: int, seq_rel: int | None, plen: int,
                 tls_records: list[tuple[int, int]]) -> tuple[int, int]:
    """Byte range of a frame within packet n, when it can be placed: frames of a
    cleartext TCP stream (TLS records, h2c, HTTP/1, SPDY without TLS) by their stream
    offset; decrypted frames by the TLS record(s) that carried them on this packet."""
    if payload_off < 0 or seq_rel is None or fr.offset < 0:
        return (-1, -1)
    try:
        conn = analysis.connections[fr.connection]
    except IndexError:
        return (-1, -1)
    cleartext = fr.protocol == "tls" or conn.tls is None
    if conn.transport != "tcp":
        return (-1, -1)
    if cleartext:
        # stream offset 0 is relative sequence number 1
        seg_start = seq_rel - 1
        s = max(fr.offset, seg_start)
        d = find(fr.protocol)
        hdr = d.frame_header if d is not None else 0  # (Frame.length counts the payload only)
        e = min(fr.offset + (hdr + fr.length if hdr else max(fr.length, 1)), seg_start + plen)
        if e <= s:
            return (-1, -1)
        return (payload_off + s - seg_start, payload_off + e - seg_start)
    if tls_records:
        return (tls_records[0][0], tls_records[-1][1])
    return (-1, -1)


def wirefall_node(fr: Frame, type_text: str | None = None) -> Node:
    """wirefall's own fields of a frame (``wirefall.protocol``, ``.type``, ``.stream``,
    ``.flags``, ``.length``: analyzer/fields/wirefall.py), in a node of their own under a
    protocol's Wireshark tree (DNS, TLS, HTTP/2, HTTP/1), so that tree and filter keep agreeing."""
    n = Node(f"[wirefall: {fr.protocol} {type_text or fr.type}]")
    n.add(f"Protocol: {fr.protocol}", abbrev="wirefall.protocol", value=fr.protocol)
    n.add(f"Type: {type_text or fr.type}", abbrev="wirefall.type", value=fr.type)
    if fr.stream_id is not None:
        n.add(f"Stream Identifier: {fr.stream_id}", abbrev="wirefall.stream", value=fr.stream_id)
    if fr.flags:
        n.add(f"Flags: 0x{fr.flags:02x}", abbrev="wirefall.flags", value=fr.flags)
    n.add(f"Length: {fr.length}", abbrev="wirefall.length", value=fr.length)
    return n


def frame_facts_node(fr: Frame, type_text: str | None = None, fields=None, skip=()) -> Node:
    """``wirefall_node`` with what a frame's Wireshark tree does not say: its direction, the
    packets of its first and last bytes when they differ, and the dissector's fields (``fields``,
    but those in ``skip``: the tree's own lines say them) — under an HTTP/2, QUIC or HTTP/3 frame."""
    own = wirefall_node(fr, type_text)
    own.add(f"Direction: {'client → server' if fr.direction == 0 else 'server → client'}")
    if fr.first_packet and fr.first_packet != fr.packet:
        own.add(f"[First byte in packet {fr.first_packet}, last byte in packet {fr.packet}]")
    for k, v in (fields or {}).items():
        if k not in skip:
            value_nodes(own, k, v)
    return own


def insert_before_facts(node: Node, nodes: list[Node]) -> None:
    """Put ``nodes`` at the end of ``node``'s children but before its ``[wirefall: …]`` facts
    node (``frame_facts_node``), which stays last: the lines a frame's bytes add come after
    the lines its fields gave."""
    kids = node.children
    at = len(kids) - (1 if kids and kids[-1].label.startswith("[wirefall: ") else 0)
    kids[at:at] = nodes


def header_list_node(node: Node, headers) -> None:
    """A decoded header list under a frame's node, one ``name: value`` line each."""
    hn = node.add(f"Header list ({len(headers)} headers)")
    for k, v in headers:
        hn.add(f"{k}: {v}")


def _frame_node(analysis: Analysis, fr: Frame, rng: tuple[int, int]) -> Node:
    pname = frame_proto_name(analysis, fr)
    summ = frame_summary(fr)
    fl = flag_names(fr)
    label = f"{pname}: {summ}"
    if fr.packet != fr.first_packet and fr.first_packet:
        label += f" [packets {fr.first_packet}–{fr.packet}]"
    node = Node(label, [], rng[0], rng[1])
    h = hooks(fr.protocol)
    if h.frame_node is not None:
        out = h.frame_node(node, fr)
        if out is not None:  # (None: the generic node below, QUIC's packets that are no frame)
            return out
    node.add(f"Protocol: {fr.protocol}", abbrev="wirefall.protocol", value=fr.protocol)
    if h.type_node is None or not h.type_node(node, fr):
        node.add(f"Type: {fr.type}", abbrev="wirefall.type", value=fr.type)
    if fr.stream_id is not None:
        node.add(f"Stream Identifier: {fr.stream_id}", abbrev="wirefall.stream", value=fr.stream_id)
    node.add(f"Direction: {'client → server' if fr.direction == 0 else 'server → client'}")
    if fr.flags or fl:
        node.add(f"Flags: 0x{fr.flags:02x}{' (' + fl + ')' if fl else ''}", abbrev="wirefall.flags", value=fr.flags)
    node.add(f"Length: {fr.length}", abbrev="wirefall.length", value=fr.length)
    if fr.first_packet and fr.first_packet != fr.packet:
        node.add(f"[First byte in packet {fr.first_packet}, last byte in packet {fr.packet}]")
    if fr.error:
        node.add(f"[Error: {fr.error}]")
    if fr.headers:
        header_list_node(node, fr.headers)
    for k, v in (fr.fields or {}).items():
        value_nodes(node, k, v)
    return node


# ---------------------------------------------------------------- the tree

# tshark's frame.encap_type (its own numbers, not the link type) of the link types whose words
# the captures here confirm; any other shows its link type
_ENCAP = {1: ("Ethernet", 1), 101: ("Raw IP", 7), 12: ("Raw IP", 7), 14: ("Raw IP", 7), 113: ("Linux cooked-mode capture v1", 25),
          276: ("Linux cooked-mode capture v2", 210), 0: ("NULL/Loopback", 15)}


def _fmt_time(ts: float, us: bool = True) -> str:
    """An arrival time as tshark writes it (``Mar 26, 2026 23:56:02.656462000 UTC``)."""
    try:
        sec = int(ts // 1)
        frac = round((ts - sec) * 1e6) * 1000 if us else round((ts - sec) * 1e9)
        if frac >= 1_000_000_000:
            sec, frac = sec + 1, frac - 1_000_000_000
        d = datetime.fromtimestamp(sec, UTC)
        return f"{d:%b} {d.day:2d}, {d:%Y %H:%M:%S}.{frac:09d} UTC"  # (the day padded with a space, as tshark's)
    except (OverflowError, OSError, ValueError):
        return f"{ts:.6f}"


def packet_detail(analysis: Analysis, source, number: int) -> list[Node]:
    """The detail tree of packet ``number``.  Never raises on bad packet bytes."""
    idx = analysis.index
    if not 1 <= number <= len(idx):
        return [Node(f"No packet {number}")]
    data = packet_bytes(source, analysis, number)
    i = number - 1
    ts, caplen, origlen = idx.ts[i], idx.caplen[i], idx.origlen[i]
    lt = idx.linktype[i]
    iface = idx.interface[i]
    out: list[Node] = []
    ifs = analysis.interfaces
    itf = ifs[iface] if 0 <= iface < len(ifs) else None
    pcapng = analysis.capture_format == "pcapng"
    # times to the nanosecond as tshark writes them; a capture in microseconds is exact to its
    # microsecond (the float's digits past it are not the capture's)
    us = itf is None or itf.tsdiv <= 1e6

    def t9(v: float) -> str:
        return seconds_text(v, 6) + "000" if us else seconds_text(v, 9)

    title = f"Frame {number}: {origlen} bytes on wire ({origlen * 8} bits), {caplen} bytes captured ({caplen * 8} bits)"
    name = (itf.name if itf is not None else "") or "unknown"
    fr_node = Node(title + (f" on interface {name}, id {iface}" if pcapng else ""), [], 0, len(data))
    if pcapng:
        ifn = _leaf(fr_node, "Interface id", str(iface), -1, -1, "frame.interface_id", shown=f"{iface} ({name})")
        ifn.add(f"Interface name: {name}", abbrev="frame.interface_name", value=name)
    encap = _ENCAP.get(lt)
    _leaf(fr_node, "Encapsulation type", str(encap[1]) if encap else str(lt), -1, -1, "frame.encap_type",
          shown=f"{encap[0]} ({encap[1]})" if encap else f"{LINKTYPE_NAMES.get(lt, 'Unknown')} (link type {lt})")
    _leaf(fr_node, "Arrival Time", _fmt_time(ts, us), -1, -1, "frame.time")
    fr_node.add("[Time shift for this packet: 0.000000000 seconds]", abbrev="frame.offset_shift", value="0.000000000")
    _leaf(fr_node, "Epoch Time", t9(ts), -1, -1, "frame.time_epoch", shown=f"{t9(ts)} seconds")
    prev = idx.ts[i - 1] if i else ts
    # (never "-0.000000000": timestamps tshark reads as the same nanosecond may differ as doubles, packet_record.seconds_text)
    delta, rel = ts - prev, ts - idx.ts[0]
    fr_node.add(f"[Time delta from previous captured frame: {t9(delta)} seconds]", abbrev="frame.time_delta", value=t9(delta))
    fr_node.add(f"[Time since reference or first frame: {t9(rel)} seconds]", abbrev="frame.time_relative", value=t9(rel))
    _leaf(fr_node, "Frame Number", str(number), -1, -1, "frame.number")
    _leaf(fr_node, "Frame Length", str(origlen), -1, -1, "frame.len", shown=f"{origlen} bytes ({origlen * 8} bits)")
    _leaf(fr_node, "Capture Length", str(caplen), -1, -1, "frame.cap_len", shown=f"{caplen} bytes ({caplen * 8} bits)")
    out.append(fr_node)
    try:
        _transport_and_frames(out, analysis, source, number, data, lt)
    except Exception as e:  # bad input never raises: show what broke instead
        out.append(Node(f"[Malformed packet: {e.__class__.__name__}: {e}]"))
    # (the display filter's frame.protocols, tshark's words: the tree's labels are not its names)
    try:
        protos = _packet_fields(analysis, source, number, ("frame.protocols",))["frame.protocols"]
    except Exception:  # noqa: BLE001 - bad input never raises (above): the line is left out
        protos = []
    if protos:
        fr_node.add(f"[Protocols in frame: {protos[0]}]", abbrev="frame.protocols", value=protos[0])
    _filterable_names(out)
    return out


_TREE_ONLY = frozenset({"tcp.analysis"})  # (a node's name that names a subtree, not a value: kept)
# the trees written line for line as Wireshark's (with every field name of its own, filterable or not)
_WIRESHARK_TREES = ("frame.", "eth.", "sll.", "null.", "ip.", "ipv6.", "udp.", "tcp.", "dns.", "tls.", "http2.", "http.")


def _filterable_names(out: list[Node]) -> None:
    """The tree names a line by its field (Wireshark's abbreviation) only where the display
    filter has that field: a line whose field the filter lacks keeps its words and value, not
    the name (so "apply as filter" is offered only where it works; tests/test_quic_filters22.py)."""
    for root in out:
        for x in root.walk():
            a = x.abbrev
            if a is not None and a not in _TREE_ONLY and a.startswith(_WIRESHARK_TREES) and not _filterable(a):
                x.abbrev = None


@lru_cache(maxsize=2048)
def _filterable(name: str) -> bool:
    """Whether the display filter has field ``name`` (asked once per name: a tree has hundreds of lines)."""
    from .fields import FIELDS, OWN, lookup, unsupported

    return not unsupported(name) and (name in FIELDS or name in OWN or lookup(name) is not None)


def _transport_and_frames(out: list[Node], analysis: Analysis, source, number: int, data: bytes, lt: int) -> None:
    L = layers(lt, data)  # the offsets of every layer (analyzer.packet); the nodes below show them
    _link(out, lt, data)
    off, et = L.network, L.ethertype
    if L.ipver == 4:
        r = _ipv4(out, data, L)
    elif L.ipver == 6:
        r = _ipv6(out, data, L)
    else:
        if 0 <= off < len(data) and lt in (1, 113, 276):
            out.append(Node(f"Data ({len(data) - off} bytes), ethertype 0x{et:04x}", [], off, len(data)))
        return
    if r is None:
        return
    proto, p, end, src, dst, frag = r
    if frag:
        out.append(Node(f"Fragmented IP protocol ({IP_PROTOS.get(proto, proto)}), {end - p} bytes; see the reassembled datagram", [], p, end))
        proto = -1
    payload_off = -1
    seq_rel = None
    plen = 0
    if proto == 6:
        t = _tcp_node(out, analysis, source, number, data, p, end, src, dst)
        if t is not None:
            payload_off = t[1]
            plen = max(end - payload_off, 0)
            sn = out[-1].find("tcp.seq")
            seq_rel = int(sn.value) if sn is not None else None
    elif proto == 17:
        t = _udp_node(out, data, p, end, lambda names: _packet_fields(analysis, source, number, names))
        if t is not None:
            payload_off = t[1]
    elif proto >= 0:
        out.append(Node(f"{IP_PROTOS.get(proto, 'IP protocol ' + str(proto))} ({end - p} bytes)", [], p, end))
    frames = frames_on_packet(analysis, number)
    if frames and proto == 6 and payload_off >= 0:
        # frames that complete later are on this packet only if it carries their bytes: not on
        # a pure ACK, nor on the peer's segments between the frame's first and last packet
        cid = analysis.index.conn[number - 1]
        sp = out[-1].find("tcp.srcport")
        if cid >= 0 and sp is not None:
            direction = 0 if (src, int(sp.value)) == tuple(analysis.connections[cid].client) else 1
            frames = [fr for fr in frames if fr.packet == number or (plen and fr.direction == direction)]
    if not frames:
        return
    # Group frames by protocol family, TLS records first (outer), then the rest.
    dec_recs = _decrypted_rows(analysis, number) if proto == 6 else []
    tls_ranges: list[tuple[int, int]] = []
    groups: dict[str, Node] = {}
    # QUIC: the datagram's decrypted packets, one "Decrypted QUIC" bytes tab each (numbered
    # from 1, after the packet's own bytes): (packet type, packet number) -> (tab, packet)
    qdec = _quic_tabs(analysis, source, number) if proto == 17 and payload_off >= 0 else {}
    qseen: dict = {}  # QUIC packet -> frames placed so far
    qframes = 0
    tls_rows: list | None = None  # the packet's decrypted TLS records, in bytes-tab order: decrypted once, when a frame asks
    tls_dec: dict = {}  # (connection, direction, stream offset) -> (tab, DecryptedRecord), of tls_rows
    whole_groups: set[int] = set()  # groups of record nodes: named as Wireshark names the layer, no summary
    prefaced: set[int] = set()  # connections whose HTTP/2 preface this tree has
    spans: list = []  # STREAM data in the tabs: (direction, stream, stream offset, length, tab, position, packet)
    for fr in frames:
        rng = _frame_range(analysis, fr, number, payload_off, seq_rel, plen, [])
        if fr.protocol == "tls" and rng[0] >= 0:
            tls_ranges.append(rng)
    for fr in frames:
        rng = _frame_range(analysis, fr, number, payload_off, seq_rel, plen, tls_ranges)
        qhit = None
        if proto == 17 and fr.protocol in ("quic", "gquic") and payload_off >= 0:
            rng = (payload_off, end)
            if fr.protocol == "quic":
                f = fr.fields or {}
                qhit = qdec.get((f.get("packet_type"), f.get("packet_number")))
                if qhit is not None:  # the QUIC packet's own bytes in the datagram
                    rng = (payload_off + qhit[1].offset, payload_off + qhit[1].offset + qhit[1].length)
        hk = hooks(fr.protocol)
        if proto == 17 and payload_off >= 0 and hk.datagram_node is not None and fr.packet == number:
            # a message that is the datagram (DNS): its own node, from the datagram's bytes
            out.append(hk.datagram_node(Node("", [], -1, -1), fr, data[payload_off:end], payload_off,
                                        lambda names: _packet_fields(analysis, source, number, names)))
            continue
        if hk.message_node is not None and fr.packet == number:
            msg = hk.message_node(analysis, fr, number)
            if msg is not None:
                out.extend(msg)  # (a node of its own: a message, as Wireshark's protocol node)
                continue
        pname = frame_proto_name(analysis, fr)
        g = groups.get(pname)
        if hk.frame_group is not None and fr.packet == number:
            for x in hk.frame_group(analysis, fr, prefaced):  # (what goes before it: HTTP/2's connection preface)
                out.append(x)
            g = Node(_group_label(pname), [], -1, -1)  # (a node of its own, the group's words without a summary)
            out.append(g)
            whole_groups.add(id(g))
        elif g is None:
            g = groups[pname] = Node(_group_label(pname), [], -1, -1)
            out.append(g)
        if hk.record_node is not None and fr.packet == number and fr.offset >= 0:
            if tls_rows is None:
                tls_rows = decrypted_tls(analysis, source, number)
                tls_dec = {(r.connection, r.direction, r.offset): (k, r) for k, r in enumerate(tls_rows, 1)}
            rb = _record_bytes(analysis, source, fr, data, rng, tls_dec)
            if rb is not None:  # (the record read again: its node written from its bytes alone)
                g.children.append(hk.record_node(analysis, Node("", [], rng[0], rng[1]), fr, rb))
                whole_groups.add(id(g))
                if rng[0] >= 0:
                    g.start = rng[0] if g.start < 0 else min(g.start, rng[0])
                    g.end = max(g.end, rng[1])
                continue
        fn = _frame_node(analysis, fr, rng)
        if hk.record_node is not None and fr.packet != number:
            fn.children = []  # (a record completing later: its tree is there, as Wireshark's; here only where it goes on)
        if dec_recs and fr.packet == number:
            _place_in_decrypted(analysis, fr, fn, dec_recs)
        elif hk.header_ranges is not None and rng[0] >= 0 and fr.packet == number and conn_is_clear(analysis, fr):
            hk.header_ranges(fn, 0, rng[0], rng[1])
        elif hk.place_in_stream is not None and spans:
            hk.place_in_stream(fr, fn, spans)
        if hk.frame_bytes_node is not None and fr.packet == number:
            if tls_rows is None and dec_recs and not conn_is_clear(analysis, fr):
                tls_rows = decrypted_tls(analysis, source, number)
                tls_dec = {(r.connection, r.direction, r.offset): (k, r) for k, r in enumerate(tls_rows, 1)}
            raw = _frame_raw(analysis, source, fr, data, rng, dec_recs, tls_rows)
            if raw is not None:
                hk.frame_bytes_node(fn, fr, raw)
        if fr.packet != number:
            # only part of this frame is here; Wireshark shows it where it completes, and so
            # do the field names (abbrev) — this node is for reading, not for comparing
            fn.label += f" [continued: completes in packet {fr.packet}]"
            for x in fn.walk():
                x.abbrev = None
        parent = g
        if fr.protocol == "quic":
            # one node per QUIC packet of the datagram (coalesced Initial/Handshake/1-RTT)
            f = fr.fields or {}
            key = (f.get("packet_type"), f.get("packet_number"))
            last = g.children[-1] if g.children else None
            if last is None or getattr(last, "value", None) != key:
                head = ", ".join(x for x in (str(key[0]) if key[0] else "", f"PKN: {key[1]}" if key[1] is not None else "") if x)
                last = Node(f"QUIC packet: {head or '?'}", [], rng[0], rng[1], None, key)
                if qhit is not None:
                    k, r = qhit
                    if r.error:
                        last.add(f"[Decrypted QUIC: not decrypted again: {r.error}]")
                    else:
                        last.add(f"[Decrypted QUIC: {len(r.data)} bytes, bytes tab {k}]", 0, len(r.data)).source = k
                g.children.append(last)
            parent = last
            qframes += 1
            if qhit is not None:
                # the frame's bytes in its packet's "Decrypted QUIC" tab
                k, r = qhit
                j = qseen[key] = qseen.get(key, -1) + 1
                a, b = _quic_frame_span(r, j, fr)
                if a >= 0:
                    fn.source, fn.start, fn.end = k, a, b
                    if fr.type == "STREAM" and fr.offset >= 0 and b - fr.length >= a:
                        spans.append((fr.direction, fr.stream_id, fr.offset, fr.length, k, b - fr.length, r))
                    quic_hooks.frame_field_nodes(fn, fr, r.data, a, b, k, _is_h3(analysis, fr),
                                                 partial(quic_crypto_frames, analysis, source, fr, r, a))
            el = quic_hooks.error_label(fr, _is_h3(analysis, fr))
            if el is not None:  # the wirefall field's code in words too
                for c in fn.walk():
                    if c.abbrev is None and c.label.startswith("error_code: "):
                        c.label = f"error_code: {el}"
        parent.children.append(fn)
        if rng[0] >= 0:
            g.start = rng[0] if g.start < 0 else min(g.start, rng[0])
            g.end = max(g.end, rng[1])
    padding = 0
    if "QUIC" in groups and payload_off >= 0:
        padding = _quic_headers(analysis, groups["QUIC"], data[payload_off:end], payload_off, qdec,
                                [fr for fr in frames if fr.protocol == "quic"])
    for pname, g in groups.items():
        if pname == "QUIC":
            npk = len(g.children) - padding  # (bytes after the last QUIC packet are padding, not a packet: as tshark counts)
            g.label = f"{g.label} ({npk} QUIC packet{'s' if npk != 1 else ''}, {qframes} frames)"
        elif id(g) in whole_groups:
            pass
        elif len(g.children) == 1:
            g.label = f"{g.label}: {g.children[0].label.split(': ', 1)[-1]}"
        else:
            g.label = f"{g.label} ({len(g.children)} frames)"


def _is_h3(analysis: Analysis, fr: Frame) -> bool:
    try:
        return str(analysis.connections[fr.connection].protocol or "").startswith("h3")
    except IndexError:
        return False


def _quic_headers(analysis: Analysis, g: Node, payload: bytes, base: int, qdec: dict, qframes: list[Frame]) -> int:
    """Give each QUIC packet node of the datagram its header node (tshark's fields, coalesced
    packets each their own): matched by its bytes where the packet was decrypted, else by
    packet type and order; a header no frame stands for gets a packet node of its own.  The
    padding after the packets, if any, gets a node too; returns how many such nodes (0 or 1)."""
    rows = {r.offset: (r.hdr_len, r.pn_len, r.pn, r.first_byte) for _k, r in qdec.values()}
    heads = quic_hooks.header_nodes(payload, base, rows, quic_hooks.short_dcid_len(analysis, qframes))
    free = [h for h in heads if h[2] != "Padding"]
    for pk in list(g.children):
        key = pk.value if isinstance(pk.value, tuple) else (None, None)
        hit = next((h for h in free if base + h[0] == pk.start and base + h[1] == pk.end), None)
        if hit is None:
            hit = next((h for h in free if h[2] == key[0]), None) or (free[0] if free else None)
        if hit is None:
            continue
        free.remove(hit)
        pk.children.insert(0, hit[3])
        pk.start, pk.end = base + hit[0], base + hit[1]
        if key[1] is not None and hit[3].find("quic.packet_number") is None:
            pk.children.insert(1, Node(f"Packet Number: {key[1]}", [], -1, -1, "quic.packet_number", str(key[1])))
    for h in free:
        g.children.append(Node(f"QUIC packet: {h[2]}", [h[3]], base + h[0], base + h[1], None, (h[2], None)))
    pads = [h[3] for h in heads if h[2] == "Padding"]
    g.children.extend(pads)
    g.children.sort(key=lambda c: c.start)
    return len(pads)


def _quic_tabs(analysis: Analysis, source, n: int) -> dict:
    """(packet type, packet number) -> (bytes tab number, DecryptedQuic) for the decrypted
    QUIC packets of the datagram in packet n (tabs after the packet's own bytes)."""
    try:
        rows = decrypted_quic(analysis, source, n)
    except Exception:  # noqa: BLE001 - the tree still shows without the tabs
        return {}
    return {(r.packet_type, r.pn): (k, r) for k, r in enumerate(rows, 1)}


def _frame_raw(analysis: Analysis, source, fr: Frame, data: bytes, rng: tuple[int, int], rows, tabs: list | None) -> bytes | None:
    """A frame's whole bytes, header included: from the packet or the TCP stream of a
    connection in the clear, else from the one "Decrypted TLS" tab that holds all of it
    (``rows``: ``_decrypted_rows``; ``tabs``: the packet's decrypted records, tab k at k - 1).
    None when they are not to be had whole (a frame over several records)."""
    d = find(fr.protocol)
    if fr.offset < 0 or d is None:
        return None
    whole = d.frame_header + fr.length
    if conn_is_clear(analysis, fr):
        if rng[0] >= 0 and rng[1] - rng[0] == whole:
            return data[rng[0] : rng[1]]
        raw = _stream_bytes(analysis, source, fr.connection, fr.direction, fr.offset, fr.offset + whole, fr.first_packet, fr.packet)
        return raw if isinstance(raw, bytes) and len(raw) == whole else None
    for k, cid, dd, _off, pto, ptl in rows or ():
        if (cid, dd) == (fr.connection, fr.direction) and 0 <= pto <= fr.offset and fr.offset + whole <= pto + ptl:
            r = tabs[k - 1] if tabs and k <= len(tabs) else None
            if r is not None and r.data:
                return bytes(r.data[fr.offset - pto : fr.offset - pto + whole])
    return None


def conn_is_clear(analysis: Analysis, fr: Frame) -> bool:
    try:
        return analysis.connections[fr.connection].tls is None
    except IndexError:
        return False


def _decrypted_rows(analysis: Analysis, n: int) -> list[tuple[int, int, int, int, int, int]]:
    """The records of packet n that have a "Decrypted TLS" bytes tab, numbered from 1 as
    the tabs: ``(tab, connection, direction, stream offset, pt offset, pt length)``."""
    recs = getattr(analysis, "tls_records", None) or {}
    out: list[tuple[int, int, int, int, int, int]] = []
    for cid, d, i in tls_records_on_packet(analysis, n):
        tab = recs[(cid, d)]
        if tab.pt_length[i]:
            out.append((len(out) + 1, cid, d, tab.offset[i], tab.pt_offset[i], tab.pt_length[i]))
    return out


def _place_in_decrypted(analysis: Analysis, fr: Frame, fn: Node, rows) -> None:
    """Point a frame's node at its bytes in the "Decrypted TLS" tab of the record carrying
    them on this packet (a TLS record node gets a child for its whole plaintext)."""
    if fr.protocol == "tls":
        for k, cid, d, off, _pto, ptl in rows:
            if (cid, d, off) == (fr.connection, fr.direction, fr.offset):
                fn.children.append(Node(f"[Decrypted TLS: {ptl} bytes, bytes tab {k}]", [], 0, ptl, None, None, k))
        return
    if fr.offset < 0:
        return
    a = fr.offset
    d = find(fr.protocol)
    b = a + (d.frame_header if d is not None else 0) + max(fr.length, 1)
    header_ranges = hooks(fr.protocol).header_ranges
    for k, cid, d, _off, pto, ptl in rows:
        if (cid, d) != (fr.connection, fr.direction) or pto < 0:
            continue
        s, e = max(a, pto), min(b, pto + ptl)
        if s < e:
            fn.source, fn.start, fn.end = k, s - pto, e - pto
            if header_ranges is not None and s == a:
                header_ranges(fn, k, fn.start, fn.end)
            return


def _group_label(pname: str) -> str:
    """The protocol tree's name (Wireshark's) of a protocol column name (``TLSv1.3``: TLS's)."""
    for d in REGISTRY.values():
        if pname == d.display or pname.startswith(d.display + "v"):
            return d.long_name or d.display
    return pname


# ---------------------------------------------------------------- packet list rows

def packet_row(analysis: Analysis, source, n: int) -> tuple[int, float, str, str, str, int, str]:
    """``(no, time, source, destination, protocol, length, info)`` for packet ``n``: the
    tuple form of ``analyzer.packet_record.packet_record`` (time: seconds since the first
    packet, as Wireshark's default column)."""
    from .packet_record import packet_record

    return packet_record(analysis, source, n).row()


def row_columns(analysis: Analysis, source, n: int, data: bytes | None = None) -> tuple[str, str, str, str]:
    """``(source, destination, protocol, info)`` of packet ``n`` in the packet list
    (``analyzer.packet_record`` adds the number, times, length and connection); ``data``: the
    packet's captured bytes when the caller has read them already (a listing reads its rows'
    bytes a window at a time), else they are read from ``source``."""
    from .info import cap_info

    src, dst, pcol, info = _row_columns(analysis, source, n, data)
    # (the protocol column from the whole text: tshark's dissectors set it, not the Info buffer)
    return src, dst, _media_column(pcol, info), cap_info(info)  # the one place the Info is capped, as tshark's column buffer


def _row_columns(analysis: Analysis, source, n: int, data: bytes | None = None) -> tuple[str, str, str, str]:
    idx = analysis.index
    i = n - 1
    if data is None:
        data = source.read(idx.offset[i], idx.caplen[i])
    lt = idx.linktype[i]
    d = _decode_row(data, lt)
    if isinstance(d, str):
        return ("", "", PROTO_NAMES[idx.proto[i]] if idx.proto[i] else LINKTYPE_NAMES.get(lt, "?"), d)
    ipver, src, dst, proto, frag, l4 = d
    frames = frames_on_packet(analysis, n)
    pcol = PROTO_NAMES[idx.proto[i]] or "?"
    if frames:
        best, rank = None, -1
        for fr in ([f for f in frames if f.packet == n] or frames):
            nm = frame_proto_name(analysis, fr)
            d = find(fr.protocol)  # the packet list names the highest-ranked protocol on a packet
            r = d.column_rank if d is not None else 2
            if r >= rank:
                best, rank = nm, r
        pcol = best or pcol
    if frag:
        return (src, dst, "IPv4", f"Fragmented IP protocol (proto={IP_PROTOS.get(proto, proto)} {proto}, off={frag - 1})")
    if proto == 6 and l4 is not None:
        sport, dport, seq, ack, hl, flags, win, plen, opts = l4
        conn_id = idx.conn[i]
        ta = _tcp_analysis_to(analysis, source, n)
        prefix = ta.info_prefix(n)  # "[TCP Retransmission] " … as tshark puts before the Info
        info_extra = ""
        own: list[Frame] = []
        if frames:
            from .info import SEGMENT, TLS_SEGMENT, stream_info

            done = [fr for fr in frames if fr.packet == n]
            if plen and 0 <= conn_id < len(analysis.connections):
                # the frames of this segment's direction: a pure ACK (or the peer's segment)
                # between a frame's first and last packet carries none of it
                c = analysis.connections[conn_id]
                direction = 0 if (src, sport) == tuple(c.client) else 1
                own = [fr for fr in frames if fr.direction == direction]
            info, pending = stream_info(analysis, n, done, own, prefix)
            if info is not None:
                if pending and pcol == "HTTP" and 0 <= conn_id < len(analysis.connections) and analysis.connections[conn_id].tls is None:
                    pcol = "TCP"  # (an HTTP/1 head whose body ends later: tshark wrote its line, TCP keeps the column)
                return (src, dst, pcol, info + (" " + SEGMENT if pending else ""))
            if pending and any(fr.protocol == "tls" and (fr.fields or {}).get("decrypted") for fr in done):
                # records read, the message they carry ends later: the column is TLS's (the
                # protocol that completed here), as tshark's
                tls = [fr for fr in done if fr.protocol == "tls"]
                return (src, dst, frame_proto_name(analysis, tls[-1]) if tls else pcol, prefix + TLS_SEGMENT)
            if not done:  # nothing completes in this segment: tshark's column is TCP's (it names a protocol once its PDU is whole)
                pcol = "TCP"
            if not done and any(_clears_info(fr.protocol) and fr.first_packet == n and fr.packet > n for fr in own):
                return (src, dst, pcol, prefix + SEGMENT)  # a record/frame begins here: TLS/SPDY cleared the column, TCP says why
            if (pending or own) and "Retransmission]" not in prefix:
                # part of a frame (a TLS record, an HTTP message, a SPDY frame: every tshark
                # dissector of ours reassembles its PDUs) that completes later; a retransmission
                # (not reassembled again) gets no marker
                info_extra = " " + SEGMENT
        if not own and plen and "Retransmission]" not in prefix:
            from .info import SEGMENT, ahead_of_its_pdu

            if ahead_of_its_pdu(analysis, n, conn_id, (src, sport), seq, plen):
                # arrived after a hole, ahead of its frame's first byte: tshark holds it until
                # the retransmission fills the hole (out-of-order reassembly)
                pcol, info_extra = "TCP", " " + SEGMENT
        fl = ", ".join(nm for b, nm in _INFO_FLAGS if flags & b)
        rs, ra = ta.relative(n, seq, ack)
        info = f"{prefix}{sport} → {dport} [{fl}] Seq={seq if rs is None else rs}"
        if flags & 0x10:
            info += f" Ack={ack if ra is None else ra}"
        info += f" Win={ta.window(n, win)} Len={plen}"
        rbase = None if ra is None else (ack - ra) & 0xFFFFFFFF
        # (the option dissectors' words, as tshark adds them to the column, up to a SACK option it throws on)
        shown, threw = dissected(tcp_options(opts), lambda: ((ack if ra is None else ra) if flags & 0x10 else ack, partial(_rel, base=rbase)))
        for kind, val, _ in shown:
            if kind == 2 and len(val) == 2:
                info += f" MSS={struct.unpack('!H', val)[0]}"
            elif kind == 4:
                info += " SACK_PERM"
            elif kind == 8 and len(val) == 8:
                tv, te = struct.unpack("!II", val)
                info += f" TSval={tv} TSecr={te}"
            elif kind == 3 and len(val) == 1:
                info += f" WS={1 << min(val[0], 14)}"
            elif kind == 5 and len(val) >= 8:
                for k in range(0, len(val) // 8 * 8, 8):
                    le, re_ = struct.unpack_from("!II", val, k)
                    info += f" SLE={_rel(le, rbase)} SRE={_rel(re_, rbase)}"
        if threw is not None:
            return (src, dst, "TCP", info + "[Malformed Packet]")  # (tshark's words after its exception, nothing after them)
        return (src, dst, "TCP", info + info_extra)
    if proto == 17 and l4 is not None:
        sport, dport, ulen = l4
        if frames:
            done = [fr for fr in frames if fr.packet == n] or frames
            if pcol in ("HTTP3", "QUIC"):
                pcol = _h3_column(analysis, frames, n)
            return (src, dst, pcol, _udp_info(analysis, n, data, lt, done, frames))
        info = f"{sport} → {dport} Len={max(ulen - 8, 0)}"
        return (src, dst, pcol if pcol not in ("?", "IPv4", "IPv6") else "UDP", info)
    return (src, dst, pcol if pcol != "?" else IP_PROTOS.get(proto, str(proto)), f"IP protocol {IP_PROTOS.get(proto, proto)}")


def _h3_column(analysis: Analysis, frames: list[Frame], n: int) -> str:
    return "HTTP3" if http3_on_packet(analysis, frames, n) else "QUIC"


def http3_on_packet(analysis: Analysis, frames: list[Frame], n: int) -> bool:
    """Whether tshark's HTTP/3 dissector runs on packet ``n`` (``frames``: every frame with a
    byte on it): an HTTP/3 frame begins here, or STREAM data on a unidirectional stream of an
    HTTP/3 connection (control, QPACK encoder and decoder: dissected as they come) — not where
    an HTTP/3 frame begun earlier only continues or ends.  The one rule of the packet list's
    HTTP3 protocol column and of the display filter's ``http3`` (analyzer/fields/http3.py);
    the frames whose fields tshark shows there are fewer (``fields.http3.shown``)."""
    if any(fr.protocol.startswith("h3") and fr.first_packet == n for fr in frames):
        return True
    for fr in frames:
        if fr.protocol == "quic" and fr.type == "STREAM" and fr.packet == n and fr.stream_id is not None and fr.stream_id & 2:
            c = analysis.connections[fr.connection] if 0 <= fr.connection < len(analysis.connections) else None
            if c is not None and (c.protocol or "").startswith("h3"):
                return True
    return False


def h3_wire_type(analysis: Analysis, source, fr: Frame) -> int | None:
    """The wire type of an HTTP/3 frame the analysis keeps by name only (a reserved, GREASE,
    type: 0x1f * N + 0x21), read again from its first byte in the decrypted STREAM frame of its
    first packet; None where that packet is not at hand (not decrypted again, no key log)."""
    if fr.offset < 0 or fr.stream_id is None:
        return None
    n = fr.first_packet or fr.packet
    try:
        tabs: dict[tuple, DecryptedQuic] = {(r.packet_type, r.pn): r for r in decrypted_quic(analysis, source, n)}
    except Exception:  # noqa: BLE001 - bad input never raises: no value
        return None
    seen: dict = {}
    for q in frames_on_packet(analysis, n):
        if q.protocol != "quic":
            continue
        f = q.fields or {}
        key = (f.get("packet_type"), f.get("packet_number"))
        j = seen[key] = seen.get(key, -1) + 1  # (the frame's place in its QUIC packet, as the tree counts it)
        if (q.type != "STREAM" or (q.connection, q.direction, q.stream_id) != (fr.connection, fr.direction, fr.stream_id)
                or not q.offset <= fr.offset < q.offset + q.length):
            continue
        r = tabs.get(key)
        if r is None or r.error:
            return None
        a, b = r.frame_span(j)
        if a < 0 or b - q.length < a:
            return None
        try:
            return quic_hooks._varint(r.data, b - q.length + fr.offset - q.offset)[0]
        except IndexError:
            return None
    return None


# The media-type dissectors that add their name to the protocol column: tshark's "HTTP/JSON",
# "HTTP2/JSON" where the JSON dissector read a body that ended in the packet (its Info entry,
# ``analyzer.info``, says so).
_MEDIA_COLUMN = ((", JavaScript Object Notation (", "JSON"),)


def _media_column(pcol: str, info: str) -> str:
    if pcol in ("HTTP", "HTTP2", "SPDY"):
        for mark, name in _MEDIA_COLUMN:
            if mark in info:
                return f"{pcol}/{name}"
    return pcol


def _clears_info(protocol: str) -> bool:
    d = find(protocol)
    return d is not None and d.oracle is not None and d.oracle.clears_info


def _udp_info(analysis: Analysis, n: int, data: bytes, lt: int, frames: list[Frame], spanning: list[Frame]) -> str:
    """Info of a UDP packet with frames: tshark's where a protocol's hook writes it (QUIC, DNS:
    ``analyzer.info.datagram_info``), else ``_datagram_info``."""
    from .info import datagram_info

    try:
        L = layers(lt, data)
        payload = data[L.transport + 8 : L.end] if L.transport >= 0 else b""
        got = datagram_info(analysis, n, payload, frames, spanning)
    except Exception:  # noqa: BLE001 - the row keeps wirefall's own text
        got = None
    return got if got is not None else _datagram_info(frames)


def _datagram_info(frames: list[Frame]) -> str:
    """Info of a UDP packet with frames: per QUIC packet ``Initial, PKN: 0, CRYPTO, PADDING``
    (as Wireshark; repeated frame types collapse to one), then the HTTP/3 frames."""
    parts: list[str] = []
    cur = None
    names: list[str] = []
    apps: list[str] = []
    for fr in frames:
        if fr.protocol in ("quic", "gquic"):
            f = fr.fields or {}
            key = (f.get("packet_type"), f.get("packet_number"))
            if key != cur:
                if names:
                    parts.append(", ".join(names))
                cur = key
                head = []
                if key[0]:
                    head.append(str(key[0]))
                if key[1] is not None:
                    head.append(f"PKN: {key[1]}")
                names = [", ".join(head)] if head else []
            nm = f"{fr.type}({fr.stream_id})" if fr.type == "STREAM" and fr.stream_id is not None else fr.type
            if not names or names[-1] != nm:
                names.append(nm)
        elif fr.protocol != "tls":
            apps.append(frame_summary(fr))
    if names:
        parts.append(", ".join(names))
    info = ", ".join(parts)
    if apps:
        info += (", " if info else "") + ", ".join(apps[:12]) + (" …" if len(apps) > 12 else "")
    if not info:
        info = ", ".join(frame_summary(fr) for fr in frames[:12])
    return info


def _decode_row(data: bytes, lt: int):
    """Minimal decode for a list row: (ipver, src, dst, proto, frag, l4) or a reason (from
    ``analyzer.packet.layers``)."""
    L = layers(lt, data)
    if L.network < 0:
        return L.error
    if L.ipver == 0:
        return ETHERTYPES.get(L.ethertype, f"ethertype 0x{L.ethertype & 0xFFFF:04x}")
    if L.transport < 0:  # the IP header is truncated or bad
        return L.error
    if L.ipver == 4:
        src, dst = socket.inet_ntoa(L.src), socket.inet_ntoa(L.dst)
    else:
        src, dst = socket.inet_ntop(socket.AF_INET6, L.src), socket.inet_ntop(socket.AF_INET6, L.dst)
    proto, p, end = L.proto, L.transport, L.end
    if L.frag:
        return (L.ipver, src, dst, proto, L.frag, None)
    l4 = None
    if proto == 6 and end - p >= 20:
        sport, dport, seq, ack, doff, flags, win = struct.unpack_from("!HHIIBBH", data, p)
        hl = (doff >> 4) * 4
        l4 = (sport, dport, seq, ack, hl, flags | ((doff & 1) << 8), win, max(end - p - hl, 0), data[p + 20 : p + hl])
    elif proto == 17 and end - p >= 8:
        l4 = struct.unpack_from("!HHH", data, p)
    return (L.ipver, src, dst, proto, 0, l4)


def packet_rows(analysis: Analysis, source, start: int, stop: int) -> list[tuple]:
    """Rows for packets ``start`` .. ``stop - 1`` (1-based), read sequentially."""
    stop = min(stop, len(analysis.index) + 1)
    return [packet_row(analysis, source, n) for n in range(max(start, 1), stop)]


# ---------------------------------------------------------------- decrypted TLS (on demand)

MAX_RECORD_SCAN = 20000  # packets scanned to re-read one record's segments
DEC_CACHE = 64  # record decryptors (derived keys) kept per analysis


@dataclass(slots=True)
class RecordBytes:
    """A TLS record's bytes for its tree node: the 5-byte header, the body as on the wire
    (``cipher``), what the body says (``body``: the wire body of a record in the clear, the
    plaintext of a decrypted one; None: not to be had), where they are (``at``: the packet
    offset of the header, -1 when the record is not whole in the packet; ``body_source`` /
    ``body_at``: the bytes tab and offset of ``body``, -1 unknown) and, for a decrypted TLS 1.3
    record, its inner content type."""

    header: bytes
    cipher: bytes | None
    body: bytes | None
    at: int
    body_source: int
    body_at: int
    inner_type: int | None


def _record_bytes(analysis: Analysis, source, fr: Frame, data: bytes, rng: tuple[int, int], dec: dict) -> RecordBytes | None:
    """A TLS record's ``RecordBytes``: from the packet when it is whole there, else from the
    segments that carried it; the plaintext from its "Decrypted TLS" tab (``dec``: (connection,
    direction, stream offset) -> (tab, DecryptedRecord)).  None: its header cannot be had."""
    whole = 5 + fr.length
    if rng[0] >= 0 and rng[1] - rng[0] == whole:
        raw: bytes | str = data[rng[0] : rng[1]]
        at = rng[0]
    else:
        raw = _stream_bytes(analysis, source, fr.connection, fr.direction, fr.offset, fr.offset + whole, fr.first_packet, fr.packet)
        at = -1
    if isinstance(raw, str) or len(raw) < 5:
        return None
    f = fr.fields or {}
    hit = dec.get((fr.connection, fr.direction, fr.offset))
    if hit is not None and hit[1].data:
        k, r = hit
        try:
            tls13 = analysis.connections[fr.connection].tls.version == "TLS 1.3"  # type: ignore[union-attr]
        except (IndexError, AttributeError):
            tls13 = False
        ct = ContentType.__members__.get(fr.type)
        inner = int(ct) if ct is not None and tls13 and raw[0] == 23 else None
        return RecordBytes(raw[:5], raw[5:], r.data, at, k, 0, inner)
    if f.get("encrypted"):
        return RecordBytes(raw[:5], raw[5:], None, at, 0, -1, None)
    return RecordBytes(raw[:5], raw[5:], raw[5:], at, 0, at + 5 if at >= 0 else -1, None)


@dataclass(slots=True)
class DecryptedRecord:
    """One decrypted TLS record on a packet: where it is, and its plaintext (``data``) or why
    it could not be decrypted again (``error``)."""

    connection: int
    direction: int
    index: int  # row in analysis.tls_records[(connection, direction)]
    offset: int  # TCP stream offset of the record header
    length: int  # ciphertext length
    ctype: int  # content type (TLS 1.3: the inner one)
    pt_offset: int  # offset in the decrypted stream (application data), else -1
    pt_length: int
    data: bytes = b""
    error: str | None = None

    @property
    def title(self) -> str:
        return f"Decrypted TLS ({self.pt_length} bytes)"


_CTYPE_NAMES = {int(t): t.name.replace("_", " ").title() for t in ContentType}  # Wireshark's words: "Change Cipher Spec"


def _rows_on_packet(analysis: Analysis, n: int, attr: str) -> tuple[dict, list[tuple[int, int, int]]]:
    """``(connection, direction, row)`` of the rows of ``analysis.<attr>`` (per-direction
    tables with a ``packet`` array) that belong to capture packet ``n``, through a
    packet → rows index grown incrementally (safe while the analysis is still loading)."""
    recs = getattr(analysis, attr, None) or {}
    if not recs or not 1 <= n <= len(analysis.index):
        return recs, []
    cid = analysis.index.conn[n - 1]
    if cid < 0:
        return recs, []
    out = []
    cache = analysis.__dict__.setdefault(f"_wf_{attr}_idx", {})
    for d in (0, 1):
        tab = recs.get((cid, d))
        if tab is None:
            continue
        done, by_pkt = cache.get((cid, d), (0, None))
        k = len(tab.packet)  # snapshot: rows below k are complete in every array
        if by_pkt is None or done < k:
            by_pkt = by_pkt if by_pkt is not None else {}
            pk = tab.packet
            for i in range(done, k):
                by_pkt.setdefault(pk[i], []).append(i)
            cache[(cid, d)] = (k, by_pkt)
        for i in by_pkt.get(n, ()):
            out.append((cid, d, i))
    return recs, out


def tls_records_on_packet(analysis: Analysis, n: int) -> list[tuple[int, int, int]]:
    """``(connection, direction, row)`` of the decrypted TLS records whose last byte is in
    packet ``n`` (where Wireshark shows their "Decrypted TLS" tab), in stream order.  Cheap:
    numbers only; safe while the analysis is still growing."""
    recs, out = _rows_on_packet(analysis, n, "tls_records")
    out.sort(key=lambda t: (t[1], recs[(t[0], t[1])].offset[t[2]]))
    return out


def decrypted_tls(analysis: Analysis, source, n: int) -> list[DecryptedRecord]:
    """The decrypted TLS records that complete on packet ``n``, each decrypted again from
    the capture.  Never raises: a record that cannot be re-read or re-opened carries an
    ``error`` (key log gone, e.g. an analysis loaded from the cache; segments missing)."""
    out: list[DecryptedRecord] = []
    recs = getattr(analysis, "tls_records", None) or {}
    for cid, d, i in tls_records_on_packet(analysis, n):
        tab = recs[(cid, d)]
        if not tab.pt_length[i]:
            continue  # an empty record (TLS 1.0 1/n-1 split): no tab, as in Wireshark
        r = DecryptedRecord(cid, d, i, tab.offset[i], tab.length[i], tab.ctype[i], tab.pt_offset[i], tab.pt_length[i])
        try:
            pt = _redecrypt(analysis, source, cid, d, tab, i)
            if isinstance(pt, str):
                r.error = pt
            elif len(pt) != r.pt_length:
                r.error = f"decrypted again to {len(pt)} bytes, not {r.pt_length}"
            else:
                r.data = pt
        except Exception as e:  # noqa: BLE001 - bad input never raises
            r.error = f"{e.__class__.__name__}: {e}"
        out.append(r)
    return out


def _stream_bytes(analysis: Analysis, source, cid: int, d: int, start: int, end: int, p0: int, p1: int) -> bytes | str:
    """Bytes [start, end) of direction ``d`` of TCP connection ``cid``, re-read from the
    segments the pass's reassembly delivered them from: its stream-offset map
    (``analysis.maps``) names the packet of each chunk, and each packet gives only its chunk,
    so nothing is reassembled again (without a map, as for an analysis made without one: the
    segments in packets ``p0``..``p1``, the first copy of each byte winning)."""
    idx = analysis.index
    try:
        conn = analysis.connections[cid]
    except IndexError:
        return "no such connection"
    st = _tcp_state(analysis, source, cid)
    base = st.base[d] if st else None
    if base is None:
        return "the connection's first segments are not in the capture"
    want = end - start
    buf = bytearray(want)
    have = bytearray(want)  # 1 where filled
    filled = 0
    dec = Decoder()
    client = tuple(conn.client)
    conn_of = idx.conn
    m = analysis.maps.get((cid, d))  # stream offset -> carrier packet (complete after loading)
    chunks: list[tuple[int, int, int]]  # (packet, first, end) stream offsets it gives
    if m is not None and len(m.packets):
        chunks = m.chunks_between(start, end)
    else:
        p0 = max(p0, 1)
        p1 = min(p1, len(conn_of))
        if p1 - p0 > MAX_RECORD_SCAN:
            return f"record spread over more than {MAX_RECORD_SCAN} packets"
        chunks = [(p, start, end) for p in range(p0, p1 + 1)]
    for p, ca, cb in chunks:
        if not 1 <= p <= len(conn_of) or conn_of[p - 1] != cid:
            continue
        data = source.read(idx.offset[p - 1], idx.caplen[p - 1])
        x = dec.decode(idx.linktype[p - 1], data)
        if x is None or isinstance(x, str) or x.proto != 6 or not len(x.payload):
            continue
        if ((_ep(x.src, x.sport) == client) != (d == 0)):
            continue
        seq = x.seq + 1 if x.flags & 0x02 else x.seq
        rel = (seq - base - 1) & 0xFFFFFFFF
        rel -= start
        if rel >= 0x80000000:
            rel -= 0x100000000
        off = start + rel  # stream offset of the payload's first byte, unwrapped near start
        pl = bytes(x.payload)
        a, b = max(off, start, ca), min(off + len(pl), end, cb)
        for j in range(a, b):
            k = j - start
            if not have[k]:
                have[k] = 1
                buf[k] = pl[j - off]
                filled += 1
        if filled == want:
            return bytes(buf)
    return f"{want - filled} of the record's {want} bytes are not in the capture"


def _record_decryptor(analysis: Analysis, tab, d: int, key: int):
    from collections import OrderedDict

    from wirefall.analyzer.sessions.tls import KEY_APP, KEY_EARLY, KEY_HANDSHAKE
    from wirefall.dissectors.tls_crypto import Tls13RecordDecryptor, suite_params, tls12_decryptors

    cache = analysis.__dict__.get("_wf_tls_dec")
    if cache is None:
        cache = analysis.__dict__["_wf_tls_dec"] = OrderedDict()
    ck = (id(tab.ref), d, key)
    hit = cache.get(ck)
    if hit is not None and hit[0] is tab.ref:
        cache.move_to_end(ck)
        return hit[1]
    ref, kl = tab.ref, analysis.keylog
    if kl is None:
        return "no key log with this analysis"
    params = suite_params(ref.cipher_suite)
    if params is None:
        return "unsupported cipher suite"
    if ref.tls13:
        side = "CLIENT" if d == 0 else "SERVER"
        gens = 0
        if key == KEY_HANDSHAKE:
            label = f"{side}_HANDSHAKE_TRAFFIC_SECRET"
        elif key == KEY_EARLY:
            label = "CLIENT_EARLY_TRAFFIC_SECRET"
        else:
            label, gens = f"{side}_TRAFFIC_SECRET_0", key - KEY_APP
        secret = kl.get(label, ref.client_random) if ref.client_random else None
        if secret is None:
            return f"{label} not in the key log"
        dec = Tls13RecordDecryptor(params, secret)
        for _ in range(gens):
            dec = dec.next_generation()
        val = (dec, None)
    else:
        master = kl.get("CLIENT_RANDOM", ref.master_random) if ref.master_random else None
        if master is None:
            return "master secret not in the key log"
        c, s = tls12_decryptors(master, ref.client_random, ref.server_random, params, ref.version, ref.etm)
        dec = (c, s)[d]
        val = (dec, dec.iv)  # the key block IV (TLS 1.0 CBC chains from it)
    cache[ck] = (ref, val)
    if len(cache) > DEC_CACHE:
        cache.popitem(last=False)
    return val


def _redecrypt(analysis: Analysis, source, cid: int, d: int, tab, i: int) -> bytes | str:
    from wirefall.dissectors.tls_crypto import DecryptError

    got = _record_decryptor(analysis, tab, d, tab.key[i])
    if isinstance(got, str):
        return got
    dec, iv0 = got
    off, ln = tab.offset[i], tab.length[i]
    seq = tab.seq[i]
    chained = iv0 is not None and dec.params.cipher.endswith("CBC") and dec.version < 0x0302 and seq > 0
    # TLS 1.0 CBC: the IV is the previous record's last ciphertext block (before its MAC
    # with encrypt-then-MAC)
    back = 16 + (dec.mac_len if chained and dec.etm else 0)
    start = off - back if chained else off
    p0 = tab.first_packet[i]
    if chained and i > 0 and tab.offset[i - 1] + 5 + tab.length[i - 1] == off and tab.seq[i - 1] == seq - 1:
        p0 = min(p0, tab.first_packet[i - 1])
    elif chained:
        return "the previous record (CBC IV) was not decrypted"
    raw = _stream_bytes(analysis, source, cid, d, start, off + 5 + ln, p0, tab.packet[i])
    if isinstance(raw, str):
        return raw
    if chained:
        prev, raw = raw[:16], raw[back:]
    hdr, body = raw[:5], raw[5:]
    dec.seq = seq
    try:
        if iv0 is None:  # TLS 1.3
            _ctype, pt = dec.decrypt(hdr, body)
        else:
            if dec.params.cipher.endswith("CBC") and dec.version < 0x0302:
                dec.iv = prev if chained else iv0
            pt = dec.decrypt(hdr[0], (hdr[1] << 8) | hdr[2], body)
    except DecryptError as e:
        return f"does not decrypt again ({e})"
    return pt


# ---------------------------------------------------------------- decrypted QUIC (on demand)

QUIC_EPOCH_NAMES = ("Initial", "0-RTT", "Handshake", "1-RTT")
QUIC_AEAD_TAG = 16  # every QUIC AEAD (AES-GCM, ChaCha20-Poly1305) has a 16-byte tag


@dataclass(slots=True)
class DecryptedQuic:
    """One decrypted QUIC packet of a datagram: where it is, and its plaintext (``data``, the
    frames after the header, as Wireshark's "Decrypted QUIC" tab) or why it could not be
    decrypted again (``error``)."""

    connection: int
    direction: int
    index: int  # row in analysis.quic_packets[(connection, direction)]
    offset: int  # position of the QUIC packet in the UDP payload
    length: int  # its length on the wire
    hdr_len: int  # header length up to and including the packet number
    epoch: int
    pn: int
    data: bytes = b""
    error: str | None = None
    starts: list = field(default_factory=list)  # position of each QUIC frame in ``data``
    pn_len: int = 0  # length of the packet number field
    first_byte: int | None = None  # the header's first byte without header protection (once decrypted again)

    @property
    def pt_length(self) -> int:
        return max(self.length - self.hdr_len - QUIC_AEAD_TAG, 0)

    @property
    def packet_type(self) -> str:
        return QUIC_EPOCH_NAMES[self.epoch]

    @property
    def title(self) -> str:
        return f"Decrypted QUIC ({self.pt_length} bytes)"

    def frame_span(self, j: int) -> tuple[int, int]:
        """Bytes of the j-th QUIC frame in ``data`` ((-1, -1) if unknown)."""
        if not self.data or not 0 <= j < len(self.starts):
            return (-1, -1)
        return (self.starts[j], self.starts[j + 1] if j + 1 < len(self.starts) else len(self.data))


def quic_packets_on_packet(analysis: Analysis, n: int) -> list[tuple[int, int, int]]:
    """``(connection, direction, row)`` of the decrypted QUIC packets in the datagram of
    capture packet ``n``, in datagram order.  Cheap: numbers only; safe while loading."""
    recs, out = _rows_on_packet(analysis, n, "quic_packets")
    out.sort(key=lambda t: recs[(t[0], t[1])].offset[t[2]])
    return out


def decrypted_quic(analysis: Analysis, source, n: int) -> list[DecryptedQuic]:
    """The decrypted QUIC packets of the datagram in packet ``n``, each decrypted again from
    the capture: the datagram is re-read, the keys re-derived (Initial: from the DCID;
    others: from ``analysis.keylog`` by the connection's client random and the secrets'
    labels) and the packet opened again.  Never raises: a packet that cannot be re-read or
    re-opened carries an ``error`` (e.g. no key log with an analysis loaded from the cache)."""
    cache = analysis.__dict__.get("_wf_quic_last")
    rows = quic_packets_on_packet(analysis, n)
    if cache is not None and cache[0] == n and cache[1] == len(rows) and cache[3] is analysis.keylog:
        return cache[2]
    out: list[DecryptedQuic] = []
    recs = getattr(analysis, "quic_packets", None) or {}
    payload: bytes | str | None = None
    for cid, d, i in rows:
        tab = recs[(cid, d)]
        r = DecryptedQuic(cid, d, i, tab.offset[i], tab.length[i], tab.hdr_len[i], tab.epoch(i), tab.pn[i], pn_len=tab.pn_len(i))
        try:
            if payload is None:
                payload = _udp_payload(analysis, source, n)
            pt = payload if isinstance(payload, str) else _quic_redecrypt(analysis, payload, tab, d, i, r)
            if isinstance(pt, str):
                r.error = pt
            elif len(pt) != r.pt_length:
                r.error = f"decrypted again to {len(pt)} bytes, not {r.pt_length}"
            else:
                from wirefall.dissectors.quic import frame_starts

                r.data = pt
                r.starts = frame_starts(pt, r.epoch)
        except Exception as e:  # noqa: BLE001 - bad input never raises
            r.error = f"{e.__class__.__name__}: {e}"
        out.append(r)
    analysis.__dict__["_wf_quic_last"] = (n, len(rows), out, analysis.keylog)
    return out


# the packets read again for one CRYPTO frame's handshake stream, at most (a handshake's flights
# take a few; a stream of more — hostile, or a long one — shows what its frame alone holds)
CRYPTO_PACKETS_MAX = 64


def _quic_frame_span(r: DecryptedQuic, j: int, fr: Frame) -> tuple[int, int]:
    """Where QUIC frame ``fr`` lies in its decrypted packet ``r``: the ``j``-th frame's bytes when
    they are its (its type; a CRYPTO frame's offset, a STREAM frame's stream), else the first
    frame of ``r`` that is (past the budget ``quic_frames_listed`` a datagram's data-free frames
    of one type are one Frame, which shifts the frames after it: a CRYPTO frame's bytes were
    then another frame's); (-1, -1) when none is."""
    f = fr.fields or {}
    t = f.get("frame_type")

    def its(a: int) -> bool:
        if a < 0:
            return False
        if not isinstance(t, int):
            return True  # (no type to check: the position's)
        dd = r.data
        try:
            ft, q = quic_hooks._varint(dd, a)
            if ft != t:
                return False
            if t == 0x06:
                return quic_hooks.crypto_frame_at(dd, a)[0] == f.get("offset")
            if 0x08 <= t <= 0x0F:
                sid, q = quic_hooks._varint(dd, q)
                return sid == fr.stream_id and (not t & 0x04 or fr.offset < 0 or quic_hooks._varint(dd, q)[0] == fr.offset)
        except IndexError:
            return False
        return True

    a, b = r.frame_span(j)
    if its(a):
        return a, b
    for i, s0 in enumerate(r.starts):
        if its(s0):
            return r.frame_span(i)
    return -1, -1


# a handshake stream's CRYPTO frames reassembled for the tree, at most (a handshake takes tens;
# more — hostile one-byte frames — and the frame shows its own lines only)
CRYPTO_FRAMES_MAX = 1024


def _crypto_packets(analysis: Analysis) -> dict[tuple, list[int]]:
    """(connection, direction, packet type) -> the packets with CRYPTO frames of that handshake
    stream, in order: one walk of the frames, kept while the analysis does not grow (the frames
    counted before the walk: a live capture's loader may add more meanwhile)."""
    from itertools import islice

    frames = analysis.frames
    n = len(frames)
    held = analysis.__dict__.get("_wf_crypto_packets")
    if held is not None and held[0] == n:
        return held[1]
    out: dict[tuple, list[int]] = {}
    for f in islice(frames, n):
        if f.type == "CRYPTO" and f.protocol == "quic":
            lst = out.setdefault((f.connection, f.direction, (f.fields or {}).get("packet_type")), [])
            if not lst or lst[-1] != f.packet:
                lst.append(f.packet)
    analysis.__dict__["_wf_crypto_packets"] = (n, out)
    return out


def _crypto_frames_in(r: DecryptedQuic, packet: int, upto: int | None = None) -> list[tuple[int, int, bytes]]:
    """(packet, stream offset, data) of the CRYPTO frames in a decrypted QUIC packet, in order
    (those that start before ``upto``, and the one at it, when given)."""
    out = []
    for s0 in r.starts:
        if upto is not None and s0 > upto:
            break
        if r.data[s0] != 0x06:
            continue
        try:
            off, q, ln = quic_hooks.crypto_frame_at(r.data, s0)
        except IndexError:
            continue
        if q + ln <= len(r.data):
            out.append((packet, off, bytes(r.data[q : q + ln])))
    return out


def quic_crypto_frames(analysis: Analysis, source, fr: Frame, r: DecryptedQuic, a: int) -> list[tuple[int, int, bytes]] | None:
    """The CRYPTO frames of ``fr``'s handshake stream (its connection, direction and packet
    type) up to ``fr``, the frame at ``a`` of the decrypted QUIC packet ``r`` (of the packet
    shown): (packet, stream offset, data) each, in capture order, the earlier packets decrypted
    again (``decrypted_quic``; the packet shown stays the one it keeps).  None where one of
    them cannot be, or they are more than ``CRYPTO_PACKETS_MAX``."""
    level = (fr.fields or {}).get("packet_type")
    key = (fr.connection, fr.direction, level)
    # the frames of the packets before this one: read again once for all the CRYPTO frames of
    # the packet shown (its tree asks for each), not once each
    memo = analysis.__dict__.get("_wf_crypto_before")
    if memo is not None and memo[0] == (key, fr.packet, source):
        out = memo[1]
    else:
        pkts = _crypto_packets(analysis).get(key, [])
        earlier = pkts[: bisect_left(pkts, fr.packet)]
        if len(earlier) > CRYPTO_PACKETS_MAX:
            return None
        kept = analysis.__dict__.get("_wf_quic_last")
        out = []
        try:
            for p in earlier:
                for rr in decrypted_quic(analysis, source, p):
                    if (rr.connection, rr.direction, rr.packet_type) == key:
                        if rr.error:
                            return None
                        out += _crypto_frames_in(rr, p)
        except Exception:  # noqa: BLE001 - the tree shows what the frame alone holds
            return None
        finally:
            analysis.__dict__["_wf_quic_last"] = kept
        analysis.__dict__["_wf_crypto_before"] = ((key, fr.packet, source), out)
    now: list[tuple[int, int, bytes]] = []
    try:
        for rr in decrypted_quic(analysis, source, fr.packet):  # (the packet shown: its rows kept, not read again)
            if (rr.connection, rr.direction, rr.index) == (r.connection, r.direction, r.index):
                break
            if (rr.connection, rr.direction, rr.packet_type) == key:
                if rr.error:
                    return None
                now += _crypto_frames_in(rr, fr.packet)
    except Exception:  # noqa: BLE001
        return None
    got = out + now + _crypto_frames_in(r, fr.packet, a)
    return got if len(got) <= CRYPTO_FRAMES_MAX else None


def _udp_payload(analysis: Analysis, source, n: int) -> bytes | str:
    idx = analysis.index
    data = packet_bytes(source, analysis, n)
    x = Decoder().decode(idx.linktype[n - 1], data)
    if x is None:
        return "the datagram is IP-fragmented; its fragments are not re-read"
    if isinstance(x, str):
        return f"not a UDP datagram ({x})"
    if x.proto != 17:
        return f"not a UDP datagram ({x.proto})"
    return bytes(x.payload)


def _quic_keys(analysis: Analysis, tab, d: int, key: int):
    """PacketKeys for row key ``key`` of ``tab`` in direction ``d`` (cached), or a reason."""
    from collections import OrderedDict

    from wirefall.dissectors import quic_crypto as qc
    from wirefall.dissectors.quic import SECRET_LABELS

    cache = analysis.__dict__.get("_wf_quic_dec")
    if cache is None:
        cache = analysis.__dict__["_wf_quic_dec"] = OrderedDict()
    ck = (id(tab.keys), d, key)
    hit = cache.get(ck)
    if hit is not None and hit[0] is tab.keys and hit[2] is analysis.keylog:
        cache.move_to_end(ck)
        return hit[1]
    epoch, version, suite, dcid, gen, cr = tab.keys[key]
    if epoch == 0:
        keys = qc.initial_keys(version, dcid)
        val = keys[d] if keys else f"no Initial salt for QUIC version 0x{version:08x}"
    else:
        label = SECRET_LABELS.get((epoch, d))
        kl = analysis.keylog
        if label is None:
            val = "no key for this epoch and direction"
        elif kl is None:
            val = "no key log with this analysis"
        else:
            secret = kl.get(label, cr) if cr else None
            if secret is None:
                val = f"{label} not in the key log"
            else:
                val = qc.PacketKeys(suite, secret, version)
                for _ in range(gen):
                    val = val.next_phase()
    cache[ck] = (tab.keys, val, analysis.keylog)
    if len(cache) > DEC_CACHE:
        cache.popitem(last=False)
    return val


def _quic_redecrypt(analysis: Analysis, payload: bytes, tab, d: int, i: int, r: DecryptedQuic | None = None) -> bytes | str:
    from wirefall.dissectors.quic_crypto import DecryptError

    off, ln, hl = tab.offset[i], tab.length[i], tab.hdr_len[i]
    if off + ln > len(payload):
        return f"the datagram has {len(payload)} bytes; the packet ends at {off + ln}"
    keys = _quic_keys(analysis, tab, d, tab.key[i])
    if isinstance(keys, str):
        return keys
    pkt = payload[off : off + ln]
    pn_len = tab.pn_len(i)
    try:
        _tpn, got_len, header = keys.unprotect_header(pkt, hl - pn_len)
        if got_len != pn_len:
            return f"header protection removed to a {got_len}-byte packet number, not {pn_len}"
        if r is not None:
            r.first_byte = header[0]
        return keys.decrypt(pkt[hl:], header, tab.pn[i])
    except DecryptError as e:
        return f"does not decrypt again ({e})"
