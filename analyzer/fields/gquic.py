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


_STREAM_NOTE = ("one per handshake message, on the packet where it completes (tshark: one per STREAM frame of an unencrypted "
                "packet, a message spanning packets on each; none for a frame without its Data Length bit)")


PROTOCOL = Protocol("gquic", "GQUIC", frames_present("gquic", _is_gquic, "a Google QUIC packet"), [
    F("gquic.packet_number", UINT, _is_packet,
      lambda fr, ctx: [v] if isinstance(v := (fr.fields or {}).get("packet_number"), int) else [], "packet number (public header)", size=8),
    F("gquic.cid", UINT, _is_packet, _cid, "connection ID (public header, 8 bytes) as a number", size=8),
    F("gquic.version", STRING, _is_packet, lambda fr, ctx: [v] if isinstance(v := (fr.fields or {}).get("version"), str) else [],
      "version of a public header that carries one (Q043…)"),
    F("gquic.tag", STRING, _is_message, lambda fr, ctx: [fr.type], "handshake message tag (CHLO, REJ, SHLO…), unencrypted ones"),
    F("gquic.tag.sni", STRING, _is_message, lambda fr, ctx: [v] if isinstance(v := (fr.fields or {}).get("SNI"), str) else [],
      "SNI tag of a handshake message (the client's CHLO): the server name"),
    # tshark adds these two to each STREAM frame of an unencrypted packet; the dissector keeps the
    # handshake messages (stream 1), not the STREAM frames: a message carried whole by one frame
    # has that frame's stream and data length
    F("gquic.stream_id", UINT, _is_message, lambda fr, ctx: [fr.stream_id] if isinstance(fr.stream_id, int) else [],
      "stream of the STREAM frame carrying an unencrypted handshake message (1)", size=4, note=_STREAM_NOTE),
    F("gquic.data_len", UINT, _is_message, lambda fr, ctx: [fr.length] if isinstance(fr.length, int) else [],
      "data length of the STREAM frame carrying an unencrypted handshake message: the message's size", size=4, note=_STREAM_NOTE),
])
