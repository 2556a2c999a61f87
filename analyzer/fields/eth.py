"""``eth``: Ethernet II header (captures with the Ethernet link type)."""
from __future__ import annotations

from ._util import packet_field as P
from .types import ETHER, PROTO, UINT, Protocol


# tshark's value strings for the common EtherTypes (names case-insensitive)
ETHERTYPE_NAMES = {"IPv4": 0x0800, "ARP": 0x0806, "IPv6": 0x86DD, "802.1Q Virtual LAN": 0x8100, "RARP": 0x8035,
                   "Wake on LAN": 0x0842, "MPLS label switched packet": 0x8847, "PPPoE Discovery": 0x8863, "PPPoE Session": 0x8864,
                   "802.1 Link Layer Discovery Protocol (LLDP)": 0x88CC, "802.1ad Provider Bridge (Q-in-Q)": 0x88A8, "802.1X Authentication": 0x888E}


def _eth(pv):
    return pv.layers.eth


PROTOCOL = Protocol("eth", "Ethernet", P("eth", PROTO, lambda pv: [pv.data[:14]] if _eth(pv) else [], "the Ethernet header"), [
    P("eth.addr", ETHER, lambda pv: [e[0], e[1]] if (e := _eth(pv)) else [], "source or destination MAC"),
    P("eth.dst", ETHER, lambda pv: [e[0]] if (e := _eth(pv)) else [], "destination MAC"),
    P("eth.src", ETHER, lambda pv: [e[1]] if (e := _eth(pv)) else [], "source MAC"),
    P("eth.type", UINT, lambda pv: [e[2]] if (e := _eth(pv)) else [], "EtherType (after VLAN tags; tshark's names: eth.type == IPv4)",
      size=2, names=ETHERTYPE_NAMES),
])
