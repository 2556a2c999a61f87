"""Google QUIC in the packet list: tshark's Info of a gQUIC datagram — the unencrypted
handshake message (``Client Hello``, ``Rejection``, ``Server Hello``) or ``Payload
(Encrypted)``, then ``PKN: n`` and, where the public header carries one, ``CID: <decimal>``."""
from __future__ import annotations

from wirefall.analyzer.model import Analysis, Frame

# tshark's names of the handshake message tags (packet-gquic.c's message_tag_vals)
_MESSAGES = {"CHLO": "Client Hello", "SHLO": "Server Hello", "REJ": "Rejection", "SREJ": "Stateless Rejection",
             "PRST": "Public Reset", "SCUP": "Server Config Update"}


def datagram_info(analysis: Analysis, n: int, payload: bytes, frames: list[Frame], spanning: list[Frame] | None = None) -> str | None:
    pkt = next((fr for fr in frames if fr.protocol == "gquic" and fr.type in ("PACKET", "PUBLIC_RESET")), None)
    if pkt is None:
        return None
    f = pkt.fields or {}
    if pkt.type == "PUBLIC_RESET":
        head = "Public Reset"
    else:
        msgs = [_MESSAGES.get(fr.type, fr.type) for fr in frames if fr.protocol == "gquic" and fr.type not in ("PACKET", "PUBLIC_RESET")]
        head = ", ".join(msgs) if msgs else ("Payload (Encrypted)" if f.get("encrypted") else "Payload")
    s = head
    if isinstance(f.get("packet_number"), int) and pkt.type != "PUBLIC_RESET":
        s += f", PKN: {f['packet_number']}"
    cid = f.get("cid")
    if isinstance(cid, str) and cid:
        try:
            s += f", CID: {int(cid, 16)}"
        except ValueError:
            pass
    return s
