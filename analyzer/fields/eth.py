"""``eth``: Ethernet II header (captures with the Ethernet link type)."""
from __future__ import annotations

from ._util import packet_field as P
from .types import ETHER, PROTO, UINT, Protocol




def _eth(pv):
    return pv.layers.eth


PROTOCOL = Protocol("eth", "Ethernet", P("eth", PROTO, lambda pv: [pv.data[:14]] if _eth(pv) else [], "the Ethernet header"), [
    P("eth.addr", ETHER, lambda pv: [e[0], e[1]] if (e := _eth(pv)) else [], "source or destination MAC"),
    P("eth.dst", ETHER, lambda pv: [e[0]] if (e := _eth(pv)) else [], "destination MAC"),
    P("eth.src", ETHER, lambda pv: [e[1]] if (e := _eth(pv)) else [], "source MAC"),
    P("eth.type", UINT, lambda pv: [e[2]] if (e := _eth(pv)) else [], "EtherType (after VLAN tags; tshark's names: eth.type == IPv4)",
      size=2),
])
