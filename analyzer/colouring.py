"""Wireshark's default colouring rules, evaluated with wirefall's display filter.

``RULES`` is Wireshark's default ``colorfilters`` list (/usr/share/wireshark/colorfilters of
Wireshark 4.0, in its order: Bad TCP, HSRP State Change, …, TCP, UDP, Broadcast, System
Event).  Each rule keeps Wireshark's filter text and colours, and says what wirefall
evaluates: the same expression with ``analyzer.filter`` wherever wirefall has the fields (Bad
TCP reads the ``tcp.analysis.*`` flags of ``analyzer.tcp_analysis``), a few header tests
written here where the field registry has no such protocol (ICMP, ARP, the Ethernet broadcast
bit), or nothing where wirefall decodes none of the rule's protocols (HSRP, STP, OSPF, SCTP,
SMB, DCERPC, systemd journal): such a rule never matches, and the packet falls to the next one
(TCP, UDP), as it would in Wireshark with that protocol disabled.  "Checksum Errors" never
matches in tshark's default profile either (checksums are not verified).  First match wins.

``Colourer(analysis, source)`` colours packets on demand, one packet at a time, caching the
result (bounded): the TUI and the web app colour only the rows on screen, so a 1 M-packet
capture costs nothing until it is scrolled (the Bad TCP rule runs the TCP analysis up to the
packet asked for, once).  ``colours_for(analysis, packet_numbers)`` is the same for a batch of
packets (the web app's visible page).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


def _rgb(r: int, g: int, b: int) -> str:
    """Wireshark's 16-bit colour components as #rrggbb."""
    return f"#{r >> 8:02x}{g >> 8:02x}{b >> 8:02x}"


# ---------------------------------------------------------------- header tests (no such fields)
# The field registry (analyzer/fields) has no ICMP or ARP protocol; these read the headers the
# display filter decodes (analyzer.fields.packet.decode_layers) directly.

def _icmp_type(pv) -> tuple[int, int] | None:
    """(IP version, ICMP/ICMPv6 type) of an ICMP packet, else None."""
    L = pv.layers
    if L.frag:
        return None
    if L.ip is not None and L.ip[7] == 1:
        off = L.ip_off + L.ip[1]
        return (4, pv.data[off]) if off < L.ip_end else None
    if L.ip6 is not None and L.proto == 58:
        # the ICMPv6 header follows the extension headers: walk them again (rare; bounded)
        data, p, nxt, end = pv.data, L.ip6_off + 40, L.ip6[1], L.ip6_end
        from .fields.packet import IPV6_EXT

        for _ in range(16):
            if nxt not in IPV6_EXT or p + 8 > end:
                break
            hl = (data[p + 1] + 2) * 4 if nxt == 51 else (data[p + 1] + 1) * 8
            nxt = data[p]
            p += hl
        return (6, data[p]) if nxt == 58 and p < end else None
    return None


def _icmp_error(pv) -> bool:  # icmp.type in { 3..5, 11 } || icmpv6.type in { 1..4 }
    t = _icmp_type(pv)
    return t is not None and (t[1] in (3, 4, 5, 11) if t[0] == 4 else 1 <= t[1] <= 4)


def _icmp(pv) -> bool:  # icmp || icmpv6
    return _icmp_type(pv) is not None


def _broadcast(pv) -> bool:  # eth[0] & 1
    e = pv.layers.eth
    return e is not None and bool(e[0][0] & 1)


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    wireshark: str  # the rule's filter in Wireshark's colorfilters
    fg: str
    bg: str
    expr: str | None = None  # what wirefall's display filter evaluates (None: see test)
    test: Callable[[Any], bool] | None = None  # a header test instead of a filter
    note: str = ""  # how wirefall's evaluation differs from Wireshark's, if it does

    @property
    def evaluated(self) -> bool:
        return self.expr is not None or self.test is not None


_DARK = (4718, 10030, 11796)
_NOT_DECODED = "wirefall decodes none of these protocols: never matches"

# Wireshark 4.0's default colorfilters, in order: (name, filter, background, foreground, wirefall)
_RuleSpec = tuple[str, str, tuple[int, int, int], tuple[int, int, int], tuple]
_SPECS: list[_RuleSpec] = [
    ("Bad TCP", "tcp.analysis.flags && !tcp.analysis.window_update && !tcp.analysis.keep_alive && !tcp.analysis.keep_alive_ack",
     _DARK, (63479, 34695, 34695),
     ("tcp.analysis.flags && !tcp.analysis.window_update && !tcp.analysis.keep_alive && !tcp.analysis.keep_alive_ack",)),
    ("HSRP State Change", "hsrp.state != 8 && hsrp.state != 16", _DARK, (65535, 64764, 40092), (None, None, _NOT_DECODED)),
    ("Spanning Tree Topology  Change", "stp.type == 0x80", _DARK, (65535, 64764, 40092), (None, None, _NOT_DECODED)),
    ("OSPF State Change", "ospf.msg != 1", _DARK, (65535, 64764, 40092), (None, None, _NOT_DECODED)),
    ("ICMP errors", "icmp.type in { 3..5, 11 } || icmpv6.type in { 1..4 }", _DARK, (47031, 63479, 29812),
     (None, _icmp_error, "the ICMP/ICMPv6 type byte read from the header")),
    ("ARP", "arp", (64250, 61680, 55255), _DARK, ("eth.type == 0x0806", None, "EtherType 0x0806 (Ethernet captures)")),
    ("ICMP", "icmp || icmpv6", (64764, 57568, 65535), _DARK, (None, _icmp, "IP protocol 1 or IPv6 next header 58")),
    ("TCP RST", "tcp.flags.reset eq 1", (42148, 0, 0), (65535, 64764, 40092), ("tcp.flags.reset eq 1",)),
    ("SCTP ABORT", "sctp.chunk_type eq ABORT", (42148, 0, 0), (65535, 64764, 40092), (None, None, _NOT_DECODED)),
    ("TTL low or unexpected",
     "(ip.dst != 224.0.0.0/4 && ip.ttl < 5 && !pim && !ospf) || (ip.dst == 224.0.0.0/24 && ip.dst != 224.0.0.251 && ip.ttl != 1 && !(vrrp || carp))",
     (42148, 0, 0), (60652, 61680, 60395),
     ("(ip.dst != 224.0.0.0/4 && ip.ttl < 5 && !(ip.proto == 103) && !(ip.proto == 89)) || "
      "(ip.dst == 224.0.0.0/24 && ip.dst != 224.0.0.251 && ip.ttl != 1 && !(ip.proto == 112))",
      None, "pim, ospf, vrrp/carp as IP protocols 103, 89, 112")),
    ("Checksum Errors",
     'eth.fcs.status=="Bad" || ip.checksum.status=="Bad" || tcp.checksum.status=="Bad" || udp.checksum.status=="Bad" || '
     'sctp.checksum.status=="Bad" || mstp.checksum.status=="Bad" || cdp.checksum.status=="Bad" || edp.checksum.status=="Bad" || '
     'wlan.fcs.status=="Bad" || stt.checksum.status=="Bad"',
     _DARK, (63479, 34695, 34695), (None, None, "checksums are not verified (nor by tshark's default profile): never matches")),
    ("SMB", "smb || nbss || nbns || netbios", (65278, 65535, 53456), _DARK, (None, None, _NOT_DECODED)),
    ("HTTP", "http || tcp.port == 80 || http2", (58596, 65535, 51143), _DARK, ("http || tcp.port == 80 || http2",)),
    ("DCERPC", "dcerpc", (51199, 38706, 65533), _DARK, (None, None, _NOT_DECODED)),
    ("Routing", "hsrp || eigrp || ospf || bgp || cdp || vrrp || carp || gvrp || igmp || ismp", (65534, 62325, 54808), _DARK,
     ("ip.proto in {2, 88, 89, 112}", None, "IGMP, EIGRP, OSPF, VRRP/CARP as IP protocols; HSRP, BGP, CDP, GVRP, ISMP not decoded")),
    ("TCP SYN/FIN", "tcp.flags & 0x02 || tcp.flags.fin == 1", (41026, 41026, 41026), _DARK, ("tcp.flags & 0x02 || tcp.flags.fin == 1",)),
    ("TCP", "tcp", (59345, 58980, 65535), _DARK, ("tcp",)),
    ("UDP", "udp", (56026, 61166, 65535), _DARK, ("udp",)),
    ("Broadcast", "eth[0] & 1", (65535, 65535, 65535), (47802, 48573, 46774), (None, _broadcast, "the Ethernet destination's group bit")),
    ("System Event", "systemd_journal || sysdig", (59110, 59110, 59110), (11565, 28527, 39578), (None, None, _NOT_DECODED)),
]


def _rule(name: str, ws: str, bg: tuple[int, int, int], fg: tuple[int, int, int], how: tuple) -> Rule:
    expr, test, note = (tuple(how) + (None, None, ""))[:3]
    return Rule(name, ws, _rgb(*fg), _rgb(*bg), expr, test, note or "")


RULES: tuple[Rule, ...] = tuple(_rule(*s) for s in _SPECS)

BY_NAME = {r.name: i for i, r in enumerate(RULES)}


class Colourer:
    """Colours packets of one analysis on demand (``rule(n)``, ``colour(n)``), caching the
    last ``CACHE`` answers."""

    CACHE = 1 << 16

    def __init__(self, an, source, rules: tuple[Rule, ...] = RULES):
        from .fields.packet import PacketContext
        from .filter import compile_filter

        self.an = an
        self.source = source
        self.rules = rules
        self._ctx = PacketContext(an, source)
        preds: list[tuple[int, Callable[[Any], bool]]] = []
        for i, r in enumerate(rules):
            if r.expr is not None:
                preds.append((i, compile_filter(r.expr, "packets")._pred))
            elif r.test is not None:
                preds.append((i, r.test))
        self._preds = preds
        self._cache: OrderedDict[int, int] = OrderedDict()
        self._lock = threading.Lock()

    def rule(self, n: int) -> int:
        """The index in ``rules`` of the first rule packet ``n`` matches, or -1."""
        with self._lock:
            hit = self._cache.get(n)
            if hit is not None:
                return hit
            from .fields.packet import PacketView

            pv = PacketView(self._ctx, n)
            got = -1
            for i, pred in self._preds:
                try:
                    ok = pred(pv)
                except Exception:  # noqa: BLE001 - a packet that breaks a rule is not coloured by it
                    ok = False
                if ok:
                    got = i
                    break
            self._cache[n] = got
            if len(self._cache) > self.CACHE:
                self._cache.popitem(last=False)
            return got

    def colour(self, n: int) -> tuple[str, str, str] | None:
        """(rule name, foreground, background) of packet ``n``, or None (no rule matches)."""
        i = self.rule(n) if 0 < n <= self.an.packets else -1
        if i < 0:
            return None
        r = self.rules[i]
        return r.name, r.fg, r.bg


def colourer(an, source) -> Colourer:
    """The analysis's ``Colourer`` on ``source`` (one kept per analysis, made again for
    another source)."""
    c = an.__dict__.get("_wf_colourer")
    if c is None or c.source is not source:
        c = Colourer(an, source)
        an.__dict__["_wf_colourer"] = c
    return c


def colours_for(analysis, packet_numbers: Iterable[int], source=None) -> list[tuple[str, str, str] | None]:
    """(rule name, foreground, background) per packet number (None where no rule matches),
    for the web app's packet list.  ``source``: a ``PacketSource`` on the capture (one is
    opened for the call when not given)."""
    nums = list(packet_numbers)
    own = source is None
    if own:
        from .capture import PacketSource

        source = PacketSource(analysis.path)
    try:
        c = Colourer(analysis, source) if own else colourer(analysis, source)
        return [c.colour(n) for n in nums]
    finally:
        if own:
            source.close()


def legend() -> list[tuple[str, str, str, str]]:
    """(name, foreground, background, Wireshark filter) of each rule wirefall evaluates, in order."""
    return [(r.name, r.fg, r.bg, r.wireshark) for r in RULES if r.evaluated]


def parse_colorfilters(text: str) -> list[tuple[str, str, str, str]]:
    """Wireshark's colorfilters file (``@name@filter@[bg r,g,b][fg r,g,b]`` lines; ``!``
    marks a disabled rule) as (name, filter, fg, bg), enabled rules only."""
    import re

    out = []
    for line in text.splitlines():
        m = re.match(r"@(.*?)@(.*)@\[(\d+),(\d+),(\d+)\]\[(\d+),(\d+),(\d+)\]\s*$", line)
        if m:
            bg = tuple(int(m.group(k)) for k in (3, 4, 5))
            fg = tuple(int(m.group(k)) for k in (6, 7, 8))
            out.append((m.group(1), m.group(2), _rgb(*fg), _rgb(*bg)))
    return out
