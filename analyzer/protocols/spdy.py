"""SPDY in the detail tree: the type line with the control frame's number, as Wireshark's
``spdy.type`` (DATA frames have no type number on the wire)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from wirefall.analyzer.model import Analysis, Frame
from wirefall.dissectors.registry import descriptor

if TYPE_CHECKING:
    from wirefall.analyzer.detail import Node
    from wirefall.analyzer.info import InfoContext

TYPES = {n: c for c, n in descriptor("spdy").type_names.items()}  # control frames


def type_node(node: Node, fr: Frame) -> bool:
    code = TYPES.get(fr.type)
    if code is None:
        return False
    node.add(f"Type: {fr.type} ({code})", abbrev="spdy.type", value=str(code))
    return True


def info(ctx: InfoContext, fr: Frame) -> str:
    """tshark's Info of one SPDY frame: its type name alone (``SYN_STREAM``, ``DATA``;
    ``dissect_spdy_frame`` appends ``frame_type_names`` and nothing else, with ``", "`` after
    what is already there: ``[TCP Fast Retransmission] , DATA``); nothing for a control frame
    of a type it does not know (``UNKNOWN_0x0077``: it adds an expert item and stops)."""
    ctx.comma_after_prefix = True
    if fr.type != "DATA" and fr.type not in TYPES:
        return ""  # a control type tshark does not know: an expert item only, nothing in the column
    return fr.type


def _fences(fr: Frame) -> bool:
    """tshark fences the column after a control frame it decodes (SPDY/3 and later; SPDY/2's are
    "Unsupported Version" and return before the fence)."""
    return fr.type != "DATA" and fr.protocol != "spdy/2"


def shown(analysis: Analysis, n: int, done: list[Frame]) -> list[Frame]:
    """The frames completing on packet ``n`` whose names tshark's Info keeps.  Its SPDY
    dissector clears the column (back to the last fence) each time it is handed bytes
    (``dissect_spdy``: ``col_clear``, then ``tcp_dissect_pdus``); over TLS that is once per
    decrypted record, so a record's SPDY frames replace the TLS records and the SPDY frames of
    records before it, except those before a fence (set after a SPDY/3 control frame).  A record
    whose first frame began in an earlier record of the same packet clears nothing (the
    reassembly left a fence), nor does one after a record TCP reassembled from earlier segments
    (TCP fences it when another follows).  TLS records after the last SPDY frames (a closing
    alert) stay."""
    out: list[Frame] = []
    fence = 0
    rec: Frame | None = None  # the decrypted record the frames below came in
    first = True  # the next SPDY frame is the first of its record
    for i, fr in enumerate(done):
        if fr.protocol == "tls":
            if rec is not None and rec.first_packet < n:
                fence = len(out)  # TCP fences a PDU it reassembled when another follows in the segment
            if fr.type == "APPLICATION_DATA":
                rec, first = fr, True
            out.append(fr)
            continue
        if fr.protocol.startswith("spdy/") and rec is not None and first:
            first = False
            # the record's plaintext ends at (or past) its last frame's end: a first frame starting
            # before that end minus the plaintext length began in an earlier record
            p = (rec.fields or {}).get("plaintext")
            j = next((k for k in range(i + 1, len(done)) if done[k].protocol == "tls" and done[k].type == "APPLICATION_DATA"), len(done))
            end = max(f.offset + 8 + f.length for f in done[i:j] if f.protocol.startswith("spdy/"))
            earlier = fr.first_packet == n and isinstance(p, int) and fr.offset < end - p
            if not earlier:
                del out[fence:]
        out.append(fr)
        if fr.protocol.startswith("spdy/") and _fences(fr):
            fence = len(out)
    return out
