"""``_ws.expert``: Wireshark's expert information as filter fields (``_ws.expert.severity >= note``,
``_ws.expert.group == Sequence``, ``_ws.expert.message contains "Duplicate"``), and the expert
items that are fields of their own in tshark (``tcp.connection.syn``, ``.fin``, ``.rst`` …).

The items are those ``analyzer.expert.compute`` makes that tshark 4.0 makes too (``origin ==
WIRESHARK``: the TCP analysis flags, the TCP connection items, D-SACK, HTTP/1 chat,
``quic.retransmission``; docs/EXPERT.md), one ``_ws.expert`` per item, as tshark adds one per item.
wirefall's own facts (malformed frames, notes, response codes …) have no tshark counterpart and
are not here.  They are computed once, on the first packet a filter naming one of these fields
reads (a filter that names none computes nothing)."""
from __future__ import annotations

from ._util import packet_field as P
from .types import NONE, PROTO_OPAQUE, STRING, UINT, Protocol


def items_by_packet(ctx) -> dict[int, list]:
    """packet -> its expert items that tshark makes too, in the order they were made (once per
    filtering pass, kept in the context)."""
    got = ctx.cache.get("ws_expert")
    if got is None:
        from wirefall.analyzer.expert import Origin, compute

        got = {}
        for it in compute(ctx.an, ctx.source):
            if it.origin == Origin.WIRESHARK and it.packet is not None:
                got.setdefault(it.packet, []).append(it)
        ctx.cache["ws_expert"] = got
    return got


def _items(pv) -> list:
    return items_by_packet(pv.ctx).get(pv.n, [])


def _each(attr):
    def get(pv) -> list:
        return [attr(it) for it in _items(pv)]
    return get


def _kind(kind: str):
    def get(pv) -> list:
        return [True for it in _items(pv) if it.kind == kind]
    return get


# the expert items tshark names as fields of their own (FT_NONE) that the TCP module does not
# already have (tcp.analysis.*: analyzer.fields.tcp)
KINDS = [
    ("tcp.connection.syn", "Connection establish request (SYN)"),
    ("tcp.connection.synack", "Connection establish acknowledge (SYN+ACK)"),
    ("tcp.connection.fin", "Connection finish (FIN)"),
    ("tcp.connection.fin_active", "This frame initiates the connection closing (the first FIN of a TCP conversation)"),
    ("tcp.connection.fin_passive", "This frame undergoes the connection closing (the other side's FIN)"),
    ("tcp.connection.rst", "Connection reset (RST)"),
    ("tcp.options.sack.dsack", "D-SACK Sequence"),
    ("http.chat", "an HTTP/1.x request or status line (the Chat item, where tshark shows the message)"),
    ("quic.retransmission", "a CRYPTO frame at an offset its packet space already carried (\"reused stream offset\")"),
]

_NOT_ALL = ("only the items wirefall makes as tshark does (TCP analysis and connection items, D-SACK, HTTP/1 chat, QUIC CRYPTO "
            "retransmissions: docs/EXPERT.md), not tshark's dissectors' other warnings (HTTP decompression, QUIC padding …)")
_AS = "as _ws.expert"

PROTOCOL = Protocol("_ws.expert", "Wireshark's expert information (the items wirefall makes as tshark does)",
                    P("_ws.expert", PROTO_OPAQUE, lambda pv: [True] * len(_items(pv)), "an expert item (one per item)", note=_NOT_ALL), [
    P("_ws.expert.message", STRING, _each(lambda it: it.summary), "the item's text (\"Duplicate ACK (#1)\", \"Connection reset (RST)\")",
      note=_AS),
    P("_ws.expert.severity", UINT, _each(lambda it: int(it.severity)), "severity: Comment, Chat, Note, Warning, Error (as names: "
      "_ws.expert.severity >= Note; the values are Wireshark's PI_* numbers)", note=_AS, size=4),
    P("_ws.expert.group", UINT, _each(lambda it: int(it.group)), "group: Sequence, Protocol, Malformed … (as names: "
      "_ws.expert.group == Sequence)", note=_AS, size=4),
    *[P(name, NONE, _kind(name), desc) for name, desc in KINDS],
])
