"""QUIC in the packet list: tshark's Info of a datagram is its last QUIC packet's (tshark's
column keeps only the last of coalesced packets): ``Initial, DCID=…, SCID=…, PKN: 0, CRYPTO,
PADDING`` or ``Protected Payload (KP0), DCID=…, PKN: 5, ACK, STREAM(0), HEADERS`` — frames in
wire order, not collapsed, with tshark's short names (``DONE``, ``NCI``, ``SB`` …) and the
HTTP/3 frames tshark names (HEADERS, SETTINGS, PRIORITY_UPDATE, …) after the STREAM frame
carrying them."""
from __future__ import annotations

import struct

from wirefall.analyzer.model import Analysis, Frame

# tshark's short frame names in the Info column (packet-quic.c)
QUIC_SHORT = {
    "RESET_STREAM": "RS", "STOP_SENDING": "SS", "NEW_TOKEN": "NT", "MAX_DATA": "MD", "MAX_STREAM_DATA": "MSD",
    "MAX_STREAMS": "MS", "DATA_BLOCKED": "DB", "STREAM_DATA_BLOCKED": "SDB", "STREAMS_BLOCKED": "SB",
    "NEW_CONNECTION_ID": "NCI", "RETIRE_CONNECTION_ID": "RCI", "PATH_CHALLENGE": "PC", "PATH_RESPONSE": "PR",
    "CONNECTION_CLOSE": "CC", "HANDSHAKE_DONE": "DONE", "DATAGRAM": "DG",
}
# HTTP/3 frames tshark names in the Info column where they begin; DATA only when it also ends in
# that packet (amazon1 485: "STREAM(0), HEADERS, DATA"), not where it continues or ends, nor one
# the capture cuts
H3_NAMED = {"HEADERS", "DATA", "SETTINGS", "PRIORITY_UPDATE", "MAX_PUSH_ID", "GOAWAY", "CANCEL_PUSH", "PUSH_PROMISE"}
H3_UNKNOWN: set[str] = set()  # (reserved GREASE frames: tshark writes nothing for them on a request or control stream)
_LONG_TYPES = {0: "Initial", 1: "0-RTT", 2: "Handshake", 3: "Retry"}


def _varint(b: bytes, p: int) -> tuple[int, int]:
    if p >= len(b):
        raise IndexError
    n = 1 << (b[p] >> 6)
    if p + n > len(b):
        raise IndexError
    v = b[p] & 0x3F
    for i in range(1, n):
        v = v << 8 | b[p + i]
    return v, p + n


def _last_quic_header(payload: bytes, rows: list[tuple[int, int, int, int]], short_cid: int | None = None) -> str | None:
    """tshark's header text of the datagram's last QUIC packet: ``Initial, DCID=…, SCID=…``
    or ``Protected Payload (KP0), DCID=…``.  ``rows``: (offset, hdr_len, pn_len, key phase)
    of the decrypted packets (for a short header's DCID length)."""
    p = 0
    kind = ""  # of the last packet: "long", "short" or "vn"
    name, dcid, scid, off = "", b"", b"", 0
    try:
        for _ in range(16):
            if p >= len(payload):
                break
            b0 = payload[p]
            if p and not b0 & 0x40:
                break  # not a QUIC packet (the fixed bit is clear): padding after the last one
            if not b0 & 0x80:
                kind, off = "short", p
                break
            version = struct.unpack_from("!I", payload, p + 1)[0]
            dl = payload[p + 5]
            dcid = payload[p + 6 : p + 6 + dl]
            q = p + 6 + dl
            sl = payload[q]
            scid = payload[q + 1 : q + 1 + sl]
            q += 1 + sl
            if version == 0:
                kind = "vn"
                break
            t = (b0 >> 4) & 3
            if version == 0x6B3343CF:  # QUIC v2 renumbers the long packet types
                t = {1: 0, 2: 1, 3: 2, 0: 3}[t]
            kind, name = "long", _LONG_TYPES[t]
            if t == 3:
                break
            if t == 0:
                tl, q = _varint(payload, q)
                q += tl
            ln, q = _varint(payload, q)
            p = q + ln
    except (IndexError, struct.error, KeyError):
        pass
    if not kind:
        return None
    if kind == "vn":
        return "Version Negotiation"
    if kind == "long":
        return name + (f", DCID={dcid.hex()}" if dcid else "") + (f", SCID={scid.hex()}" if scid else "")
    row = next((r for r in rows if r[0] == off), None)
    s = f"Protected Payload (KP{row[3] if row is not None else 0})"
    cid_len = row[1] - 1 - row[2] if row is not None else short_cid
    if cid_len and cid_len > 0:
        s += f", DCID={payload[off + 1 : off + 1 + cid_len].hex()}"
    return s


def datagram_info(analysis: Analysis, n: int, payload: bytes, frames: list[Frame], spanning: list[Frame] | None = None) -> str | None:
    """tshark's Info of a QUIC datagram (None: not a datagram wirefall decoded as QUIC).
    ``frames``: the frames completing on packet ``n``; ``spanning``: every frame with a byte
    on it (HTTP/3 frames are named where they begin, as tshark does)."""
    from wirefall.analyzer.detail import quic_packets_on_packet

    rows = quic_packets_on_packet(analysis, n)
    recs = getattr(analysis, "quic_packets", None) or {}
    info_rows = []
    for cid, d, i in rows:
        tab = recs[(cid, d)]
        info_rows.append((tab.offset[i], tab.hdr_len[i], tab.pn_len(i), (tab.flags[i] >> 4) & 1, tab.pn[i]))
    short_cid = None
    if frames and not info_rows:  # none decrypted here: the DCID length of this direction's other 1-RTT packets
        tab = recs.get((frames[0].connection, frames[0].direction))
        if tab is not None:
            k = next((i for i in range(min(len(tab), 64)) if tab.epoch(i) == 3), None)
            if k is not None:
                short_cid = tab.hdr_len[k] - 1 - tab.pn_len(k)
    if short_cid is None and frames and not info_rows and 0 <= frames[0].connection < len(analysis.connections):
        # none decrypted in this direction: the length of the ID the peer gave in its long headers, as tshark takes it
        qi = analysis.connections[frames[0].connection].quic
        peer = (qi.server_scid if frames[0].direction == 0 else qi.scid) if qi is not None else None
        if peer:
            short_cid = len(peer) // 2
    head = _last_quic_header(payload, [r[:4] for r in info_rows], short_cid)
    if head is None:
        return None
    q = [fr for fr in frames if fr.protocol == "quic"]
    if not q:
        return head
    last_key = ((q[-1].fields or {}).get("packet_type"), (q[-1].fields or {}).get("packet_number"))
    mine = [fr for fr in q if ((fr.fields or {}).get("packet_type"), (fr.fields or {}).get("packet_number")) == last_key]
    parts = [head]
    if last_key[1] is not None and mine and mine[0].type != "PROTECTED":
        parts.append(f"PKN: {last_key[1]}")
    h3 = [fr for fr in (spanning if spanning is not None else frames)
          if fr.protocol == "h3" and fr.first_packet == n and fr.type in H3_NAMED
          and (fr.type != "DATA" or fr.packet == n and fr.error is None)]  # (error: cut by the stream's or capture's end)
    for fr in mine:
        if fr.type in ("PROTECTED", "RETRY"):
            continue
        if fr.type == "STREAM":
            parts.append(f"STREAM({fr.stream_id})" if fr.stream_id is not None else "STREAM")
            for h in [h for h in h3 if h.stream_id == fr.stream_id]:
                parts.append("Unknown" if h.type in H3_UNKNOWN else h.type)
                h3.remove(h)
        else:
            parts.append(QUIC_SHORT.get(fr.type, fr.type))
    return ", ".join(parts)
