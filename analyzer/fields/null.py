"""``null``: the BSD loopback header (link types NULL and LOOP): its address family."""
from __future__ import annotations

from ._util import packet_field as P
from .types import PROTO, UINT, Protocol


def _family(pv) -> list:
    """The family as the detail tree reads it (analyzer.detail._link): host order for NULL
    (the writer's: little-endian unless that reads as more than 16 bits), network order for LOOP."""
    if pv.layers.link != "null" or len(pv.data) < 4:
        return []
    big = pv.ctx.idx.linktype[pv.n - 1] == 108
    fam = int.from_bytes(pv.data[:4], "big" if big else "little")
    if not big and fam > 0xFFFF:
        fam = int.from_bytes(pv.data[:4], "big")
    return [fam]


PROTOCOL = Protocol("null", "Null/Loopback", P("null", PROTO, lambda pv: [pv.data[:4]] if pv.layers.link == "null" else [],
                                               "the loopback header"), [
    P("null.family", UINT, _family, "address family (2 IPv4; 24, 28 or 30 IPv6)", size=4),
])
