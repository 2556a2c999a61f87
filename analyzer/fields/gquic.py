"""``gquic``: Google QUIC (Q0xx) packets: the public header and the unencrypted handshake
messages' tags (dissectors/gquic.py), as tshark's ``gquic`` names them."""
from __future__ import annotations

from ._util import frame_field as F, frames_present
from .types import STRING, UINT, Protocol


def _is_gquic(fr) -> bool:
    return fr.protocol == "gquic"


def _is_packet(fr) -> bool:
    return fr.protocol == "gquic" and fr.type in ("PACKET", "PUBLIC_RESET")


def _is_message(fr) -> bool:
    return fr.protocol == "gquic" and fr.type not in ("PACKET", "PUBLIC_RESET")


def _cid(fr, ctx) -> list:
    c = (fr.fields or {}).get("cid")
    if not isinstance(c, str) or len(c) != 16:
        return []
    try:
        return [int(c, 16)]
    except ValueError:
        return []


PROTOCOL = Protocol("gquic", "GQUIC", frames_present("gquic", _is_gquic, "a Google QUIC packet"), [
    F("gquic.packet_number", UINT, _is_packet,
      lambda fr, ctx: [v] if isinstance(v := (fr.fields or {}).get("packet_number"), int) else [], "packet number (public header)", size=8),
    F("gquic.cid", UINT, _is_packet, _cid, "connection ID (public header, 8 bytes) as a number", size=8),
    F("gquic.version", STRING, _is_packet, lambda fr, ctx: [v] if isinstance(v := (fr.fields or {}).get("version"), str) else [],
      "version of a public header that carries one (Q043…)"),
    F("gquic.tag", STRING, _is_message, lambda fr, ctx: [fr.type], "handshake message tag (CHLO, REJ, SHLO…), unencrypted ones"),
])
